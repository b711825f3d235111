"""``notochord files``: what gems changed in a folder, undoing a run, and a gem's working folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, opened
from notochord.clock import iso_utc
from notochord.files.history import Change
from notochord.gems.api.files import file_changes, rollback_run
from notochord.gems.folders import GemFolders

app = typer.Typer(
    help="See and undo what gems changed in your folders; choose a gem's working folder.",
    no_args_is_help=True,
)

Folder = Annotated[
    Path,
    typer.Argument(help="The conversation's folder (or the working folder chosen for a gem).", show_default=False),
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
        "status": change.status,
    }


@app.command("history")
def history(
    folder: Folder,
    run: Annotated[str | None, typer.Option("--run", help="Only the changes of this run.")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """List the changes gems made in a folder, oldest first."""
    with opened(data_dir) as nc:
        changes = [_change(c) for c in file_changes(nc.data_dir, folder.resolve(), run_id=run)]
    lines = [
        f"{c['at']}  {c['runId']}  {c['actor']:<16} {c['op']:<9} {c['path']}"
        + (f" -> {c['to']}" if c["to"] else "")
        + ("" if c["status"] == "applied" else f"  ({c['status'].replace('_', ' ')})")
        for c in changes
    ]
    emit(changes, as_json=as_json, text="\n".join(lines) or "(no changes recorded)")


@app.command("rollback")
def rollback(
    folder: Folder,
    run: Annotated[str, typer.Argument(help="The run whose changes to undo.")],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Restore the files a run changed; files changed since by anything else are left alone."""
    with opened(data_dir) as nc:
        report = rollback_run(nc.data_dir, folder.resolve(), run, clock=nc.clock)
    result = {"runId": report.run_id, "restored": list(report.restored), "skipped": list(report.skipped)}
    lines = [f"restored {p}" for p in report.restored]
    lines += [f"skipped  {p} (changed since)" for p in report.skipped]
    emit(result, as_json=as_json, text="\n".join(lines) or f"run {run} changed nothing to restore")


@app.command("working-folder")
def working_folder(
    gem_id: Annotated[str, typer.Argument(help="The gem's id.")],
    path: Annotated[
        Path | None, typer.Argument(help="The folder to choose; leave out to show the current one.")
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
        space = nc.org(org) if org else nc.personal
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
    text = f"working folder of {gem_id} {verb} {shown}" if shown else f"{gem_id} has no working folder"
    emit({"gem": gem_id, "workingFolder": shown}, as_json=as_json, text=text)
