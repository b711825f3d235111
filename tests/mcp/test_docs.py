"""The documentation of the MCP server says what the code does.

``docs/mcp.md`` documents every tool with an example call and answer, generated from a real run by
``tests/mcp/make_mcp_doc.py``; the README's "Connect an assistant" holds the client snippet that
``mcp connect`` prints and grant commands that work on a new connection.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from mcp_harness import Cli

from notochord.mcp_server.tools import TOOLS

REPO = Path(__file__).resolve().parents[2]


def _section(text: str, heading: str) -> str:
    found = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, flags=re.MULTILINE | re.DOTALL)
    assert found is not None, heading
    return found.group(1)


def test_docs_mcp_documents_every_tool_with_its_schema_an_example_call_and_its_answer() -> None:
    """Docs/mcp.md, from a real run, in step with the tools' schemas."""
    text = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
    tools = _section(text, "Tools")
    documented = re.findall(r"^### `([a-z_]+)`$", tools, flags=re.MULTILINE)
    assert documented == [t.name for t in TOOLS]
    for tool in TOOLS:
        part = tools.split(f"### `{tool.name}`", 1)[1].split("\n### ", 1)[0]
        blocks = [json.loads(b) for b in re.findall(r"^```json\n(.*?)^```", part, flags=re.MULTILINE | re.DOTALL)]
        schema, call, _answer = blocks
        assert schema == tool.schema
        assert call["name"] == tool.name
        assert set(call["arguments"]) <= set(tool.schema["properties"])
    assert "notochord gem grant fresh" in _section(text, "A refusal")


def test_the_readme_snippet_is_what_connect_prints_and_its_grant_commands_work(cli: Cli) -> None:
    """The README's "Connect an assistant" (K-PERM-03: grants switch on what was off)."""
    section = _section((REPO / "README.md").read_text(encoding="utf-8"), "Connect an assistant")
    stdio, http = (json.loads(b) for b in re.findall(r"^```json\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL))
    printed = cli.run("mcp", "connect", "claude-desktop")
    given = json.loads(next(line for line in printed.splitlines() if '"mcpServers"' in line))
    # the README's paths are placeholders; the printed ones are this machine's, in the same shape
    entry, documented = given["mcpServers"]["notochord"], stdio["mcpServers"]["notochord"]
    assert Path(entry["command"]).name == Path(documented["command"]).name == "notochord"
    assert entry["args"][:5] == documented["args"][:5]
    assert len(entry["args"]) == len(documented["args"])
    assert http["mcpServers"]["notochord"]["url"].endswith("/mcp")
    assert http["mcpServers"]["notochord"]["headers"]["Authorization"].startswith("Bearer ncmcp_")
    grants = [line for line in section.splitlines() if line.startswith("notochord gem grant")]
    assert grants
    for line in grants:
        cli.run(*shlex.split(line)[1:])
    on = [p["permission"] for p in cli.json("mcp", "show", "claude-desktop")["permissions"] if p["on"]]
    assert on == ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*", "collections.read:keep"]
