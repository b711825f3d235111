"""The chunks a search may find, per filter and data version: read once, then kept current (K-SRCH).

Rules:

- **One filter, both legs.** The caller's collections (already expanded to subfolders), live
  documents only, the ``timeRange`` on the document date and the ``entities`` mentioned are one
  SQL condition (:func:`search_filters`); the chunks it selects are the candidates of the full-text
  leg (a boolean mask over the in-memory index) and of the vector leg (their ids). A whole read of
  them (:func:`~notochord.knowledge.candidates_read.read_whole`) makes no Python object per chunk.
- **Cached per (filter, data version).** The data version is the full-text index's own version plus
  the newest change record, read in one statement in the search's snapshot; any write — upsert,
  edit, delete, move to another collection, re-date, revert — appends a change record, so it is
  seen by the very next search, from this process or another.
- **Kept current from the change log.** On a new data version the candidates held for the same
  filter are brought forward instead of read again: the documents the change records since name
  (:func:`~notochord.search.inverted_index_delta.named_documents`, the reading the full-text index's
  own refresh uses) lose their chunks from the held arrays, the chunks of those documents that match
  the filter now are read (their rows only) and spliced in, and the date ranks, the mask over the
  full-text index (:class:`SplicedMask`) and the document groups are recomputed with numpy. The cost
  is that of the documents written plus array passes over the candidates, not a read of every
  candidate row.
- **Correctness first.** Whatever the change log cannot vouch for is read whole, as on first use: a
  change record of anything but documents, facts and entities (a collection deleted or moved), a
  record that is not a document's or a fact's when the filter names entities (mentions may move), a
  record that went missing or turned up below the newest one held (a purge; on PostgreSQL a
  transaction that committed late), more documents named than :data:`MAX_NAMED`, or a full-text
  index that moved while the change log did not.
- **Readers a write behind** (a search whose snapshot began before another saw a newer write) bring
  forward the newest set held at or below their own snapshot; the last :data:`_KEYS_HELD` sets
  (within :data:`_BYTES_HELD`) are kept for them and for every filter in use.
- ``reads`` counts the candidate rows read, so a test can tell that a search after one written
  document reads that document's chunks, whatever the size of the space.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from notochord.db.schema import changes, chunks, documents
from notochord.errors import StorageError
from notochord.knowledge.candidates_read import read_whole, search_filters
from notochord.knowledge.indexing import FTS_TABLE
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.timeranges import TimeRange
from notochord.search import inverted_index_delta as delta
from notochord.search import text_store_pg
from notochord.search.bm25 import DocumentGroups, document_groups
from notochord.search.inverted_index import CandidateMask, InvertedIndex, forget, text_index, version_query
from notochord.search.inverted_index_arrays import Segment

__all__ = [
    "DATA_VERSION_COLUMNS",
    "MAX_NAMED",
    "Candidates",
    "DataVersion",
    "Owners",
    "SplicedMask",
    "candidate_set",
    "candidates_query",
    "data_version_of",
    "forget_search_caches",
    "reads",
    "search_filters",
]

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

MAX_NAMED = 2_000
"""Above this many documents named since the held candidates, they are read whole (one scan beats
thousands of look-ups, and the splice is no longer small)."""
_WINDOW = 64
"""Change records just below the newest held are remembered, so that one that appears there later
(purged records, a PostgreSQL transaction that committed after a newer one) is noticed."""
_SPLICE_SHARE = 0.125
"""A spliced mask is made afresh once its added postings or the positions it filters out pass this
share of its own postings or candidates: reading stays within a few per cent of a fresh mask."""
_SAFE = frozenset({"document", "fact", "entity", "identifier", "change"})
_SAFE_WITH_ENTITIES = frozenset({"document", "fact", "change"})


class _Reads:
    """Candidate rows read in this process (for the tests that count them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rows = 0
        self.whole = 0

    def add(self, rows: int, *, whole: bool) -> None:
        with self._lock:
            self.rows += rows
            self.whole += int(whole)


reads = _Reads()


def candidates_query(
    collection_ids: Set[int], time_range: TimeRange | None, entity_ids: Sequence[int] | None
) -> sa.Select[Any]:
    """Ids of the chunks the caller may find: the one filter both legs share."""
    return (
        sa.select(chunks.c.id)
        .join(documents, documents.c.id == chunks.c.document_id)
        .where(*search_filters(collection_ids, time_range, entity_ids))
    )


# -- the candidates' documents and dates ---------------------------------------------------


@dataclass(frozen=True)
class Owners:
    """Each candidate chunk's document and date rank, aligned with the chunk ids in ascending order.

    ``newness`` is the rank of the document date among the candidates' dates, newest first (0 is the
    newest); only the order of dates matters for ties, and comparing small integers is cheaper than
    comparing timestamps. ``days`` numbers each candidate's date in ``calendar`` (the candidates'
    distinct dates, ascending), which is what lets a splice rank new dates without sorting them all.
    """

    ids: IntArray
    documents: IntArray
    newness: IntArray
    groups: IntArray
    """Per position of the full-text index: a dense number of the chunk's document, ``-1`` when the
    chunk is not a candidate (what :func:`~notochord.search.bm25.rank_documents` needs; ``>= 0`` is
    the candidates' mask over the index, before dead positions are taken out)."""
    days: IntArray
    calendar: npt.NDArray[np.str_]
    made: dict[str, DocumentGroups] = field(default_factory=dict, compare=False, repr=False)
    """The document statistics of these candidates, made by the first search that ranks documents."""

    @staticmethod
    def arranged(
        ids: IntArray, docs: IntArray, days: IntArray, calendar: npt.NDArray[np.str_], index: InvertedIndex
    ) -> Owners:
        """Owners of candidates given in ascending id order; dates no candidate has any more are dropped."""
        if len(calendar):
            used = np.bincount(days, minlength=len(calendar)) > 0
            if not used.all():
                days = (np.cumsum(used) - 1)[days]
                calendar = calendar[used]
        newness = (len(calendar) - 1 - days).astype(np.int64) if len(ids) else np.zeros(0, np.int64)
        groups = np.full(len(index.ids), -1, np.int64)
        if len(index.ids) and len(ids):
            where = np.minimum(np.searchsorted(index.ids, ids), len(index.ids) - 1)
            indexed = index.ids[where] == ids
            # the rank of each document id among the candidates' (np.unique's numbering, without a sort)
            present = np.zeros(int(docs.max()) + 1, np.bool_)
            present[docs] = True
            dense = (np.cumsum(present) - 1)[docs]
            groups[where[indexed]] = dense[indexed]
        return Owners(ids, docs, newness, groups, days, calendar)

    def spliced(self, named: IntArray, rows: Sequence[Any], index: InvertedIndex) -> Owners:
        """These owners with the chunks of the ``named`` documents replaced by ``rows`` (theirs now)."""
        keep = ~np.isin(self.documents, named) if len(named) else np.ones(len(self.ids), np.bool_)
        ids, docs, days, calendar = self.ids[keep], self.documents[keep], self.days[keep], self.calendar
        if rows:
            chunk_col, doc_col, date_col = zip(*sorted(rows), strict=True)
            new_ids = np.array(chunk_col, np.int64)
            new_dates = np.array(date_col, dtype=np.str_)
            distinct = np.unique(new_dates)
            if len(calendar):
                at = np.minimum(np.searchsorted(calendar, distinct), len(calendar) - 1)
                novel = distinct[calendar[at] != distinct]
            else:
                novel = distinct
            if len(novel):
                at = np.searchsorted(calendar, novel)
                # an old date moves up by the new dates inserted before it
                days = days + np.searchsorted(at, days, side="right")
                # a wider string type first: inserting into the narrower one would cut the new dates
                calendar = np.insert(calendar.astype(np.result_type(calendar, novel)), at, novel)
            new_days = np.searchsorted(calendar, new_dates).astype(np.int64)
            at = np.searchsorted(ids, new_ids)
            ids = np.insert(ids, at, new_ids)
            docs = np.insert(docs, at, np.array(doc_col, np.int64))
            days = np.insert(days, at, new_days)
        return Owners.arranged(ids, docs, days, calendar, index)

    def keys(self, chunk_ids: Set[int]) -> dict[int, tuple[int, int]]:
        """``chunk id → (date rank, document id)`` for the given candidates (others are left out)."""
        if not chunk_ids or len(self.ids) == 0:
            return {}
        wanted = np.fromiter(chunk_ids, np.int64, count=len(chunk_ids))
        where = np.minimum(np.searchsorted(self.ids, wanted), len(self.ids) - 1)
        hit = self.ids[where] == wanted
        where, wanted = where[hit], wanted[hit]
        return dict(
            zip(
                wanted.tolist(),
                zip(self.newness[where].tolist(), self.documents[where].tolist(), strict=True),
                strict=True,
            )
        )

    @property
    def nbytes(self) -> int:
        made = sum(stats.nbytes - stats.groups.nbytes for stats in self.made.values())
        arrays = (self.ids, self.documents, self.newness, self.groups, self.days, self.calendar)
        return int(sum(a.nbytes for a in arrays) + made)


# -- the candidates' mask over the full-text index ------------------------------------------


@dataclass(frozen=True)
class SplicedMask(CandidateMask):
    """A candidate mask brought forward from an earlier one over the same index arrays.

    Its own postings are the earlier mask's; ``extra`` holds the postings of the positions that
    became candidates since (appended chunks, documents moved or re-dated into the filter), and
    ``covered`` marks every position whose postings the two hold. Positions that stopped being
    candidates keep their postings until the mask is made afresh, and are filtered out by the mask
    on reading (``filtered``): a term's postings are exactly those :meth:`CandidateMask.of` would
    give, in the same ascending order, so rankings are bit-identical.
    """

    extra: Segment | None = None
    covered: BoolArray = field(default_factory=lambda: np.zeros(0, np.bool_))
    filtered: bool = False

    def postings(self, index: InvertedIndex, term: str) -> tuple[Int32Array, Int32Array]:
        positions, frequencies = super().postings(index, term)
        if self.filtered and len(positions):
            keep = self.mask[positions]
            if not keep.all():
                positions, frequencies = positions[keep], frequencies[keep]
        tid = index.terms.get(term)
        if self.extra is None or tid is None:
            return positions, frequencies
        more, more_tf = self.extra.slice(tid)
        if self.filtered and len(more):
            keep = self.mask[more]
            more, more_tf = more[keep], more_tf[keep]
        if not len(more):
            return positions, frequencies
        positions, frequencies = np.concatenate([positions, more]), np.concatenate([frequencies, more_tf])
        if len(more) < len(positions) and int(more[0]) < int(positions[len(positions) - len(more) - 1]):
            order = np.argsort(positions, kind="stable")
            positions, frequencies = positions[order], frequencies[order]
        return positions, frequencies

    @property
    def nbytes(self) -> int:
        extra = self.extra.nbytes if self.extra is not None else 0
        return int(super().nbytes + extra + self.covered.nbytes)


def _covered(mask: CandidateMask) -> BoolArray:
    return mask.covered if isinstance(mask, SplicedMask) else mask.mask


def _own_postings(mask: CandidateMask) -> int:
    return len(mask.positions) + (len(mask.tail.positions) if mask.tail is not None else 0)


def spliced_mask(
    held: CandidateMask, held_index: InvertedIndex, index: InvertedIndex, mask: BoolArray
) -> CandidateMask:
    """The candidate mask ``mask`` over ``index``, made from ``held`` (over ``held_index``) where it can be."""
    if index.alive is not None:
        mask = mask & index.alive
    count = int(mask.sum())
    if count == len(index.ids) or index.positions is not held_index.positions or len(index.ids) < len(held_index.ids):
        # every chunk a candidate (the index's own postings, nothing copied), or arrays compacted
        # since (positions renumbered)
        return CandidateMask.of(index, mask)
    covered = np.zeros(len(index.ids), np.bool_)
    before = _covered(held)
    covered[: len(before)] = before
    entering = mask & ~covered
    segments: list[Segment] = [index.tail] if index.tail is not None else []
    if entering[: len(held_index.ids)].any():
        segments.insert(0, index.base)
    extra = held.extra if isinstance(held, SplicedMask) else None
    runs = [_restricted(s, entering) for s in segments] + (
        [_restricted(extra, np.ones(len(index.ids), np.bool_))] if extra else []
    )
    term_of = np.concatenate([r[0] for r in runs]) if runs else np.zeros(0, np.int64)
    added = len(term_of)
    left = int((covered & ~mask).sum())
    if added > _SPLICE_SHARE * max(_own_postings(held), 1) or left > _SPLICE_SHARE * max(count, 1):
        return CandidateMask.of(index, mask)
    segment = None
    if added:
        positions = np.concatenate([r[1] for r in runs])
        frequencies = np.concatenate([r[2] for r in runs])
        order = np.lexsort((positions, term_of))
        per_term = np.bincount(term_of, minlength=len(index.terms)).astype(np.int64)
        ends = np.cumsum(per_term)
        segment = Segment(ends - per_term, ends, positions[order].astype(np.int32), frequencies[order].astype(np.int32))
    mean = float(index.lengths[mask].mean()) if count else 1.0
    return SplicedMask(
        mask,
        count,
        mean,
        held.starts,
        held.ends,
        held.positions,
        held.frequencies,
        shared=held.shared,
        tail=held.tail,
        extra=segment,
        covered=covered | entering,
        filtered=left > 0,
    )


def _restricted(segment: Segment, keep_positions: BoolArray) -> tuple[IntArray, Int32Array, Int32Array]:
    keep = keep_positions[segment.positions]
    if not keep.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32)
    return segment.term_of()[keep], segment.positions[keep], segment.frequencies[keep]


