"""Write ``docs/mcp.md``: every MCP tool with an example call and the answer of a real run.

Seeds a vault (a pinned food preference, a keepsake), connects ``desk`` with every permission it
asks for switched on, and calls each tool over stdio with the SDK's client; one more connection
with nothing switched on shows a refusal. Refs differ on every run; the shapes do not.

    .venv/bin/python tests/mcp/make_mcp_doc.py docs/mcp.md
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # tests/mcp would shadow the SDK
sys.path.append(str(HERE))

import anyio  # noqa: E402
from mcp_harness import seeded, stdio_session, text  # noqa: E402

from notochord.mcp_server.connections import DEFAULT_PERMISSIONS  # noqa: E402
from notochord.mcp_server.tools import TOOLS  # noqa: E402

INTRO = """# MCP tools and resources

`notochord mcp serve --connection NAME` (stdio) and `/mcp` of `notochord serve` (streamable HTTP,
`Authorization: Bearer SECRET`) offer the same tools and resources. Every tool is a thin call through
the connection's `ctx.knowledge`, the object a gem's tool receives, so what a connection may do is
exactly what its switches allow (`notochord gem grant NAME PERMISSION`, or the console's gem page),
every id it sees is a ref of its own, and every write is recorded under `gem:NAME` in the session's run.
Connections live in the personal space.

- A call the connection lacks a permission for is a tool error (`isError: true`) that names the
  permission and the command that switches it on. Query tools (`search`, `profile`, `facts_lookup`,
  `collections_list`, `changes_list`) leave out what the connection may not read, so a denial reads
  as no data.
- An unknown tool, arguments that do not fit the tool's schema (unknown or missing argument, wrong
  type, value out of range) or over 1 MiB of JSON are protocol errors (JSON-RPC `-32602`); nothing
  is called; so are a `tools/call` whose `name` is not a string and `arguments` that are not an
  object, each named in the message. A line that is not JSON, or not UTF-8, is answered with
  `-32700` (so is JSON nested too deeply to read, saying so), JSON that is not a JSON-RPC message
  with `-32600` (a batch, a JSON list of messages, which MCP does not have, is told to send each
  message on its own); so is a stdio line over 4 MiB (it is read no further than that) and, over
  HTTP, a body over 1 MiB (status 413) or not sent as
  `Content-Type: application/json` (status 415). A request whose `id` is not a string or an integer
  (`1.5`, `null`, an object) is answered with `-32600` and `"id": null` (over HTTP with status 400)
  and is not run: JSON-RPC leaves such a request unanswerable, and the client would otherwise wait
  for a reply forever.
- Over HTTP, a request refused before any JSON-RPC method runs is still a JSON-RPC error
  (`-32600`, `"id": null`) at its HTTP status: 401 without a valid secret or with
  the `Authorization` header sent more than once (with `WWW-Authenticate: Bearer`), 403 from a web
  page of another site (its `Origin`), 421 under a host name that is not this server's. A method
  this server does not answer is `-32601`, naming the ones it does; params of the wrong form name
  the field and the form it needs. Client input repeated in a message (a resource URI, an
  `Origin`, a method name) is cut at 200 characters.
- Over HTTP, what the endpoint answers about sessions, methods and headers says what to send
  instead, as a JSON-RPC error with `"id": null`, keeping its status and headers: 404 for an
  `Mcp-Session-Id` that names no session of this connection (never begun, ended, or begun with
  another connection's secret: all three read the same), telling the client to send `initialize`
  without the header; 400 for a request after `initialize`, a `GET` or a `DELETE` without
  `Mcp-Session-Id`; 405 for a method `/mcp` does not take, with `Allow` and what `POST`, `GET` and
  `DELETE` are for (in the 2026-07-28 protocol only `POST`); 406 for an `Accept` header that leaves
  out `application/json, text/event-stream` (`text/event-stream` for a `GET`); 409 for a second
  `GET` stream of one session; 413 for a body over 1 MiB on any method. While 10,000 sessions are
  open, a request that would open another is answered 503 (`-32603`) with `Retry-After: 60`, saying
  how to end unused sessions (`DELETE` with their `Mcp-Session-Id`; an idle one ends after 30
  minutes).
- Over HTTP, the `Mcp-Protocol-Version` header chooses the protocol: 2024-11-05, 2025-03-26,
  2025-06-18 and 2025-11-25 in a session begun with `initialize` (sent without the header),
  2026-07-28 without sessions. A header naming any other version is answered 400 (`-32602`; for a
  notification `-32022`, with `data` naming the versions) saying so and naming the versions the
  server speaks. An `initialize` that offers a version the server does not speak is answered, as
  the MCP handshake has it, with the newest one it speaks in a session (2025-11-25), and the client
  decides whether to go on. In the 2026-07-28 protocol, a request without its `params._meta`
  (`io.modelcontextprotocol/protocolVersion` and `io.modelcontextprotocol/clientCapabilities`) is
  answered 400 (`-32602`) showing what to send; an `Mcp-Protocol-Version`, `Mcp-Method` or
  `Mcp-Name` header that does not repeat the body, or is sent twice, 400 (`-32020`) naming the
  header to send; `initialize` and `ping`, which that protocol does not have, 404 (`-32601`) saying
  what to send instead, as is `server/discover` within a session. Each keeps the request's `id`.
  Within a session the header repeats the version its `initialize` agreed, or is left out (that
  version is then assumed): a request, `GET` or `DELETE` of the session naming another version the
  server speaks, 2026-07-28 included, is answered 400 (`-32600`, `"id": null`) saying which
  version the session speaks, and is not run. No tool marks a parameter with `x-mcp-header`, so
  the 2026-07-28 protocol's `Mcp-Param-*` headers are never expected, and one sent is not looked
  at; nor is an `Mcp-Session-Id` sent with that protocol, which has no sessions.
  Over stdio, the first request chooses: after `initialize`, a request carrying the 2026-07-28
  envelope is refused (`-32600`), and after a 2026-07-28 request, `initialize` is (`-32022`), each
  saying which protocol the connection speaks and how to speak the other (a new connection).
- `initialize` begins a session once: a second `initialize` in a session (over HTTP with its
  `Mcp-Session-Id`, over stdio after the handshake) is refused (`-32600`), saying how to begin a new
  session (over HTTP, `initialize` without `Mcp-Session-Id`; over stdio, a new connection), and the
  session goes on in the protocol it agreed. The server keeps no past events to replay: a `GET`
  with `Last-Event-ID` opens the session's stream as one without it.
- A session belongs to the connection as it was when the session began. Once the connection is
  removed (`notochord mcp revoke NAME --uninstall`, or the console), every call of that session is
  refused, even after a connection of the same name is made again: that is another connection, with
  its own switches, and its client starts a new session (restarts `mcp serve`, or connects with the
  new secret). Over HTTP, revoking a connection's secret (`notochord mcp revoke NAME`, with or
  without `--uninstall`, from any process) also ends the sessions that secret opened: the server
  notices on its next request, whichever client sends it, and at the latest within a minute; the
  sessions then end as on the client's `DELETE`, their runs finished and their `GET` streams closed,
  and every further request with that secret is refused (401). Other connections' sessions go on.
