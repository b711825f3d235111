"""A gem's private storage: its own folder, encrypted with its own key (P-STOR-02, 08…11, K-NS-03).

Layout of the gem's folder (created with mode ``0700``)::

    sql.db        the gem's own SQLCipher database (``ctx.storage.sql``), keyed with the raw key
    kv.db         the key-value store (``ctx.storage.kv``), a second SQLCipher file
    blobs/<name>  AES-256-GCM files: b"NCB1" + 96-bit random nonce + ciphertext and tag
    documents/    the gem's ``.md`` / ``.txt`` documents, plain text (P-STOR-10)
    runs/         run folders of scheduled and event-triggered SOPs, plain (P-FILE-05, P-STOR-10)

Keys: the caller supplies one 32-byte key per gem (derivation and safekeeping live elsewhere). The
SQL database is keyed with it directly (``PRAGMA key = "x'<hex>'"``). The kv database and the blobs
use subkeys derived from it with HKDF-SHA256 under distinct labels, so no two stores share a key.

Why kv is a separate file: the gem's SQL may run any statement on its own database, ``DROP TABLE``
included, so a kv table inside it could be clobbered. In its own file the kv table is out of reach:
the gem's connection has an authorizer that refuses ``ATTACH`` of any real file (so also
``VACUUM INTO``, which would write a copy elsewhere), ``DETACH``, every ``PRAGMA`` outside a short
read-mostly list (``key``, ``rekey`` and ``cipher_*`` among the refused), and ``load_extension``.
Even an attach that slipped through would need the kv subkey, which the gem never sees.

Bounds: the gem's SQL runs in notochord's process, so a statement may run at most
``statement_seconds`` (30 s unless told otherwise; SQLite's progress handler interrupts it, and the
database stays usable), a query's rows may hold at most :data:`MAX_QUERY_BYTES` of text and bytes
(they travel to the gem in one message), all gems' databases together may hold at most
:data:`GEM_SQL_HEAP_BYTES` of SQLite's memory (a statement past it is stopped), and closing the
store (an uninstall, the vault closing) interrupts a statement still running instead of waiting.

Isolation (K-NS-03, P-STOR-08): a store reaches only its own folder; names of documents and blobs
are validated (no separators beyond ``/`` between plain segments, no ``..``, no hidden segment, no
absolute path). A wrong key fails on open with a :class:`~notochord.errors.FileError`; a tampered
or foreign blob fails authentication the same way. :meth:`GemStore.destroy` deletes the folder
(P-STOR-11, K-UNINST-03); a reinstall gets a new, empty folder (K-UNINST-11). Every ``OSError``,
``sqlcipher3`` error and ``cryptography`` error is translated; none escapes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlcipher3
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from notochord.errors import ClosedError, FileError, FileNotFoundInWorkspaceError, FilePermissionError
from notochord.files.full import disk_full
from notochord.files.text import utf8

__all__ = [
    "GEM_SQL_HEAP_BYTES",
    "MAX_QUERY_BYTES",
    "STATEMENT_SECONDS",
    "Blobs",
    "Documents",
    "GemSql",
    "GemStore",
    "KeyValue",
    "SqlResult",
]

KEY_BYTES = 32
STATEMENT_SECONDS = 30.0
"""How long one statement of a gem's SQL may run before it is interrupted."""
MAX_QUERY_BYTES = 32 * 1024 * 1024
"""The most text and bytes the rows of one query may hold: they go to the gem in one message."""
GEM_SQL_HEAP_BYTES = 512 * 1024 * 1024
"""The most memory SQLite may hold for all gems' databases together. SQLCipher is its own copy of
SQLite that serves gems' stores only, so its heap limit bounds them without touching the vault's."""
_PROGRESS_STEPS = 10_000  # SQLite virtual-machine steps between two looks at the clock
_BLOB_MAGIC = b"NCB1"
_NONCE_BYTES = 12
_DOCUMENT_SUFFIXES = (".md", ".txt")
_MAX_NAME = 255
_MAX_KV_KEY = 1024

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


def _subkey(key: bytes, label: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=label.encode()).derive(key)


