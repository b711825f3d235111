"""SQLite's own "full" and "read-only" answers reach callers as StorageFullError and ReadOnlyStoreError.

These run on any machine: ``PRAGMA max_page_count`` makes a real SQLite file full at a few pages,
and ``PRAGMA query_only`` makes a connection refuse writes as a read-only file would. The mounted
small disk and read-only vault are in ``test_disk_full.py`` and ``test_read_only_vault.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from notochord.db.engine import create_sqlite_engine, is_read_only, write_tx
from notochord.errors import ReadOnlyStoreError, StorageError, StorageFullError


@pytest.fixture
def engine(tmp_path: Path) -> sa.Engine:
    engine = create_sqlite_engine(tmp_path / "s.db", busy_timeout_ms=1000)
    with write_tx(engine) as conn:
        conn.exec_driver_sql("CREATE TABLE t (blob BLOB)")
    return engine


def test_a_database_that_is_full_raises_storage_full_and_keeps_what_was_committed(engine: sa.Engine) -> None:
    """SQLITE_FULL becomes StorageFullError; the transaction is undone, the file stays whole."""
    with write_tx(engine) as conn:
        conn.exec_driver_sql("INSERT INTO t VALUES (zeroblob(100))")
    full = pytest.raises(StorageFullError, match="the disk is full; nothing was written")
    with full as caught, write_tx(engine) as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
        conn.exec_driver_sql(f"PRAGMA max_page_count = {int(pages or 0) + 2}")
        for _ in range(20):
            conn.exec_driver_sql("INSERT INTO t VALUES (zeroblob(8192))")
    assert isinstance(caught.value, StorageError)
    assert caught.value.code == "E_STORAGE_FULL"
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM t").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    engine.dispose()


def test_a_write_the_database_refuses_as_read_only_raises_read_only_store(engine: sa.Engine) -> None:
    """SQLITE_READONLY becomes ReadOnlyStoreError saying what to do."""
    refused = pytest.raises(ReadOnlyStoreError, match="make the data directory writable")
    with refused, write_tx(engine) as conn:
        conn.exec_driver_sql("PRAGMA query_only = 1")
        conn.exec_driver_sql("INSERT INTO t VALUES (x'00')")
    assert is_read_only(engine) is False, "a writable file opens read-write"
    engine.dispose()
