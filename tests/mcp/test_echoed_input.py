"""A refusal repeats what the client sent only cut short: at most 200 characters and an ellipsis.

The client already has what it sent, and the model reading the error pays for every character,
so a resource uri of a hundred kilobytes, or the name of an identifier type of thousands of
characters, is not sent back whole. Nothing refused here writes anything (K-CHG-06).
"""

from __future__ import annotations

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_harness import Cli, stdio_session


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("notochord://documents/" + "z" * 600, id="a-ref-too-long"),
        pytest.param("notochord://elsewhere/" + "q" * 100_000, id="no-such-address"),
        pytest.param("notochord://collections/keep/documents/" + "k" * 5_000, id="a-key-too-long"),
    ],
)
def test_a_long_resource_uri_is_repeated_cut_short(cli: Cli, uri: str) -> None:
    """K-CON-06: not found, naming the uri's first 200 characters, in the message and its data."""
    cli.connect("desk", "collections.read:keep")

    async def go() -> MCPError:
        async with stdio_session(cli.data_dir, "desk") as s:
            with pytest.raises(MCPError) as refused:
                await s.read_resource(uri)
            return refused.value

    error = anyio.run(go).error
    assert error.code == -32002, error
    assert error.message == f"resource not found: {uri[:200]}…", error.message[:300]
    assert error.data == {"uri": f"{uri[:200]}…"}, str(error.data)[:300]


def test_a_long_name_of_an_identifier_type_is_repeated_cut_short(cli: Cli) -> None:
    """A tool's refusal of an argument names it by what the client called it, cut short."""
    cli.connect("desk", "entities.resolve:person")
    kind = "k" * 5_000

    async def go() -> MCPError:
        async with stdio_session(cli.data_dir, "desk") as s:
            with pytest.raises(MCPError) as refused:
                await s.call_tool("entities_resolve", {"identifiers": {kind: 7}})
            return refused.value

    error = anyio.run(go).error
    assert error.code == -32602, error
    assert error.message.startswith("entities_resolve: arguments.identifiers." + "k" * 40 + "… must be a string")
    assert len(error.message) < 200, len(error.message)
