"""A transaction begun outside a run and then left idle does not hold the gem's database for good
(P-STOR-02, P-STOR-03).

Outside a registered run (a SOP calling ``storage.sql`` directly, or the host) no end of a run rolls
back what a caller leaves open. Such a ``BEGIN`` used to hold the gem store's connection, and the
database file's write lock, until the vault closed: every other caller outside runs, and every run
that wrote, was told the database was busy. Now such a transaction is the caller's while it uses it;
once it has rested longer than the store's idle bound and someone else needs the database, it is
rolled back, and its caller is told so at its next statement, until it ends the transaction with
``ROLLBACK`` (or ``COMMIT``, which says nothing was committed). A run's own transactions are never
taken back: the run's end rolls them back.

The idle bound is given to the store: zero (lapsed as soon as the caller's statement returned) or
an hour (never, within a test). Ordering comes from the calls themselves, never from clocks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from notochord.errors import BusyError, FileError
from notochord.files import private_sql
from notochord.files.private import GemStore
from notochord.files.private_sql import GemSql
from notochord.gems.folders import GemFolders
from notochord.gems.run_sql import RunSql

KEY = bytes(range(32))
GEM = "acme.notes"
AT_ONCE = 0.0
"""An idle bound a transaction passes as soon as its caller's statement has returned."""
NEVER = 3600.0
"""An idle bound no test reaches."""


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement that finds the database held is answered at once instead of after 5 s."""
    monkeypatch.setattr(private_sql, "_BUSY_SECONDS", 0.0)


def _open(folder: Path, idle: float) -> GemStore:
    store = GemStore(folder, key=KEY, idle_transaction_seconds=idle)
    store.sql.execute("CREATE TABLE IF NOT EXISTS items (name TEXT)")
    return store


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "gem"


@pytest.fixture
def idle_store(folder: Path) -> Iterator[GemStore]:
    with _open(folder, AT_ONCE) as store:
        yield store


def _committed(folder: Path) -> list[str]:
    """What another connection reads: the committed rows only."""
    with GemStore(folder, key=KEY) as other:
        return [row[0] for row in other.sql.query_rows("SELECT name FROM items ORDER BY name")]


def _refusal(call: Callable[[], object]) -> str:
    with pytest.raises(FileError) as caught:
        call()
    return str(caught.value)


HOLDERS: dict[str, Callable[[GemStore], GemSql]] = {
    "a call outside any run": lambda store: store.sql_for("outside-a"),
    "the host's own": lambda store: store.sql,
}


# -- another caller outside runs -------------------------------------------------------------------


@pytest.mark.parametrize("holder", HOLDERS.values(), ids=HOLDERS.keys())
def test_a_transaction_left_idle_outside_a_run_is_rolled_back_for_the_next_caller(
    idle_store: GemStore, folder: Path, holder: Callable[[GemStore], GemSql]
) -> None:
    """P-STOR-03: B's insert goes through instead of being told the database is busy until the
    vault closes; A's uncommitted row goes with the rollback."""
    a, b = holder(idle_store), idle_store.sql_for("outside-b")
    a.execute("BEGIN")
    a.execute("INSERT INTO items VALUES ('a')")

    b.execute("INSERT INTO items VALUES ('b')")

    assert _committed(folder) == ["b"]
    assert b.query_rows("SELECT name FROM items") == [["b"]]


def test_the_caller_whose_transaction_was_rolled_back_is_told_until_it_ends_it(
    idle_store: GemStore, folder: Path
) -> None:
    """P-STOR-03: A's next statements are refused, changing nothing, rather than autocommitted
    one by one as if its transaction were still open; its ``ROLLBACK`` ends that, quietly."""
    a, b = idle_store.sql_for("outside-a"), idle_store.sql_for("outside-b")
    a.execute("BEGIN")
    a.execute("INSERT INTO items VALUES ('a1')")
    b.execute("INSERT INTO items VALUES ('b')")

    message = _refusal(lambda: a.execute("INSERT INTO items VALUES ('a2')"))
    assert "rolled back" in message and "changed nothing" in message and "ROLLBACK" in message
    assert "idle" in message or "rested" in message
    assert "a2" not in str(_committed(folder))
    assert "rolled back" in _refusal(lambda: a.query("SELECT name FROM items"))
    assert "rolled back" in _refusal(lambda: a.executemany("INSERT INTO items VALUES (?)", [["a3"]]))
    assert "rolled back" in _refusal(lambda: a.execute("BEGIN"))
    assert _committed(folder) == ["b"]

    assert a.execute("ROLLBACK").rowcount == -1
    a.execute("INSERT INTO items VALUES ('a4')")
    assert _committed(folder) == ["a4", "b"]


def test_a_commit_of_a_transaction_rolled_back_says_nothing_was_committed(idle_store: GemStore, folder: Path) -> None:
    """P-STOR-03: the ``COMMIT`` is refused in words, and ends the transaction all the same."""
    a, b = idle_store.sql_for("outside-a"), idle_store.sql_for("outside-b")
    a.execute("BEGIN")
    a.execute("INSERT INTO items VALUES ('a')")
    b.execute("INSERT INTO items VALUES ('b')")

    message = _refusal(lambda: a.execute("commit ;"))
    assert "not committed" in message and "rolled back" in message

    a.execute("INSERT INTO items VALUES ('a again')")
    assert _committed(folder) == ["a again", "b"]


def test_a_transaction_is_kept_while_no_one_else_needs_the_database(idle_store: GemStore, folder: Path) -> None:
    """P-STOR-03: resting alone past the bound takes nothing back; only another caller's need does."""
    a = idle_store.sql_for("outside-a")
    a.execute("BEGIN")
    a.execute("INSERT INTO items VALUES ('a1')")
    a.execute("INSERT INTO items VALUES ('a2')")
    a.execute("COMMIT")
    assert _committed(folder) == ["a1", "a2"]


