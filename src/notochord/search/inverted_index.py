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
  only after committing (the product searches in read transactions only). A stale index is rebuilt whole
  (measured: see ``bench/README.md``); building is serialised per engine.
- **Candidates are a mask.** The caller's candidate chunk ids become a boolean mask over the
  index's chunk order, cached per (filter, data version) by the caller
  (:class:`MaskCache`); BM25 statistics — N, the mean length, each term's document frequency —
  are computed over the mask only (:mod:`notochord.search.bm25`). With the mask comes a copy of
  the postings restricted to the candidates (made once per filter and version; shared when every
  chunk is a candidate), so a query reads no posting of a chunk its caller cannot find and its
  cost does not depend on them. The cache is bounded in entries and in bytes.

Memory: postings take 8 bytes each (int32 position + int32 term frequency), chunk ids and lengths
12 bytes per chunk, plus a Python dict entry per distinct term (~200 bytes). Measured on SciFact
(10,091 chunks, 748k postings, 26k terms): 6.1 MB of arrays, ~12 MB held in all, built in ~0.6 s
with a transient peak of ~100 MB. Per 100k chunks of similar text: ~60 MB of arrays, ~80–100 MB
held, a build of ~6 s; memory grows with the postings, not with the number of queries. Per 1M
chunks, measured on the synthetic benchmark (62 tokens a chunk, 45.0M postings, 130k terms):
356 MiB of arrays, ~700 MiB resident after the build, a transient peak of 2.1 GiB (FTS5's index is
read a batch of terms at a time, so its occurrence lists are never held whole), 5.4 min to build
on a machine at load 9.

Ranking (:func:`top_bm25`, MaxScore pruning) walks only the rarest query terms' postings and looks
the frequent ones up for the chunks that can still reach the top, with scores bit-identical to
walking every posting. 200 Zipf queries of 2-6 words, 100 chunks each, on a machine at load 12:
at 1M chunks p50 120 ms where walking every posting took 484 ms (p95 747 against 980 ms: queries
of frequent words only are walked in full, 81 of the 200); at 100k chunks p50 22 against 44 ms.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from notochord.errors import StorageError
from notochord.search import text_store_pg

__all__ = [
    "CandidateMask",
    "InvertedIndex",
    "MaskCache",
    "build_index",
    "forget",
    "index_version",
    "text_index",
    "top_bm25",
]

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

_STRUCTURE_ROWID = 10  # FTS5_STRUCTURE_ROWID: the record FTS5 rewrites on every commit


