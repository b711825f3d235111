"""Callers of one gem's SQL database never share a transaction, and a run ends without waiting
(P-STOR-02, P-STOR-03).

- Outside a registered run (a SOP or the host reaching ``ctx.storage.sql`` directly) callers share
  the gem store's connection. A ``BEGIN`` there is its caller's alone: another caller's statements
  wait until that transaction ends (or are told the database is busy), never land inside it, never
  see its uncommitted rows and never go with its ``ROLLBACK`` (a transaction left resting is
  another matter: ``test_gem_sql_left_open.py``).
- A run's statement waiting for the database while another connection holds it is stopped as soon
  as the run ends; the end does not sit out the whole wait.

Ordering is shown with events, never with clocks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from notochord.errors import BusyError, ClosedError
from notochord.files import private_sql
from notochord.files.private import GemStore
from notochord.files.private_sql import GemSql
from notochord.gems.folders import GemFolders
from notochord.gems.run_sql import RunSql

KEY = bytes(range(32))
GEM = "acme.notes"
HANG_GUARD = 60.0  # seconds before a thread that never ends fails the test instead of hanging it


@pytest.fixture
def folders(tmp_path: Path) -> Iterator[GemFolders]:
    opened = GemFolders(tmp_path / "data", "personal")
    opened.sql(GEM, "setup", key=KEY).execute("CREATE TABLE items (name TEXT)")
    yield opened
    opened.close()


def _committed(folders: GemFolders) -> list[str]:
    """What another connection reads: the committed rows only."""
    with GemStore(folders.folder(GEM), key=KEY) as other:
        return [row[0] for row in other.sql.query_rows("SELECT name FROM items ORDER BY name")]


class _Worker(threading.Thread):
    """Runs one call in a thread of its own and keeps what it returned or raised."""

    def __init__(self, call: Callable[[], Any], done: threading.Event | None = None) -> None:
        super().__init__(daemon=True)  # a worker a defect leaves blocked must not hold the test run
        self._call = call
        self._done = done
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self._call()
        except BaseException as exc:  # the test reads what the call raised
            self.error = exc
        finally:
            if self._done is not None:
                self._done.set()

    def finish(self) -> None:
        self.join(HANG_GUARD)
        assert not self.is_alive(), "the call never returned"


def _in_thread(call: Callable[[], Any]) -> _Worker:
    """``call`` made in a thread of its own, as each tool call reaches the store, and finished."""
    worker = _Worker(call)
    worker.start()
    worker.finish()
    return worker


# -- callers outside a run -------------------------------------------------------------------------


def test_a_callers_statement_never_lands_in_another_callers_open_transaction(
    folders: GemFolders, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Caller B's autocommitted insert, sent while caller A's ``BEGIN`` is open, is told the
    database is busy; it used to join A's transaction and vanish with A's ``ROLLBACK``."""
    monkeypatch.setattr(private_sql, "_BUSY_SECONDS", 0.0)  # no waiting: the answer comes at once
    a, b = folders.sql(GEM, "caller-a", key=KEY), folders.sql(GEM, "caller-b", key=KEY)
    _in_thread(lambda: a.execute("BEGIN"))
    _in_thread(lambda: a.execute("INSERT INTO items VALUES ('a')"))
    assert _in_thread(lambda: a.query_rows("SELECT name FROM items")).result == [["a"]]
    inserting = _in_thread(lambda: b.execute("INSERT INTO items VALUES ('b')"))
    assert isinstance(inserting.error, BusyError), inserting.error
    message = str(inserting.error)
    assert "holds a transaction open" in message and "changed nothing" in message and "try again" in message
    reading = _in_thread(lambda: b.query_rows("SELECT name FROM items"))
    assert isinstance(reading.error, BusyError), f"B read {reading.result}, A's uncommitted row"
    a.execute("ROLLBACK")
    b.execute("INSERT INTO items VALUES ('b')")
    assert _committed(folders) == ["b"]


class _SeenWaiting:
    """Stands in for the store's condition and tells when a caller starts to wait on it."""

    def __init__(self, reached: threading.Event) -> None:
        self._reached = reached

    def make(self, lock: Any) -> threading.Condition:
        reached = self._reached

        class Spy(threading.Condition):
            def wait(self, timeout: float | None = None) -> bool:
                reached.set()
                return super().wait(timeout)

        return Spy(lock)