def _open_cipher_db(path: Path, key: bytes, what: str) -> sqlcipher3.Connection:
    try:
        conn = sqlcipher3.connect(os.fspath(path), isolation_level=None, check_same_thread=False)
    except sqlcipher3.Error as exc:
        raise FileError(f"cannot open the gem's {what}: {exc}") from exc
    try:
        # Silence SQLCipher's own stderr log: a wrong key is reported through our error instead.
        conn.execute("PRAGMA cipher_log_level = NONE")
        # Without it one statement may build values of up to a gigabyte each (randomblob, replace,
        # group_concat) in notochord's memory, and every tool call in flight may run one.
        conn.execute(f"PRAGMA hard_heap_limit = {GEM_SQL_HEAP_BYTES}")
        conn.execute(f"PRAGMA key = \"x'{key.hex()}'\"")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except sqlcipher3.Error as exc:
        conn.close()
        raise FileError(
            f"cannot open the gem's {what}: wrong key or damaged file ({exc}); the data cannot be read"
        ) from exc
    return conn


def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    """The gem SQL's authorizer: its own database only, no way out of the file, no key changes."""
    if action == _ATTACH:
        return _OK if arg1 in _TEMPORARY_ATTACH else _DENY
    if action == _PRAGMA:
        return _OK if (arg1 or "").lower() in _ALLOWED_PRAGMAS else _DENY
    if action == _FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return _DENY
    return _OK


