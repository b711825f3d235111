"""A gem's SQLCipher connections: opened with its key, fenced in, bounded, and every refusal in words.

:mod:`notochord.files.private` builds a gem's store on these; the gem's SQL reaches them as
``ctx.storage.sql`` (:class:`GemSql`) and its key-value store as one more guarded file.

The fence: the gem's connection has an authorizer that refuses ``ATTACH`` of any real file (so also
``VACUUM INTO``, which would write a copy elsewhere), every ``PRAGMA`` outside a short read-mostly
list (``key``, ``rekey``, ``cipher_*``, ``journal_mode``, ``synchronous`` among the refused), and
``load_extension``. The refusal names what was refused and what the gem may do instead.

Bounds: the gem's SQL runs in notochord's process, so a statement may run at most
``statement_seconds`` (SQLite's progress handler interrupts it, and the database stays usable), a
query's rows may hold at most :data:`MAX_QUERY_BYTES` of text and bytes (they travel to the gem in
one message), all gems' databases together may hold at most :data:`GEM_SQL_HEAP_BYTES` of SQLite's
memory, and closing interrupts a statement still running instead of waiting.

Waiting: a statement that finds the file held by another connection (another run of the gem, or
another process) waits for it up to ``_BUSY_SECONDS`` and is then told the database is busy. SQLite
says nothing when another connection lets go, so the wait must look again from time to time, but it
sleeps on an event that :meth:`Guarded.close` sets: the end of a run (or of the vault) stops it at
once instead of sitting out SQLite's own wait, which nothing can interrupt.

Callers: one connection may serve several callers that are not one run (the SOPs and the host
reaching the gem store's own connection). A transaction lives in the connection, so a ``BEGIN``
hands the connection to its caller until the transaction ends: another caller's statements wait
for that (as long as for a busy file) instead of landing inside it, reading its uncommitted rows or
going with its ``ROLLBACK``. Each :class:`GemSql` names its caller.

Transactions left open outside runs: a run's transaction ends with the run at the latest (its own
connection is closed, which rolls it back), but nothing ends one of a caller outside runs. One that
never sends ``COMMIT`` (a SOP that failed between two statements, host code that raised) would hold
the store's connection, and the file's write lock, against every other caller and every run of the
gem until the vault closed. So such a transaction is held on a lease, as database servers bound a
session left idle inside a transaction (PostgreSQL's ``idle_in_transaction_session_timeout``): it is
its caller's for as long as the caller uses it, and once it has rested more than
:data:`IDLE_TRANSACTION_SECONDS` since its caller's last statement *and* someone else needs the
database (a caller waiting for the connection, or any connection to the file waiting for its lock, a
run's included), it is rolled back. From then on each statement of that caller is refused, saying
its transaction was rolled back with nothing kept, until the caller ends it: ``ROLLBACK`` is answered
quietly, ``COMMIT`` is refused as not committed. So the rest of a broken transaction never slips in
as autocommitted pieces, as PostgreSQL refuses the statements of an aborted transaction.

Why not the other ways. Refusing ``BEGIN`` outside runs would take from every caller there a
transaction spanning calls, which ``ctx.storage.sql`` offers all its callers (P-STOR-03), to guard
against the few that leave one open; the lease takes back only what nobody uses. Rolling back when
the caller is gone cannot be done here: a caller outside runs is known to the store by a name (a run
id) and nothing tells the store that it has gone; its rest is what the store can see. A run's own
connection is never leased: its transaction lasts until the run ends, however long it rests.

Emptied files: a gem's database file is never zero bytes once it is in place
(:mod:`notochord.files.private_create` builds each one complete), so a file found empty, on open or
before a statement, is damage, and is refused instead of being taken for a new database that the
next write would fill. Opening never creates a file either.

Words: statements and parameters SQLite cannot take faithfully are refused before they reach the
driver (:mod:`notochord.files.private_params`). Engine errors become notochord errors by their code:
a file held by another process of the gem is :class:`~notochord.errors.BusyError`, a full disk
:class:`~notochord.errors.StorageFullError`, a damaged, foreign or vanished file a
:class:`~notochord.errors.FileError` that says what to do. Only errors in the gem's own SQL (syntax,
a missing table, a constraint) keep the engine's detail, which is what the gem's author needs to fix
the statement.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from threading import Condition, Event, Lock
from typing import Any

import sqlcipher3

from notochord.errors import BusyError, ClosedError, FileError
from notochord.files.full import disk_full
from notochord.files.private_fence import fence_refusal
from notochord.files.private_params import (
    MAX_QUERY_BYTES,
    Params,
    binding_words,
    bounded_rows,
    parameter_rows,
    parameters,
    statement_text,
)

__all__ = [
    "GEM_SQL_HEAP_BYTES",
    "IDLE_TRANSACTION_SECONDS",
    "MAX_QUERY_BYTES",
    "SQL_FILE",
    "SQL_WHAT",
    "STATEMENT_SECONDS",
    "GemSql",
    "Guarded",
    "SqlResult",
    "open_cipher_db",
]

SQL_FILE = "sql.db"
"""The gem's SQL database, in its private folder (its store's connection and each run's own)."""
SQL_WHAT = "SQL database"
"""How messages name that database."""
STATEMENT_SECONDS = 30.0
"""How long one statement of a gem's SQL may run before it is interrupted."""
IDLE_TRANSACTION_SECONDS = 30.0
"""How long a transaction begun outside a run may rest between its caller's statements before it is
rolled back for another caller or run that needs the database (as long as one statement may run)."""
GEM_SQL_HEAP_BYTES = 512 * 1024 * 1024
"""The most memory SQLite may hold for all gems' databases together. SQLCipher is its own copy of
SQLite that serves gems' stores only, so its heap limit bounds them without touching the vault's."""
_PROGRESS_STEPS = 10_000  # SQLite virtual-machine steps between two looks at the clock
_BUSY_SECONDS = 5.0  # how long a statement waits for another connection to the file to let it go
# between two looks at a file another connection holds: quick at first, as SQLite's own wait
_BUSY_STEPS = (0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.025, 0.025, 0.025, 0.05, 0.05, 0.1)
_TAKEN_BACK_KEPT = 4096  # callers told their transaction was rolled back, remembered until they end it
# the statements that end a transaction: a caller whose transaction was taken back ends it with one
_ENDS_BY_ROLLBACK = re.compile(r"\s*ROLLBACK(?:\s+TRANSACTION)?\s*;?\s*\Z", re.IGNORECASE)
_ENDS_BY_COMMIT = re.compile(r"\s*(?:COMMIT|END)(?:\s+TRANSACTION)?\s*;?\s*\Z", re.IGNORECASE)

