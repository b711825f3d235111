"""``notochord check``: verify that everything derived agrees with its source, and rebuild it on request.

Rules:

- Every space on disk is checked (``--org ID`` checks only that organization's space): full-text
  rows, chunks and document bodies, vectors and the text they were computed from, the change log
  and the quota counters (:mod:`notochord.knowledge.check`).
- ``--repair`` rebuilds what is derived and checks again. Vectors it drops are embedded again by
  ``notochord reindex`` or by a running ``notochord serve``.
- Exit code 0 when every checked space is consistent (after repair, with ``--repair``), and
  :data:`PROBLEMS_FOUND` when a problem is left; usage and storage errors keep their usual codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, opened
from notochord.knowledge.arguments import counted

if TYPE_CHECKING:
    from notochord.knowledge.check import Problem

__all__ = ["PROBLEMS_FOUND", "check_command"]

PROBLEMS_FOUND = 9


def _line(problem: Problem) -> str:
    fix = "" if problem.repairable else "  (not repairable: the change log is the record)"
    return f"  {problem.kind:<24} {problem.target:<24} {problem.detail}{fix}"


def check_command(
    repair_: Annotated[
        bool, typer.Option("--repair", help="Rebuild what is derived (indexes, chunks, vectors, counters).")
    ] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Check that indexes, vectors and counters agree with the documents and changes they come from."""
    # loaded here, not at import, so that every other command starts without it
    from notochord.knowledge.check import check, repair

    reports: list[dict[str, Any]] = []
    lines: list[str] = []
    with opened(data_dir) as nc:
        names = [f"org:{org}"] if org is not None else (nc.spaces() or ["personal"])
        for name in names:
            space = nc.personal if name == "personal" else nc.org(name.removeprefix("org:"))
            problems = check(space.core)
            repaired: list[Problem] = []
            if repair_ and problems:
                repaired = repair(space.core, problems)
                problems = check(space.core)
            pending = space.index.pending()
            reports.append(
                {
                    "space": space.name,
                    "problems": [p.to_json() for p in problems],
                    "repaired": [p.to_json() for p in repaired],
                    "pending": pending,
                }
            )
            if repaired:
                lines.append(f"{space.name}: repaired {counted(len(repaired), 'problem')}")
                lines += [_line(p) for p in repaired]
            if problems:
                lines.append(f"{space.name}: {counted(len(problems), 'problem')}")
                lines += [_line(p) for p in problems]
            elif not repaired:
                lines.append(f"{space.name}: consistent")
            if repaired and pending:
                lines.append(
                    f"  {counted(pending, 'passage')} {'waits' if pending == 1 else 'wait'} to be embedded again: "
                    "run notochord reindex" + (f" --org {org}" if org else "")
                )
    clean = all(not r["problems"] for r in reports)
    if not clean and not repair_:
        lines.append("rebuild what is derived with: notochord check --repair" + (f" --org {org}" if org else ""))
    emit({"clean": clean, "spaces": reports}, as_json=as_json, text="\n".join(lines))
    if not clean:
        raise typer.Exit(PROBLEMS_FOUND)
