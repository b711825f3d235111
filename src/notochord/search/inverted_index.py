"""An in-memory inverted index over a space's FTS5 table, for BM25 at search-engine speed (K-SRCH-03).

Rules:

- **FTS5 stays the system of record.** The index is read from FTS5's own index (an ``fts5vocab``
  *instance* view, one pass), so terms are exactly FTS5's tokens — Porter stems, CJK bigrams and
  single characters — and nothing is tokenised twice. A chunk's length is its number of tokens.
- **One index per data version, shared.** :func:`text_index` keeps one :class:`InvertedIndex` per
  engine, shared by every request and thread. Its key is FTS5's *structure record* (row 10 of the
  ``<table>_data`` shadow table), which FTS5 rewrites on every commit that touches the table — so a
  write, from this process or any other, is seen by the next search. The key is read in the
  reader's own (read) transaction, so index and snapshot always agree. Inside a *write*
  transaction, rows FTS5 still holds in memory are not in the structure record yet: search there
  only after committing (the product searches in read transactions only).
- **Kept current by what changed.** When the version moved, the held index is brought to the
  reader's snapshot by applying only the change (:mod:`.inverted_index_delta` reads it): rows above
  the highest id it saw are appended, chunks of documents the change log names are compared by
  ``(id, text_hash)`` and re-read when rewritten, and the result must hold exactly the rows and
  tokens FTS5 counts — else the ids are compared whole, and failing that it is rebuilt. Appends and
  deletions cost what changed; a rewrite in place, an id below the highest held, or dead chunks /
  tail postings past :data:`~.inverted_index_changes.COMPACT_SHARE` compact the arrays (a pass over the
  postings, no read). Refreshes are serialised per engine.
- **Saved across restarts.** A space on a SQLite file keeps its built index beside the database
  (:mod:`.inverted_index_file`); the next process loads it, checks it against the database (table,
  tokenizer, sample rows) and refreshes it as above before any search uses it. A file that does not
  check out is ignored and the index rebuilt (and saved). :func:`save_text_indexes` saves it again,
  at close, once enough changed.
- **Candidates are a mask.** The caller's candidate chunk ids become a boolean mask over the
  index's chunk order, cached per (filter, data version) by the caller
  (:mod:`notochord.knowledge.candidates`); BM25 statistics — N, the mean length, each term's document frequency —
  are computed over the mask only (:mod:`notochord.search.bm25`), dead chunks never in it. With the
  mask comes a copy of the postings restricted to the candidates (made once per filter and
  version; shared when every chunk is a candidate), so a query reads no posting of a chunk its
  caller cannot find and its cost does not depend on them. The cache is bounded in entries and in bytes.

Memory: postings take 8 bytes each (int32 position + int32 term frequency), chunk ids and lengths
12 bytes per chunk (20 with the fingerprints a space's change log needs), plus a Python dict entry
per distinct term (~200 bytes). Measured on SciFact (10,091 chunks, 748k postings, 26k terms):
6.1 MB of arrays, ~12 MB held in all, built in ~0.6 s with a transient peak of ~100 MB. Per 100k
chunks of similar text: ~60 MB of arrays, ~80–100 MB held, a build of ~6 s; memory grows with the
postings, not with the number of queries. Per 1M chunks, measured on the synthetic benchmark (62
tokens a chunk, 45.0M postings, 130k terms): 356 MiB of arrays, ~700 MiB resident after the build,
a transient peak of 2.1 GiB (FTS5's index is read a batch of terms at a time, so its occurrence
lists are never held whole), 5.4 min to build on a machine at load 9. The last few versions are
kept for readers a write behind (:data:`_RECENT`); they share the arrays until a compaction, after
which an older one holds its own until three newer versions have replaced it.

Kept current and saved, measured on a copy of the 100k synthetic space (100,007 chunks, 4.50M
postings) on a machine at load 7–12, each figure beside its baseline in the same process: the
refresh after one added document takes 22–30 ms where a rebuild takes 35–40 s (the candidates
are then brought forward from the change log too, :mod:`notochord.knowledge.candidates`: the whole
first hybrid search after a one-document write took 28–35 ms where a warm one took 5–9 ms, against
0.8–2.1 s when the candidates were read again). A restarted process has its index in 0.6–1.1 s from
the saved file where reading the table whole takes 18–31 s; its first search, candidates included,
in 2.7 s. Without a file, the first build costs the whole read plus ~0.9 s for the chunks' hashes
and ~0.3 s to save. The file: 39.8 MB per 100k such chunks (~8.8 bytes a posting). A compaction
takes ~2 s at 100k chunks; on PostgreSQL a refresh also counts the postings table's rows and tokens.

Ranking (:func:`top_bm25`, MaxScore pruning) walks only the rarest query terms' postings and looks
the frequent ones up for the chunks that can still reach the top, with scores bit-identical to
walking every posting. 200 Zipf queries of 2-6 words, 100 chunks each, on a machine at load 12:
at 1M chunks p50 120 ms where walking every posting took 484 ms (p95 747 against 980 ms: queries
of frequent words only are walked in full, 81 of the 200); at 100k chunks p50 22 against 44 ms.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import weakref
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from notochord.db.engine import storage_errors
from notochord.db.schema import chunks
from notochord.errors import StorageError
from notochord.search import inverted_index_delta as delta
from notochord.search import inverted_index_file, text_store_pg
from notochord.search.inverted_index_arrays import (
    CandidateMask,
    Held,
    InvertedIndex,
    Postings,
    assemble,
    top_bm25,
)
from notochord.search.inverted_index_changes import appended, compacted
from notochord.search.textindex import FTS_TOKENIZER

__all__ = [
    "CandidateMask",
    "InvertedIndex",
    "build_index",
    "forget",
    "index_version",
    "refresh_index",
    "save_text_indexes",
    "text_index",
    "top_bm25",
    "version_query",
]

log = logging.getLogger(__name__)

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]

_STRUCTURE_ROWID = 10  # FTS5_STRUCTURE_ROWID: the record FTS5 rewrites on every commit
_BATCH_CHARS = 16 * 1024 * 1024
_RESAVE_SHARE = 0.01
"""At close, the index is saved again once this share of its chunks changed since it was saved or
loaded (at least one): below it, the next process's refresh costs less than the write."""
_SAMPLE = 16


