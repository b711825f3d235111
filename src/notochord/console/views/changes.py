"""The "View changes" page as data (K-UI-11): newest first, a page at a time, filtered.

A conflict row carries both values: the user's, which was kept, and the one the gem proposed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from notochord.app import Space
from notochord.console.forms import FieldValueError, shown, whole_number
from notochord.knowledge.records import Change

__all__ = ["PAGE_SIZE", "STATUSES", "ChangeRow", "ChangesPage", "Filters", "change_row", "changes_page", "gem_choices"]

PAGE_SIZE: Final = 50
STATUSES: Final = ("applied", "conflict", "reverted")
_MAX_PAGE: Final = 1000


@dataclass(frozen=True)
class Filters:
    gem: str | None = None
    status: str | None = None
    run: str | None = None
    since: str | None = None
    page: int = 1

    @staticmethod
    def parse(query: dict[str, str]) -> Filters:
        """Filters from a query string; blanks mean "any".

        Raises:
            FieldValueError: an unknown status or a page that is not a whole number from 1 to 1000.
        """

        def given(name: str) -> str | None:
            value = query.get(name, "").strip()
            return value or None

        status = given("status")
        if status is not None and status not in STATUSES:
            raise FieldValueError("refused_status", value=shown(status), statuses=", ".join(STATUSES))
        page_text = given("page") or "1"
        page = whole_number(page_text)
        if page is None or not 1 <= page <= _MAX_PAGE:
            raise FieldValueError("refused_page", value=shown(page_text), max=_MAX_PAGE)
        return Filters(gem=given("gem"), status=status, run=given("run"), since=given("since"), page=page)


@dataclass(frozen=True)
class ChangeRow:
    id: int
    created_at: str
    actor: str
    gem_id: str | None
    summary: str
    status: str
    run_id: str | None
    can_undo: bool
    yours: str | None
    theirs: str | None


@dataclass(frozen=True)
class ChangesPage:
    rows: list[ChangeRow]
    filters: Filters
    has_newer: bool
    has_older: bool
    gems: list[tuple[str, str]]


def _shown(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def change_row(c: Change) -> ChangeRow:
    """One change as a row of the list; a conflict carries both values."""
    return ChangeRow(
        id=c.id,
        created_at=c.created_at,
        actor=c.actor,
        gem_id=c.actor.removeprefix("gem:") if c.actor.startswith("gem:") else None,
        summary=c.summary,
        status=c.status,
        run_id=c.run_id,
        can_undo=c.status != "reverted" and c.op != "changes.revert",
        yours=_shown(c.before) if c.status == "conflict" else None,
        theirs=_shown(c.proposed) if c.status == "conflict" else None,
    )


def changes_page(space: Space, filters: Filters) -> ChangesPage:
    """One page of changes; raises ``KnowledgeValidationError`` for a malformed ``since``."""
    # one more than the page holds says whether an older page exists
    found = space.changes.list(
        since=filters.since,
        status=filters.status,
        run_id=filters.run,
        actor=f"gem:{filters.gem}" if filters.gem else None,
        limit=PAGE_SIZE + 1,
        offset=(filters.page - 1) * PAGE_SIZE,
    )
    rows = [change_row(c) for c in found[:PAGE_SIZE]]
    return ChangesPage(
        rows=rows,
        filters=filters,
        has_newer=filters.page > 1,
        has_older=len(found) > PAGE_SIZE,
        gems=gem_choices(space, filters.gem),
    )


def gem_choices(space: Space, chosen: str | None) -> list[tuple[str, str]]:
    """The gems a list can be filtered by, as ``(id, name)``: the installed ones, and the chosen one
    even when it is uninstalled (its changes and runs stay), so the filter never reads "any" while
    the list shows one gem's."""
    installed = [(g.id, g.name) for g in space.gems.list()]
    if chosen and chosen not in {gid for gid, _ in installed}:
        installed.append((chosen, chosen))
    return installed