- Answers are JSON, in the text content and as `structuredContent: {"result": …}`.
- One MCP session is one run: `notochord runs list --gem NAME` shows it, `notochord runs undo RUN`
  undoes everything the session wrote. The run is finished when the session ends (stdin closes,
  once the calls already sent are answered; the client's `DELETE`, the 30-minute idle timeout, its
  secret revoked, or the server stopping). The 2026-07-28 protocol has no sessions: there each request is a run of
  its own, finished even when the client gives up on it (closes its connection) mid-call.

The examples below come from a real run (`tests/mcp/make_mcp_doc.py`); refs differ on every run.
"""

RESOURCES = """## Resources

- `resources/list`: the documents in the collections the connection can read (at most 1000), as
  `notochord://documents/<ref>`, named by title.
- `resources/read` of `notochord://documents/<ref>`: the document as Markdown (`# title`, then the
  body). Reading one in a collection the connection may not read is refused naming the permission;
  a ref that is not the connection's own reads as "resource not found" (`-32002`).
- `resources/templates/list`: one template per readable collection,
  `notochord://collections/<collection ref>/documents/{key}`: the document with that key
  (percent-encoded).
"""


def _block(value: Any) -> str:
    return "```json\n" + json.dumps(value, ensure_ascii=False, indent=2) + "\n```\n"


async def _run(data_dir: Path) -> tuple[list[tuple[str, dict[str, Any], Any]], str]:
    calls: list[tuple[str, dict[str, Any], Any]] = []
    async with stdio_session(data_dir, "desk") as s:

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            result = await s.call_tool(name, arguments)
            got = json.loads(text(result))
            calls.append((name, arguments, got))
            return got

        await call("collections_list", {})
        await call("search", {"query": "stew", "collections": ["keep"], "limit": 2})
        await call("profile", {"prefix": "pref.food"})
        await call("facts_lookup", {"subject": "self", "prefix": "pref.food"})
        put = await call("facts_put", {"predicateHint": "pref.food.like", "value": "lentil soup"})
        await call("facts_retract", {"ref": put["ref"]})
        await call("entities_resolve", {"identifiers": {"email": "ada@example.org"}, "kind": "person", "create": True})
        doc = await call(
            "documents_upsert",
            {"collection": "keep", "key": "dal", "title": "Dal", "body": "Lentils, cumin, patience."},
        )
        await call("documents_get", {"ref": doc["ref"]})
        await call("changes_list", {"status": "applied"})
    async with stdio_session(data_dir, "fresh") as s:
        refused = text(await s.call_tool("facts_put", {"predicateHint": "pref.food.like", "value": "soup"}))
    return calls, refused


def main(target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="notochord-mcp-doc-") as tmp:
        cli = seeded(Path(tmp) / "data")
        cli.connect("desk", *DEFAULT_PERMISSIONS)
        cli.connect("fresh")
        calls, refused = anyio.run(_run, cli.data_dir)
    by_tool = {name: (arguments, got) for name, arguments, got in calls}
    parts = [INTRO, "## Tools\n"]
    for tool in TOOLS:
        arguments, got = by_tool[tool.name]
        parts.append(f"### `{tool.name}`\n\n{tool.description}\n")
        parts.append("Input schema:\n\n" + _block(tool.schema))
        parts.append("Call:\n\n" + _block({"name": tool.name, "arguments": arguments}))
        parts.append("Answer:\n\n" + _block(got))
    parts.append(
        "## A refusal\n\nThe same `facts_put` from a connection with nothing switched on answers "
        "`isError: true` with:\n\n```text\n" + refused + "\n```\n"
    )
    parts.append(RESOURCES)
    target.write_text("\n".join(parts), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