# -- the candidate sets held ----------------------------------------------------------------


@dataclass(frozen=True)
class Candidates:
    """The caller's candidates at one data version: computed once, used by both legs."""

    key: tuple[Any, ...]
    text: CandidateMask
    owners: Owners
    index: InvertedIndex
    """The full-text index the mask was made over, as of the snapshot the candidates were read in:
    the ranking uses it rather than asking for the index (and reading its version) again."""
    feed: int = 0
    """The newest change record as of that snapshot."""
    window: tuple[int, ...] = ()
    """The ids of the change records just below (and at) ``feed`` (see :data:`_WINDOW`)."""
    passages: dict[int, tuple[Any, ...]] = field(default_factory=dict, compare=False, repr=False)
    """The rows of the passages searches of these candidates returned, by chunk id, as read at this
    data version (:mod:`~notochord.knowledge.hybrid_search` fills it): a write makes a new data
    version and so a new, empty one, so a row kept here is never older than the snapshot asking."""

    @property
    def ids(self) -> IntArray:
        return self.owners.ids

    def document_groups(self) -> DocumentGroups:
        """The candidates' document statistics for document BM25, made once per candidate set
        (owners and mask are both of this data version and filter, so any search of it may share them)."""
        found = self.owners.made.get("documents")
        if found is None:
            found = self.owners.made["documents"] = document_groups(self.index, self.text, self.owners.groups)
        return found

    @property
    def nbytes(self) -> int:
        # a passage row is mostly its text (and a title); the rest is a few small values
        passages = sum(64 + len(row[2]) for row in list(self.passages.values()))
        return self.owners.nbytes + self.text.nbytes + passages