def test_a_caller_waits_for_another_callers_transaction_and_then_runs_alone(
    folders: GemFolders, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two threads: A holds a transaction; B's insert waits until A's ``ROLLBACK``, then commits
    on its own. B is known to be waiting (or, wrongly, done) before A rolls back."""
    reached = threading.Event()
    monkeypatch.setattr(private_sql, "Condition", _SeenWaiting(reached).make, raising=False)
    monkeypatch.setattr(private_sql, "_BUSY_SECONDS", 3600.0)  # B waits as long as A needs
    monkeypatch.setattr(private_sql, "IDLE_TRANSACTION_SECONDS", 3600.0)  # and A's rests never lapse
    folders.close()
    folders = GemFolders(folders.data_dir, folders.space_name)
    a, b = folders.sql(GEM, "caller-a", key=KEY), folders.sql(GEM, "caller-b", key=KEY)
    try:
        a.execute("BEGIN")
        a.execute("INSERT INTO items VALUES ('a')")
        inserting = _Worker(lambda: b.execute("INSERT INTO items VALUES ('b')"), done=reached)
        inserting.start()
        assert reached.wait(HANG_GUARD), "B neither waited nor finished"
        a.execute("INSERT INTO items VALUES ('a2')")
        assert a.query_rows("SELECT name FROM items ORDER BY name") == [["a"], ["a2"]]
        a.execute("ROLLBACK")
        inserting.finish()
        assert inserting.error is None, inserting.error
        assert _committed(folders) == ["b"]
    finally:
        folders.close()


def test_a_callers_transaction_still_spans_its_own_calls(folders: GemFolders) -> None:
    a = folders.sql(GEM, "caller-a", key=KEY)
    a.execute("BEGIN")
    a.execute("INSERT INTO items VALUES ('a')")
    assert _committed(folders) == []
    a.execute("COMMIT")
    assert _committed(folders) == ["a"]
    assert folders.sql(GEM, "caller-b", key=KEY).query_rows("SELECT name FROM items") == [["a"]]


def test_closing_wakes_a_caller_waiting_for_another_callers_transaction(
    folders: GemFolders, monkeypatch: pytest.MonkeyPatch
) -> None:
    reached = threading.Event()
    monkeypatch.setattr(private_sql, "Condition", _SeenWaiting(reached).make, raising=False)
    monkeypatch.setattr(private_sql, "_BUSY_SECONDS", 3600.0)
    monkeypatch.setattr(private_sql, "IDLE_TRANSACTION_SECONDS", 3600.0)
    folders.close()
    folders = GemFolders(folders.data_dir, folders.space_name)
    a, b = folders.sql(GEM, "caller-a", key=KEY), folders.sql(GEM, "caller-b", key=KEY)
    a.execute("BEGIN")
    waiting = _Worker(lambda: b.query_rows("SELECT name FROM items"), done=reached)
    waiting.start()
    assert reached.wait(HANG_GUARD)
    closing = _Worker(folders.close)
    closing.start()
    closing.finish()
    waiting.finish()
    assert isinstance(waiting.error, ClosedError), waiting.error


# -- the end of a run ------------------------------------------------------------------------------


def test_a_run_ending_while_its_statement_waits_for_the_database_ends_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another connection (another run, another process of the gem) holds the write lock; the run's
    insert waits for it. Ending the run stops that wait: the run's statement is refused as closed
    while the other connection still holds its lock, so the end did not wait for its release."""
    monkeypatch.setattr(private_sql, "_BUSY_SECONDS", 3600.0)  # a wait the end would sit out
    folder = tmp_path / "gem"
    holder = GemStore(folder, key=KEY, idle_transaction_seconds=3600.0)  # its lock is never taken back
    holder.sql.execute("CREATE TABLE items (name TEXT)")
    holder.sql.execute("BEGIN IMMEDIATE")
    run = RunSql(folder, key=KEY)
    started = threading.Event()
    conn = run._db._conn  # the statement's start is seen from inside the engine
    assert conn is not None
    conn.set_trace_callback(lambda sql: started.set() if sql.startswith("INSERT") else None)
    events: list[str] = []
    try:
        inserting = _Worker(lambda: run.sql.execute("INSERT INTO items VALUES ('run')"))
        inserting.start()
        assert started.wait(HANG_GUARD)
        ending = _Worker(run.close)
        ending.start()
        ending.finish()
        events.append("run ended")
        inserting.finish()
        events.append(f"statement: {type(inserting.error).__name__}")
        assert holder._sql_db._conn is not None and holder._sql_db._conn.in_transaction
        events.append("lock still held")
    finally:
        holder.sql.execute("ROLLBACK")
        holder.close()
    assert events == ["run ended", "statement: ClosedError", "lock still held"]
    assert "was closed while a statement ran" in str(inserting.error)


def test_a_statement_still_waits_for_the_database_while_its_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait is not cut short by itself: a lock released during the wait lets the statement in."""
    monkeypatch.setattr(private_sql, "_BUSY_SECONDS", 3600.0)
    folder = tmp_path / "gem"
    with GemStore(folder, key=KEY, idle_transaction_seconds=3600.0) as holder:
        holder.sql.execute("CREATE TABLE items (name TEXT)")
        holder.sql.execute("BEGIN IMMEDIATE")
        run = RunSql(folder, key=KEY)
        started = threading.Event()
        conn = run._db._conn
        assert conn is not None
        conn.set_trace_callback(lambda sql: started.set() if sql.startswith("INSERT") else None)
        inserting = _Worker(lambda: run.sql.execute("INSERT INTO items VALUES ('run')"))
        inserting.start()
        assert started.wait(HANG_GUARD)
        holder.sql.execute("COMMIT")
        inserting.finish()
        run.close()
        assert inserting.error is None, inserting.error
        assert holder.sql.query_rows("SELECT name FROM items") == [["run"]]


def test_the_gem_stores_own_sql_is_one_caller(tmp_path: Path) -> None:
    """``GemStore.sql`` keeps working as before: one caller whose transaction spans its calls."""
    with GemStore(tmp_path / "gem", key=KEY) as store:
        sql: GemSql = store.sql
        sql.execute("CREATE TABLE t (x)")
        sql.execute("BEGIN")
        sql.execute("INSERT INTO t VALUES (1)")
        sql.execute("COMMIT")
        assert sql.query_rows("SELECT x FROM t") == [[1]]
