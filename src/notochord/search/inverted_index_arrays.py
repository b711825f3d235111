"""The arrays of the in-memory full-text index, the candidates' view of them and BM25's pruned top.

:mod:`~notochord.search.inverted_index` reads and refreshes these; this module holds no SQL.

Layout: ``ids`` are chunk ids in ascending order and a *position* indexes them. The postings of a
term are the *base* arrays' slice for it, followed by the *tail*'s slice: the tail holds the
postings of chunks appended since the arrays were last compacted. Appended chunks take ids above
every held one, so their positions come after every held position and a term's postings stay
ascending by concatenation. A chunk that left stays at its position, marked dead in ``alive``,
until the next compaction (:func:`compacted`): no candidate mask ever includes a dead position, so
BM25 over the candidates never counts it. Compaction rebuilds the arrays without the dead and with
the tail merged in; it runs once the dead or the tail pass :data:`COMPACT_SHARE` of the base, and
for any change that is not an append (a chunk rewritten in place, an id below the highest held).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

__all__ = [
    "COMPACT_SHARE",
    "CandidateMask",
    "Held",
    "InvertedIndex",
    "MaskCache",
    "Postings",
    "Segment",
    "appended",
    "assemble",
    "compacted",
    "top_bm25",
]

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

COMPACT_SHARE = 0.125
"""Compact once the dead chunks pass this share of the positions, or the tail's postings this share
of the base's: until then a refresh costs what changed; a compaction costs a pass over the postings.
Measured at 100k chunks (4.5M postings): a compaction ~2 s, so at this share ~0.16 ms per chunk
written; a candidate set restricted from arrays with a tail costs 1.2× one without (0.29 / 0.25 s)."""

_LOOKUP_COST = 10


@dataclass(frozen=True)
class Segment:
    """Postings term by term: term id ``t``'s are ``positions[starts[t]:ends[t]]`` (ascending)."""

    starts: IntArray
    ends: IntArray
    positions: Int32Array
    frequencies: Int32Array

    def slice(self, tid: int) -> tuple[Int32Array, Int32Array]:
        if tid >= len(self.starts):
            return _EMPTY, _EMPTY
        start, end = int(self.starts[tid]), int(self.ends[tid])
        return self.positions[start:end], self.frequencies[start:end]

    def term_of(self) -> IntArray:
        return np.repeat(np.arange(len(self.starts), dtype=np.int64), self.ends - self.starts)

    @property
    def nbytes(self) -> int:
        return int(self.starts.nbytes + self.ends.nbytes + self.positions.nbytes + self.frequencies.nbytes)


@dataclass(frozen=True)
class Held:
    """What an index was read from, so that a refresh can tell what changed since.

    ``top``: the highest row id seen (rows without a token included); ``rows``: the table's rows;
    ``feed``: the newest change record applied (``None`` for a table without a change log);
    ``hashes``: each position's chunk fingerprint (``text_hash``) and document id, two columns,
    where a change log exists;
    ``changed``: chunks applied since the index was built or loaded (when to save it again);
    ``generation``: the space's full-text generation when it was read (a repair draws a new one).
    """

    top: int = 0
    rows: int = 0
    feed: int | None = None
    hashes: IntArray | None = None
    changed: int = 0
    generation: str = ""


