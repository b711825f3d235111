"""What changed in a full-text table since an in-memory index was built: read, tokenised, counted.

:mod:`~notochord.search.inverted_index` keeps its index current by applying only what changed; this
module is the part that asks the database (and nothing else). Rules:

- **New rows are found by id.** Chunk ids are never reused and a new chunk takes an id above every
  earlier one, so the rows a held index lacks are those above the highest id it saw
  (:func:`rows_above`) — a range scan, its cost that of the rows returned.
- **Their postings are FTS5's own.** On SQLite the rows' stored (derived) text is read from the
  FTS5 table and tokenised by FTS5 itself in a private in-memory database with the table's tokenizer
  (:data:`~notochord.search.textindex.FTS_TOKENIZER`), so terms, term frequencies and lengths are
  exactly those FTS5 holds. On PostgreSQL they are the rows of the postings table.
- **Edits in place are named by the change log.** A document written again leaves a change record;
  its chunks are compared by ``(id, text_hash)`` with what the index holds (:func:`changed_chunks`),
  so a retitled document whose chunks keep their ids is re-read, even when the new title has as many
  tokens as the old.
- **Totals check the rest.** FTS5 keeps the number of rows and of tokens in its *averages* record
  (:func:`totals`, one row); the refreshed index must hold the same, or the held ids are compared
  with the table's (:func:`present`) — which finds whatever left outside the change log (a purge,
  a repair) — and, failing that too, the index is rebuilt.
- **A repair says so.** ``check --repair`` rewrites full-text rows without a change record (the
  change log records what people and gems did, not maintenance), and a row rewritten in place with
  as many tokens as before would pass the totals. So a repair draws a new *generation*
  (:func:`new_generation`, a random token in ``space_meta``); an index held at another generation
  is rebuilt, in this process and in any other that holds one.
- ``reads`` counts every row and posting read here, so a test can tell that a refresh after one
  written document reads that document only, whatever the size of the space.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

from notochord.db.engine import storage_errors
from notochord.db.schema import change_objects, changes, chunks, space_meta
from notochord.search import text_store_pg
from notochord.search.textindex import FTS_TOKENIZER

__all__ = [
    "Rows",
    "changed_chunks",
    "fingerprint",
    "generation",
    "has_change_log",
    "hashes_of",
    "named_documents",
    "new_generation",
    "newest_change",
    "present",
    "reads",
    "rows_above",
    "rows_of",
    "totals",
]

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]

_AVERAGES_ROWID = 1  # FTS5_AVERAGES_ROWID: the number of rows, then the tokens of each column


class _Reads:
    """Rows and postings read by refreshes in this process (for the tests that count them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rows = 0
        self.postings = 0

    def add(self, rows: int, postings: int = 0) -> None:
        with self._lock:
            self.rows += rows
            self.postings += postings


reads = _Reads()


@dataclass(frozen=True)
class Rows:
    """Chunks' postings read for a refresh: ``ids`` ascending (every row read, with tokens or not),
    then per posting its term, the position of its chunk in ``ids`` and its term frequency, in
    term-then-chunk order."""

    ids: IntArray
    lengths: Int32Array
    terms: list[str]
    term_of: IntArray
    chunk_of: IntArray
    frequencies: Int32Array


def _empty_rows() -> Rows:
    return Rows(
        np.zeros(0, np.int64), np.zeros(0, np.int32), [], np.zeros(0, np.int64), np.zeros(0, np.int64), _i32([])
    )


def _i32(values: Sequence[int]) -> Int32Array:
    return np.asarray(values, dtype=np.int32)


def rows_above(conn: sa.Connection, table: str, top: int) -> Rows:
    """Postings of the rows of ``table`` whose id is above ``top`` (the chunks written since)."""
    if text_store_pg.is_postgresql(conn):
        ids = _ids(conn, f"SELECT rowid FROM {table} WHERE rowid > :top ORDER BY rowid", {"top": top})
        return _pg_postings(conn, table, ids)
    return _tokenised(conn, f"SELECT rowid, body FROM {table} WHERE rowid > :top ORDER BY rowid", {"top": top})


def rows_of(conn: sa.Connection, table: str, chunk_ids: Sequence[int]) -> Rows:
    """Postings of the given rows of ``table`` (ids it lacks are left out)."""
    wanted = sorted({int(i) for i in chunk_ids})
    if not wanted:
        return _empty_rows()
    parts = [wanted[i : i + 500] for i in range(0, len(wanted), 500)]
    if text_store_pg.is_postgresql(conn):
        found: list[int] = []
        for part in parts:
            found += _ids(conn, f"SELECT rowid FROM {table} WHERE rowid = ANY(:ids) ORDER BY rowid", {"ids": part})
        return _pg_postings(conn, table, found)
    rows: list[tuple[int, str]] = []
    for part in parts:
        listed = ",".join(str(i) for i in part)
        rows += _read(conn, f"SELECT rowid, body FROM {table} WHERE rowid IN ({listed}) ORDER BY rowid", {})
    return _tokenise(sorted(rows))


def _read(conn: sa.Connection, sql: str, params: dict[str, object]) -> list[tuple[int, str]]:
    with storage_errors("reading the full-text index"):
        found = [(int(r[0]), str(r[1] or "")) for r in conn.execute(sa.text(sql), params)]
    reads.add(len(found))
    return found


def _ids(conn: sa.Connection, sql: str, params: dict[str, object]) -> list[int]:
    with storage_errors("reading the full-text index"):
        found = [int(r[0]) for r in conn.execute(sa.text(sql), params)]
    reads.add(len(found))
    return found


def _tokenised(conn: sa.Connection, sql: str, params: dict[str, object]) -> Rows:
    return _tokenise(_read(conn, sql, params))


class _Tokenizer:
    """FTS5 itself, in a private in-memory database: what it stores for a row is what we hold."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.execute(f"CREATE VIRTUAL TABLE w USING fts5(t, tokenize='{FTS_TOKENIZER}')")
        self.db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, instance)")


_TOKENIZER = _Tokenizer()


def _tokenise(rows: Sequence[tuple[int, str]]) -> Rows:
    """The postings FTS5 makes of ``(id, stored text)`` rows, given in ascending id order."""
    if not rows:
        return _empty_rows()
    with _TOKENIZER.lock:
        db = _TOKENIZER.db
        try:
            db.executemany("INSERT INTO w(rowid, t) VALUES (?, ?)", rows)
            found = db.execute("SELECT term, doc, count(*) FROM v GROUP BY term, doc ORDER BY term, doc").fetchall()
        finally:
            db.execute("DELETE FROM w")
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return _rows(ids, [(str(t), int(d), int(n)) for t, d, n in found])


def _rows(ids: IntArray, postings: Sequence[tuple[str, int, int]]) -> Rows:
    """``(term, chunk id, tf)`` in term-then-chunk order → :class:`Rows` over ``ids``."""
    names: list[str] = []
    term_of = np.zeros(len(postings), dtype=np.int64)
    for i, (term, _, _) in enumerate(postings):
        if not names or names[-1] != term:
            names.append(term)
        term_of[i] = len(names) - 1
    docs = np.fromiter((p[1] for p in postings), dtype=np.int64, count=len(postings))
    tfs = np.fromiter((p[2] for p in postings), dtype=np.int32, count=len(postings))
    chunk_of = np.searchsorted(ids, docs).astype(np.int64)
    lengths = np.bincount(chunk_of, weights=tfs, minlength=len(ids)).astype(np.int32)
    reads.add(0, len(postings))
    return Rows(ids, lengths, names, term_of, chunk_of, tfs)


def _pg_postings(conn: sa.Connection, table: str, ids: Sequence[int]) -> Rows:
    found: list[tuple[str, int, int]] = []
    with storage_errors(f"reading the full-text index {table}"):
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            found += [
                (str(r[0]), int(r[1]), int(r[2]))
                for r in conn.execute(
                    sa.text(f"SELECT term, chunk_id, tf FROM {table}_terms WHERE chunk_id = ANY(:ids)"), {"ids": part}
                )
            ]
    found.sort()
    return _rows(np.asarray(sorted(ids), dtype=np.int64), found)


def totals(conn: sa.Connection, table: str) -> tuple[int, int]:
    """Rows and tokens ``table`` holds as of ``conn``'s snapshot (FTS5's averages record; one read)."""
    with storage_errors(f"reading the size of the full-text index {table}"):
        if text_store_pg.is_postgresql(conn):
            rows = conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar()
            tokens = conn.execute(sa.text(f"SELECT coalesce(sum(tf), 0) FROM {table}_terms")).scalar()
            return int(rows or 0), int(tokens or 0)
        raw = conn.exec_driver_sql(f"SELECT block FROM {table}_data WHERE id = {_AVERAGES_ROWID}").scalar()
    block = bytes(raw or b"")
    rows, at = _varint(block, 0)
    tokens, _ = _varint(block, at)
    return rows, tokens


def _varint(block: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint at ``at`` (FTS5 writes its records with it); 0 past the end."""
    value = 0
    for i in range(at, min(at + 9, len(block))):
        byte = block[i]
        if i == at + 8:
            return (value << 8) | byte, i + 1
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, i + 1
    return value, len(block)


