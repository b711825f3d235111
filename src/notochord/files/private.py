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

Neither database is ever zero bytes while it exists: each is built complete aside and linked into
place, and an empty one is refused as damage (:mod:`notochord.files.private_create`, which also says
how an earlier version's never-written ``sql.db`` keeps working).

Why kv is a separate file: the gem's SQL may run any statement on its own database, ``DROP TABLE``
included, so a kv table inside it could be clobbered. In its own file the kv table is out of reach:
the gem's connection is fenced in (:mod:`notochord.files.private_sql`: no ``ATTACH`` of a real file,
no ``VACUUM INTO``, no key, journal or safety pragma, no ``load_extension``). Even an attach that
slipped through would need the kv subkey, which the gem never sees.

Bounds: the gem's SQL runs in notochord's process, so it is bounded in time, memory and the size of
one answer (:mod:`notochord.files.private_sql`); a kv value is bounded the same way, as it must
travel back to the gem in one answer too. So are the lists of kv keys, documents and blobs: each
takes a prefix (the start of a name, folders and all), and is refused once its names pass what one
answer may carry, saying to list by longer prefixes, as soon as they do: neither a table of millions
of keys nor a folder of millions of files is gathered whole in notochord's memory first.

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
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from notochord.errors import FileError, FileNotFoundInWorkspaceError, FilePermissionError
from notochord.files import private_sql
from notochord.files.full import disk_full
from notochord.files.private_create import KV_FILE, KV_WHAT, open_gem_databases
from notochord.files.private_sql import (
    GEM_SQL_HEAP_BYTES,
    MAX_QUERY_BYTES,
    SQL_FILE,
    SQL_WHAT,
    STATEMENT_SECONDS,
    GemSql,
    Guarded,
    SqlResult,
)
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
_BLOB_MAGIC = b"NCB1"
_NONCE_BYTES = 12
_DOCUMENT_SUFFIXES = (".md", ".txt")
_MAX_NAME = 255
_MAX_KV_KEY = 1024


def _subkey(key: bytes, label: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=label.encode()).derive(key)


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


def _kv_json(key: str, value: Any) -> str:
    """``value`` as the JSON the key-value store keeps, or a refusal that says what cannot be JSON."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise FileError(f"the value for {key!r} cannot be stored: NaN and infinities are not JSON numbers") from None
    except TypeError:
        raise FileError(
            f"the value for {key!r} cannot be stored: the key-value store keeps JSON (text, numbers, true, "
            "false, null, lists and objects with text keys); keep bytes in a blob (ctx.data.blobs)"
        ) from None
    except RecursionError:
        raise FileError(f"the value for {key!r} cannot be stored: it is nested too deeply") from None
    if len(text) > MAX_QUERY_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_QUERY_BYTES:
        raise FileError(
            f"the value for {key!r} cannot be stored: it holds more than {MAX_QUERY_BYTES // (1024 * 1024)} MB as"
            " JSON, more than one answer may carry back; keep large data in a blob (ctx.data.blobs)"
        )
    return text


class KeyValue:
    """``ctx.storage.kv``: JSON values under string keys."""

    def __init__(self, db: Guarded) -> None:
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
        """Keys starting with ``prefix``, sorted; refused when they would hold more than
        :data:`MAX_QUERY_BYTES` of text."""
        if not isinstance(prefix, str):
            raise FileError(f"a kv prefix must be text, not {type(prefix).__name__}")
        if "\x00" in prefix:
            raise FileError("a kv prefix may not hold the NUL character, as no key holds it; remove it")
        keys: list[str] = []
        size = 0
        with self._db.cursor() as cur:
            cur.execute("SELECT key FROM kv WHERE substr(key, 1, ?) = ? ORDER BY key", (len(prefix), prefix))
            # the keys travel to the gem in one answer: a store of millions of keys must not build
            # gigabytes of them in notochord's memory first
            while batch := cur.fetchmany(1000):
                size += sum(len(row[0]) for row in batch)
                if size > MAX_QUERY_BYTES:
                    raise FileError(
                        f"the keys starting with {prefix[:80]!r} hold more than {MAX_QUERY_BYTES // (1024 * 1024)} MB,"
                        " more than one answer may carry; list them by longer prefixes"
                    )
                keys.extend(row[0] for row in batch)
        return keys


def _check_kv_key(key: str) -> None:
    if not isinstance(key, str) or not key or len(key) > _MAX_KV_KEY:
        raise FileError(f"a kv key must be a string of 1 to {_MAX_KV_KEY} characters")
    if "\x00" in key:
        # SQLite's text functions stop at NUL, so ``list`` would never find such a key by its prefix
        raise FileError("a kv key may not hold the NUL character; remove it or use another separator")


_NAME_QUOTES = 3  # the quotes and the comma around each name in the answer's JSON


def _size_words(size: int) -> str:
    mb = 1024 * 1024
    return f"{size // mb} MB" if size >= mb and size % mb == 0 else f"{size} bytes"


def _is_folder(entry: os.DirEntry[str]) -> bool:
    """Whether to look inside ``entry``: a folder, never a link to one (which might lead out of the
    store), as the walk before this one did."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_link_to_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink() and entry.is_dir()
    except OSError:
        return False


