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

Emptied files: a gem's database file is never zero bytes once it is in place
(:mod:`notochord.files.private_create` builds each one complete), so a file found empty, on open or
before a statement, is damage, and is refused instead of being taken for a new database that the
next write would fill. Opening never creates a file either.

Words: statements and parameters SQLite cannot take faithfully (NUL in the text, two statements in
one call, numbers past 64 bits, NaN, lists and objects) are refused before they reach the driver,
whose refusals would be Python ``TypeError``/``ValueError``/``OverflowError`` or, for NaN, a silent
NULL. Engine errors become notochord errors by their code: a file held by another process of the gem
is :class:`~notochord.errors.BusyError`, a full disk :class:`~notochord.errors.StorageFullError`, a
damaged, foreign or vanished file a :class:`~notochord.errors.FileError` that says what to do. Only
errors in the gem's own SQL (syntax, a missing table, a constraint) keep the engine's detail, which is
what the gem's author needs to fix the statement.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from threading import Condition, Event, Lock
from typing import Any

import sqlcipher3

from notochord.errors import BusyError, ClosedError, FileError
from notochord.files.full import disk_full

__all__ = [
    "GEM_SQL_HEAP_BYTES",
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
MAX_QUERY_BYTES = 32 * 1024 * 1024
"""The most text and bytes the rows of one query may hold: they go to the gem in one message."""
GEM_SQL_HEAP_BYTES = 512 * 1024 * 1024
"""The most memory SQLite may hold for all gems' databases together. SQLCipher is its own copy of
SQLite that serves gems' stores only, so its heap limit bounds them without touching the vault's."""
_PROGRESS_STEPS = 10_000  # SQLite virtual-machine steps between two looks at the clock
_BUSY_SECONDS = 5.0  # how long a statement waits for another connection to the file to let it go
# between two looks at a file another connection holds: quick at first, as SQLite's own wait
_BUSY_STEPS = (0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.025, 0.025, 0.025, 0.05, 0.05, 0.1)
_LARGEST_INTEGER = 2**63 - 1

_ALLOWED_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "foreign_key_check",
        "foreign_keys",
        "defer_foreign_keys",
        "integrity_check",
        "quick_check",
        "user_version",
        "recursive_triggers",
        "data_version",
    }
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})
_TEMPORARY_ATTACH = ("", ":memory:")
_OK: int = sqlcipher3.SQLITE_OK
_DENY: int = sqlcipher3.SQLITE_DENY
_ATTACH: int = sqlcipher3.SQLITE_ATTACH
_PRAGMA: int = sqlcipher3.SQLITE_PRAGMA
_FUNCTION: int = sqlcipher3.SQLITE_FUNCTION
_BUSY_CODES = frozenset({sqlcipher3.SQLITE_BUSY, sqlcipher3.SQLITE_LOCKED})
_DAMAGED_CODES = frozenset({sqlcipher3.SQLITE_CORRUPT, sqlcipher3.SQLITE_NOTADB})
_VANISHED_CODES = frozenset({sqlcipher3.SQLITE_READONLY, sqlcipher3.SQLITE_IOERR, sqlcipher3.SQLITE_CANTOPEN})
_TOOBIG: int = sqlcipher3.SQLITE_TOOBIG
_BINDINGS = re.compile(r"statement uses (\d+), and there are (\d+) supplied")
_NAMED_BINDING = re.compile(r"did not supply a value for binding(?: parameter)? :?(\w+)")

Params = Sequence[Any] | Mapping[str, Any]


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


class Guarded:
    """A SQLCipher connection shared between threads, one statement at a time, each within its time.

    A caller (any value compared with ``==``; a run id, say) whose statement leaves a transaction
    open holds the connection until that transaction ends; other callers wait for it. With
    ``fenced`` the gem's authorizer guards the connection: the gem's SQL reaches this file only.
    """

    def __init__(
        self, conn: sqlcipher3.Connection, what: str, *, path: Path, statement_seconds: float, fenced: bool = False
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
        conn.set_progress_handler(self._should_stop, _PROGRESS_STEPS)
        conn.set_busy_handler(self._wait_for_file)
        if fenced:
            conn.set_authorizer(self._authorize)

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
        remaining = self._busy_until - now
        if self._closing or remaining <= 0:
            return False
        self._closed.wait(min(_BUSY_STEPS[min(attempt, len(_BUSY_STEPS) - 1)], remaining))
        return not self._closing

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, _db: str | None, _trig: str | None) -> int:
        if action == _ATTACH and arg1 not in _TEMPORARY_ATTACH:
            self._refused = (
                f"the gem's {self._what} reaches only its own database: ATTACH of a file and VACUUM INTO are not"
                " allowed (ATTACH ':memory:' gives a temporary database); keep the gem's tables in this one"
            )
            return _DENY
        if action == _PRAGMA and (arg1 or "").lower() not in _ALLOWED_PRAGMAS:
            self._refused = (
                f"PRAGMA {arg1} is not allowed on the gem's {self._what}: its key, journal and safety settings"
                f" stay as notochord set them; the allowed pragmas are {', '.join(sorted(_ALLOWED_PRAGMAS))}"
            )
            return _DENY
        if action == _FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
            self._refused = f"the function {arg2}() is not allowed in the gem's {self._what}"
            return _DENY
        return _OK

    @contextlib.contextmanager
    def cursor(self, caller: object = _STORE_CALLER) -> Iterator[Any]:
        """A cursor for one statement of ``caller``, once no other caller's transaction is open."""
        with self._turn:
            conn = self._take_turn(caller)
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
            until = now + _BUSY_SECONDS if until is None else until
            if now >= until:
                raise BusyError(
                    f"the gem's {self._what} is in use by another caller of this gem, which holds a transaction "
                    "open (BEGIN without COMMIT yet); this statement changed nothing; try again in a moment",
                    retry_after=max(1, int(_BUSY_SECONDS)),
                )
            self._turn.wait(until - now)
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
            return FileError(_binding_words(str(exc), what))
        return FileError(f"the gem's {what} refused the statement: {exc}")

    def close(self) -> None:
        # a statement still running is interrupted, and one waiting for the file or for another
        # caller's transaction is woken, rather than waited for
        self._closing = True
        self._closed.set()
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