def version_query(table: str) -> str:
    """SQLite's statement reading the data version of the FTS5 ``table`` (its structure record), for
    a caller that reads it together with other values in one statement."""
    return f"SELECT block FROM {table}_data WHERE id = {_STRUCTURE_ROWID}"


def index_version(conn: sa.Connection, table: str) -> bytes:
    """The data version of the FTS5 ``table``: its structure record, rewritten by every commit."""
    if text_store_pg.is_postgresql(conn):
        return text_store_pg.version(conn, table)
    with storage_errors(f"reading the version of the full-text index {table}"):
        raw = conn.exec_driver_sql(version_query(table)).scalar()
    return bytes(raw) if raw is not None else b""


def _read_whole(conn: sa.Connection, table: str) -> InvertedIndex:
    """Read the whole FTS5 index of ``table`` into memory (one pass over its instances).

    SQLite hands over one row per term with the chunk id of every occurrence, in order (fts5vocab
    scans by term, then chunk); numpy turns the runs into postings and term frequencies. Far
    fewer Python objects than a row per (term, chunk): ~0.7 s for SciFact's 1.2 M occurrences
    where a row per pair took ~6 s.
    On PostgreSQL the same postings come from its postings table (:mod:`.text_store_pg`).
    """
    if text_store_pg.is_postgresql(conn):
        return _build_from_postings(conn, table)
    names: list[str] = []
    parts: list[tuple[IntArray, IntArray, Int32Array]] = []
    with storage_errors(f"reading the full-text index {table}"):
        conn.exec_driver_sql(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances USING fts5vocab(main, {table}, instance)"
        )
        result = conn.exec_driver_sql(f"SELECT term, group_concat(doc) FROM temp.{table}_instances GROUP BY term")
        # a batch of terms at a time: the occurrence strings of a million chunks would otherwise
        # be held whole, as one Python string per occurrence (several GB)
        batch: list[tuple[str, str]] = []
        held = 0
        for row in result:
            batch.append((str(row[0]), str(row[1])))
            held += len(batch[-1][1])
            if held >= _BATCH_CHARS:
                parts.append(_postings_of(batch))
                names += [name for name, _ in batch]
                batch, held = [], 0
        if batch:
            parts.append(_postings_of(batch))
            names += [name for name, _ in batch]
        # read after the instances: reading flushes rows written earlier in this transaction, which
        # rewrites the structure record
        version = index_version(conn, table)
    if not parts:
        return assemble(version, names, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32), Held())
    per_term = np.concatenate([p[0] for p in parts])
    docs = np.concatenate([p[1] for p in parts])
    tfs = np.concatenate([p[2] for p in parts])
    return assemble(version, names, per_term, docs, tfs, Held())


