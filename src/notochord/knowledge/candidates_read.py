"""The one filter of a search, and the whole read of the chunks it selects (K-SRCH).

Rules:

- **One filter.** :func:`search_filters` is the condition on ``chunks`` joined with ``documents``
  that makes a chunk findable: live documents of the caller's collections, the ``timeRange`` on the
  document date, and the ``entities`` mentioned. Its document part (:func:`document_filters`) and
  its chunk part (:func:`mention_filter`) are the same conditions, taken apart for the read below.
- **No Python object per chunk.** A space may hold a million candidates; a row object, a tuple and
  a date string for each cost seconds (SQLAlchemy's rows, ``zip``, a sort of a million strings).
  :func:`read_whole` reads the chunk ids and their documents as two texts of comma-separated
  integers (one statement, one row), and the dates of the filter's documents per distinct date (a
  second statement, one row per date, with the ids of that date's documents). Only the distinct
  dates become Python strings, and they alone are sorted; each chunk's date number is then a
  look-up by its document.
- **Aligned columns.** On SQLite both lists come from one aggregate pass over the same rows (every
  row steps both ``group_concat``); on PostgreSQL they are one ``string_agg`` of ``id,document``
  pairs, so that no plan can order the two lists differently.
- **One snapshot.** Both statements run in the caller's read transaction (one snapshot on either
  backend), so every candidate's document is among the documents read with their dates; a document
  missing there means the rows changed under the read, and it fails rather than guess.
- The result is what the plain read gives: chunk ids ascending, their documents, and each chunk's
  date as its position in the calendar (the candidates' distinct dates in code-point order, as
  numpy orders strings, at the width of the longest of them).
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from notochord.db.dialect import listed_ids
from notochord.db.schema import chunks, documents, mentions
from notochord.errors import StorageError
from notochord.knowledge.timeranges import TimeRange
from notochord.search import text_store_pg

__all__ = ["WholeRead", "document_filters", "mention_filter", "read_whole", "search_filters"]

IntArray = npt.NDArray[np.int64]


def document_filters(collection_ids: Set[int], time_range: TimeRange | None) -> list[sa.ColumnElement[bool]]:
    """The conditions on ``documents`` alone that make its chunks findable."""
    return [documents.c.deleted_at.is_(None), *_placed(collection_ids, time_range)]


def _placed(collection_ids: Set[int], time_range: TimeRange | None) -> list[sa.ColumnElement[bool]]:
    """The document conditions that the index on ``(collection_id, doc_date)`` answers alone."""
    conditions: list[sa.ColumnElement[bool]] = [documents.c.collection_id.in_(sorted(collection_ids))]
    if time_range is not None and time_range.start is not None:
        conditions.append(documents.c.doc_date >= time_range.start)
    if time_range is not None and time_range.end is not None:
        conditions.append(documents.c.doc_date <= time_range.end)
    return conditions


def mention_filter(entity_ids: Sequence[int] | None) -> sa.ColumnElement[bool] | None:
    """The condition on ``chunks`` of an ``entities`` filter (``None`` without one)."""
    if entity_ids is None:
        return None
    return chunks.c.id.in_(sa.select(mentions.c.chunk_id).where(mentions.c.entity_id.in_(list(entity_ids))))


def search_filters(
    collection_ids: Set[int], time_range: TimeRange | None, entity_ids: Sequence[int] | None
) -> list[sa.ColumnElement[bool]]:
    """The conditions on ``chunks`` joined with ``documents`` that make a chunk findable."""
    conditions = document_filters(collection_ids, time_range)
    mentioned = mention_filter(entity_ids)
    if mentioned is not None:
        conditions.append(mentioned)
    return conditions


@dataclass(frozen=True)
class WholeRead:
    """Every candidate of a filter: ``ids`` ascending, and per id its document and date number."""

    ids: IntArray
    documents: IntArray
    days: IntArray
    """Each candidate's date as its position in ``calendar``."""
    calendar: npt.NDArray[np.str_]
    """The candidates' distinct dates, ascending."""


def _chunks_and_documents(
    conn: sa.Connection, conditions: Sequence[sa.ColumnElement[bool]]
) -> tuple[IntArray, IntArray]:
    """The candidates' chunk ids and their documents, aligned, in the store's order."""
    joined = chunks.join(documents, documents.c.id == chunks.c.document_id)
    if text_store_pg.is_postgresql(conn):
        pair = sa.cast(chunks.c.id, sa.Text) + "," + sa.cast(chunks.c.document_id, sa.Text)
        listed = conn.execute(sa.select(sa.func.string_agg(pair, ",")).select_from(joined).where(*conditions)).scalar()
        both = listed_ids(listed).reshape(-1, 2)
        return both[:, 0], both[:, 1]
    row = conn.execute(
        sa.select(sa.func.group_concat(chunks.c.id), sa.func.group_concat(chunks.c.document_id))
        .select_from(joined)
        .where(*conditions)
    ).one()
    return listed_ids(row[0]), listed_ids(row[1])