class _Held:
    """Per engine: candidate sets by their whole key, and the newest per filter (what the next
    data version is brought forward from)."""

    def __init__(self) -> None:
        self.by_key: OrderedDict[tuple[Any, ...], Candidates] = OrderedDict()
        self.newest: OrderedDict[tuple[Any, ...], Candidates] = OrderedDict()


_HELD: weakref.WeakKeyDictionary[sa.Engine, _Held] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_KEYS_HELD = 16
_BYTES_HELD = 256 * 1024 * 1024
_FILTERS_HELD = 16


def forget_search_caches(engine: sa.Engine) -> None:
    """Drop the full-text index and candidate sets held for ``engine``; the next search rebuilds them."""
    forget(engine)
    with _LOCK:
        _HELD.pop(engine, None)


DataVersion = tuple[bytes | None, int]
"""The full-text index's version (``None``: read it separately) and the newest change id."""
DATA_VERSION_COLUMNS = f"({version_query(FTS_TABLE)}) AS fts, (SELECT max(id) FROM changes) AS feed"
"""On SQLite, the columns that read the data version, for a caller that reads it in one statement
with other values of the same snapshot (:func:`data_version_of` turns them into the version)."""
_DATA_VERSION = Prepared(sa.text(f"SELECT {DATA_VERSION_COLUMNS}"))