def _postings_of(rows: list[tuple[str, str]]) -> tuple[IntArray, IntArray, Int32Array]:
    """Postings per term, chunk ids and term frequencies of whole terms' occurrence lists."""
    lists = [r[1] for r in rows]
    counts = np.fromiter((x.count(",") + 1 for x in lists), dtype=np.int64, count=len(lists))
    occurrences = np.array(",".join(lists).split(","), dtype=np.int64)
    term_of = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    # a posting starts wherever the term or the chunk changes (both ascend within the scan)
    starts = np.ones(len(occurrences), dtype=np.bool_)
    if len(occurrences) > 1:
        starts[1:] = (occurrences[1:] != occurrences[:-1]) | (term_of[1:] != term_of[:-1])
    first = np.flatnonzero(starts)
    tfs = np.diff(np.append(first, len(occurrences))).astype(np.int32)
    per_term = np.bincount(term_of[first], minlength=len(rows)).astype(np.int64)
    return per_term, occurrences[first], tfs


def _build_from_postings(conn: sa.Connection, table: str) -> InvertedIndex:
    rows = text_store_pg.read_postings(conn, table)
    version = text_store_pg.version(conn, table)
    names = [r[0] for r in rows]
    per_term = np.fromiter((r[1].count(",") + 1 for r in rows), dtype=np.int64, count=len(rows))
    docs = np.array(",".join(r[1] for r in rows).split(","), dtype=np.int64) if rows else np.zeros(0, np.int64)
    tfs = np.array(",".join(r[2] for r in rows).split(","), dtype=np.int32) if rows else np.zeros(0, np.int32)
    return assemble(version, names, per_term, docs, tfs, Held())


def build_index(conn: sa.Connection, table: str) -> InvertedIndex:
    """The whole index of ``table`` read afresh, with what a later refresh compares against."""
    index = _read_whole(conn, table)
    rows, _ = delta.totals(conn, table)
    feed: int | None = None
    hashes: IntArray | None = None
    generation = ""
    if delta.has_change_log(conn):
        feed = delta.newest_change(conn)
        generation = delta.generation(conn)
        ids, prints = delta.hashes_of(conn, sa.true())
        hashes = _aligned(index.ids, ids, prints)
    held = Held(top=_top(conn, table), rows=rows, feed=feed, hashes=hashes, generation=generation)
    return replace(index, held=held)


def _top(conn: sa.Connection, table: str) -> int:
    with storage_errors(f"reading the full-text index {table}"):
        found = conn.execute(sa.text(f"SELECT rowid FROM {table} ORDER BY rowid DESC LIMIT 1")).scalar()
    return int(found or 0)


def _aligned(index_ids: IntArray, ids: IntArray, values: IntArray) -> IntArray:
    """``values`` rows (given for ``ids``, ascending) per position of ``index_ids``; 0 where missing."""
    out = np.zeros((len(index_ids), 2), np.int64)
    if len(ids) and len(index_ids):
        where = np.minimum(np.searchsorted(ids, index_ids), len(ids) - 1)
        hit = ids[where] == index_ids
        out[hit] = values[where[hit]]
    return out


def _postings(rows: delta.Rows, conn: sa.Connection, *, with_hashes: bool) -> Postings:
    hashes = None
    if with_hashes and len(rows.ids):
        ids, prints = delta.hashes_of(conn, chunks.c.id.in_(rows.ids.tolist()))
        hashes = _aligned(rows.ids, ids, prints)
    return Postings(rows.ids, rows.lengths, hashes, rows.terms, rows.term_of, rows.chunk_of, rows.frequencies)