def present(conn: sa.Connection, table: str) -> IntArray:
    """Every row id of ``table`` (the comparison of last resort: ids only, no text, no posting)."""
    sql = f"SELECT rowid FROM {table}" if text_store_pg.is_postgresql(conn) else f"SELECT id FROM {table}_docsize"
    with storage_errors(f"reading the full-text index {table}"):
        found = np.fromiter((int(r[0]) for r in conn.exec_driver_sql(sql)), dtype=np.int64)
    reads.add(len(found))
    return np.sort(found)


def has_change_log(conn: sa.Connection) -> bool:
    """Whether the database holds a space's chunks and change log (a bare FTS5 table does not)."""
    with storage_errors("reading the tables of the space"):
        names = set(sa.inspect(conn).get_table_names())
    return {chunks.name, changes.name, change_objects.name} <= names


def newest_change(conn: sa.Connection) -> int:
    """The id of the newest change record (0 when there is none)."""
    with storage_errors("reading the change log"):
        return int(conn.execute(sa.select(sa.func.max(changes.c.id))).scalar() or 0)


GENERATION_KEY = "fulltext.generation"


def generation(conn: sa.Connection) -> str:
    """The space's full-text generation (``""`` until the first repair)."""
    with storage_errors("reading the full-text generation"):
        found = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == GENERATION_KEY)).scalar()
    return "" if found is None else str(found)


