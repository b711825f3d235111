"""Writing the full-text index fails in the store's own words (StorageError's tree, as every write).

A read-only store is :class:`~notochord.errors.ReadOnlyStoreError` (the CLI's "make the data
directory writable"), not a plain storage error quoting the driver: the full-text rows are written in
the same transaction as the document, and the caller must learn what the document write learns.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from notochord.errors import ReadOnlyStoreError
from notochord.search.textindex import fts_delete, fts_insert, fts_table_ddl


@pytest.fixture
def read_only(tmp_path: Path) -> sa.Engine:
    path = tmp_path / "store.db"
    with sa.create_engine(f"sqlite:///{path}").begin() as conn:
        conn.exec_driver_sql(fts_table_ddl("chunks_fts"))
        fts_insert(conn, "chunks_fts", [(1, "mushroom stew")], fresh=True)
    return sa.create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")


def test_inserting_into_a_read_only_store_is_a_read_only_error(read_only: sa.Engine) -> None:
    with read_only.begin() as conn, pytest.raises(ReadOnlyStoreError, match="read-only"):
        fts_insert(conn, "chunks_fts", [(2, "lentil soup")])
    with read_only.begin() as conn, pytest.raises(ReadOnlyStoreError, match="read-only"):
        fts_insert(conn, "chunks_fts", [(3, "bean soup")], fresh=True)


def test_deleting_from_a_read_only_store_is_a_read_only_error(read_only: sa.Engine) -> None:
    with read_only.begin() as conn, pytest.raises(ReadOnlyStoreError, match="read-only"):
        fts_delete(conn, "chunks_fts", [1])
