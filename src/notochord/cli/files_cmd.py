"""``notochord files``: what gems changed in a folder, undoing a run, and a gem's working folder.

A folder that does not exist and has no recorded history, and a run with no recorded change in the
folder, are not found (exit code 3): the library answers both with an empty history, which on the
command line would read as "nothing to undo" when the folder or run id was mistyped. A folder
deleted since keeps its history, which can still be read and rolled back.

``files history`` ends with how much space the folder's saved versions take against their bound
(the ``file_history_max_bytes`` setting); ``--space`` shows only that (``--json``: one object).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, given_path, opened, printable
from notochord.clock import iso_utc
from notochord.errors import FileNotFoundInWorkspaceError
from notochord.files.history import Change, HistoryUsage
from notochord.files.versions import MAX_BYTES_SETTING
from notochord.gems.api.files import file_changes, history_usage, rollback_run
from notochord.gems.folders import GemFolders

app = typer.Typer(
    help="See and undo what gems changed in your folders; choose a gem's working folder.",
    no_args_is_help=True,
)

Folder = Annotated[
    Path,
    typer.Argument(
        help="The conversation's folder (or the working folder chosen for a gem).",
        show_default=False,
        parser=given_path,
    ),
]


def _change(change: Change) -> dict[str, Any]:
    return {
        "id": change.id,
        "runId": change.run_id,
        "actor": change.actor,
        "op": change.op,
        "path": change.display,
        "to": change.dest_display,
        "at": iso_utc(change.at),
        "oldVersionKept": change.old_in_history or change.old_in_trash,
        "oldVersionDropped": change.old_dropped,
        "status": change.status,
    }


def _usage(usage: HistoryUsage) -> dict[str, Any]:
    return {
        "usedBytes": usage.used_bytes,
        "maxBytes": usage.max_bytes,
        "versions": usage.versions,
        "droppedVersions": usage.dropped,
        "setting": MAX_BYTES_SETTING,
    }


def _size(count: int) -> str:
    """``count`` bytes for people: ``512 bytes``, ``1.5 KiB`` … ``2.0 GiB``."""
    if count < 1024:
        return f"{count} bytes"
    amount = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        amount /= 1024
        if amount < 1024 or unit == "TiB":
            break
    return f"{amount:.1f} {unit}"


def _usage_line(usage: HistoryUsage) -> str:
    line = (
        f"saved versions: {_size(usage.used_bytes)} of {_size(usage.max_bytes)} "
        f"({usage.versions} kept; bound set by {MAX_BYTES_SETTING})"
    )
    if usage.dropped:
        line += f"; {usage.dropped} earlier version(s) dropped to stay within it, oldest first"
    return line


@app.command("history")
def history(
    folder: Folder,
    run: Annotated[str | None, typer.Option("--run", help="Only the changes of this run.")] = None,
    space: Annotated[
        bool,
        typer.Option("--space", help="Only how much space the saved versions take, against their bound."),
    ] = False,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """List the changes gems made in a folder, oldest first, and the space their saved versions take."""
    with opened(data_dir) as nc:
        where = folder.resolve()
        _require_folder(nc.data_dir, where)
        usage = history_usage(nc.data_dir, where, max_bytes=nc.settings.file_history_max_bytes)
        changes = [] if space else [_change(c) for c in file_changes(nc.data_dir, where, run_id=run)]
    if space:
        emit(_usage(usage), as_json=as_json, text=_usage_line(usage))
        return
    lines = [
        f"{c['at']}  {printable(c['runId'])}  {printable(c['actor']):<16} {c['op']:<9} {printable(c['path'])}"
        + (f" -> {printable(c['to'])}" if c["to"] else "")
        + ("" if c["status"] == "applied" else f"  ({c['status'].replace('_', ' ')})")
        + ("  (earlier version dropped)" if c["oldVersionDropped"] else "")
        for c in changes
    ]
    text = "\n".join(lines) or "(no changes recorded)"
    emit(changes, as_json=as_json, text=f"{text}\n{_usage_line(usage)}")


@app.command("rollback")
def rollback(
    folder: Folder,
    run: Annotated[str, typer.Argument(help="The run whose changes to undo.")],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Restore the files a run changed; files changed since by anything else are left alone.

    Exit code 3 when the folder does not exist or the run changed nothing in it (files history
    lists the runs that did).
    """
    with opened(data_dir) as nc:
        where = folder.resolve()
        _require_folder(nc.data_dir, where)
        if not file_changes(nc.data_dir, where, run_id=run):
            raise FileNotFoundInWorkspaceError(
                f"no change of run {run!r} is recorded in {where}; "
                f"see the runs that changed it with: notochord files history {shlex.quote(str(where))}",
                path=str(where),
            )
        report = rollback_run(nc.data_dir, where, run, clock=nc.clock)
    reasons = {p: report.reason(p) or "changed since" for p in report.skipped}
    result = {
        "runId": report.run_id,
        "restored": list(report.restored),
        "skipped": list(report.skipped),
        "reasons": reasons,
    }
    lines = [f"restored {printable(p)}" for p in report.restored]
    lines += [f"skipped  {printable(p)} ({printable(why)})" for p, why in reasons.items()]
    emit(result, as_json=as_json, text="\n".join(lines) or f"run {printable(run)} changed nothing to restore")


def _require_folder(data_dir: Path, folder: Path) -> None:
    """Refuse a folder that is not there, unless gems changed it before it went (its history stays)."""
    if folder.is_dir() or file_changes(data_dir, folder):
        return
    if folder.exists():
        raise FileNotFoundInWorkspaceError(
            f"{folder} is a file, not a folder; give the conversation's folder (or a gem's working folder)",
            path=str(folder),
        )
    raise FileNotFoundInWorkspaceError(
        f"the folder {folder} does not exist; give the conversation's folder (or a gem's working folder)",
        path=str(folder),
    )


@app.command("working-folder")
def working_folder(
    gem_id: Annotated[str, typer.Argument(help="The gem's id.")],
    path: Annotated[
        Path | None, typer.Argument(help="The folder to choose; leave out to show the current one.", parser=given_path)
    ] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Choose no working folder.")] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Show or choose the folder a gem's scheduled SOPs see as workspace:."""
    if clear and path is not None:
        raise typer.BadParameter("give a folder or --clear, not both", param_hint="--clear")
    with opened(data_dir) as nc:
        space = nc.org(org) if org is not None else nc.personal
        found = space.gems.services.gem_folders
        folders = found if found is not None else GemFolders(nc.data_dir, space.name)
        space.gems.get(gem_id)
        if clear:
            chosen, verb = folders.set_working_folder(gem_id, None, core=space.core), "is now"
        elif path is not None:
            chosen, verb = folders.set_working_folder(gem_id, path.absolute(), core=space.core), "is now"
        else:
            chosen, verb = folders.working_folder(gem_id, core=space.core), "is"
    shown = str(chosen) if chosen is not None else None
    text = (
        f"working folder of {printable(gem_id)} {verb} {printable(shown)}"
        if shown
        else f"{printable(gem_id)} has no working folder"
    )
    emit({"gem": gem_id, "workingFolder": shown}, as_json=as_json, text=text)