def _check_name(name: str, *, what: str, suffixes: Sequence[str] = ()) -> tuple[str, ...]:
    """Validate a document or blob name: plain segments joined by ``/``, inside the store."""
    if not isinstance(name, str) or not name:
        raise FileError(f"a {what} name must be a non-empty string")
    if "\x00" in name or "\\" in name or any(ord(c) < 32 for c in name):
        raise FileError(f"the {what} name {name!r} contains a control character or a backslash")
    lone = next((c for c in name if "\ud800" <= c <= "\udfff"), None)
    if lone is not None:  # half of a UTF-16 pair, as a JavaScript string may hold: no file name holds it
        raise FileError(f"the {what} name {name!r} holds a lone surrogate (U+{ord(lone):04X}); remove it")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise FilePermissionError(f"the {what} name {name!r} is an absolute path", path=name)
    parts = tuple(name.split("/"))
    for part in parts:
        if part in ("", ".", ".."):
            raise FilePermissionError(f"the {what} name {name!r} has an empty, . or .. segment", path=name)
        if part.startswith("."):
            raise FilePermissionError(f"the {what} name {name!r} has a hidden segment", path=name)
        if len(part.encode()) > _MAX_NAME:
            raise FileError(f"the {what} name {name!r} has a segment longer than {_MAX_NAME} bytes")
    if suffixes and not parts[-1].lower().endswith(tuple(suffixes)):
        raise FileError(f"the {what} name {name!r} must end in one of {', '.join(suffixes)}")
    return parts


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".~{uuid.uuid4().hex}.tmp"
    try:
        with open(tmp, "xb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


class _Guarded:
    """A SQLCipher connection shared between threads, one statement at a time, each within its time."""

    def __init__(self, conn: sqlcipher3.Connection, what: str, *, statement_seconds: float) -> None:
        self._conn: sqlcipher3.Connection | None = conn
        self._what = what
        self._lock = threading.Lock()
        self._statement_seconds = statement_seconds
        self._deadline = float("inf")
        self._closing = False
        self._overran = False
        conn.set_progress_handler(self._should_stop, _PROGRESS_STEPS)

    def _should_stop(self) -> int:
        # SQLite calls this every _PROGRESS_STEPS steps of a statement; non-zero interrupts it
        if self._closing:
            return 1
        if time.monotonic() > self._deadline:
            self._overran = True
            return 1
        return 0

    @contextlib.contextmanager
    def cursor(self) -> Iterator[Any]:
        with self._lock:
            if self._conn is None or self._closing:
                raise ClosedError(f"the gem's {self._what} was closed")
            self._overran = False
            self._deadline = time.monotonic() + self._statement_seconds
            try:
                yield self._conn.cursor()
            except sqlcipher3.Error as exc:
                raise self._translate(exc) from exc
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

    def _translate(self, exc: sqlcipher3.Error) -> Exception:
        if self._closing:
            return ClosedError(f"the gem's {self._what} was closed while a statement ran; it was stopped")
        if self._overran:
            return FileError(
                f"a statement on the gem's {self._what} ran longer than {self._statement_seconds:g} s and was "
                "stopped, changing nothing; make it cheaper (an index, a LIMIT) or split the work"
            )
        full = disk_full(exc, f"the gem's {self._what}")
        return full or FileError(f"the gem's {self._what} refused the statement: {exc}")

    def close(self) -> None:
        self._closing = True  # a statement still running is interrupted rather than waited for
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _kv_json(key: str, value: Any) -> str:
    """``value`` as the JSON the key-value store keeps, or a refusal that says what cannot be JSON."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise FileError(f"the value for {key!r} cannot be stored: NaN and infinities are not JSON numbers") from None
    except TypeError:
        raise FileError(
            f"the value for {key!r} cannot be stored: the key-value store keeps JSON (text, numbers, true, "
            "false, null, lists and objects with text keys); keep bytes in a blob (ctx.data.blobs)"
        ) from None
    except RecursionError:
        raise FileError(f"the value for {key!r} cannot be stored: it is nested too deeply") from None


class KeyValue:
    """``ctx.storage.kv``: JSON values under string keys."""

    def __init__(self, db: _Guarded) -> None:
        self._db = db
        with db.cursor() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def get(self, key: str, default: Any = None) -> Any:
        _check_kv_key(key)
        with self._db.cursor() as cur:
            row = cur.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def set(self, key: str, value: Any) -> None:
        _check_kv_key(key)
        text = _kv_json(key, value)
        with self._db.cursor() as cur:
            cur.execute(
                "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, text),
            )

    def delete(self, key: str) -> bool:
        """Remove ``key``; returns whether it existed."""
        _check_kv_key(key)
        with self._db.cursor() as cur:
            return bool(cur.execute("DELETE FROM kv WHERE key = ?", (key,)).rowcount)

    def list(self, prefix: str = "") -> list[str]:
        """Keys starting with ``prefix``, sorted."""
        with self._db.cursor() as cur:
            rows = cur.execute(
                "SELECT key FROM kv WHERE substr(key, 1, ?) = ? ORDER BY key", (len(prefix), prefix)
            ).fetchall()
        return [row[0] for row in rows]


def _check_kv_key(key: str) -> None:
    if not isinstance(key, str) or not key or len(key) > _MAX_KV_KEY:
        raise FileError(f"a kv key must be a string of 1 to {_MAX_KV_KEY} characters")


class SqlResult:
    """What a changing statement did."""

    def __init__(self, rowcount: int, last_row_id: int | None) -> None:
        self.rowcount = rowcount
        self.last_row_id = last_row_id

    def __repr__(self) -> str:
        return f"SqlResult(rowcount={self.rowcount}, last_row_id={self.last_row_id})"


class GemSql:
    """``ctx.storage.sql``: the gem's own database. Each call is one statement, autocommitted
    unless the gem opened a transaction with ``BEGIN``."""

    def __init__(self, db: _Guarded) -> None:
        self._db = db

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> SqlResult:
        with self._db.cursor() as cur:
            cur.execute(sql, params)
            return SqlResult(cur.rowcount, cur.lastrowid)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any] | dict[str, Any]]) -> SqlResult:
        """Run one statement for every parameter row, all in one transaction."""
        with self._db.cursor() as cur:
            in_tx = cur.connection.in_transaction
            if not in_tx:
                cur.execute("BEGIN")
            try:
                cur.executemany(sql, rows)
                result = SqlResult(cur.rowcount, cur.lastrowid)
            except BaseException:
                if not in_tx:
                    cur.execute("ROLLBACK")
                raise
            if not in_tx:
                cur.execute("COMMIT")
            return result

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        """Rows as dicts keyed by column name."""
        with self._db.cursor() as cur:
            cur.execute(sql, params)
            names = [d[0] for d in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in _bounded_rows(cur)]

    def query_rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[list[Any]]:
        """Rows as lists, in column order."""
        with self._db.cursor() as cur:
            cur.execute(sql, params)
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


class Documents:
    """The gem's documents: plain ``.md`` / ``.txt`` files (P-STOR-10)."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder

    def _path(self, name: str) -> Path:
        return self._folder.joinpath(*_check_name(name, what="document", suffixes=_DOCUMENT_SUFFIXES))

    def write(self, name: str, text: str) -> None:
        path = self._path(name)
        try:
            _write_atomic(path, utf8(text, f"the document {name}"))
        except OSError as exc:
            full = disk_full(exc, f"the document {name}")
            raise full or FileError(f"cannot write the document {name}: {exc.strerror}") from exc

    def read(self, name: str) -> str:
        path = self._path(name)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise FileNotFoundInWorkspaceError(f"no document {name}", path=name) from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise FileError(f"cannot read the document {name}") from exc

    def delete(self, name: str) -> bool:
        path = self._path(name)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise FileError(f"cannot delete the document {name}: {exc.strerror}") from exc
        return True

    def list(self) -> list[str]:
        """Names of all documents, sorted, with ``/`` between folders."""
        names: list[str] = []
        try:
            for dirpath, dirs, files in os.walk(self._folder):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                base = Path(dirpath).relative_to(self._folder)
                names.extend(
                    (base / f).as_posix()
                    for f in files
                    if not f.startswith(".") and f.lower().endswith(_DOCUMENT_SUFFIXES)
                )
        except OSError as exc:
            raise FileError(f"cannot list the documents: {exc.strerror}") from exc
        return sorted(names)


class Blobs:
    """Binary values encrypted with AES-256-GCM; the blob's name is the associated data."""

    def __init__(self, folder: Path, key: bytes) -> None:
        self._folder = folder
        self._aead = AESGCM(key)

    def _path(self, name: str) -> Path:
        return self._folder.joinpath(*_check_name(name, what="blob"))

    def put(self, name: str, data: bytes) -> None:
        path = self._path(name)
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, bytes(data), _aad(name))
        try:
            _write_atomic(path, _BLOB_MAGIC + nonce + sealed)
        except OSError as exc:
            raise disk_full(exc, f"the blob {name}") or FileError(
                f"cannot write the blob {name}: {exc.strerror}"
            ) from exc

    def get(self, name: str) -> bytes:
        path = self._path(name)
        try:
            raw = path.read_bytes()
        except FileNotFoundError as exc:
            raise FileNotFoundInWorkspaceError(f"no blob {name}", path=name) from exc
        except OSError as exc:
            raise FileError(f"cannot read the blob {name}: {exc.strerror}") from exc
        head = len(_BLOB_MAGIC) + _NONCE_BYTES
        if len(raw) < head + 16 or not raw.startswith(_BLOB_MAGIC):
            raise FileError(f"the blob {name} is damaged or not a blob of this gem")
        try:
            return self._aead.decrypt(raw[len(_BLOB_MAGIC) : head], raw[head:], _aad(name))
        except InvalidTag as exc:
            raise FileError(f"the blob {name} failed authentication: damaged, moved or another gem's") from exc

    def delete(self, name: str) -> bool:
        try:
            self._path(name).unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise FileError(f"cannot delete the blob {name}: {exc.strerror}") from exc
        return True

    def list(self) -> list[str]:
        names: list[str] = []
        try:
            for dirpath, dirs, files in os.walk(self._folder):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                base = Path(dirpath).relative_to(self._folder)
                names.extend((base / f).as_posix() for f in files if not f.startswith("."))
        except OSError as exc:
            raise FileError(f"cannot list the blobs: {exc.strerror}") from exc
        return sorted(names)