@dataclass(frozen=True)
class InvertedIndex:
    """Postings of one FTS5 table at one data version.

    ``ids`` are the chunk ids in ascending order; a *position* is an index into ``ids``. Term ``t``
    has the id ``terms[t]``; its postings are ``positions[starts[id]:ends[id]]`` (ascending) with
    their term frequencies in ``frequencies``.
    """

    version: bytes
    ids: IntArray
    lengths: Int32Array
    terms: dict[str, int]
    starts: IntArray
    ends: IntArray
    positions: Int32Array
    frequencies: Int32Array

    def postings(self, term: str) -> tuple[Int32Array, Int32Array]:
        """Positions and term frequencies of ``term`` (empty arrays when no chunk holds it)."""
        tid = self.terms.get(term)
        if tid is None:
            return _EMPTY, _EMPTY
        start, end = int(self.starts[tid]), int(self.ends[tid])
        return self.positions[start:end], self.frequencies[start:end]

    def mask_of(self, chunk_ids: IntArray) -> BoolArray:
        """The boolean mask over :attr:`ids` of the given chunk ids (ids the index lacks are ignored)."""
        mask = np.zeros(len(self.ids), dtype=np.bool_)
        if len(self.ids) == 0 or len(chunk_ids) == 0:
            return mask
        where = np.searchsorted(self.ids, chunk_ids)
        where = np.minimum(where, len(self.ids) - 1)
        hit = self.ids[where] == chunk_ids
        mask[where[hit]] = True
        return mask

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (the term dict comes on top)."""
        arrays = (self.ids, self.lengths, self.starts, self.ends, self.positions, self.frequencies)
        return int(sum(a.nbytes for a in arrays))


_EMPTY: Int32Array = np.zeros(0, dtype=np.int32)


def index_version(conn: sa.Connection, table: str) -> bytes:
    """The data version of the FTS5 ``table``: its structure record, rewritten by every commit."""
    if text_store_pg.is_postgresql(conn):
        return text_store_pg.version(conn, table)
    try:
        raw = conn.exec_driver_sql(f"SELECT block FROM {table}_data WHERE id = {_STRUCTURE_ROWID}").scalar()
    except SQLAlchemyError as exc:
        raise StorageError(f"could not read the version of the full-text index {table}: {exc}") from exc
    return bytes(raw) if raw is not None else b""


def build_index(conn: sa.Connection, table: str) -> InvertedIndex:
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
    try:
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
    except SQLAlchemyError as exc:
        raise StorageError(f"could not read the full-text index {table}: {exc}") from exc
    if not parts:
        return _assemble(version, names, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32))
    per_term = np.concatenate([p[0] for p in parts])
    docs = np.concatenate([p[1] for p in parts])
    tfs = np.concatenate([p[2] for p in parts])
    return _assemble(version, names, per_term, docs, tfs)


_BATCH_CHARS = 16 * 1024 * 1024
_LOOKUP_COST = 10


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
    return _assemble(version, names, per_term, docs, tfs)


def _assemble(version: bytes, names: list[str], per_term: IntArray, docs: IntArray, tfs: Int32Array) -> InvertedIndex:
    """The index of postings given term by term (``per_term`` of them each, chunk ids ascending)."""
    ids = np.unique(docs)
    positions = np.searchsorted(ids, docs).astype(np.int32)
    lengths = np.bincount(positions, weights=tfs, minlength=len(ids)).astype(np.int32)
    ends = np.cumsum(per_term)
    return InvertedIndex(
        version=version,
        ids=ids,
        lengths=lengths,
        terms={name: i for i, name in enumerate(names)},
        starts=ends - per_term,
        ends=ends,
        positions=positions,
        frequencies=tfs,
    )


class _EngineIndexes:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.indexes: dict[str, InvertedIndex] = {}


_BY_ENGINE: weakref.WeakKeyDictionary[sa.Engine, _EngineIndexes] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def text_index(conn: sa.Connection, table: str) -> InvertedIndex:
    """The inverted index of ``table`` as of ``conn``'s snapshot, built or reused (see module rules)."""
    version = index_version(conn, table)
    with _REGISTRY_LOCK:
        holder = _BY_ENGINE.get(conn.engine)
        if holder is None:
            holder = _BY_ENGINE[conn.engine] = _EngineIndexes()
    current = holder.indexes.get(table)
    if current is not None and current.version == version:
        return current
    with holder.lock:
        current = holder.indexes.get(table)
        if current is not None and current.version == version:
            return current
        built = build_index(conn, table)
        holder.indexes[table] = built
        return built


def forget(engine: sa.Engine) -> None:
    """Drop the indexes held for ``engine`` (the next search rebuilds them)."""
    with _REGISTRY_LOCK:
        _BY_ENGINE.pop(engine, None)


class MaskCache:
    """Candidate sets per (filter key, data version): a bounded LRU, by count and by bytes."""

    def __init__(self, size: int = 64, max_bytes: int = 256 * 1024 * 1024) -> None:
        self._size = size
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, CandidateMask] = OrderedDict()

    def get(self, key: Hashable) -> CandidateMask | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: Hashable, value: CandidateMask) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            held = sum(v.nbytes for v in self._items.values())
            while len(self._items) > 1 and (len(self._items) > self._size or held > self._max_bytes):
                _, dropped = self._items.popitem(last=False)
                held -= dropped.nbytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


