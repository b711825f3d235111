"""``notochord check``: verify that everything derived agrees with its source, and rebuild it on request.

Rules:

- Every space on disk is checked (``--org ID`` checks only that organization's space): full-text
  rows, chunks and document bodies, vectors and the text they were computed from, the change log
  and the quota counters (:mod:`notochord.knowledge.check`).
- ``--repair`` rebuilds what is derived and checks again. Vectors it drops are embedded again by
  ``notochord reindex`` or by a running ``notochord serve``.
- A space that cannot be opened or read (a damaged file, a newer schema, another program's
  database) is a problem of that space, named with what is wrong: the others are still checked,
  since the message of every other command sends the user here to find out what is wrong.
- ``notochord check --repair`` is suggested only when a problem found is one it repairs.
- Exit code 0 when every checked space is consistent (after repair, with ``--repair``), and
  :data:`PROBLEMS_FOUND` when a problem is left; usage and storage errors keep their usual codes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, opened
from notochord.errors import StorageError, StorageFullError
from notochord.knowledge.arguments import counted

if TYPE_CHECKING:
    import notochord
    from notochord.knowledge.check import Problem
    from notochord.knowledge.core import KnowledgeCore

__all__ = ["PROBLEMS_FOUND", "check_command"]

PROBLEMS_FOUND = 9


def _line(problem: Problem) -> str:
    # an unreadable space's detail says itself what to do; the other problems no repair touches are
    # the change log's
    kept = not problem.repairable and problem.kind != "space_unreadable"
    fix = "  (not repairable: the change log is the record)" if kept else ""
    return f"  {problem.kind:<24} {problem.target:<24} {problem.detail}{fix}"


def _where(nc: notochord.Notochord, name: str) -> str:
    """The file (or the database, password hidden) that holds the space ``name``, for a message."""
    from notochord.db import postgres

    try:
        store = dict(nc.space_stores()).get(name)
    except StorageError:
        return name
    if isinstance(store, str):
        return postgres.shown_url(store)
    return name if store is None else str(store)


def _checked(
    nc: notochord.Notochord, name: str, check: Callable[[KnowledgeCore], list[Problem]]
) -> tuple[notochord.Space, list[Problem]] | Problem:
    """The space called ``name`` and its problems, or the one problem that it cannot be opened or read."""
    from notochord.knowledge.check import Problem

    try:
        space = nc.space(name)
        return space, check(space.core)
    except StorageFullError:
        raise  # the disk, not the space: exit 8 as everywhere
    except StorageError as error:
        where = _where(nc, name)
        said = error.message if where in error.message else f"{where}: {error.message}"
        return Problem("space_unreadable", name, said)


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
    from notochord.knowledge.check import Problem, check, repair

    reports: list[dict[str, Any]] = []
    lines: list[str] = []
    repairable = False
    with opened(data_dir) as nc:
        names = [f"org:{org}"] if org is not None else (nc.spaces() or ["personal"])
        for name in names:
            found = _checked(nc, name, check)
            if isinstance(found, Problem):
                reports.append({"space": name, "problems": [found.to_json()], "repaired": [], "pending": None})
                lines += [f"{name}: 1 problem", _line(found)]
                continue
            space, problems = found
            repaired: list[Problem] = []
            if repair_ and problems:
                repaired = repair(space.core, problems)
                problems = check(space.core)
            repairable = repairable or any(p.repairable for p in problems)
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
    if repairable and not repair_:
        lines.append("rebuild what is derived with: notochord check --repair" + (f" --org {org}" if org else ""))
    emit({"clean": clean, "spaces": reports}, as_json=as_json, text="\n".join(lines))
    if not clean:
        raise typer.Exit(PROBLEMS_FOUND)
