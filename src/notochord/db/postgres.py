"""Spaces on a PostgreSQL server: one database per space, created on first use, and its engine.

Rules:

- ``database_url`` (``postgresql://user:password@host:port/PREFIX?…``) names a server and a prefix:
  the personal space is the database ``PREFIX_personal``, organization ``acme`` the database
  ``PREFIX_org_acme``. Every space is a physically separate database, exactly as every space is a
  separate file on SQLite; nothing is shared between them. Without a database in the URL the
  prefix is ``notochord``. A name longer than PostgreSQL's 63 bytes keeps its start and ends in a
  hash of the whole, so two organizations never share a database.
- Each database carries the space's name as its comment, so the spaces on a server are listed
  without guessing from database names.
- A database is created only where a space is created on SQLite (``init``, ``init --org``, the
  service's first write); two processes creating the same one at once both succeed.
- The engine is psycopg 3 under SQLAlchemy's connection pool. Reads run in ``REPEATABLE READ``: one
  snapshot for everything read in the transaction, as on SQLite. Writes run in ``READ COMMITTED``
  after taking the space's write lock, so each of their statements sees every write committed
  before the lock was granted.
- **Round trips per transaction.** A read is ``BEGIN ISOLATION LEVEL …`` (psycopg sends the level
  with its ``BEGIN``: no ``SET TRANSACTION`` of its own), its statements and ``COMMIT``; a write adds
  the lock statement. Nothing is sent to check a pooled connection: a server that shut down or
  restarted has told each of its connections so (a termination message, then the socket closes),
  which leaves the idle socket readable. A pooled connection whose socket is readable, or that
  psycopg knows is broken, is replaced at checkout (:func:`_stale`), so a restarted server costs no
  failed request. A server that vanished without a word (a cut network) is found by the first
  statement: that call fails with a :class:`~notochord.errors.StorageError`, the pool drops its
  connections, and the next call connects anew. Measured with libpq's trace
  (``tests/postgres/test_round_trips.py``): a host ``facts.put`` took 9 round trips, now 8 (``BEGIN``,
  the lock, five statements, ``COMMIT``); a hybrid search of the space (three read transactions)
  18, now 12.

Why one write lock per space (``pg_advisory_xact_lock`` on a fixed key, taken by the transaction's
first statement and released by its commit or rollback), rather than a row lock on the quota
counter or ``SERIALIZABLE`` with retry:

- It is what ``BEGIN IMMEDIATE`` gives on SQLite, and the write path relies on more than the quota
  counter being read-checked-written alone: a fact of cardinality "one" superseding the current
  one, a document key unique among live documents, predicate positions, the entity a name
  resolves to. A row lock on ``quota_usage`` makes the quota exact but leaves those to race (and
  the user's own writes have no quota row at all).
- ``SERIALIZABLE`` would protect them, but a serialization failure surfaces at any statement or at
  commit, and :meth:`notochord.knowledge.writes.Store.write` is a context manager whose body is the
  caller's code: it cannot be re-run from here, so every caller would need its own retry loop.
- Advisory locks are server-wide across processes and replicas, live in the space's own database
  (two spaces never wait for each other), and vanish with the session if a process is killed.

The wait for the lock is bounded, as SQLite's busy timeout bounds it (:data:`LOCK_WAIT_MS`, the
same default): an advisory lock is otherwise waited for without end, and a process that froze
while holding it, or whose network went away (the server keeps its session until TCP gives up,
hours later), would hold every writer of the space with it. Past the wait the write fails with
:class:`~notochord.errors.StoreLockedError` and changes nothing, as on SQLite. The bound is the
transaction's own ``lock_timeout``, set by the lock statement itself (no round trip of its own).

Measured on this 2-core machine (shared), the assistant putting facts through the quota: one thread
35–39 writes/s, four threads 34 writes/s (writes to one space are one at a time by design, as on
SQLite, which did 123 writes/s single-threaded); sixteen processes racing one gem's quota accept
exactly 500 (``tests/reliability/test_quota_race.py``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import select
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg import errors as pg_errors
from psycopg import sql

from notochord.db.engine import WRITE_LOCK, server_unreachable
from notochord.errors import ConfigurationError, StorageError, StoreLockedError

__all__ = [
    "CONNECT_TIMEOUT_S",
    "LOCK_WAIT_MS",
    "create_database",
    "create_postgresql_engine",
    "database_exists",
    "database_name",
    "is_postgresql_url",
    "list_spaces",
    "server_url",
    "shown_url",
]

CONNECT_TIMEOUT_S = 10
"""Seconds a connection waits for a server that does not answer (down behind a firewall that drops
packets, or hung) before it is "cannot be reached": without it, the operating system's own limit
holds a command or a request for minutes."""

LOCK_WAIT_MS = 30_000
"""Milliseconds a write waits for the space's write lock before it is refused as busy: the default
of SQLite's busy timeout (the setting ``sqlite_busy_timeout_ms``)."""

