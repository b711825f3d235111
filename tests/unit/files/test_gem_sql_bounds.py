"""A gem's SQL runs in notochord's process, so a hostile or careless statement is bounded (P-STOR-02,
P-STOR-11, K-UNINST-03).

- a statement that runs past its time is interrupted with an error that says so and what to do; the
  database changed nothing and answers the next statement;
- closing the store (an uninstall, the vault closing) interrupts a statement still running instead
  of waiting for it forever;
- a query whose rows hold more than one answer may carry is refused, not built in memory;
- a statement that builds values past the memory all gems' databases may hold together is stopped
  with an error that says so, and the gem cannot lift that ceiling.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from notochord.errors import ClosedError, FileError
from notochord.files.private import GEM_SQL_HEAP_BYTES, MAX_QUERY_BYTES, GemStore

KEY = bytes(range(32))
FOREVER = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GemStore]:
    with GemStore(tmp_path / "gem", key=KEY, statement_seconds=0.3) as opened:
        opened.sql.execute("CREATE TABLE t (x INTEGER)")
        opened.sql.execute("INSERT INTO t VALUES (1)")
        yield opened


def test_a_statement_that_runs_past_its_time_is_stopped_and_the_database_still_answers(store: GemStore) -> None:
    with pytest.raises(FileError) as caught:
        store.sql.query(FOREVER)
    assert str(caught.value) == (
        "a statement on the gem's SQL database ran longer than 0.3 s and was stopped, changing nothing; "
        "make it cheaper (an index, a LIMIT) or split the work"
    )
    assert store.sql.query("SELECT x FROM t") == [{"x": 1}]


def test_a_write_that_runs_past_its_time_changes_nothing(store: GemStore) -> None:
    with pytest.raises(FileError, match=r"ran longer than 0\.3 s"):
        store.sql.execute(
            "INSERT INTO t WITH RECURSIVE n(x) AS (SELECT 2 UNION ALL SELECT x + 1 FROM n) SELECT x FROM n"
        )
    assert store.sql.query("SELECT count(*) AS rows FROM t") == [{"rows": 1}]


def test_the_time_is_each_statements_own(store: GemStore) -> None:
    """Many quick statements in a row are never stopped: the clock starts again with each."""
    started = time.monotonic()
    while time.monotonic() - started < 0.6:
        store.sql.execute("INSERT INTO t VALUES (2)")
    assert store.sql.query("SELECT count(*) AS rows FROM t")[0]["rows"] > 1


def test_closing_the_store_stops_a_statement_still_running(tmp_path: Path) -> None:
    """An uninstall must not wait for a gem's endless query: closing interrupts it."""
    store = GemStore(tmp_path / "gem", key=KEY, statement_seconds=3600)
    failures: list[BaseException] = []

    def run_forever() -> None:
        try:
            store.sql.query(FOREVER)
        except BaseException as exc:  # the test reads what the statement raised
            failures.append(exc)

    worker = threading.Thread(target=run_forever)
    worker.start()
    time.sleep(0.2)  # the statement is running
    closer = threading.Thread(target=store.close)
    closer.start()
    closer.join(timeout=10)
    worker.join(timeout=10)
    assert not closer.is_alive() and not worker.is_alive(), "closing waited for the endless statement"
    assert len(failures) == 1 and isinstance(failures[0], ClosedError)
    assert "was closed while a statement ran" in str(failures[0])
    with pytest.raises(ClosedError):
        store.sql.query("SELECT 1")


def test_a_query_whose_rows_are_too_large_for_one_answer_is_refused(store: GemStore) -> None:
    mb = 1024 * 1024
    store.sql.execute("CREATE TABLE big (b BLOB)")
    store.sql.executemany("INSERT INTO big VALUES (zeroblob(?))", [(mb,)] * (MAX_QUERY_BYTES // mb + 1))
    with pytest.raises(FileError) as caught:
        store.sql.query("SELECT b FROM big")
    assert str(caught.value) == (
        "the rows of this query hold more than 32 MB, more than one answer may carry; "
        "select fewer columns or page through them with LIMIT and OFFSET"
    )
    assert len(store.sql.query_rows("SELECT b FROM big LIMIT 8")) == 8


def test_a_statement_building_values_past_the_memory_ceiling_is_stopped_in_words(store: GemStore) -> None:
    """``randomblob`` of 600 MB used to be built in notochord's memory, once per tool call in flight."""
    with pytest.raises(FileError) as caught:
        store.sql.query("SELECT length(randomblob(?)) AS n", [GEM_SQL_HEAP_BYTES + 100 * 1024 * 1024])
    assert str(caught.value) == (
        "a statement on the gem's SQL database needed more memory than gems' databases may hold together (512 MB)"
        " and was stopped; store large values as blobs, or build them in smaller pieces"
    )
    assert store.sql.query("SELECT x FROM t") == [{"x": 1}]
    assert store.sql.query("SELECT length(randomblob(1000000)) AS n") == [{"n": 1_000_000}]


def test_the_gem_cannot_lift_the_ceiling_and_the_vaults_own_sqlite_has_none(store: GemStore) -> None:
    for pragma in ("PRAGMA hard_heap_limit = 0", "PRAGMA soft_heap_limit = 0"):
        with pytest.raises(FileError, match=r"PRAGMA \w+_heap_limit is not allowed"):
            store.sql.execute(pragma)
    vault_library = sqlite3.connect(":memory:")
    try:
        assert vault_library.execute("PRAGMA hard_heap_limit").fetchone() == (0,)
    finally:
        vault_library.close()