@dataclass(frozen=True)
class CandidateMask:
    """The caller's candidates over an index: the mask, their count, mean length and own postings.

    Unless every indexed chunk is a candidate, the postings are a copy restricted to the
    candidates, made once per (filter, data version): a query then reads only postings of chunks
    the caller may find, so its cost does not depend on documents outside them.
    """

    mask: BoolArray
    count: int
    mean_length: float
    starts: IntArray
    ends: IntArray
    positions: Int32Array
    frequencies: Int32Array
    shared: bool = False

    @staticmethod
    def of(index: InvertedIndex, mask: BoolArray) -> CandidateMask:
        count = int(mask.sum())
        mean = float(index.lengths[mask].mean()) if count else 1.0
        if count == len(index.ids):
            return CandidateMask(
                mask, count, mean, index.starts, index.ends, index.positions, index.frequencies, shared=True
            )
        keep = mask[index.positions]
        term_of = np.repeat(np.arange(len(index.starts), dtype=np.int64), index.ends - index.starts)
        per_term = np.bincount(term_of[keep], minlength=len(index.starts)).astype(np.int64)
        ends = np.cumsum(per_term)
        return CandidateMask(mask, count, mean, ends - per_term, ends, index.positions[keep], index.frequencies[keep])

    def postings(self, index: InvertedIndex, term: str) -> tuple[Int32Array, Int32Array]:
        """Positions and term frequencies of ``term`` among the candidates only."""
        tid = index.terms.get(term)
        if tid is None:
            return _EMPTY, _EMPTY
        start, end = int(self.starts[tid]), int(self.ends[tid])
        return self.positions[start:end], self.frequencies[start:end]

    @property
    def nbytes(self) -> int:
        """Bytes this candidate set holds of its own (restricted postings are copies; full ones shared)."""
        arrays = (self.starts, self.ends, self.positions, self.frequencies)
        own = 0 if self.shared else sum(a.nbytes for a in arrays)
        return int(self.mask.nbytes + own)