class _Clock:
    """Stands in for the store's ``time``: seconds pass only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def _passing_time(clock: _Clock, waits: list[float]) -> Any:
    """A condition whose waits record how long they were asked to last, and let that time pass on
    ``clock`` at once instead of sleeping."""

    class PassingTime(threading.Condition):
        def wait(self, timeout: float | None = None) -> bool:
            assert timeout is not None
            waits.append(timeout)
            clock.now += timeout
            return False

    return PassingTime


def test_a_caller_waiting_for_a_resting_transaction_gets_in_when_its_lease_lapses(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-STOR-03: B, arriving while A's transaction has rested 4 s of its 10, looks again when the
    lease lapses (6 s on) rather than only at the end of its own wait, and goes in."""
    clock, waits = _Clock(), list[float]()
    monkeypatch.setattr(private_sql, "time", clock)
    monkeypatch.setattr(private_sql, "Condition", _passing_time(clock, waits))
    monkeypatch.setattr(private_sql, "_BUSY_SECONDS", 3600.0)
    with _open(folder, 10.0) as store:
        a, b = store.sql_for("outside-a"), store.sql_for("outside-b")
        a.execute("BEGIN")
        a.execute("INSERT INTO items VALUES ('a')")
        clock.now += 4.0

        b.execute("INSERT INTO items VALUES ('b')")

        assert waits == [6.0]
        assert "rolled back" in _refusal(lambda: a.execute("INSERT INTO items VALUES ('a2')"))
    assert _committed(folder) == ["b"]


def test_a_transaction_within_its_idle_bound_still_holds_the_database(folder: Path) -> None:
    """P-STOR-03: the caller that uses its transaction keeps it; the other is told to retry."""
    with _open(folder, NEVER) as store:
        a, b = store.sql_for("outside-a"), store.sql_for("outside-b")
        a.execute("BEGIN")
        a.execute("INSERT INTO items VALUES ('a')")
        with pytest.raises(BusyError, match="holds a transaction open"):
            b.execute("INSERT INTO items VALUES ('b')")
        a.execute("COMMIT")
        b.execute("INSERT INTO items VALUES ('b')")
    assert _committed(folder) == ["a", "b"]


def test_the_callers_a_gem_reaches_outside_runs_are_bound_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-STOR-03: through the gem's folders, as ``ctx.storage.sql`` of a ``ctx`` outside any
    registered run reaches the database, with the default bound made immediate."""
    monkeypatch.setattr(private_sql, "IDLE_TRANSACTION_SECONDS", AT_ONCE)
    folders = GemFolders(tmp_path / "data", "personal")
    try:
        folders.sql(GEM, "setup", key=KEY).execute("CREATE TABLE items (name TEXT)")
        left_open = folders.sql(GEM, "ctx-a", key=KEY)
        left_open.execute("BEGIN")
        left_open.execute("INSERT INTO items VALUES ('a')")
        folders.sql(GEM, "ctx-b", key=KEY).execute("INSERT INTO items VALUES ('b')")
        assert "rolled back" in _refusal(lambda: folders.sql(GEM, "ctx-a", key=KEY).execute("COMMIT"))
        assert _committed(folders.folder(GEM)) == ["b"]
    finally:
        folders.close()


# -- runs ------------------------------------------------------------------------------------------


def test_a_run_needing_the_file_takes_back_a_transaction_left_idle_outside_runs(
    idle_store: GemStore, folder: Path
) -> None:
    """P-STOR-02: a write lock left behind outside runs used to make every run's write busy until
    the vault closed; the run's write now goes through, and the idle caller is told."""
    host = idle_store.sql_for("outside-a")
    host.execute("BEGIN IMMEDIATE")
    host.execute("INSERT INTO items VALUES ('host')")
    run = RunSql(folder, key=KEY)
    try:
        run.sql.execute("INSERT INTO items VALUES ('run')")
    finally:
        run.close()
    assert _committed(folder) == ["run"]
    assert "rolled back" in _refusal(lambda: host.execute("COMMIT"))


def test_a_runs_own_transaction_is_never_taken_back(idle_store: GemStore, folder: Path) -> None:
    """P-STOR-02: a run's transaction lasts until the run commits, rolls back or ends, however long
    it rests: a caller outside runs that needs the file is told the database is busy."""
    run = RunSql(folder, key=KEY)
    try:
        run.sql.execute("BEGIN IMMEDIATE")
        run.sql.execute("INSERT INTO items VALUES ('run')")
        with pytest.raises(BusyError, match="try again"):
            idle_store.sql_for("outside-b").execute("INSERT INTO items VALUES ('b')")
        with pytest.raises(BusyError, match="try again"):
            idle_store.sql.execute("INSERT INTO items VALUES ('host')")
        run.sql.execute("COMMIT")
    finally:
        run.close()
    assert _committed(folder) == ["run"]


def test_one_runs_transaction_is_not_taken_back_by_another_run(folder: Path) -> None:
    """P-STOR-02: runs contend on the file as before, whatever the store's idle bound."""
    with _open(folder, AT_ONCE):
        first, second = RunSql(folder, key=KEY), RunSql(folder, key=KEY)
        try:
            first.sql.execute("BEGIN IMMEDIATE")
            first.sql.execute("INSERT INTO items VALUES ('first')")
            with pytest.raises(BusyError):
                second.sql.execute("INSERT INTO items VALUES ('second')")
            first.sql.execute("COMMIT")
        finally:
            first.close()
            second.close()
    assert _committed(folder) == ["first"]