WRITE_LOCK_KEY = 0x6E6F746F63686F72  # "notochor": advisory locks are per database, so one key per space
_MAX_NAME = 63
_PREFIX = re.compile(r"^[a-z_][a-z0-9_]{0,39}$")
_COMMENT = "notochord space "
_MAINTENANCE_DB = "postgres"


def is_postgresql_url(url: str | None) -> bool:
    """Whether ``url`` asks for the PostgreSQL backend (``postgresql://`` or ``postgres://``)."""
    return bool(url) and str(url).split(":", 1)[0].split("+", 1)[0] in {"postgresql", "postgres"}


def _parse(url: str) -> sa.URL:
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError as exc:
        raise ConfigurationError(
            f"setting database_url: {shown_url(url)!r} is not a database URL; use postgresql://user@host/prefix"
        ) from exc
    if not is_postgresql_url(parsed.drivername):
        raise ConfigurationError(
            f"setting database_url: only postgresql:// URLs are supported, not {parsed.drivername}://; "
            "leave it unset for SQLite files in the data directory"
        )
    unknown = sorted(set(parsed.query) - _connection_options())
    if unknown:
        named = ", ".join(repr(option[:60]) for option in unknown[:5])
        raise ConfigurationError(
            f"setting database_url: {named} {'is' if len(unknown) == 1 else 'are'} not a PostgreSQL connection "
            "option; correct or remove it (options are those libpq takes, such as sslmode or connect_timeout)"
        )
    prefix = parsed.database or "notochord"
    if not _PREFIX.match(prefix):
        raise ConfigurationError(
            f"setting database_url: the database part {prefix!r} is a prefix for the spaces' database names; "
            "use up to 40 lowercase letters, digits and _ (starting with a letter)"
        )
    return parsed.set(drivername="postgresql+psycopg", database=prefix)


@functools.cache
def _connection_options() -> frozenset[str]:
    """The option names libpq (the driver's client library) takes in a URL's query."""
    return frozenset(option.keyword.decode() for option in psycopg.pq.Conninfo.get_defaults())


_PASSWORD = re.compile(r"(://[^:/@]*:).*@")


def shown_url(url: str | sa.URL) -> str:
    """The URL with its password hidden, for messages and ``status``; never fails, so that a message
    about a malformed URL can still show it."""
    try:
        return sa.make_url(str(url)).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return "<unreadable database URL>"
    except ValueError:  # its parts were found, but the port is not a number
        return _PASSWORD.sub(r"\1***@", str(url), count=1)


def database_name(url: str, space: str) -> str:
    """The database that holds ``space`` (``personal`` or ``org:<id>``) on the server ``url`` names."""
    prefix = _parse(url).database
    suffix = "personal" if space == "personal" else "org_" + space.removeprefix("org:")
    name = f"{prefix}_{suffix}"
    if len(name.encode()) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    return f"{name[: _MAX_NAME - len(digest) - 1]}_{digest}"


def server_url(url: str, database: str = _MAINTENANCE_DB) -> sa.URL:
    """The SQLAlchemy URL of ``database`` on the server ``url`` names."""
    return _parse(url).set(database=database)


def _libpq(url: sa.URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def _connect_timeout(url: sa.URL) -> dict[str, Any]:
    """The connection argument that bounds the wait for a server that never answers, unless the
    URL sets its own ``connect_timeout``."""
    return {} if "connect_timeout" in url.query else {"connect_timeout": CONNECT_TIMEOUT_S}


def _maintenance(url: str) -> psycopg.Connection[Any]:
    target = server_url(url)
    try:
        return psycopg.connect(_libpq(target), autocommit=True, **_connect_timeout(target))
    except psycopg.Error as exc:
        unreachable = server_unreachable(exc)
        if unreachable is not None:
            raise unreachable from exc
        raise StorageError(
            f"cannot reach the PostgreSQL server at {shown_url(target)}: {exc}; "
            "check database_url and that the server runs"
        ) from exc


def database_exists(url: str, space: str) -> bool:
    """Whether the database of ``space`` exists on the server."""
    with _maintenance(url) as conn:
        row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database_name(url, space),)).fetchone()
    return row is not None