_OK: int = sqlcipher3.SQLITE_OK
_DENY: int = sqlcipher3.SQLITE_DENY
_BUSY_CODES = frozenset({sqlcipher3.SQLITE_BUSY, sqlcipher3.SQLITE_LOCKED})
_DAMAGED_CODES = frozenset({sqlcipher3.SQLITE_CORRUPT, sqlcipher3.SQLITE_NOTADB})
_VANISHED_CODES = frozenset({sqlcipher3.SQLITE_READONLY, sqlcipher3.SQLITE_IOERR, sqlcipher3.SQLITE_CANTOPEN})
_TOOBIG: int = sqlcipher3.SQLITE_TOOBIG


def _damaged(what: str, path: Path) -> str:
    return (
        f"the gem's {what} {path} cannot be read with this gem's key: the file is damaged, or is another gem's "
        f"(a wrong key), so its data is lost to it; restore the file from a backup, or delete that file to start "
        f"the gem's {what} empty"
    )


def _emptied(what: str, path: Path, *, while_open: bool = False) -> str:
    when = "was emptied (zero bytes) while it was open" if while_open else "is empty (zero bytes)"
    return (
        f"the gem's {what} {path} {when}: its data was lost (a failed copy, a full disk, or a program "
        f"that cut the file short), and notochord does not start a new database over it; restore the file "
        f"from a backup, or delete that file to start the gem's {what} empty"
    )


