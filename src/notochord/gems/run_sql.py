"""One run's own connection to its gem's SQL database, so the run's transactions are its alone.

A gem's ``BEGIN`` … ``COMMIT`` spans several ``ctx.storage.sql`` calls, so it lives in the
connection those calls use. Two runs of one gem at once therefore need two connections: on a
shared one, run B's statements would land in run A's open transaction (and go with A's
``ROLLBACK``), and a run that ended mid-transaction would hold the write lock for every later run.
With a connection each, runs contend on SQLite's own lock, which the store reports as
:class:`~notochord.errors.BusyError` after its wait.

The connection is opened, keyed and fenced exactly as the gem store's own
(:mod:`notochord.files.private_sql`). Closing it rolls back whatever the run left uncommitted:
SQLite rolls back an open transaction when its connection closes. Closing never waits for a
statement: one running is interrupted, and one waiting for the file while another connection holds
it is woken and refused, so the end of a run does not sit out that wait. The connection opens only
a database the gem store already made complete: a missing or empty file is refused, never created.
"""

from __future__ import annotations

from pathlib import Path

from notochord.files.private_sql import SQL_FILE, SQL_WHAT, STATEMENT_SECONDS, GemSql, Guarded, open_cipher_db

__all__ = ["RunSql"]


class RunSql:
    """``ctx.storage.sql`` of one run: a connection of its own to the gem's database in ``folder``.

    The folder must already hold the gem's store (open it first), so the database exists.
    """

    __slots__ = ("_db", "sql")

    def __init__(self, folder: Path, *, key: bytes, statement_seconds: float = STATEMENT_SECONDS) -> None:
        path = folder / SQL_FILE
        conn = open_cipher_db(path, key, SQL_WHAT)
        self._db = Guarded(conn, SQL_WHAT, path=path, statement_seconds=statement_seconds, fenced=True)
        self.sql = GemSql(self._db)

    def close(self) -> None:
        """Close the connection, rolling back what the run left open; a running statement is stopped."""
        self._db.close()