def _dates(
    conn: sa.Connection, collection_ids: Set[int], time_range: TimeRange | None, entity_ids: Sequence[int] | None
) -> tuple[list[str], IntArray, IntArray]:
    """The distinct dates of the documents the filter may select, and per date the ids of its documents.

    Returns the dates (in the store's order), the document ids listed date after date, and how many
    documents each date has. Deleted documents are listed too: a document's row on SQLite holds its
    body before ``deleted_at`` (a read of that column walks the body's overflow pages), while the
    index on ``(collection_id, doc_date)`` answers the rest alone; the dates of documents without a
    candidate are dropped afterwards. With an ``entities`` filter only the documents of chunks that
    mention one are listed, so a narrow filter reads few rows.
    """
    conditions = _placed(collection_ids, time_range)
    mentioned = mention_filter(entity_ids)
    if mentioned is not None:
        conditions.append(documents.c.id.in_(sa.select(chunks.c.document_id).where(mentioned)))
    found = conn.execute(
        sa.select(
            documents.c.doc_date,
            sa.func.count(),
            sa.func.aggregate_strings(sa.cast(documents.c.id, sa.Text), ","),
        )
        .where(*conditions)
        .group_by(documents.c.doc_date)
    ).all()
    if not found:
        return [], np.zeros(0, np.int64), np.zeros(0, np.int64)
    dates, counts, listed = zip(*found, strict=True)
    return list(dates), listed_ids(",".join(listed)), np.array(counts, np.int64)


def _calendar(dates: list[str]) -> tuple[npt.NDArray[np.str_], IntArray]:
    """The distinct ``dates`` ascending, and each given date's position among them."""
    given = np.array(dates, dtype=np.str_)
    # a stable sort of the (few) distinct dates; equal neighbours are still merged, whatever the store
    # took for equal when it grouped them
    order = np.argsort(given, kind="stable")
    ordered = given[order]
    first = np.ones(len(ordered), np.bool_)
    first[1:] = ordered[1:] != ordered[:-1]
    day = np.empty(len(ordered), np.int64)
    day[order] = np.cumsum(first) - 1
    return ordered[first], day


def read_whole(
    conn: sa.Connection,
    *,
    collection_ids: Set[int],
    time_range: TimeRange | None,
    entity_ids: Sequence[int] | None,
) -> WholeRead:
    """Every chunk the filter selects, with its document and date, as of ``conn``'s snapshot.

    Raises:
        StorageError: the store could not be read, or its rows changed while they were read.
    """
    try:
        ids, docs = _chunks_and_documents(conn, search_filters(collection_ids, time_range, entity_ids))
        if not len(ids):
            return WholeRead(ids, docs, np.zeros(0, np.int64), np.zeros(0, np.str_))
        dates, dated, per_date = _dates(conn, collection_ids, time_range, entity_ids)
    except SQLAlchemyError as exc:
        raise StorageError(f"could not read the chunks a search may find: {exc}") from exc
    calendar, day_of_date = _calendar(dates)
    # each document's date number, by document id (an array over the ids, as Owners.arranged keeps
    # too: ids number the documents ever stored)
    size = max(int(docs.max()), int(dated.max()) if len(dated) else 0) + 1
    day_of_document = np.full(size, -1, np.int64)
    day_of_document[dated] = np.repeat(day_of_date, per_date)
    days = day_of_document[docs]
    if len(days) and int(days.min()) < 0:
        raise StorageError(
            "the documents changed while the chunks a search may find were read (the read was not "
            "one snapshot); search again"
        )
    order = np.argsort(ids)
    ids, docs, days = ids[order], docs[order], days[order]
    # only the dates of the candidates themselves (a document read may be deleted, have no chunk, or
    # none that mentions an entity), at their own width, as a read of the candidates' rows gives them
    used = np.bincount(days, minlength=len(calendar)) > 0
    if not used.all():
        days = (np.cumsum(used) - 1)[days]
        calendar = calendar[used]
    # numpy's narrowest text type holds one character, even when every date is empty
    width = max(max(len(date) for date in calendar.tolist()), 1)
    if calendar.dtype.itemsize != width * np.dtype("U1").itemsize:
        calendar = calendar.astype(f"<U{width}")
    return WholeRead(ids, docs, days, calendar)