def open_cipher_db(
    path: Path, key: bytes, what: str, *, create: bool = False, empty_ok: bool = False
) -> sqlcipher3.Connection:
    """``path`` opened with ``key`` and checked readable, or a :class:`FileError` that says what to do.

    The file must exist unless ``create`` (a database being built aside): opening never creates one
    in place. A file of no pages is refused as damage unless ``create`` or ``empty_ok`` (a database
    an earlier version created and never wrote, see :mod:`notochord.files.private_create`).
    """
    if path.is_dir():
        raise FileError(f"cannot open the gem's {what} {path}: it is a folder; move it away and try again")
    # "rw" never creates the file: a database that vanished is reported, not made anew and empty
    target = f"{Path(os.path.abspath(path)).as_uri()}?mode={'rwc' if create else 'rw'}"
    try:
        conn = sqlcipher3.connect(
            target, uri=True, isolation_level=None, check_same_thread=False, timeout=_BUSY_SECONDS
        )
    except sqlcipher3.Error as exc:
        if not create and not path.exists():
            raise FileError(
                f"the gem's {what} {path} is missing: it was deleted or moved; close and reopen the vault "
                f"(or restart notochord) to start the gem's {what} anew, empty"
            ) from exc
        raise FileError(
            f"cannot open the gem's {what} {path}: notochord may not read and write it or its folder"
        ) from exc
    try:
        # Silence SQLCipher's own stderr log: a wrong key is reported through our error instead.
        conn.execute("PRAGMA cipher_log_level = NONE")
        # Without it one statement may build values of up to a gigabyte each (randomblob, replace,
        # group_concat) in notochord's memory, and every tool call in flight may run one.
        conn.execute(f"PRAGMA hard_heap_limit = {GEM_SQL_HEAP_BYTES}")
        conn.execute(f"PRAGMA key = \"x'{key.hex()}'\"")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
    except sqlcipher3.Error as exc:
        conn.close()
        code = getattr(exc, "sqlite_errorcode", None)
        if code in _BUSY_CODES:
            raise _busy(what) from exc
        raise FileError(_damaged(what, path)) from exc
    if pages == 0 and not (create or empty_ok):
        conn.close()
        raise FileError(_emptied(what, path))
    return conn


def _busy(what: str) -> BusyError:
    return BusyError(
        f"the gem's {what} is in use by another run of this gem, which holds a change open; this statement "
        "changed nothing; try again in a moment",
        retry_after=int(_BUSY_SECONDS),
    )


_STORE_CALLER = object()
"""The caller of statements that name none (the key-value store's, notochord's own)."""

_LEASED: weakref.WeakSet[Guarded] = weakref.WeakSet()
"""The open connections whose transactions are leased (see the module's docstring), so that any
connection waiting for a file can take back an idle transaction holding it."""
_LEASED_LOCK = Lock()


def _take_back_idle_holding(waiting: Guarded) -> bool:
    """Roll back a transaction left idle on a leased connection to the file ``waiting`` waits for;
    whether one was."""
    with _LEASED_LOCK:
        others = [other for other in _LEASED if other is not waiting and other.holds_file(waiting.file)]
    return any(other.take_back_if_idle() for other in others)


def _taken_back_words(what: str, idle_limit: float, *, committing: bool) -> str:
    why = (
        f"rolled back, as it rested more than {idle_limit:g} s between its statements, outside any run, while"
        " another caller of the gem needed the database; nothing it wrote was kept"
    )
    again = (
        "begin again and send a transaction's statements one right after another (or write many rows in one"
        " call with executemany)"
    )
    if committing:
        return f"this transaction on the gem's {what} was not committed: it was {why}. To write, {again}"
    return (
        f"the transaction this caller began on the gem's {what} was {why}, and this statement changed nothing."
        f" Send ROLLBACK to end it, then {again}"
    )