def data_version_of(fts: bytes | None, feed: int | None) -> DataVersion:
    """The data version from the values of :data:`DATA_VERSION_COLUMNS`."""
    return (bytes(fts) if fts is not None else b""), int(feed or 0)


def _data_version(conn: sa.Connection) -> DataVersion:
    """The data version as of ``conn``'s snapshot, in one read.

    On SQLite it runs on the driver's connection of the transaction (:class:`Prepared`): every search
    reads it, and SQLAlchemy's set-up of a text statement cost several times what SQLite takes.
    """
    if text_store_pg.is_postgresql(conn):
        newest = conn.execute(sa.select(sa.func.max(changes.c.id))).scalar()
        return None, int(newest or 0)
    try:
        row = _DATA_VERSION.first(conn, {})
    except (SQLAlchemyError, sqlite3.Error) as exc:
        raise StorageError(f"could not read the data version of the space: {exc}") from exc
    return data_version_of(row[0], row[1])


def candidate_set(
    conn: sa.Connection,
    *,
    collection_ids: Set[int],
    time_range: TimeRange | None,
    entity_ids: Sequence[int] | None,
    data_version: DataVersion | None = None,
) -> Candidates:
    """The candidates of a filter as of ``conn``'s snapshot: cached per (filter, data version), and
    on a new data version brought forward from the ones held (see the module rules).

    ``data_version`` is the version the caller read in ``conn``'s transaction already (with
    :data:`DATA_VERSION_COLUMNS`); by default it is read here."""
    version, feed = data_version if data_version is not None else _data_version(conn)
    index = text_index(conn, FTS_TABLE, version=version)
    which = (
        tuple(sorted(collection_ids)),
        None if time_range is None else (time_range.start, time_range.end),
        None if entity_ids is None else tuple(sorted(set(entity_ids))),
    )
    key = (index.version, feed, *which)
    with _LOCK:
        held = _HELD.get(conn.engine)
        if held is None:
            held = _HELD[conn.engine] = _Held()
        found = held.by_key.get(key)
        if found is not None:
            held.by_key.move_to_end(key)
            return found
        before = held.newest.get(which)
        if before is not None and before.feed > feed:
            # a reader a write behind the newest: the newest held at or below its snapshot
            older = [c for c in held.by_key.values() if c.key[2:] == which and c.feed <= feed]
            before = max(older, key=lambda c: c.feed) if older else None
    made = None
    if before is not None and before.feed <= feed:
        made = _brought_forward(conn, before, index, key, feed, collection_ids, time_range, entity_ids)
    if made is None:
        made = _read_whole(conn, index, key, feed, collection_ids, time_range, entity_ids)
    with _LOCK:
        held.by_key[key] = made
        size = sum(c.nbytes for c in held.by_key.values())
        while len(held.by_key) > 1 and (len(held.by_key) > _KEYS_HELD or size > _BYTES_HELD):
            _, dropped = held.by_key.popitem(last=False)
            size -= dropped.nbytes
        newest = held.newest.get(which)
        if newest is None or newest.feed <= made.feed:
            held.newest[which] = made
        held.newest.move_to_end(which)
        while len(held.newest) > _FILTERS_HELD:
            held.newest.popitem(last=False)
    return made


