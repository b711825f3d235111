"""Round trips to a PostgreSQL server, counted from libpq's own trace (shared by the round-trip tests)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy as sa

__all__ = ["RoundTrips"]


class RoundTrips:
    """Counts the round trips of every connection an engine opens from now on (libpq trace)."""

    def __init__(self, engine: sa.Engine, folder: Path) -> None:
        self.engine = engine
        self.folder = folder
        self.traced: list[tuple[Any, Path]] = []
        self.statements: list[str] = []
        engine.dispose()  # the connections made before counting began are not traced
        sa.event.listen(engine, "connect", self._trace)

    def _trace(self, dbapi_conn: Any, _record: object) -> None:
        path = self.folder / f"trace{len(self.traced)}.log"
        path.touch()
        self.traced.append((dbapi_conn, path))
        self._start(dbapi_conn, path)

    @staticmethod
    def _start(dbapi_conn: Any, path: Path) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        dbapi_conn.pgconn.trace(fd)  # libpq writes through its own FILE on this descriptor
        dbapi_conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)

    def _flush(self) -> dict[Path, int]:
        for dbapi_conn, path in self.traced:
            if not dbapi_conn.closed:
                dbapi_conn.pgconn.untrace()  # flushes what libpq buffered
                self._start(dbapi_conn, path)
        return {path: path.stat().st_size for _, path in self.traced}

    def of(self, call: Any) -> int:
        """The round trips ``call()`` makes; ``self.statements`` the messages it sent."""
        before = self._flush()
        call()
        after = self._flush()
        self.statements = []
        trips = 0
        for path, size in after.items():
            with path.open("rb") as trace:
                trace.seek(before.get(path, 0))
                for line in trace.read(size - before.get(path, 0)).decode(errors="replace").splitlines():
                    fields = line.split("\t")
                    if fields[0] == "B" and fields[2] == "ReadyForQuery":
                        trips += 1
                    if fields[0] == "F" and fields[2] == "Query":
                        self.statements.append(fields[3].strip().strip('"'))
                    if fields[0] == "F" and fields[2] == "Parse":  # statement name, then the text
                        self.statements.append(fields[3].strip().split('" "', 1)[-1].rsplit('"', 1)[0])
                    if fields[0] == "F" and fields[2] == "Bind" and not fields[3].startswith(' "" ""'):
                        # a statement psycopg prepared earlier, run by its name alone
                        self.statements.append("prepared " + fields[3].split('"')[3])
        return trips

    def close(self) -> None:
        sa.event.remove(self.engine, "connect", self._trace)
        for dbapi_conn, _ in self.traced:
            if not dbapi_conn.closed:
                dbapi_conn.pgconn.untrace()