class Guarded:
    """A SQLCipher connection shared between threads, one statement at a time, each within its time.

    A caller (any value compared with ``==``; a run id, say) whose statement leaves a transaction
    open holds the connection until that transaction ends; other callers wait for it. With
    ``fenced`` the gem's authorizer guards the connection: the gem's SQL reaches this file only.
    With ``idle_limit`` a transaction is leased (the connection serves callers outside runs): once
    it has rested that many seconds since its caller's last statement, the first caller or
    connection that needs the database rolls it back. Without, a transaction lasts until its caller
    ends it or the connection closes (a run's own connection).
    """

    def __init__(
        self,
        conn: sqlcipher3.Connection,
        what: str,
        *,
        path: Path,
        statement_seconds: float,
        fenced: bool = False,
        idle_limit: float | None = None,
    ) -> None:
        self._conn: sqlcipher3.Connection | None = conn
        self._what = what
        self._path = path
        self._inode = _inode(path)
        self._lock = Lock()
        self._turn = Condition(self._lock)  # told when a caller's transaction ends, or on close
        self._holder: object | None = None  # the caller whose transaction is open, if any
        self._closed = Event()  # wakes a statement waiting for the file when the connection closes
        self._busy_until = 0.0
        self._statement_seconds = statement_seconds
        self._deadline = float("inf")
        self._closing = False
        self._overran = False
        self._refused: str | None = None  # why the authorizer said no to the statement being prepared
        self._idle_limit = idle_limit
        self._idle_since = 0.0  # when the holder's last statement returned
        self._taken_back: dict[object, None] = {}  # callers whose transaction was rolled back, oldest first
        conn.set_progress_handler(self._should_stop, _PROGRESS_STEPS)
        conn.set_busy_handler(self._wait_for_file)
        if fenced:
            conn.set_authorizer(self._authorize)
        if idle_limit is not None:
            with _LEASED_LOCK:
                _LEASED.add(self)

    @property
    def file(self) -> tuple[int, int] | None:
        """The database file this connection opened (device and inode), if it could be read."""
        return self._inode

    def holds_file(self, file: tuple[int, int] | None) -> bool:
        """Whether this connection is open on ``file``."""
        return file is not None and file == self._inode and not self._closing

    def _should_stop(self) -> int:
        # SQLite calls this every _PROGRESS_STEPS steps of a statement; non-zero interrupts it
        if self._closing:
            return 1
        if time.monotonic() > self._deadline:
            self._overran = True
            return 1
        return 0

    def _wait_for_file(self, attempt: int) -> bool:
        """SQLite's busy handler: whether to try the held file again, after a pause that closing cuts
        short. It must not raise: SQLite would take that for a refusal with the cause lost."""
        now = time.monotonic()
        if attempt == 0:
            self._busy_until = now + _BUSY_SECONDS
        if self._closing:
            return False
        # nothing may escape from here (see above): a failed look only means waiting on as before
        with contextlib.suppress(Exception):
            if _take_back_idle_holding(self):
                return True  # the file's lock went with the idle transaction: try again at once
        remaining = self._busy_until - now
        if remaining <= 0:
            return False
        self._closed.wait(min(_BUSY_STEPS[min(attempt, len(_BUSY_STEPS) - 1)], remaining))
        return not self._closing

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, _db: str | None, _trig: str | None) -> int:
        refused = fence_refusal(action, arg1, arg2, self._what)
        if refused is None:
            return _OK
        self._refused = refused
        return _DENY

    def take_back_if_idle(self) -> bool:
        """Roll back the open transaction if it has rested past the idle limit and no statement of
        this connection runs now (another thread's, waiting for the file); whether it was."""
        if not self._lock.acquire(blocking=False):
            return False  # a statement runs: the transaction, if any, is in use
        try:
            return self._take_back_locked(time.monotonic())
        finally:
            self._lock.release()

    def _take_back_locked(self, now: float) -> bool:
        holder, conn = self._holder, self._conn
        if holder is None or conn is None or self._idle_limit is None or self._closing:
            return False
        if now - self._idle_since < self._idle_limit:
            return False
        try:
            conn.rollback()
        except sqlcipher3.Error:
            return False  # still open: it keeps the connection, and the waiter is told it is busy
        if conn.in_transaction:
            return False
        self._holder = None
        self._taken_back[holder] = None
        while len(self._taken_back) > _TAKEN_BACK_KEPT:
            del self._taken_back[next(iter(self._taken_back))]
        self._turn.notify_all()
        return True

    def _answer_taken_back(self, caller: object, statement: str | None) -> None:
        """For a caller whose transaction was taken back: let its ``ROLLBACK`` end that quietly,
        refuse its ``COMMIT`` as not committed (ending it too), and refuse every other statement."""
        text = statement or ""
        limit = self._idle_limit if self._idle_limit is not None else 0.0
        if _ENDS_BY_ROLLBACK.match(text):
            del self._taken_back[caller]
            return
        committing = _ENDS_BY_COMMIT.match(text) is not None
        if committing:
            del self._taken_back[caller]
        raise FileError(_taken_back_words(self._what, limit, committing=committing))

    @contextlib.contextmanager
    def cursor(self, caller: object = _STORE_CALLER, *, statement: str | None = None) -> Iterator[Any]:
        """A cursor for one statement of ``caller``, once no other caller's transaction is open.

        ``statement`` is the text the caller is about to run. When the caller's transaction was
        rolled back for resting too long, it is answered here instead: refused, or, for the
        ``ROLLBACK`` that ends that transaction, ``None`` is given in place of a cursor and nothing
        is to be run.
        """
        with self._turn:
            conn = self._take_turn(caller)
            if caller in self._taken_back:
                self._answer_taken_back(caller, statement)
                yield None
                return
            self._overran = False
            self._refused = None
            self._deadline = time.monotonic() + self._statement_seconds
            try:
                yield conn.cursor()
            except sqlcipher3.Error as exc:
                raise self._translate(exc) from exc
            except sqlcipher3.Warning:
                # the driver's only warning: more than one statement in the text of one call
                raise FileError(
                    f"the gem's {self._what} runs one statement per call; send each statement in a call of its own"
                ) from None
            except MemoryError:
                # SQLite's own heap limit said no: the statement was stopped and its memory is free
                raise FileError(
                    f"a statement on the gem's {self._what} needed more memory than gems' databases may hold"
                    f" together ({GEM_SQL_HEAP_BYTES // (1024 * 1024)} MB) and was stopped; store large values"
                    " as blobs, or build them in smaller pieces"
                ) from None
            except UnicodeEncodeError as exc:
                # a lone surrogate (half of a UTF-16 pair) is no character: UTF-8 cannot hold it
                raise FileError(
                    f"the gem's {self._what} cannot hold a text with a lone surrogate "
                    f"(U+{ord(exc.object[exc.start]):04X}); remove it, or store the text's bytes instead"
                ) from None
            finally:
                self._deadline = float("inf")
                # an error may have ended the transaction (SQLite rolls back on some), so ask it
                if conn.in_transaction:
                    self._holder = caller
                    self._idle_since = time.monotonic()
                elif self._holder is not None:
                    self._holder = None
                    self._turn.notify_all()

    def _take_turn(self, caller: object) -> sqlcipher3.Connection:
        """The connection, once it is ``caller``'s to use (the lock held); else the error to raise."""
        until = None
        while True:
            if self._conn is None or self._closing:
                raise ClosedError(f"the gem's {self._what} was closed")
            if self._holder is None or self._holder == caller:
                break
            now = time.monotonic()
            if self._take_back_locked(now):
                continue
            until = now + _BUSY_SECONDS if until is None else until
            if now >= until:
                raise BusyError(
                    f"the gem's {self._what} is in use by another caller of this gem, which holds a transaction "
                    "open (BEGIN without COMMIT yet); this statement changed nothing; try again in a moment",
                    retry_after=max(1, int(_BUSY_SECONDS)),
                )
            wake = until
            if self._idle_limit is not None and self._idle_since + self._idle_limit > now:
                wake = min(wake, self._idle_since + self._idle_limit)  # the lease lapses first: look then
            self._turn.wait(wake - now)
        if _size(self._path) == 0:
            # a file SQLite sees empty is a new database to it: the next write would fill it anew
            raise FileError(_emptied(self._what, self._path, while_open=True))
        return self._conn

    def _translate(self, exc: sqlcipher3.Error) -> Exception:
        what = self._what
        if self._closing:
            return ClosedError(f"the gem's {what} was closed while a statement ran; it was stopped")
        if self._overran:
            return FileError(
                f"a statement on the gem's {what} ran longer than {self._statement_seconds:g} s and was "
                "stopped, changing nothing; make it cheaper (an index, a LIMIT) or split the work"
            )
        if self._refused is not None:
            return FileError(self._refused)
        full = disk_full(exc, f"the gem's {what}")
        if full is not None:
            return full
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None:
            code &= 0xFF
        if code in _BUSY_CODES:
            return _busy(what)
        if code == _TOOBIG:
            return FileError(
                f"a statement on the gem's {what} built a text or blob larger than one value may be (1 GB) and "
                "was stopped; store large values as blobs, or in smaller pieces"
            )
        if code in _VANISHED_CODES and _inode(self._path) != self._inode:
            return FileError(
                f"the gem's {what} {self._path} was deleted or moved while it was open; nothing was written. "
                f"Close and reopen the vault (or restart notochord) to start the gem's {what} anew, empty"
            )
        if code in _DAMAGED_CODES:
            return FileError(_damaged(what, self._path))
        if code in _VANISHED_CODES or code == sqlcipher3.SQLITE_PERM:
            return FileError(
                f"the gem's {what} {self._path} cannot be written: notochord may not write it or its folder"
            )
        if isinstance(exc, sqlcipher3.ProgrammingError):
            return FileError(binding_words(str(exc), what))
        return FileError(f"the gem's {what} refused the statement: {exc}")

    def close(self) -> None:
        # a statement still running is interrupted, and one waiting for the file or for another
        # caller's transaction is woken, rather than waited for
        self._closing = True
        self._closed.set()
        with _LEASED_LOCK:
            _LEASED.discard(self)
        with self._turn:
            self._turn.notify_all()
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None  # gone: the statement says so in its own words


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


