"""The console stays plain and fast as the vault grows: a list page runs the same
number of SQL statements whether it shows a few rows or many, so no page does a query per row
(no N+1). Tests never time pages; ``bench/console.py`` measures them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from console_harness import ConsoleServer
from runs_gem import GEM, installed, run_once

from notochord.errors import KnowledgeValidationError
from sent_sql import statements_sent


class StatementCounter:
    """A page's cost as the statements it sends, which unlike its time is the same on every machine."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    def of(self, client: httpx.Client, path: str) -> int:
        with statements_sent(self.engine) as sent:
            answer = client.get(path)
            assert answer.status_code == 200, f"{path}: {answer.status_code}"
        return len(sent)


@pytest.fixture
def counter(console: ConsoleServer) -> StatementCounter:
    return StatementCounter(console.space.core.store.engine)


def _gem(root: Path, n: int) -> Path:
    folder = root / f"gem{n}"
    folder.mkdir()
    manifest = {
        "id": f"gem{n}",
        "name": f"gem {n}",
        "version": "1.0.0",
        "permissions": {"knowledge": {"permissions": ["facts.read:self:pref.food.*"], "reason": "Cook"}},
        "tools": [],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def _same_count(
    console: ConsoleServer, counter: StatementCounter, path: str, grow: Callable[[int], None], *, few: int, many: int
) -> None:
    client = console.client()
    grow(few)
    before = counter.of(client, path)
    grow(many)
    after = counter.of(client, path)
    assert after == before, f"{path} ran {before} statements for {few} rows and {after} for {few + many}"


def test_the_gems_list_does_not_query_per_gem(
    console: ConsoleServer, counter: StatementCounter, tmp_path: Path
) -> None:
    """The Gems page reads every gem and every switch at once."""
    made: list[int] = []

    def grow(n: int) -> None:
        for _ in range(n):
            console.space.gems.install(_gem(tmp_path, len(made)))
            made.append(1)

    _same_count(console, counter, "/gems", grow, few=1, many=5)


def test_view_changes_does_not_query_per_change(console: ConsoleServer, counter: StatementCounter) -> None:
    """K-UI-11: one page of changes is one read of changes."""

    def grow(n: int) -> None:
        for i in range(n):
            console.space.as_assistant.facts.put(predicate="pref.food.like", value=f"dish {i} of {n}", run_id="run-1")

    _same_count(console, counter, "/changes", grow, few=2, many=20)
    _same_count(console, counter, "/changes?run=run-1&status=applied", grow, few=0, many=5)


def test_search_does_not_query_per_passage(console: ConsoleServer, counter: StatementCounter) -> None:
    """The hits of a search are read together."""

    def grow(n: int) -> None:
        for i in range(n):
            console.space.user.documents.upsert(collection="keep", title=f"Note {i} of {n}", body=f"apple pie {i}")

    # the first search builds the full-text index; the counted ones refresh it
    counter.of(console.client(), "/search?q=apple")
    _same_count(console, counter, "/search?q=apple", grow, few=2, many=15)


def test_runs_and_a_run_s_page_do_not_query_per_row(
    console: ConsoleServer, counter: StatementCounter, tmp_path: Path
) -> None:
    """The Runs list, a gem's page with its runs, and a run's changes."""
    installed(console.space, tmp_path)
    conversation = tmp_path / "conversation"
    run_id = run_once(console.space, conversation)

    def more_runs(n: int) -> None:
        for _ in range(n):
            run_once(console.space, conversation)

    _same_count(console, counter, "/runs", more_runs, few=0, many=2)
    _same_count(console, counter, f"/gems/{GEM}", more_runs, few=0, many=1)

    def more_changes(n: int) -> None:
        for i in range(n):
            console.space.as_assistant.facts.put(predicate="pref.food.like", value=f"stew {i}", run_id=run_id)

    _same_count(console, counter, f"/runs/{run_id}", more_changes, few=1, many=10)


def test_a_gem_s_page_does_not_query_per_fact(
    console: ConsoleServer, counter: StatementCounter, tmp_path: Path
) -> None:
    """K-UI-04: the values listed under a gem's switches are read per prefix, not per fact."""
    installed(console.space, tmp_path)

    def grow(n: int) -> None:
        for i in range(n):
            console.space.user.facts.put(predicate="pref.food.like", value=f"food {i} of {n}")

    _same_count(console, counter, f"/gems/{GEM}", grow, few=1, many=10)


def test_a_later_page_of_changes_reads_only_its_own_rows(console: ConsoleServer) -> None:
    """``space.changes.list(offset=…)`` skips the newer pages in SQL, so page ten
    of "View changes" costs what page one does; a bad offset is refused and reads nothing."""
    ids = [console.space.user.facts.put(predicate="identity.nickname", value=f"n{i}").change_id for i in range(7)]
    newest_first = ids[::-1]
    assert [c.id for c in console.space.changes.list(limit=3, offset=3)] == newest_first[3:6]
    assert [c.id for c in console.space.changes.list(offset=6)] == newest_first[6:]
    with pytest.raises(KnowledgeValidationError, match="offset -1 is not a whole number"):
        console.space.changes.list(offset=-1)