def _list_names(folder: Path, prefix: str, *, keep: Callable[[str], bool], what: str, bound: int) -> list[str]:
    """Names of the files under ``folder`` starting with ``prefix`` that ``keep`` takes (by their
    last segment), sorted, with ``/`` between folders. Hidden entries are skipped, and so is every
    folder none of whose names could start with ``prefix``.

    The names travel to the gem in one answer, so they are refused as soon as those found, with the
    folders still to be read, pass ``bound`` bytes: a store of millions of files must not build
    gigabytes of names in notochord's memory first, nor read them all to say no.
    """
    if not isinstance(prefix, str):
        raise FileError(f"a prefix of {what} names must be text, not {type(prefix).__name__}")
    names: list[str] = []
    pending = [""]  # folders still to read, relative to ``folder``, each ending in "/"
    held = 0
    while pending:
        base = pending.pop()
        held -= len(base.encode("utf-8", "surrogateescape")) + _NAME_QUOTES if base else 0
        try:
            with os.scandir(folder / base) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    name = base + entry.name
                    if _is_folder(entry):
                        name += "/"
                        if not (name.startswith(prefix) or prefix.startswith(name)):
                            continue
                        pending.append(name)
                    elif _is_link_to_folder(entry) or not (name.startswith(prefix) and keep(entry.name)):
                        continue
                    else:
                        names.append(name)
                    held += len(name.encode("utf-8", "surrogateescape")) + _NAME_QUOTES
                    if held > bound:
                        raise FileError(_too_many_names(what, prefix, bound))
        except (FileNotFoundError, NotADirectoryError):
            continue  # removed while the list was read (or never made): nothing in it to list
        except OSError as exc:
            raise FileError(f"cannot list the {what}: {exc.strerror}") from exc
    return sorted(names)


def _too_many_names(what: str, prefix: str, bound: int) -> str:
    which = f"the {what} whose names start with {prefix[:80]!r}" if prefix else f"the gem's {what}"
    return (
        f"{which} have names of more than {_size_words(bound)} together, more than one answer may carry;"
        " list them by longer prefixes (a folder's name and '/', say)"
    )


class Documents:
    """The gem's documents: plain ``.md`` / ``.txt`` files (P-STOR-10)."""

    def __init__(self, folder: Path, *, list_bytes: int = MAX_QUERY_BYTES) -> None:
        self._folder = folder
        self._list_bytes = list_bytes

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

    def list(self, prefix: str = "") -> list[str]:
        """Names of the documents starting with ``prefix``, sorted, with ``/`` between folders;
        refused when they would hold more than one answer may carry."""
        return _list_names(
            self._folder,
            prefix,
            keep=lambda file: file.lower().endswith(_DOCUMENT_SUFFIXES),
            what="documents",
            bound=self._list_bytes,
        )


class Blobs:
    """Binary values encrypted with AES-256-GCM; the blob's name is the associated data."""

    def __init__(self, folder: Path, key: bytes, *, list_bytes: int = MAX_QUERY_BYTES) -> None:
        self._folder = folder
        self._aead = AESGCM(key)
        self._list_bytes = list_bytes

    def _path(self, name: str) -> Path:
        return self._folder.joinpath(*_check_name(name, what="blob"))

    def put(self, name: str, data: bytes) -> None:
        path = self._path(name)
        if not isinstance(data, bytes | bytearray | memoryview):
            # bytes(5) would be five zero bytes: a number is no blob
            raise FileError(f"the blob {name} must be bytes, not {type(data).__name__}; encode text first")
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

    def list(self, prefix: str = "") -> list[str]:
        """Names of the blobs starting with ``prefix``, sorted; refused when they would hold more
        than one answer may carry."""
        return _list_names(self._folder, prefix, keep=lambda _file: True, what="blobs", bound=self._list_bytes)


def _aad(name: str) -> bytes:
    return b"notochord-blob-v1\x00" + name.encode("utf-8")


class GemStore:
    """One gem's private storage in ``folder``, opened with the gem's 32-byte ``key``.

    ``list_bytes`` bounds the names one listing of documents or blobs may hold (by default what one
    answer may carry). ``idle_transaction_seconds`` is how long a transaction of a caller reaching
    the SQL database through this store (outside any run) may rest before another caller or run
    that needs the database rolls it back (by default
    :data:`~notochord.files.private_sql.IDLE_TRANSACTION_SECONDS`, read when the store opens).
    """

    def __init__(
        self,
        folder: Path,
        *,
        key: bytes,
        statement_seconds: float = STATEMENT_SECONDS,
        list_bytes: int = MAX_QUERY_BYTES,
        idle_transaction_seconds: float | None = None,
    ) -> None:
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
        kv_path, sql_path = folder / KV_FILE, folder / SQL_FILE
        kv_conn, sql_conn = open_gem_databases(folder, kv_key=_subkey(key, "notochord/gem-storage/kv/v1"), sql_key=key)
        self._kv_db = Guarded(kv_conn, KV_WHAT, path=kv_path, statement_seconds=statement_seconds)
        idle = private_sql.IDLE_TRANSACTION_SECONDS if idle_transaction_seconds is None else idle_transaction_seconds
        self._sql_db = Guarded(
            sql_conn, SQL_WHAT, path=sql_path, statement_seconds=statement_seconds, fenced=True, idle_limit=idle
        )
        self.kv = KeyValue(self._kv_db)
        self.sql = GemSql(self._sql_db)  # one caller of its own; others come through sql_for
        self.documents = Documents(folder / "documents", list_bytes=list_bytes)
        self.blobs = Blobs(folder / "blobs", _subkey(key, "notochord/gem-storage/blobs/v1"), list_bytes=list_bytes)

    def sql_for(self, caller: str) -> GemSql:
        """The SQL database as ``caller`` (a run id) reaches it on the store's own connection: a
        ``BEGIN`` of one caller holds the connection until it ends, and the others wait for it; once
        it has rested past the idle bound, the first that needs the database rolls it back
        (:mod:`notochord.files.private_sql`)."""
        return GemSql(self._sql_db, caller=caller)

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