class SqlResult:
    """What a changing statement did."""

    def __init__(self, rowcount: int, last_row_id: int | None) -> None:
        self.rowcount = rowcount
        self.last_row_id = last_row_id

    def __repr__(self) -> str:
        return f"SqlResult(rowcount={self.rowcount}, last_row_id={self.last_row_id})"


class GemSql:
    """``ctx.storage.sql``: the gem's own database. Each call is one statement, autocommitted
    unless the gem opened a transaction with ``BEGIN``.

    ``caller`` names whose transaction a ``BEGIN`` opens, when several callers share ``db``; by
    default each :class:`GemSql` is a caller of its own.
    """

    def __init__(self, db: Guarded, *, caller: object | None = None) -> None:
        self._db = db
        self._caller = object() if caller is None else caller

    def execute(self, sql: str, params: Params = ()) -> SqlResult:
        text, bound = statement_text(sql), parameters(params)
        with self._db.cursor(self._caller, statement=text) as cur:
            if cur is None:  # the ROLLBACK of a transaction already rolled back
                return SqlResult(-1, None)
            cur.execute(text, bound)
            return SqlResult(cur.rowcount, cur.lastrowid)

    def executemany(self, sql: str, rows: Iterable[Params]) -> SqlResult:
        """Run one statement for every parameter row, all in one transaction."""
        text, bound = statement_text(sql), parameter_rows(rows)
        with self._db.cursor(self._caller, statement=text) as cur:
            if cur is None:
                return SqlResult(-1, None)
            in_tx = cur.connection.in_transaction
            if not in_tx:
                cur.execute("BEGIN")
            try:
                cur.executemany(text, bound)
                result = SqlResult(cur.rowcount, cur.lastrowid)
            except BaseException:
                if not in_tx:
                    cur.execute("ROLLBACK")
                raise
            if not in_tx:
                cur.execute("COMMIT")
            return result

    def query(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """Rows as dicts keyed by column name."""
        text, bound = statement_text(sql), parameters(params)
        with self._db.cursor(self._caller, statement=text) as cur:
            if cur is None:
                return []
            cur.execute(text, bound)
            names = [d[0] for d in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in bounded_rows(cur)]

    def query_rows(self, sql: str, params: Params = ()) -> list[list[Any]]:
        """Rows as lists, in column order."""
        text, bound = statement_text(sql), parameters(params)
        with self._db.cursor(self._caller, statement=text) as cur:
            if cur is None:
                return []
            cur.execute(text, bound)
            return [list(row) for row in bounded_rows(cur)]
