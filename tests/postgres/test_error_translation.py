"""PostgreSQL's errors become the project's storage errors, by SQLSTATE.

A full disk cannot be made on demand on a shared test server, so the driver error is stood in for
by an exception carrying the SQLSTATE psycopg gives it; everything else about the path is real.
"""

from __future__ import annotations

import pytest
from sqlalchemy import exc

from notochord.db.engine import storage_errors
from notochord.errors import (
    KnowledgeValidationError,
    ReadOnlyStoreError,
    StorageError,
    StorageFullError,
    StoreLockedError,
)


class _DriverError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"server said {sqlstate}")
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    ("sqlstate", "error", "words"),
    [
        ("53100", StorageFullError, "out of disk space; nothing was written"),
        ("25006", ReadOnlyStoreError, "accepts only reads"),
        ("42P01", StorageError, "failed in the store"),
        ("55P03", StoreLockedError, "kept part of the store locked for longer than notochord waits"),
        ("40P01", StoreLockedError, "another client's transaction .* at the same moment; nothing was changed"),
        ("40001", StoreLockedError, "another client's transaction .* at the same moment; nothing was changed"),
    ],
)
def test_a_server_error_maps_into_the_exception_tree_by_its_sqlstate(
    sqlstate: str, error: type[StorageError], words: str
) -> None:
    """Disk full (53100), read-only transaction (25006), a lock waited for past the wait (55P03), a
    deadlock or serialization failure the server ended this transaction for (40P01, 40001: busy, so a
    retry succeeds), anything else a StorageError."""
    with pytest.raises(error, match=words) as caught, storage_errors("saving a fact"):
        raise exc.OperationalError("INSERT …", {}, _DriverError(sqlstate))
    assert type(caught.value) is error
    assert str(caught.value).startswith("saving a fact failed")


def test_a_number_out_of_the_columns_range_is_the_callers_error_not_a_failing_store() -> None:
    """PostgreSQL's 22003 (a number beyond a column's type) can only come from a caller's argument:
    it reads as a refused argument that names the limits, never as a broken store (OD-K07)."""
    with (
        pytest.raises(KnowledgeValidationError, match="out of the range this store holds") as caught,
        storage_errors("reading facts"),
    ):
        raise exc.DataError("SELECT …", {}, _DriverError("22003"))
    assert "9223372036854775807" in str(caught.value)
    assert not isinstance(caught.value, StorageError)