def _aad(name: str) -> bytes:
    return b"notochord-blob-v1\x00" + name.encode("utf-8")


class GemStore:
    """One gem's private storage in ``folder``, opened with the gem's 32-byte ``key``."""

    def __init__(self, folder: Path, *, key: bytes, statement_seconds: float = STATEMENT_SECONDS) -> None:
        if not isinstance(key, bytes) or len(key) != KEY_BYTES:
            raise FileError(f"a gem storage key must be {KEY_BYTES} bytes")
        self.folder = folder
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            for sub in ("blobs", "documents"):
                (folder / sub).mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            full = disk_full(exc, f"the gem's storage folder {folder}")
            raise full or FileError(f"cannot create the gem's storage folder {folder}: {exc.strerror}") from exc
        kv_conn = _open_cipher_db(folder / "kv.db", _subkey(key, "notochord/gem-storage/kv/v1"), "key-value store")
        try:
            sql_conn = _open_cipher_db(folder / "sql.db", key, "SQL database")
        except FileError:
            kv_conn.close()
            raise
        sql_conn.set_authorizer(_authorize)
        self._kv_db = _Guarded(kv_conn, "key-value store", statement_seconds=statement_seconds)
        self._sql_db = _Guarded(sql_conn, "SQL database", statement_seconds=statement_seconds)
        self.kv = KeyValue(self._kv_db)
        self.sql = GemSql(self._sql_db)
        self.documents = Documents(folder / "documents")
        self.blobs = Blobs(folder / "blobs", _subkey(key, "notochord/gem-storage/blobs/v1"))

    @property
    def run_base(self) -> Path:
        """Base for the run folders (``runs/…``) of the gem's scheduled and event-triggered SOPs
        (P-FILE-05): the gem's own folder, so uninstall deletes them with it (P-FILE-15)."""
        return self.folder

    def close(self) -> None:
        self._kv_db.close()
        self._sql_db.close()

    def destroy(self) -> None:
        """Delete the whole folder: databases, blobs, documents and run folders (P-STOR-11)."""
        self.close()
        try:
            shutil.rmtree(self.folder)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise FileError(f"could not delete the gem's storage folder {self.folder}: {exc.strerror}") from exc

    def __enter__(self) -> GemStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
