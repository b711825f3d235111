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
- Ctrl-C exits 130 saying where it stopped: checking changes nothing; each space is repaired in one
  transaction, so the spaces repaired before stay repaired, the one being repaired is left as it
  was, and running the same command again is safe. Sources (documents, facts, the change log) are
  never written by a repair.
- Exit code 0 when every checked space is consistent (after repair, with ``--repair``), and
  :data:`PROBLEMS_FOUND` when a problem is left; usage and storage errors keep their usual codes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, interrupted, listed_space, opened
from notochord.errors import StorageError, StorageFullError, StoreLockedError, StoreUnreachableError
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
        space = listed_space(nc, name)
        return space, check(space.core)
    except (StorageFullError, StoreUnreachableError, StoreLockedError):
        raise  # the disk, the server or another process, not the space: its own exit code, as everywhere
    except StorageError as error:
        where = _where(nc, name)
        said = error.message if where in error.message else f"{where}: {error.message}"
        return Problem("space_unreadable", name, said)


@dataclass
class _Run:
    """What a run of ``check`` has found and done so far, space by space."""

    repair: bool
    org: str | None
    reports: list[dict[str, Any]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    repairable: bool = False
    repaired: list[str] = field(default_factory=list)
    """The spaces a repair was committed in."""
    repairing: str | None = None
    """The space being repaired now (its one transaction not committed yet)."""

    @property
    def again(self) -> str:
        return "notochord check" + (" --repair" if self.repair else "") + (f" --org {self.org}" if self.org else "")

    def space(self, nc: notochord.Notochord, name: str) -> None:
        """Check (and repair) the space ``name``; add its report and its lines."""
        from notochord.knowledge.check import Problem, check, repair

        found = _checked(nc, name, check)
        if isinstance(found, Problem):
            self.reports.append({"space": name, "problems": [found.to_json()], "repaired": [], "pending": None})
            self.lines += [f"{name}: 1 problem", _line(found)]
            return
        space, problems = found
        repaired: list[Problem] = []
        if self.repair and problems:
            self.repairing = name
            repaired = repair(space.core, problems)
            self.repairing = None
            if repaired:
                self.repaired.append(name)
            problems = check(space.core)
        self.repairable = self.repairable or any(p.repairable for p in problems)
        pending = space.index.pending()
        self.reports.append(
            {
                "space": space.name,
                "problems": [p.to_json() for p in problems],
                "repaired": [p.to_json() for p in repaired],
                "pending": pending,
            }
        )
        if repaired:
            self.lines.append(f"{space.name}: repaired {counted(len(repaired), 'problem')}")
            self.lines += [_line(p) for p in repaired]
        if problems:
            self.lines.append(f"{space.name}: {counted(len(problems), 'problem')}")
            self.lines += [_line(p) for p in problems]
        elif not repaired:
            self.lines.append(f"{space.name}: consistent")
        if repaired and pending:
            self.lines.append(
                f"  {counted(pending, 'passage')} {'waits' if pending == 1 else 'wait'} to be embedded again: "
                "run notochord reindex" + (f" --org {self.org}" if self.org else "")
            )

    def interrupted(self, name: str) -> NoReturn:
        """After Ctrl-C while at the space ``name``: what stays, what was undone, what to run."""
        if self.repairing is None:
            repaired = f" ({', '.join(self.repaired)} stayed repaired)" if self.repaired else ""
            interrupted(
                f"check was interrupted while checking {name}: nothing was changed{repaired}; run {self.again} again"
            )
        kept = self.repaired
        done = f"{', '.join(kept)} {'stays' if len(kept) == 1 else 'stay'} repaired; " if kept else ""
        interrupted(
            f"check --repair was interrupted while repairing {name}: {done}the repair of {name} is one "
            "transaction and was undone, and documents, facts and the change log were not changed. "
            f"It is safe to run {self.again} again"
        )


def check_command(
    repair_: Annotated[
        bool, typer.Option("--repair", help="Rebuild what is derived (indexes, chunks, vectors, counters).")
    ] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Check that indexes, vectors and counters agree with the documents and changes they come from."""
    run = _Run(repair=repair_, org=org)
    with opened(data_dir) as nc:
        name = "the vault"
        try:
            for name in [f"org:{org}"] if org is not None else (nc.spaces() or ["personal"]):
                run.space(nc, name)
        except KeyboardInterrupt:
            run.interrupted(name)
    clean = all(not r["problems"] for r in run.reports)
    if run.repairable and not repair_:
        run.lines.append("rebuild what is derived with: notochord check --repair" + (f" --org {org}" if org else ""))
    emit({"clean": clean, "spaces": run.reports}, as_json=as_json, text="\n".join(run.lines))
    if not clean:
        raise typer.Exit(PROBLEMS_FOUND)
