"""``notochord gem run`` and ``notochord runs``: run gem tools in their own processes, look back, undo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from notochord.cli.common import DataDir, JsonFlag, OrgOption, console, emit, open_space
from notochord.gems.runner import RunRecord

app = typer.Typer(help="Runs of gem tools: list, show, undo.", no_args_is_help=True)

# A failed run exits with the code its error would have in any other command.
_FAILURE_EXIT = {
    "E_VALIDATION": 2,
    "E_NOT_FOUND": 3,
    "E_PERMISSION": 4,
    "E_NET_DENIED": 4,
    "E_PERM_DENIED": 4,
    "E_QUOTA": 5,
}
_TIMEOUT_EXIT = 7
_CANCELLED_EXIT = 130


def _view(record: RunRecord) -> dict[str, Any]:
    return {
        "run": record.id,
        "gem": record.gem_id,
        "tool": record.tool,
        "status": record.status,
        "output": record.output,
        "error": record.error,
        "folder": record.folder,
        "conversation": record.conversation,
        "isolation": record.isolation,
        "startedAt": record.started_at,
        "finishedAt": record.finished_at,
    }


def run(
    gem_id: Annotated[str, typer.Argument(help="The gem's id.")],
    tool: Annotated[str | None, typer.Argument(help="The tool (may be left out when the gem has one).")] = None,
    input_json: Annotated[str, typer.Option("--input", help="The tool's input, as JSON.")] = "{}",
    conversation: Annotated[
        Path | None, typer.Option("--conversation", help="The conversation folder (workspace:) the run works in.")
    ] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Use this run id (a retry of that run).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds before the run is stopped.")] = 120.0,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Run one tool of an installed gem in its own process and print its result as JSON."""
    try:
        payload = json.loads(input_json)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"--input is not JSON: {exc.msg}") from exc
    with open_space(data_dir, org) as space:
        record = space.gems.runner.run_sync(
            gem_id, tool, input=payload, conversation=conversation, run_id=run_id, timeout=timeout
        )
    if as_json:
        emit(_view(record), as_json=True)
    elif record.status == "succeeded":
        typer.echo(json.dumps(record.output, ensure_ascii=False, indent=2))
    if record.status != "succeeded":
        error = record.error or {}
        if not as_json:
            message = escape(str(error.get("message", record.status)))
            console.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
            console.print(
                f"run {record.id}: {record.status}; see it with notochord runs show {record.id}", highlight=False
            )
        if record.status == "timeout":
            raise typer.Exit(_TIMEOUT_EXIT)
        if record.status == "cancelled":
            raise typer.Exit(_CANCELLED_EXIT)
        raise typer.Exit(_FAILURE_EXIT.get(str(error.get("code")), 1))


@app.command("list")
def list_runs(
    gem: Annotated[str | None, typer.Option(help="Only this gem's runs.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 20,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """List runs, newest first."""
    with open_space(data_dir, org) as space:
        found = space.gems.runner.list(gem_id=gem, limit=limit)
    lines = [f"{r.started_at}  {r.status:<10} {r.gem_id}/{r.tool or '-':<12} {r.id}" for r in found]
    emit([_view(r) for r in found], as_json=as_json, text="\n".join(lines) or "(no runs)")


@app.command("show")
def show(
    run_id: Annotated[str, typer.Argument(help="The run id.")],
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Show one run: status, output or error, folder, isolation and the tool's log."""
    with open_space(data_dir, org) as space:
        record = space.gems.runner.get(run_id)
    if as_json:
        emit({**_view(record), "log": record.log}, as_json=True)
        return
    lines = [f"run {record.id}: {record.gem_id}/{record.tool} {record.status}", f"started {record.started_at}"]
    lines.append(f"output: {json.dumps(record.output, ensure_ascii=False)}")
    if record.error:
        lines.append(f"error: {record.error.get('message')}")
    if record.folder:
        lines.append(f"folder: {record.folder}")
    lines += [f"isolation: {note}" for note in record.isolation]
    if record.log:
        lines += ["log:", record.log.rstrip()]
    emit(None, as_json=False, text="\n".join(lines))


@app.command("undo")
def undo(
    run_id: Annotated[str, typer.Argument(help="The run id.")],
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Undo a run: revert its knowledge changes and roll back the files it changed."""
    with open_space(data_dir, org) as space:
        result = space.gems.runner.undo(run_id)
    knowledge = result["knowledge"]
    emit(result, as_json=as_json, text=f"run {run_id}: {knowledge['status']}, {knowledge['count']} change(s)")