def create_database(url: str, space: str) -> None:
    """Create the database of ``space`` unless it exists (safe when several processes race to create it).

    A database that exists already is used as it is, also by a user who may not create databases
    (an administrator made it for that user); it is labelled if a creation stopped before its label
    (without which :func:`list_spaces` never names the space), as far as the user may.
    """
    name = database_name(url, space)
    with _maintenance(url) as conn:
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except (pg_errors.DuplicateDatabase, pg_errors.UniqueViolation):
            _label_if_unlabelled(conn, name, space)
            return
        except pg_errors.InsufficientPrivilege as exc:
            # PostgreSQL checks the right before the name: a database made for this user lands here too
            if _label_if_unlabelled(conn, name, space):
                return
            user = server_url(url).username or "the user"
            raise ConfigurationError(
                f"the user {user} may not create the database {name} for the space {space} on the PostgreSQL "
                f"server: give it the right (ALTER ROLE {user} CREATEDB), or have the database made for it "
                f"(CREATE DATABASE {name} OWNER {user}), then retry"
            ) from exc
        except psycopg.Error as exc:
            raise StorageError(f"cannot create the database {name} for the space {space}: {exc}") from exc
        try:
            conn.execute(
                sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(name), sql.Literal(_COMMENT + space))
            )
        except psycopg.Error as exc:
            raise StorageError(f"cannot label the database {name} for the space {space}: {exc}") from exc


def _label_if_unlabelled(conn: psycopg.Connection[Any], name: str, space: str) -> bool:
    """Label the database ``name`` as the space's if it has no label; whether it exists."""
    row = conn.execute(
        "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", (name,)
    ).fetchone()
    if row is None:
        return False
    if row[0] is None:
        with contextlib.suppress(psycopg.Error):  # only its owner may: the space works unlabelled all the same
            conn.execute(
                sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(name), sql.Literal(_COMMENT + space))
            )
    return True


def list_spaces(url: str) -> list[str]:
    """The names of the spaces under this URL's prefix on the server, sorted."""
    prefix = _parse(url).database
    with _maintenance(url) as conn:
        rows = conn.execute(
            "SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database WHERE starts_with(datname, %s)",
            (f"{prefix}_",),
        ).fetchall()
    found = []
    for datname, comment in rows:
        if isinstance(comment, str) and comment.startswith(_COMMENT):
            space = comment.removeprefix(_COMMENT)
            if database_name(url, space) == datname:
                found.append(space)
    return sorted(found)


def create_postgresql_engine(url: str, space: str, *, lock_wait_ms: int = LOCK_WAIT_MS) -> sa.Engine:
    """A pooled engine on the database of ``space`` (which must exist: see :func:`create_database`);
    its writes wait up to ``lock_wait_ms`` for the space's write lock."""
    target = server_url(url, database_name(url, space))
    # the WHERE is evaluated before the lock is asked for, so the transaction's bound holds for its wait
    lock = (
        f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY}) "
        f"WHERE set_config('lock_timeout', '{max(1, int(lock_wait_ms))}ms', true) IS NOT NULL"
    )
    waited = f"{max(1, int(lock_wait_ms)) / 1000:g} s"
    engine = sa.create_engine(
        target,
        connect_args=_connect_timeout(sa.make_url(target)),
        # few idle connections per space: a server hosts many organizations' spaces, and each
        # connection is a server process
        pool_size=2,
        max_overflow=14,
        isolation_level="READ COMMITTED",
    )

    @sa.event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, _record: object, _proxy: object) -> None:
        if _stale(dbapi_conn):
            raise sa.exc.DisconnectionError("the server closed this pooled connection")  # the pool reconnects

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        options = conn.get_execution_options()
        write = bool(options.get(WRITE_LOCK, False))
        if "isolation_level" not in options:  # a caller's own level stands
            level = psycopg.IsolationLevel.READ_COMMITTED if write else psycopg.IsolationLevel.REPEATABLE_READ
            driver = conn.connection.driver_connection
            if isinstance(driver, psycopg.Connection) and driver.info.transaction_status == _IDLE:
                driver.isolation_level = level  # sent with psycopg's own BEGIN, no round trip of its own
            else:
                conn.exec_driver_sql(f"SET TRANSACTION ISOLATION LEVEL {level.name.replace('_', ' ')}")
        if write:
            try:
                conn.exec_driver_sql(lock)
            except sa.exc.DBAPIError as exc:
                if getattr(exc.orig, "sqlstate", None) != _LOCK_NOT_AVAILABLE:
                    raise
                raise StoreLockedError(
                    f"a write failed: another process kept this space's write lock for longer than notochord "
                    f"waits ({waited}); nothing was changed. Retry once it is done"
                ) from exc

    return engine


_IDLE = psycopg.pq.TransactionStatus.IDLE
_LOCK_NOT_AVAILABLE = "55P03"  # lock_not_available: the transaction's lock_timeout ran out


def _stale(dbapi_conn: Any) -> bool:
    """Whether a pooled connection is known dead without asking the server (see the module rules).

    An idle connection has nothing to read: anything waiting on its socket is the server's goodbye
    (or, harmlessly, a notice), so the connection is replaced rather than used.
    """
    if not isinstance(dbapi_conn, psycopg.Connection):
        return False
    if dbapi_conn.closed or dbapi_conn.pgconn.status != psycopg.pq.ConnStatus.OK:
        return True
    try:
        readable, _, _ = select.select([dbapi_conn.pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True
    return bool(readable)
