"""``notochord changes``: the change log, and undo."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, asked_for, emit, open_space, printable
from notochord.cli.numbers import ID, LIMIT
from notochord.errors import KnowledgeNotFoundError
from notochord.knowledge.arguments import counted

app = typer.Typer(help="Everything written, by whom, and undo.", no_args_is_help=True)

_SEE_THEM = "see them with: notochord changes list"


@app.command("list")
def list_changes(
    since: Annotated[str | None, typer.Option(help="A date (YYYY-MM-DD, local) or ISO time.")] = None,
    status: Annotated[str | None, typer.Option(help="applied, conflict or reverted.")] = None,
    run_id: Annotated[str | None, typer.Option("--run", help="Only this run.")] = None,
    actor: Annotated[str | None, typer.Option(help="user, assistant or gem:<id>.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.", parser=LIMIT)] = 50,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """List changes, newest first."""
    with open_space(data_dir, org) as space:
        found = space.changes.list(since=since, status=status, run_id=run_id, actor=actor, limit=limit)
    lines: list[str] = []
    for c in found:
        lines.append(
            f"{c.id:>6}  {c.created_at}  {c.status:<9} {printable(c.actor):<16} {c.op:<22} {printable(c.summary)}"
            + (f"  [run {printable(c.run_id)}]" if c.run_id else "")
        )
        if c.status == "conflict":
            proposed = c.proposed
            if proposed is None and isinstance(c.after, dict) and c.after.get("object") is not None:
                proposed = f"entity {c.after['object']}"
            lines.append(f"{'':>8}current: {_show(c.before)}   proposed: {_show(proposed)}")
            lines.append(f"{'':>8}settle with: notochord changes resolve {c.id} --take-theirs | --keep-mine")
    emit(found, as_json=as_json, text="\n".join(lines) or "(no changes)")


def _show(value: Any) -> str:
    if value is None:
        return "(no value)"
    return printable(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


@app.command("revert")
def revert(
    change_id: Annotated[int | None, typer.Argument(help="The change to undo.", parser=ID)] = None,
    run_id: Annotated[str | None, typer.Option("--run", help="Undo every change of this run instead.")] = None,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Undo one change, or a whole run (exit code 6 when a later change builds on it).

    A later change that replaced what it wrote, or added to what it made, must be undone first;
    --run undoes a run's changes newest first. A run id that no change carries is not found (exit
    code 3), so a mistyped id never looks like a run undone before.
    """
    if (change_id is None) == (run_id is None):
        raise typer.BadParameter("give a change id or --run, not both")
    with open_space(data_dir, org) as space, asked_for("change", change_id, _SEE_THEM):
        # a run with no change to undo, even one the run record knows, is named as such here, with
        # where to find run ids (the store reverts a recorded run that wrote nothing as zero changes)
        if run_id is not None and not space.changes.list(run_id=run_id, limit=1):
            raise KnowledgeNotFoundError(
                "change of run", f"{run_id!r}; see the runs of recent changes with: notochord changes list"
            )
        result = space.changes.revert(change_id, run_id=run_id)
    emit(result, as_json=as_json, text=f"{result.status}: {counted(result.count, 'change')}")


@app.command("resolve")
def resolve(
    change_id: Annotated[
        int, typer.Argument(help="The conflict to settle (see changes list --status conflict).", parser=ID)
    ],
    take_theirs: Annotated[bool, typer.Option("--take-theirs", help="Take the proposed value as yours.")] = False,
    keep_mine: Annotated[bool, typer.Option("--keep-mine", help="Keep the current value.")] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Settle a conflict: take the proposed value or keep yours (undo with changes revert)."""
    if take_theirs == keep_mine:
        raise typer.BadParameter("give exactly one of --take-theirs or --keep-mine")
    with open_space(data_dir, org) as space, asked_for("change", change_id, _SEE_THEM):
        outcome = space.changes.resolve(change_id, take="theirs" if take_theirs else "mine")
        summary = space.changes.get(outcome.change_id).summary
    emit(outcome, as_json=as_json, text=f"{printable(summary)} (change {outcome.change_id})")