@dataclass(frozen=True)
class InvertedIndex:
    """Postings of one FTS5 table at one data version (see the module docstring for the layout).

    ``ids`` are the chunk ids in ascending order; a *position* is an index into ``ids``. Term ``t``
    has the id ``terms[t]``; its postings are ``positions[starts[id]:ends[id]]`` (ascending) with
    their term frequencies in ``frequencies``, then the tail's.
    """

    version: bytes
    ids: IntArray
    lengths: Int32Array
    terms: dict[str, int]
    starts: IntArray
    ends: IntArray
    positions: Int32Array
    frequencies: Int32Array
    tail: Segment | None = None
    alive: BoolArray | None = None
    held: Held = field(default_factory=Held)

    @property
    def base(self) -> Segment:
        return Segment(self.starts, self.ends, self.positions, self.frequencies)

    def postings(self, term: str) -> tuple[Int32Array, Int32Array]:
        """Positions and term frequencies of ``term`` (empty arrays when no chunk holds it; dead
        positions included, which no candidate mask holds)."""
        tid = self.terms.get(term)
        if tid is None:
            return _EMPTY, _EMPTY
        return _joined(self.base, self.tail, tid)

    def mask_of(self, chunk_ids: IntArray) -> BoolArray:
        """The mask over :attr:`ids` of the given chunk ids (ids it lacks, or holds dead, are ignored)."""
        mask = np.zeros(len(self.ids), dtype=np.bool_)
        if len(self.ids) == 0 or len(chunk_ids) == 0:
            return mask
        where = np.searchsorted(self.ids, chunk_ids)
        where = np.minimum(where, len(self.ids) - 1)
        hit = self.ids[where] == chunk_ids
        mask[where[hit]] = True
        if self.alive is not None:
            mask &= self.alive
        return mask

    @property
    def live(self) -> int:
        """Chunks the index holds (dead positions left out)."""
        return len(self.ids) if self.alive is None else int(self.alive.sum())

    @property
    def tokens(self) -> int:
        """Tokens of the chunks the index holds: FTS5's own total, when current."""
        lengths = self.lengths if self.alive is None else self.lengths[self.alive]
        return int(lengths.sum(dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (the term dict comes on top)."""
        arrays = (self.ids, self.lengths, self.starts, self.ends, self.positions, self.frequencies)
        extra = (self.tail.nbytes if self.tail is not None else 0) + (
            self.alive.nbytes if self.alive is not None else 0
        )
        hashes = self.held.hashes.nbytes if self.held.hashes is not None else 0
        return int(sum(a.nbytes for a in arrays) + extra + hashes)


_EMPTY: Int32Array = np.zeros(0, dtype=np.int32)


def _joined(base: Segment, tail: Segment | None, tid: int) -> tuple[Int32Array, Int32Array]:
    positions, frequencies = base.slice(tid)
    if tail is None:
        return positions, frequencies
    more, more_tf = tail.slice(tid)
    if not len(more):
        return positions, frequencies
    if not len(positions):
        return more, more_tf
    return np.concatenate([positions, more]), np.concatenate([frequencies, more_tf])


def _segment(term_of: IntArray, positions: Int32Array, frequencies: Int32Array, terms: int) -> Segment:
    """Postings given in term order (ascending positions within a term) as a :class:`Segment`."""
    per_term = np.bincount(term_of, minlength=terms).astype(np.int64)
    ends = np.cumsum(per_term)
    return Segment(ends - per_term, ends, positions.astype(np.int32), frequencies.astype(np.int32))


def _merged(runs: list[tuple[IntArray, Int32Array, Int32Array]], terms: int) -> Segment:
    """Runs of ``(term, position, tf)``, each in term order, with every term's postings in a later run
    after its postings in an earlier one: one segment, by placing each posting where it goes (no sort)."""
    counts = [np.bincount(run[0], minlength=terms).astype(np.int64) for run in runs]
    total = np.sum(counts, axis=0) if counts else np.zeros(terms, np.int64)
    ends = np.cumsum(total)
    starts = ends - total
    size = int(ends[-1]) if terms else 0
    positions = np.zeros(size, np.int32)
    frequencies = np.zeros(size, np.int32)
    before = np.zeros(terms, np.int64)
    for (term_of, pos, tf), count in zip(runs, counts, strict=True):
        if len(term_of):
            first = np.cumsum(count) - count
            destination = starts[term_of] + before[term_of] + (np.arange(len(term_of)) - first[term_of])
            positions[destination] = pos
            frequencies[destination] = tf
        before += count
    return Segment(starts, ends, positions, frequencies)


def assemble(
    version: bytes, names: list[str], per_term: IntArray, docs: IntArray, tfs: Int32Array, held: Held
) -> InvertedIndex:
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
        frequencies=tfs.astype(np.int32),
        held=held,
    )


@dataclass(frozen=True)
class Postings:
    """Chunks to add: ``ids`` ascending with their ``lengths``, fingerprints and documents (``hashes``, or
    ``None``), then per posting its term name's index in ``names``, its chunk's index in ``ids`` and
    its term frequency (term-then-chunk order)."""

    ids: IntArray
    lengths: Int32Array
    hashes: IntArray | None
    names: list[str]
    term_of: IntArray
    chunk_of: IntArray
    frequencies: Int32Array


def appended(index: InvertedIndex, dead: IntArray, added: Postings, *, version: bytes, held: Held) -> InvertedIndex:
    """``index`` with the chunks ``dead`` gone and ``added`` in: appended when every added id is above
    every held one, else merged by :func:`compacted`; compacted, too, once the dead or the tail pass
    :data:`COMPACT_SHARE`."""
    words = added.lengths > 0
    if len(added.ids) and len(index.ids) and int(added.ids[words].min(initial=2**62)) <= int(index.ids[-1]):
        return compacted(index, dead, added, version=version, held=held)
    alive = index.alive
    if len(dead):
        where = np.minimum(np.searchsorted(index.ids, dead), max(len(index.ids) - 1, 0))
        hit = index.ids[where] == dead if len(index.ids) else np.zeros(len(dead), np.bool_)
        if hit.any():
            alive = np.ones(len(index.ids), np.bool_) if alive is None else alive.copy()
            alive[where[hit]] = False
    terms, tids = _term_ids(index.terms, added.names)
    # chunks without a token hold no position (a rebuild would not know them either)
    new_position = np.cumsum(words) - 1 + len(index.ids)
    old_tail = index.tail or Segment(np.zeros(0, np.int64), np.zeros(0, np.int64), _EMPTY, _EMPTY)
    term_of = np.concatenate([old_tail.term_of(), tids[added.term_of]])
    positions = np.concatenate([old_tail.positions, new_position[added.chunk_of].astype(np.int32)])
    frequencies = np.concatenate([old_tail.frequencies, added.frequencies])
    # both runs are in term order; a stable sort keeps each term's old postings before its new
    order = np.argsort(term_of, kind="stable")
    tail = _segment(term_of[order], positions[order], frequencies[order], len(terms)) if len(order) else None
    hashes = None
    if index.held.hashes is not None:
        fresh = added.hashes if added.hashes is not None else np.zeros((len(added.ids), 2), np.int64)
        hashes = np.concatenate([index.held.hashes, fresh[words]])
    if alive is not None:
        alive = np.concatenate([alive, np.ones(int(words.sum()), np.bool_)])
    grown = replace(
        index,
        version=version,
        ids=np.concatenate([index.ids, added.ids[words]]),
        lengths=np.concatenate([index.lengths, added.lengths[words]]),
        terms=terms,
        tail=tail,
        alive=alive,
        held=replace(held, hashes=hashes),
    )
    dead_share = 0 if alive is None else len(alive) - int(alive.sum())
    tail_postings = 0 if tail is None else len(tail.positions)
    if dead_share > COMPACT_SHARE * max(len(grown.ids), 1) or tail_postings > COMPACT_SHARE * max(
        len(index.positions), 1
    ):
        return compacted(grown, np.zeros(0, np.int64), _NOTHING, version=version, held=grown.held)
    return grown


def _term_ids(terms: dict[str, int], names: list[str]) -> tuple[dict[str, int], IntArray]:
    """Each name's term id, new terms appended (the dict is copied only when one is new)."""
    if any(name not in terms for name in names):
        terms = dict(terms)
        for name in names:
            if name not in terms:
                terms[name] = len(terms)
    return terms, np.fromiter((terms[n] for n in names), dtype=np.int64, count=len(names))


_NOTHING = Postings(
    np.zeros(0, np.int64), np.zeros(0, np.int32), None, [], np.zeros(0, np.int64), np.zeros(0, np.int64), _EMPTY
)


def compacted(
    index: InvertedIndex, dead: IntArray, added: Postings = _NOTHING, *, version: bytes, held: Held
) -> InvertedIndex:
    """The arrays rebuilt: dead chunks (and ``dead``, and every id of ``added``) out, the tail and
    ``added`` merged in, terms without a posting dropped — what a rebuild from the table gives."""
    alive = np.ones(len(index.ids), np.bool_) if index.alive is None else index.alive.copy()
    gone = np.concatenate([dead, added.ids]) if len(added.ids) else dead
    if len(gone) and len(index.ids):
        where = np.minimum(np.searchsorted(index.ids, gone), len(index.ids) - 1)
        alive[where[index.ids[where] == gone]] = False
    if not len(added.ids):
        return _without_dead(index, alive, version=version, held=held)
    terms, tids = _term_ids(index.terms, added.names)
    segments = [index.base] + ([index.tail] if index.tail is not None else [])
    term_parts = [s.term_of() for s in segments]
    doc_parts = [index.ids[s.positions] for s in segments]
    tf_parts = [s.frequencies for s in segments]
    keep_parts = [alive[s.positions] for s in segments]
    term_of = np.concatenate([t[k] for t, k in zip(term_parts, keep_parts, strict=True)] + [tids[added.term_of]])
    docs = np.concatenate([d[k] for d, k in zip(doc_parts, keep_parts, strict=True)] + [added.ids[added.chunk_of]])
    tfs = np.concatenate([f[k] for f, k in zip(tf_parts, keep_parts, strict=True)] + [added.frequencies])
    # added rows may fall anywhere among the held: sort (the rare path: rewrites in place)
    order = np.lexsort((docs, term_of))
    term_of, docs, tfs = term_of[order], docs[order], tfs[order]
    used = np.bincount(term_of, minlength=len(terms)) > 0
    renumber = np.cumsum(used) - 1
    by_id = sorted(terms.items(), key=lambda item: item[1])
    names = [name for name, tid in by_id if used[tid]]
    per_term = np.bincount(renumber[term_of], minlength=len(names)).astype(np.int64)
    hashes = None
    if index.held.hashes is not None:
        old_ids = index.ids[alive]
        old_hashes = index.held.hashes[alive]
        words = added.lengths > 0
        new_hashes = added.hashes[words] if added.hashes is not None else np.zeros((int(words.sum()), 2), np.int64)
        all_ids = np.concatenate([old_ids, added.ids[words]])
        all_hashes = np.concatenate([old_hashes, new_hashes])
        hashes = all_hashes[np.argsort(all_ids, kind="stable")]
    return assemble(version, names, per_term, docs, tfs.astype(np.int32), replace(held, hashes=hashes))


def _without_dead(index: InvertedIndex, alive: BoolArray, *, version: bytes, held: Held) -> InvertedIndex:
    """Compaction when nothing is added: the live chunks keep their order, so positions are renumbered
    through a table and the tail is merged in by placement — a pass over the postings, no sort."""
    renumber = (np.cumsum(alive) - 1).astype(np.int32)
    runs: list[tuple[IntArray, Int32Array, Int32Array]] = []
    for segment in [index.base] + ([index.tail] if index.tail is not None else []):
        keep = alive[segment.positions]
        runs.append((segment.term_of()[keep], renumber[segment.positions[keep]], segment.frequencies[keep]))
    merged = _merged(runs, len(index.terms))
    used = merged.ends > merged.starts
    by_id = sorted(index.terms.items(), key=lambda item: item[1])
    names = [name for name, tid in by_id if used[tid]]
    hashes = index.held.hashes[alive] if index.held.hashes is not None else None
    return InvertedIndex(
        version=version,
        ids=index.ids[alive],
        lengths=index.lengths[alive],
        terms={name: i for i, name in enumerate(names)},
        starts=merged.starts[used],
        ends=merged.ends[used],
        positions=merged.positions,
        frequencies=merged.frequencies,
        held=replace(held, hashes=hashes),
    )


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
    tail: Segment | None = None

    @staticmethod
    def of(index: InvertedIndex, mask: BoolArray) -> CandidateMask:
        if index.alive is not None:
            mask = mask & index.alive
        count = int(mask.sum())
        mean = float(index.lengths[mask].mean()) if count else 1.0
        if count == len(index.ids):
            return CandidateMask(
                mask,
                count,
                mean,
                index.starts,
                index.ends,
                index.positions,
                index.frequencies,
                shared=True,
                tail=index.tail,
            )
        runs: list[tuple[IntArray, Int32Array, Int32Array]] = []
        for segment in [index.base] + ([index.tail] if index.tail is not None else []):
            keep = mask[segment.positions]
            runs.append((segment.term_of()[keep], segment.positions[keep], segment.frequencies[keep]))
        own = _merged(runs, len(index.terms)) if len(runs) > 1 else _segment(*runs[0], len(index.terms))
        return CandidateMask(mask, count, mean, own.starts, own.ends, own.positions, own.frequencies)

    def postings(self, index: InvertedIndex, term: str) -> tuple[Int32Array, Int32Array]:
        """Positions and term frequencies of ``term`` among the candidates only."""
        tid = index.terms.get(term)
        if tid is None:
            return _EMPTY, _EMPTY
        return _joined(Segment(self.starts, self.ends, self.positions, self.frequencies), self.tail, tid)

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