def new_generation(conn: sa.Connection) -> str:
    """Draw a new generation in the caller's write transaction, so every held index is rebuilt."""
    token = secrets.token_hex(8)
    with storage_errors("writing the full-text generation"):
        done = conn.execute(sa.update(space_meta).where(space_meta.c.key == GENERATION_KEY).values(value=token))
        if not done.rowcount:
            conn.execute(sa.insert(space_meta).values(key=GENERATION_KEY, value=token))
    return token


def fingerprint(text_hashes: Sequence[str]) -> IntArray:
    """64 bits of each chunk's ``text_hash`` (hex sha256): enough to tell an edited chunk from its old text."""
    prints = (int(h[:16] or "0", 16) - (1 << 63) for h in text_hashes)
    return np.fromiter(prints, dtype=np.int64, count=len(text_hashes))


def hashes_of(conn: sa.Connection, where: sa.ColumnElement[bool]) -> tuple[IntArray, IntArray]:
    """Ids (ascending) of the chunks ``where`` selects, and per chunk its fingerprint and document id."""
    with storage_errors("reading the chunks of the space"):
        found = conn.execute(
            sa.select(chunks.c.id, chunks.c.text_hash, chunks.c.document_id).where(where).order_by(chunks.c.id)
        ).all()
    reads.add(len(found))
    ids = np.fromiter((int(r[0]) for r in found), dtype=np.int64, count=len(found))
    keys = np.zeros((len(found), 2), np.int64)
    keys[:, 0] = fingerprint([str(r[1]) for r in found])
    keys[:, 1] = np.fromiter((int(r[2]) for r in found), dtype=np.int64, count=len(found))
    return ids, keys


def named_documents(
    conn: sa.Connection, since: int, *, limit: int | None = None, counted: bool = True
) -> IntArray | None:
    """The documents change records after ``since`` name, ascending (``None`` past ``limit`` of them).

    ``counted``: added to :data:`reads` (the full-text refresh's own reads; other readers pass ``False``).
    """
    with storage_errors("reading the change log"):
        named = (
            sa.select(changes.c.target_id)
            .where(changes.c.id > since, changes.c.target_type == "document", changes.c.target_id.is_not(None))
            .union(
                sa.select(change_objects.c.object_id).where(
                    change_objects.c.change_id > since, change_objects.c.object_type == "document"
                )
            )
        )
        if limit is not None:
            named = named.limit(limit + 1)
        documents = sorted({int(d) for d in conn.execute(named).scalars()})
    if counted:
        reads.add(len(documents))
    if limit is not None and len(documents) > limit:
        return None
    return np.asarray(documents, dtype=np.int64)


def changed_chunks(conn: sa.Connection, since: int) -> tuple[IntArray, IntArray, IntArray]:
    """The documents change records after ``since`` name, and their chunks as :func:`hashes_of` gives them."""
    named_ids = named_documents(conn, since)
    assert named_ids is not None  # no limit
    documents = named_ids.tolist()
    if not documents:
        return named_ids, np.zeros(0, np.int64), np.zeros((0, 2), np.int64)
    ids, keys = hashes_of(conn, chunks.c.document_id.in_(documents))
    return named_ids, ids, keys
