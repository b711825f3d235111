"""``notochord gem run`` and ``notochord runs``: run gem tools in their own processes, look back, undo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from notochord.cli.common import (
    DataDir,
    JsonFlag,
    OrgOption,
    console,
    emit,
    given_path,
    open_space,
    printable,
    printable_text,
)
from notochord.cli.numbers import LIMIT, seconds
from notochord.files.history import RollbackReport
from notochord.gems.runner import RUN_STATUSES, RunRecord, files_undone
from notochord.knowledge.arguments import counted

app = typer.Typer(help="Runs of gem tools: list, show, undo.", no_args_is_help=True)

# A failed run exits with the code its error would have in any other command.
_FAILURE_EXIT = {
    "E_VALIDATION": 2,
    "E_NOT_FOUND": 3,
    "E_PERMISSION": 4,
    "E_NET_DENIED": 4,
    "E_PERM_DENIED": 4,
    "E_QUOTA": 5,
    "E_BUSY": 10,
}
_TIMEOUT_EXIT = 7
_CANCELLED_EXIT = 130
_STATUS_WIDTH = max(len(status) for status in RUN_STATUSES)


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
        Path | None,
        typer.Option(
            "--conversation", help="The conversation folder (workspace:) the run works in.", parser=given_path
        ),
    ] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Use this run id (a retry of that run).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds before the run is stopped.", parser=seconds)] = 120.0,
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
        emit(None, as_json=False, text=json.dumps(record.output, ensure_ascii=False, indent=2))
    if record.status != "succeeded":
        error = record.error or {}
        if not as_json:
            message = escape(printable_text(str(error.get("message", record.status))))
            console.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
            shown = printable(record.id)
            # soft_wrap: a line broken inside the command would not paste back as one command
            console.print(
                f"run {shown}: {record.status}; see it with notochord runs show {shown}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        if record.status == "timeout":
            raise typer.Exit(_TIMEOUT_EXIT)
        if record.status == "cancelled":
            raise typer.Exit(_CANCELLED_EXIT)
        raise typer.Exit(_FAILURE_EXIT.get(str(error.get("code")), 1))


@app.command("list")
def list_runs(
    gem: Annotated[str | None, typer.Option(help="Only this gem's runs.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.", parser=LIMIT)] = 20,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """List runs, newest first."""
    with open_space(data_dir, org) as space:
        found = space.gems.runner.list(gem_id=gem, limit=limit)
    # the gem/tool column is as wide as its widest entry, so the run ids line up beneath each other
    tools = [f"{printable(r.gem_id)}/{printable(r.tool or '-')}" for r in found]
    width = max(map(len, tools), default=0)
    lines = [
        f"{r.started_at}  {r.status:<{_STATUS_WIDTH}} {tool:<{width}} {printable(r.id)}"
        for r, tool in zip(found, tools, strict=True)
    ]
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
    lines = [
        f"run {printable(record.id)}: {printable(record.gem_id)}/{printable(record.tool)} {record.status}",
        f"started {record.started_at}",
    ]
    lines.append(f"output: {printable(json.dumps(record.output, ensure_ascii=False))}")
    if record.error:
        lines.append(f"error: {printable(record.error.get('message'))}")
    if record.folder:
        lines.append(f"folder: {printable(record.folder)}")
    lines += [f"isolation: {printable(note)}" for note in record.isolation]
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
    """Undo a run: revert its knowledge changes and roll back the files it changed.

    A run that wrote nothing says so and changes nothing (--json: knowledge status no_changes); a
    run undone before answers already_reverted; an unknown run is not found (exit code 3).
    """
    with open_space(data_dir, org) as space:
        record = space.gems.runner.get(run_id)
        wrote_knowledge = bool(space.changes.list(run_id=run_id, limit=1))
        wrote_files = bool(record.conversation and space.files.history(record.conversation, run_id=run_id))
        if wrote_knowledge or wrote_files:
            result = space.gems.runner.undo(run_id)
        else:
            nothing = RollbackReport(run_id=run_id, restored=(), skipped=())
            result = {"run": run_id, "knowledge": None, "files": files_undone(nothing) if record.conversation else None}
    if not wrote_knowledge:
        # a run that wrote no knowledge has nothing there to undo: said as such, not as a count of none
        result["knowledge"] = {"status": "no_changes", "count": 0}
    emit(result, as_json=as_json, text=_undone(result, wrote_knowledge=wrote_knowledge, wrote_files=wrote_files))


def _undone(result: dict[str, Any], *, wrote_knowledge: bool, wrote_files: bool) -> str:
    """What ``runs undo`` did, in words: a line of what was undone, then each file left alone with
    why, as ``files rollback`` says it."""
    run = printable(result["run"])
    if not wrote_knowledge and not wrote_files:
        return f"run {run} made no changes; there is nothing to undo"
    parts: list[str] = []
    knowledge = result["knowledge"]
    if knowledge["status"] == "reverted":
        parts.append(f"reverted {counted(knowledge['count'], 'change')}")
    elif knowledge["status"] == "already_reverted":
        parts.append("its changes were already reverted")
    skipped_lines: list[str] = []
    if wrote_files:
        files = result["files"]
        restored, skipped = files["restored"], files["skipped"]
        if not restored and not skipped:
            parts.append("its files were already restored")
        if restored:
            parts.append(f"restored {counted(len(restored), 'file')}")
        if skipped:
            parts.append(f"left {counted(len(skipped), 'file')} alone")
            skipped_lines = [f"skipped  {printable(p)} ({printable(files['reasons'][p])})" for p in skipped]
    return "\n".join([f"run {run}: " + "; ".join(parts), *skipped_lines])