def _window(conn: sa.Connection, low: int, feed: int) -> tuple[int, ...]:
    """Ids of the change records above ``low`` up to ``feed``."""
    found = conn.execute(sa.select(changes.c.id).where(changes.c.id > low, changes.c.id <= feed))
    return tuple(sorted(int(i) for i in found.scalars()))


def _rows(conn: sa.Connection, conditions: Sequence[sa.ColumnElement[bool]]) -> list[Any]:
    try:
        return list(
            conn.execute(
                sa.select(chunks.c.id, documents.c.id, documents.c.doc_date)
                .join(documents, documents.c.id == chunks.c.document_id)
                .where(*conditions)
            ).all()
        )
    except SQLAlchemyError as exc:
        raise StorageError(f"could not read the chunks a search may find: {exc}") from exc


def _read_whole(
    conn: sa.Connection,
    index: InvertedIndex,
    key: tuple[Any, ...],
    feed: int,
    collection_ids: Set[int],
    time_range: TimeRange | None,
    entity_ids: Sequence[int] | None,
) -> Candidates:
    # every chunk the filter allows, not only those the full-text index holds: a chunk without
    # a single word (an emoji, a picture's caption) can still be found by meaning
    read = read_whole(conn, collection_ids=collection_ids, time_range=time_range, entity_ids=entity_ids)
    reads.add(len(read.ids), whole=True)
    owners = Owners.arranged(read.ids, read.documents, read.days, read.calendar, index)
    text = CandidateMask.of(index, owners.groups >= 0)
    return Candidates(key, text, owners, index, feed, _window(conn, feed - _WINDOW, feed))