def _positions(index: InvertedIndex, ids: IntArray) -> IntArray:
    """Each id's live position in ``index``, or -1."""
    found = np.full(len(ids), -1, np.int64)
    if len(index.ids) and len(ids):
        where = np.minimum(np.searchsorted(index.ids, ids), len(index.ids) - 1)
        hit = index.ids[where] == ids
        if index.alive is not None:
            hit &= index.alive[where]
        found[hit] = where[hit]
    return found


def refresh_index(conn: sa.Connection, table: str, index: InvertedIndex) -> InvertedIndex:
    """``index`` brought to ``conn``'s snapshot by applying what changed since (see the module rules)."""
    held = index.held
    if held.feed is None or delta.generation(conn) != held.generation:
        # a bare table has no change log to name rows rewritten in place, and a repair rewrote
        # rows outside it: only a rebuild is exact
        return build_index(conn, table)
    version = index_version(conn, table)
    rows_now, tokens_now = delta.totals(conn, table)
    added = _postings(delta.rows_above(conn, table, held.top), conn, with_hashes=True)
    changed = len(added.ids)
    feed, removed = delta.newest_change(conn), 0
    if feed != held.feed:
        named, ids, keys = delta.changed_chunks(conn, held.feed)
        ours = _positions(index, ids)
        hashes = held.hashes if held.hashes is not None else np.zeros((len(index.ids), 2), np.int64)
        kept = (ours >= 0) & (ids <= held.top)
        rewritten = ids[kept][hashes[ours[kept], 0] != keys[kept, 0]]
        # the named documents' chunks the index holds that they no longer have
        theirs = np.isin(hashes[:, 1], named)
        if index.alive is not None:
            theirs &= index.alive
        left = np.setdiff1d(index.ids[theirs], ids)
        if len(rewritten) or len(left):
            again = _postings(delta.rows_of(conn, table, rewritten.tolist()), conn, with_hashes=True)
            index = appended(index, np.union1d(left, rewritten), again, version=version, held=index.held)
            changed += len(rewritten) + len(left)
            removed = len(left)
    top = max(held.top, int(added.ids[-1]) if len(added.ids) else 0)
    index = appended(index, np.zeros(0, np.int64), added, version=version, held=replace(index.held, top=top, feed=feed))
    if held.rows + len(added.ids) - removed == rows_now and index.tokens == tokens_now:
        return replace(index, held=replace(index.held, rows=rows_now, changed=held.changed + changed))
    # something left or changed outside the change log (a purge, a repair): compare the ids
    present = delta.present(conn, table)
    live = index.ids if index.alive is None else index.ids[index.alive]
    gone = np.setdiff1d(live, present, assume_unique=True)
    unseen = np.setdiff1d(present, live, assume_unique=True)
    more = _postings(delta.rows_of(conn, table, unseen.tolist()), conn, with_hashes=True)
    top = max(top, int(present[-1]) if len(present) else 0)
    index = appended(index, gone, more, version=version, held=replace(index.held, top=top))
    if index.tokens != tokens_now or len(present) != rows_now:
        log.info("rebuilding the full-text index %s: it no longer matches the table", table)
        return build_index(conn, table)
    changed += len(gone) + len(unseen)
    return replace(index, held=replace(index.held, rows=rows_now, changed=held.changed + changed))


# -- saving across restarts ---------------------------------------------------------------


def _digest(body: str) -> int:
    return int.from_bytes(hashlib.blake2b(body.encode("utf-8", "surrogatepass"), digest_size=7).digest(), "big")


def _bodies(conn: sa.Connection, table: str, ids: list[int]) -> dict[int, int]:
    """Digests of the stored text of the given rows (those the table still holds)."""
    if not ids:
        return {}
    listed = ",".join(str(int(i)) for i in ids)
    with storage_errors(f"reading the full-text index {table}"):
        rows = conn.execute(sa.text(f"SELECT rowid, body FROM {table} WHERE rowid IN ({listed})")).all()
    return {int(r[0]): _digest(str(r[1] or "")) for r in rows}