def _binding_words(detail: str, what: str) -> str:
    """The driver's complaint about parameters, said in the gem's terms."""
    counted = _BINDINGS.search(detail)
    if counted is not None:
        wanted, given = int(counted[1]), int(counted[2])
        return (
            f"the statement needs {wanted} parameter{'s' * (wanted != 1)}, but {given} "
            f"{'were' if given != 1 else 'was'} given; pass one value for each ?"
        )
    named = _NAMED_BINDING.search(detail)
    if named is not None:
        which = f"number {named[1]}" if named[1].isdigit() else f":{named[1]}"
        return (
            f"the statement's parameter {which} has no value; pass an object with a value for every :name "
            "the statement holds"
        )
    if "executemany" in detail:
        return "executemany runs INSERT, UPDATE, DELETE or REPLACE statements; run a query with query instead"
    if "no name" in detail:
        return "the statement's parameters are ? marks: pass their values as a list, not an object"
    return f"the gem's {what} refused the statement's parameters: {detail}"


class SqlResult:
    """What a changing statement did."""

    def __init__(self, rowcount: int, last_row_id: int | None) -> None:
        self.rowcount = rowcount
        self.last_row_id = last_row_id

    def __repr__(self) -> str:
        return f"SqlResult(rowcount={self.rowcount}, last_row_id={self.last_row_id})"


def _statement(sql: object) -> str:
    if not isinstance(sql, str):
        raise FileError(f"a statement must be text, not {type(sql).__name__}")
    if "\x00" in sql:
        raise FileError("the statement holds a NUL character, which no SQL text may hold; remove it")
    return sql


def _params(params: object) -> Sequence[Any] | dict[str, Any]:
    """The parameters of one statement: a list, or an object of named ones, each a value SQLite
    keeps as it was given (text, a number of at most 64 bits other than NaN, bytes, true/false, null)."""
    if isinstance(params, Mapping):
        named = dict(params)
        for name, value in named.items():
            _check_parameter(f":{name}", value)
        return named
    if isinstance(params, list | tuple):
        for index, value in enumerate(params, start=1):
            _check_parameter(f"{index}", value)
        return list(params)
    raise FileError(f"the parameters of a statement are a list or an object, not {type(params).__name__}")


def _check_parameter(which: str, value: object) -> None:
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not -_LARGEST_INTEGER - 1 <= value <= _LARGEST_INTEGER
    ):
        raise FileError(f"parameter {which} is a number beyond the 64 bits SQLite holds; store it as text")
    if isinstance(value, float) and math.isnan(value):
        raise FileError(f"parameter {which} is NaN, which SQLite would keep as null; store null or text instead")
    if value is not None and not isinstance(value, str | int | float | bytes | bytearray | memoryview):
        raise FileError(
            f"parameter {which} must be text, a number, bytes, true/false or null, not {type(value).__name__}"
        )


def _rows(rows: object) -> list[Sequence[Any] | dict[str, Any]]:
    if isinstance(rows, str | bytes | bytearray | Mapping) or not isinstance(rows, Iterable):
        raise FileError(f"executemany takes a list of parameter rows, not {type(rows).__name__}")
    return [_params(row) for row in rows]


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
        text, bound = _statement(sql), _params(params)
        with self._db.cursor(self._caller) as cur:
            cur.execute(text, bound)
            return SqlResult(cur.rowcount, cur.lastrowid)

    def executemany(self, sql: str, rows: Iterable[Params]) -> SqlResult:
        """Run one statement for every parameter row, all in one transaction."""
        text, bound = _statement(sql), _rows(rows)
        with self._db.cursor(self._caller) as cur:
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
        text, bound = _statement(sql), _params(params)
        with self._db.cursor(self._caller) as cur:
            cur.execute(text, bound)
            names = [d[0] for d in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in _bounded_rows(cur)]

    def query_rows(self, sql: str, params: Params = ()) -> list[list[Any]]:
        """Rows as lists, in column order."""
        text, bound = _statement(sql), _params(params)
        with self._db.cursor(self._caller) as cur:
            cur.execute(text, bound)
            return [list(row) for row in _bounded_rows(cur)]


def _bounded_rows(cur: Any) -> list[tuple[Any, ...]]:
    """All the rows of ``cur``, refused once their text and bytes pass :data:`MAX_QUERY_BYTES`."""
    rows: list[tuple[Any, ...]] = []
    size = 0
    while batch := cur.fetchmany(1000):
        for row in batch:
            size += sum(len(v) if isinstance(v, str | bytes) else 8 for v in row)
        if size > MAX_QUERY_BYTES:
            raise FileError(
                f"the rows of this query hold more than {MAX_QUERY_BYTES // (1024 * 1024)} MB, more than one "
                "answer may carry; select fewer columns or page through them with LIMIT and OFFSET"
            )
        rows.extend(batch)
    return rows
