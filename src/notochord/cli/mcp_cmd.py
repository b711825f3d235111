"""``notochord mcp``: connect AI assistants over MCP, each with its own switches.

``connect`` registers a connection (an installed gem of kind ``assistant``, every permission off)
and prints its bearer secret once; ``list``/``show`` show connections and their switches;
``revoke`` forgets the secret (``--uninstall`` also removes the connection); ``serve`` speaks MCP
over stdio for one connection, which is what desktop clients launch. The MCP SDK loads only in
``serve``: every other command stays quick.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from notochord.cli.common import DataDir, JsonFlag, emit, given_path, open_space, opened, reporting

app = typer.Typer(help="Connect AI assistants over MCP, each with its own permission switches.", no_args_is_help=True)

Name = Annotated[str, typer.Argument(help="The connection's name (a-z, 0-9, -), e.g. claude-desktop.")]


def _switch_lines(name: str, summary: dict[str, object]) -> list[str]:
    permissions = summary["permissions"]
    assert isinstance(permissions, list)
    lines = [f"  [{'x' if p['on'] else ' '}] {p['permission']:<40} {p['sentence']}" for p in permissions]
    lines.append(f"switch one on with: notochord gem grant {name} PERMISSION")
    return lines


def _notochord_command() -> list[str]:
    """How a desktop client starts this very notochord: by its full path.

    A desktop client launches its servers with its own PATH, which holds no virtual environment's
    ``bin`` folder, so a bare ``notochord`` would not be found there.
    """
    # sys.executable is not resolved: a virtual environment's python is a link out of its bin folder.
    script = Path(sys.executable).with_name("notochord")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "notochord"]


def _stdio_config(name: str, data_dir: Path) -> dict[str, Any]:
    """The ``mcpServers`` entry that serves connection ``name`` of the vault in ``data_dir``.

    The data directory is named: the client's environment has neither ``NOTOCHORD_DATA_DIR`` nor the
    ``--data-dir`` this command was given, and would otherwise open the per-user vault instead.
    """
    command, *before = _notochord_command()
    args = [*before, "mcp", "serve", "--connection", name, "--data-dir", str(data_dir)]
    return {"mcpServers": {"notochord": {"command": command, "args": args}}}


@app.command("connect")
def connect(
    name: Name,
    permissions_from: Annotated[
        Path | None,
        typer.Option(
            "--permissions-from",
            parser=given_path,
            help='A JSON file: a list of permission strings, or {"permissions": [...], "reason": "..."}.',
        ),
    ] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Register an assistant connection (every permission off) and print its secret once."""
    from notochord.mcp_server.connections import Connections, load_permissions_file

    with opened(data_dir) as nc:
        requested, reason = (None, None) if permissions_from is None else load_permissions_file(permissions_from)
        connection, secret = Connections(nc.personal).connect(name, permissions=requested, reason=reason)
        config = _stdio_config(name, nc.data_dir.absolute())
    summary = connection.summary()
    result = {**summary, "secretToShowOnce": secret, "stdioConfig": config}
    lines = [
        f"connected {name}; every permission is off:",
        *_switch_lines(name, summary),
        "",
        "desktop clients (stdio) need no secret; add to their MCP configuration:",
        "  " + json.dumps(config),
        "",
        "over HTTP (notochord serve), send this secret as 'Authorization: Bearer SECRET' to /mcp;",
        "it is shown only now (revoke it with: notochord mcp revoke " + name + "):",
        f"  {secret}",
    ]
    emit(result, as_json=as_json, text="\n".join(lines))


@app.command("list")
def list_connections(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """List the assistant connections, with how many switches are on."""
    from notochord.mcp_server.connections import Connections

    with open_space(data_dir) as space:
        found = [c.summary() for c in Connections(space).list()]
    lines = [
        f"{c['name']:<24} secret {c['secret']:<8} "
        f"{sum(1 for p in c['permissions'] if p['on'])}/{len(c['permissions'])} permissions on"
        for c in found
    ]
    emit(
        found,
        as_json=as_json,
        text="\n".join(lines) or "no assistant connections; add one with: notochord mcp connect NAME",
    )


@app.command("show")
def show(name: Name, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Show one connection: its secret's state and every switch."""
    from notochord.mcp_server.connections import Connections

    with open_space(data_dir) as space:
        summary = Connections(space).get(name).summary()
    lines = [f"{name}: secret {summary['secret']}, installed {summary['installedAt']}", *_switch_lines(name, summary)]
    emit(summary, as_json=as_json, text="\n".join(lines))


@app.command("revoke")
def revoke(
    name: Name,
    uninstall: Annotated[
        bool, typer.Option("--uninstall", help="Also remove the connection and its switches (what it wrote stays).")
    ] = False,
    delete_data: Annotated[
        bool, typer.Option("--delete-data", help="With --uninstall: also remove what it wrote, as one undoable batch.")
    ] = False,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Revoke the connection's secret: that client can no longer connect over HTTP (its data stays)."""
    from notochord.errors import KnowledgeValidationError
    from notochord.mcp_server.connections import Connections

    with open_space(data_dir) as space:
        if delete_data and not uninstall:
            with reporting():
                raise KnowledgeValidationError("--delete-data needs --uninstall")
        report = Connections(space).revoke(name, uninstall=uninstall, delete_data=delete_data)
    result = {"name": name, "secret": "revoked", "uninstalled": uninstall, "deletedData": delete_data}
    if report is not None:
        result["runId"] = report.run_id
    text = (
        f"revoked the secret of {name}: it can no longer connect over HTTP, and a running notochord serve "
        "ends the sessions it opened (on its next request, within a minute at the latest)"
    )
    if uninstall:
        text += "; the connection is uninstalled" + (" and what it wrote removed" if delete_data else "")
    else:
        text += f"; its switches and what it wrote stay (remove it with: notochord mcp revoke {name} --uninstall)"
    emit(result, as_json=as_json, text=text)


@app.command("serve")
def serve(
    connection: Annotated[str, typer.Option("--connection", help="The connection to serve (see: notochord mcp list).")],
    data_dir: DataDir = None,
) -> None:
    """Speak MCP over stdin/stdout as one connection (what a desktop client launches)."""
    from notochord.mcp_server.stdio import serve_stdio

    with opened(data_dir) as nc:
        serve_stdio(nc, connection)