def _save(conn: sa.Connection, table: str, index: InvertedIndex) -> bool:
    path = inverted_index_file.index_file(conn.engine, table)
    if path is None:
        return False
    if index.tail is not None or index.alive is not None:
        index = compacted(index, np.zeros(0, np.int64), version=index.version, held=index.held)
    picks = np.unique(np.linspace(0, len(index.ids) - 1, num=min(_SAMPLE, len(index.ids))).astype(np.int64))
    sample = _bodies(conn, table, index.ids[picks].tolist() if len(index.ids) else [])
    names = sorted(index.terms, key=index.terms.__getitem__)
    encoded = [n.encode("utf-8", "surrogatepass") for n in names]
    held = index.held
    arrays: dict[str, npt.NDArray[np.generic]] = {
        "ids": index.ids,
        "lengths": index.lengths,
        "starts": index.starts,
        "ends": index.ends,
        "positions": index.positions,
        "frequencies": index.frequencies,
        "term_lengths": np.fromiter((len(e) for e in encoded), dtype=np.int32, count=len(encoded)),
        "term_bytes": np.frombuffer(b"".join(encoded), dtype=np.uint8),
    }
    if held.hashes is not None:
        arrays["hashes"] = held.hashes.reshape(-1)
    header = {
        "table": table,
        "tokenizer": FTS_TOKENIZER,
        "version": index.version.hex(),
        "top": held.top,
        "rows": held.rows,
        "feed": held.feed,
        "generation": held.generation,
        "sample": sorted(sample.items()),
    }
    return inverted_index_file.save(path, header, arrays)


def _restored(conn: sa.Connection, table: str) -> InvertedIndex | None:
    """The index saved beside the database, when it checks out against it (else ``None``)."""
    path = inverted_index_file.index_file(conn.engine, table)
    loaded = inverted_index_file.load(path) if path is not None else None
    if loaded is None:
        return None
    header, arrays = loaded
    try:
        index = _from_saved(header, arrays)
        sample = {int(i): int(d) for i, d in header["sample"]}
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("ignoring the saved full-text index %s: %s", path, exc)
        return None
    if index is None or header.get("table") != table or header.get("tokenizer") != FTS_TOKENIZER:
        return None
    if (index.held.feed is not None) != delta.has_change_log(conn):
        return None
    found = _bodies(conn, table, list(sample))
    # rows sampled when it was saved must still hold the same text (those deleted since are fine),
    # and at least one must be there: else the file belongs to another database
    if sample and (not found or any(sample[i] != d for i, d in found.items())):
        log.warning("ignoring the saved full-text index %s: it was built from other data", path)
        return None
    return index


def _from_saved(header: dict[str, object], arrays: dict[str, npt.NDArray[np.generic]]) -> InvertedIndex | None:
    ids, lengths = arrays["ids"].astype(np.int64, copy=False), arrays["lengths"].astype(np.int32, copy=False)
    starts, ends = arrays["starts"].astype(np.int64, copy=False), arrays["ends"].astype(np.int64, copy=False)
    positions = arrays["positions"].astype(np.int32, copy=False)
    frequencies = arrays["frequencies"].astype(np.int32, copy=False)
    term_lengths = arrays["term_lengths"].astype(np.int64)
    blob = arrays["term_bytes"].tobytes()
    cut = np.concatenate([[0], np.cumsum(term_lengths)])
    hashes = arrays["hashes"].astype(np.int64).reshape(-1, 2) if "hashes" in arrays else None
    consistent = (
        len(lengths) == len(ids)
        and len(starts) == len(ends) == len(term_lengths)
        and len(positions) == len(frequencies)
        and int(cut[-1]) == len(blob)
        and (hashes is None or len(hashes) == len(ids))
        and (len(ends) == 0 or int(ends[-1]) == len(positions))
        and bool(np.all(starts <= ends))
        and (len(positions) == 0 or (int(positions.min()) >= 0 and int(positions.max()) < len(ids)))
        and bool(np.all(np.diff(ids) > 0))
    )
    if not consistent:
        return None
    names = [blob[int(cut[i]) : int(cut[i + 1])].decode("utf-8", "surrogatepass") for i in range(len(term_lengths))]
    feed = header["feed"]
    held = Held(
        top=int(str(header["top"])),
        rows=int(str(header["rows"])),
        feed=None if feed is None else int(str(feed)),
        hashes=hashes,
        generation=str(header.get("generation", "")),
    )
    return InvertedIndex(
        version=bytes.fromhex(str(header["version"])),
        ids=ids,
        lengths=lengths,
        terms={name: i for i, name in enumerate(names)},
        starts=starts,
        ends=ends,
        positions=positions,
        frequencies=frequencies,
        held=held,
    )