def top_bm25(
    index: InvertedIndex,
    candidates: CandidateMask,
    tokens: Mapping[str, int],
    *,
    limit: int,
    k1: float,
    b: float,
    digits: int,
    budget: float = 1.0,
) -> list[tuple[int, float]] | None:
    """The top ``limit`` of BM25 over the candidates, identical to scoring every posting, or ``None``.

    MaxScore pruning. A term can add at most ``weight × idf × (k1 + 1)`` to a chunk's score (its
    saturation), so the query's terms are taken highest bound first (the rarest), and their
    postings alone form the *pool*: once the bounds of the terms left out add up to less than the
    ``limit``-th best score in the pool (counting the taken terms only, so a lower bound), no chunk
    outside the pool can reach the top, not even in a tie. The pool's chunks then get their full
    scores — the long postings of frequent words are only looked up for them (a binary search per
    pool chunk), never walked — computed with the same float operations term by term in the query's
    order as the exhaustive scorer, so every score is bit-identical and so are the order and its
    tie-break (rounded to ``digits``, then the smaller chunk id).

    ``None`` when the pool's work (a sort of the postings it takes in, a binary search per pooled
    chunk and term left out) would pass ``budget`` × the work of walking every posting of the
    query — a query of frequent words only: the caller then scores exhaustively. That is mostly
    known before any posting is read, from the terms' bounds and lengths.
    """
    total = float(candidates.count)
    mean = max(candidates.mean_length, 1.0)
    terms: list[tuple[int, np.float64, Int32Array, Int32Array]] = []
    for token, weight in tokens.items():
        positions, frequencies = candidates.postings(index, token)
        if len(positions):
            df = float(len(positions))
            terms.append((weight, np.log(1.0 + (total - df + 0.5) / (df + 0.5)), positions, frequencies))
    if not terms:
        return []
    bounds = [float(weight * idf * (k1 + 1.0)) * (1.0 + 1e-9) for weight, idf, _, _ in terms]
    order = sorted(range(len(terms)), key=lambda i: (-bounds[i], len(terms[i][2])))
    # work in posting-sized steps: walking every posting costs about one each; the pool costs a
    # sort of what it takes in and a binary search per pooled chunk and term left out (~10 each)
    most = budget * sum(len(t[2]) for t in terms)

    def too_costly(taken_postings: int, pooled: int, left_out: int) -> bool:
        return 3 * taken_postings + _LOOKUP_COST * pooled * left_out > most

    margin = 2.0 * 10.0**-digits
    # the pool can stop growing only once the taken terms' bounds outweigh the rest's (the
    # limit-th pooled score is at most their sum): take every term up to there at once
    left = sum(bounds)
    first, held = 0, 0
    while first < len(order):
        i = order[first]
        left -= bounds[i]
        held += len(terms[i][2])
        first += 1
        if too_costly(held, held, len(order) - first):
            return None
        if held >= limit and sum(bounds) - left > left * (1.0 + 1e-9) + margin:
            break
    taken = set(order[:first])
    pool = np.unique(np.concatenate([terms[i][2] for i in order[:first]]))
    partial = np.zeros(len(pool), dtype=np.float64)
    for i in order[:first]:
        weight, idf, positions, frequencies = terms[i]
        partial[np.searchsorted(pool, positions)] += _contribution(
            index, weight, idf, positions, frequencies, k1, b, mean
        )
    for i in order[first:]:
        if len(pool) >= limit:
            floor = float(np.partition(partial, len(pool) - limit)[len(pool) - limit])
            if left * (1.0 + 1e-9) + margin < floor * (1.0 - 1e-9):
                break
        weight, idf, positions, frequencies = terms[i]
        held += len(positions)
        if too_costly(held, len(pool) + len(positions), len(terms) - len(taken) - 1):
            return None
        merged = np.union1d(pool, positions)
        grown = np.zeros(len(merged), dtype=np.float64)
        grown[np.searchsorted(merged, pool)] = partial
        added = _contribution(index, weight, idf, positions, frequencies, k1, b, mean)
        grown[np.searchsorted(merged, positions)] += added
        pool, partial = merged, grown
        taken.add(i)
        left -= bounds[i]
    scores = np.zeros(len(pool), dtype=np.float64)
    for i, (weight, idf, positions, frequencies) in enumerate(terms):
        if i in taken:
            where = np.searchsorted(pool, positions)
            scores[where] += _contribution(index, weight, idf, positions, frequencies, k1, b, mean)
            continue
        found = np.searchsorted(positions, pool)
        hit = found < len(positions)
        hit[hit] = positions[found[hit]] == pool[hit]
        at = found[hit]
        scores[hit] += _contribution(index, weight, idf, positions[at], frequencies[at], k1, b, mean)
    nonzero = scores != 0
    matched, scores = pool[nonzero], scores[nonzero]
    rounded = np.round(scores, digits)
    if len(matched) > limit:
        threshold = np.partition(rounded, len(matched) - limit)[len(matched) - limit]
        keep_top = rounded >= threshold
        matched, scores, rounded = matched[keep_top], scores[keep_top], rounded[keep_top]
    best = np.lexsort((index.ids[matched], -rounded))[:limit]
    return [(int(index.ids[matched[i]]), float(scores[i])) for i in best]


def _contribution(
    index: InvertedIndex,
    weight: int,
    idf: np.float64,
    positions: Int32Array,
    frequencies: Int32Array,
    k1: float,
    b: float,
    mean: float,
) -> npt.NDArray[np.float64]:
    # the exhaustive scorer's expression, operation for operation: elementwise float64 arithmetic
    # gives the same bits for a posting whichever subset it is computed in
    tf = frequencies.astype(np.float64)
    norm = k1 * (1.0 - b + b * index.lengths[positions] / mean)
    return weight * idf * tf * (k1 + 1.0) / (tf + norm)