def _brought_forward(
    conn: sa.Connection,
    before: Candidates,
    index: InvertedIndex,
    key: tuple[Any, ...],
    feed: int,
    collection_ids: Set[int],
    time_range: TimeRange | None,
    entity_ids: Sequence[int] | None,
) -> Candidates | None:
    """``before`` brought to this snapshot from the change log, or ``None`` when it cannot vouch for it."""
    if feed == before.feed and index.version != before.index.version:
        return None  # the full text moved without a change record: a repair, not a write
    seen = _window(conn, min(before.feed, feed) - _WINDOW, feed)
    if tuple(i for i in seen if i <= before.feed) != before.window:
        return None  # records below the newest held appeared or went
    window = tuple(i for i in seen if i > feed - _WINDOW)
    if feed != before.feed:
        safe = _SAFE if entity_ids is None else _SAFE_WITH_ENTITIES
        # a revert is what it reverts: its record names the change, the change names the object
        reverted = changes.alias("reverted")
        kinds = conn.execute(
            sa.select(changes.c.target_type, reverted.c.target_type)
            .select_from(
                changes.outerjoin(
                    reverted, sa.and_(changes.c.target_type == "change", reverted.c.id == changes.c.target_id)
                )
            )
            .where(changes.c.id > before.feed)
            .distinct()
        ).all()
        if not {str(k) for row in kinds for k in row if k is not None} <= safe:
            return None
    named = delta.named_documents(conn, before.feed, limit=MAX_NAMED, counted=False)
    if named is None:
        return None
    if not len(named) and index is before.index:
        # a fact written, an entity named: nothing a search finds changed
        return Candidates(key, before.text, before.owners, index, feed, window)
    rows: list[Any] = []
    if len(named):
        rows = _rows(
            conn, [documents.c.id.in_(named.tolist()), *search_filters(collection_ids, time_range, entity_ids)]
        )
    reads.add(len(rows), whole=False)
    owners = before.owners.spliced(named, rows, index)
    text = spliced_mask(before.text, before.index, index, owners.groups >= 0)
    return Candidates(key, text, owners, index, feed, window)