# -- the shared indexes -------------------------------------------------------------------


class _EngineIndexes:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        # per table: the newest index (what the next refresh starts from) ...
        self.indexes: dict[str, InvertedIndex] = {}
        # ... and the last few versions, for readers whose snapshot is a little older than the newest
        self.recent: dict[str, OrderedDict[bytes, InvertedIndex]] = {}
        self.saved: dict[str, int] = {}

    def remember(self, table: str, index: InvertedIndex) -> None:
        recent = self.recent.setdefault(table, OrderedDict())
        recent[index.version] = index
        recent.move_to_end(index.version)
        while len(recent) > _RECENT:
            recent.popitem(last=False)
        head = self.indexes.get(table)
        if head is None or _not_older(index, head):
            self.indexes[table] = index


_RECENT = 4


def _not_older(index: InvertedIndex, than: InvertedIndex) -> bool:
    """Whether ``index`` was read at a snapshot no older than ``than``'s (by the change log and ids)."""
    if index.held.feed is None or than.held.feed is None:
        return True
    return (index.held.feed, index.held.top) >= (than.held.feed, than.held.top)


_BY_ENGINE: weakref.WeakKeyDictionary[sa.Engine, _EngineIndexes] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def text_index(conn: sa.Connection, table: str, *, version: bytes | None = None) -> InvertedIndex:
    """The inverted index of ``table`` as of ``conn``'s snapshot: reused, refreshed, loaded or built.

    A reader whose snapshot is a few writes older than the newest index (a search that began before
    another refreshed it) gets its own version's index back, not a refresh backwards. ``version`` is
    :func:`index_version` when the caller read it already, in the same snapshot.
    """
    if version is None:
        version = index_version(conn, table)
    with _REGISTRY_LOCK:
        holder = _BY_ENGINE.get(conn.engine)
        if holder is None:
            holder = _BY_ENGINE[conn.engine] = _EngineIndexes()
    current = holder.indexes.get(table)
    if current is not None and current.version == version:
        return current
    with holder.lock:
        found = holder.recent.get(table, OrderedDict()).get(version)
        if found is not None:
            return found
        current = holder.indexes.get(table)
        if current is None:
            current = _restored(conn, table)
            if current is None:
                built = build_index(conn, table)
                holder.remember(table, built)
                if _save(conn, table, built):
                    holder.saved[table] = built.held.changed
                return built
            holder.saved[table] = current.held.changed
        refreshed = refresh_index(conn, table, current)
        holder.remember(table, refreshed)
        return refreshed


def save_text_indexes(engine: sa.Engine) -> list[Path]:
    """Save the indexes held for ``engine`` that changed enough since they were saved (at close)."""
    holder = _BY_ENGINE.get(engine)
    written: list[Path] = []
    if holder is None:
        return written
    with holder.lock:
        for table, index in list(holder.indexes.items()):
            path = inverted_index_file.index_file(engine, table)
            since = index.held.changed - holder.saved.get(table, -1)
            if path is None or since < max(1.0, _RESAVE_SHARE * len(index.ids)):
                continue
            try:
                with engine.connect() as conn:
                    saved = _save(conn, table, index)
            except (StorageError, SQLAlchemyError) as exc:
                log.warning("could not save the full-text index %s: %s", path, exc)
                continue
            if saved:
                holder.saved[table] = index.held.changed
                written.append(path)
    return written


def forget(engine: sa.Engine) -> None:
    """Drop the indexes held for ``engine`` (the next search loads or rebuilds them)."""
    with _REGISTRY_LOCK:
        _BY_ENGINE.pop(engine, None)
