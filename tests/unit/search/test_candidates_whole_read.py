"""The whole read of a search's candidates equals a plain read of the same rows.

The first search of a filter reads every chunk it may find (chunk ids, their documents, the order
of their dates) without a Python object per chunk. Here that read is compared with the obviously
right one — a straightforward ``SELECT`` of ``(chunk id, document id, document date)`` turned into
the same arrays in Python — after random writes: dates that repeat, documents of many chunks,
deleted and moved documents, with time ranges and entity filters, on both backends.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

import notochord
from notochord.db.schema import documents
from notochord.errors import StorageError
from notochord.knowledge import candidates as cands
from notochord.knowledge import candidates_read
from notochord.knowledge.indexing import FTS_TABLE
from notochord.knowledge.timeranges import TimeRange, parse_time_range
from notochord.search.inverted_index import text_index

from .conftest import SpaceOpener
from .random_writes import Writer

_PLAIN = """
SELECT c.id, d.id, d.doc_date
FROM chunks AS c JOIN documents AS d ON d.id = c.document_id
WHERE d.deleted_at IS NULL AND d.collection_id IN ({collections}){dates}{entities}
"""


def _plain(
    conn: sa.Connection, collection_ids: Set[int], time_range: TimeRange | None, entity_ids: Sequence[int] | None
) -> tuple[list[int], list[int], list[int], list[str]]:
    """Ids ascending, their documents, their date's position among the distinct dates, and those dates."""
    params: dict[str, Any] = {}
    dates = ""
    if time_range is not None and time_range.start is not None:
        dates += " AND d.doc_date >= :start"
        params["start"] = time_range.start
    if time_range is not None and time_range.end is not None:
        dates += " AND d.doc_date <= :end"
        params["end"] = time_range.end
    entities = ""
    if entity_ids is not None:
        listed = ", ".join(str(int(i)) for i in entity_ids) or "NULL"
        entities = f" AND c.id IN (SELECT chunk_id FROM mentions WHERE entity_id IN ({listed}))"
    collections = ", ".join(str(int(i)) for i in sorted(collection_ids)) or "NULL"
    sql = _PLAIN.format(collections=collections, dates=dates, entities=entities)
    rows = sorted((int(c), int(d), str(t)) for c, d, t in conn.execute(sa.text(sql), params))
    calendar = sorted({t for _, _, t in rows})
    position = {t: i for i, t in enumerate(calendar)}
    return [c for c, _, _ in rows], [d for _, d, _ in rows], [position[t] for _, _, t in rows], calendar


def _assert_reads_plainly(space: notochord.Space, filters: list[dict[str, Any]]) -> None:
    with space.core.store.read() as conn:
        for given in filters:
            ids, docs, days, calendar = _plain(conn, **given)
            read = candidates_read.read_whole(conn, **given)
            assert read.ids.tolist() == ids, given
            assert read.documents.tolist() == docs, given
            assert read.days.tolist() == days, given
            assert read.calendar.tolist() == calendar, given
            # the width of the longest date the candidates have, as an array of their dates gets
            assert read.calendar.dtype == np.array(calendar, dtype=np.str_).dtype, given
            assert {read.ids.dtype, read.documents.dtype, read.days.dtype} == {np.dtype(np.int64)}
            # what a search ranks by: the newest date first
            version, feed = cands._data_version(conn)
            whole = cands._read_whole(conn, text_index(conn, FTS_TABLE, version=version), (), feed, **given)
            assert whole.owners.newness.tolist() == [len(calendar) - 1 - d for d in days], given
            assert whole.ids.tolist() == ids, given


def _filters(space: notochord.Space, writer: Writer, alice: int, nobody: int) -> list[dict[str, Any]]:
    tz = space.core.store.clock.tz
    every = {c.id for c in space.user.collections.list()}
    spring = parse_time_range({"from": "2026-02-01", "to": "2026-06-30"}, tz=tz)
    assert spring is not None
    empty = space.user.collections.create("empty").id
    return [
        {"collection_ids": every, "time_range": None, "entity_ids": None},
        {"collection_ids": {writer.keep}, "time_range": None, "entity_ids": None},
        {"collection_ids": every, "time_range": spring, "entity_ids": None},
        {"collection_ids": {writer.other}, "time_range": TimeRange(None, spring.end), "entity_ids": None},
        {"collection_ids": every, "time_range": TimeRange(spring.start, None), "entity_ids": None},
        {"collection_ids": every, "time_range": None, "entity_ids": [alice]},
        {"collection_ids": {writer.keep}, "time_range": spring, "entity_ids": [alice, nobody]},
        {"collection_ids": every, "time_range": None, "entity_ids": [nobody]},
        {"collection_ids": {empty}, "time_range": None, "entity_ids": None},
    ]


@pytest.mark.parametrize("seed", [1, 2])
def test_whole_read_equals_a_plain_read_after_random_writes(spaces_with: SpaceOpener, seed: int) -> None:
    """After every few writes of a random sequence (new, edited, re-dated, deleted, moved and
    reverted documents, some of many chunks, on six repeating dates), the candidates read whole
    equal a plain read of the same rows, for every collection, one, time ranges, entities and an
    empty collection; K-SRCH-03, K-SRCH-07, K-SRCH-09, K-SRCH-11."""
    space = spaces_with(None)  # type: ignore[arg-type]
    alice = space.user.entities.resolve(name="Alice", create=True)
    nobody = space.user.entities.resolve(name="Nobody Mentioned", create=True)
    assert alice is not None and nobody is not None
    writer = Writer(space, seed)
    long_body = " ".join(["granite river Alice meadow"] * 1500)
    space.user.documents.upsert(
        collection="keep", key="long", title="long", body=long_body, meta={"date": "2026-03-20"}
    )
    # one document moved and one deleted whatever the seed, with the random ones
    moved = space.user.documents.upsert(collection=writer.other, title="moved", body=long_body[:4000]).id
    dropped = space.user.documents.upsert(collection=writer.other, title="dropped", body="granite Alice").id
    space.user.documents.move(moved, collection=writer.keep)
    space.user.documents.delete(dropped)
    filters = _filters(space, writer, alice.id, nobody.id)
    _assert_reads_plainly(space, filters)
    for step in range(40):
        writer.step()
        if step % 5 == 4:
            _assert_reads_plainly(space, filters)
    with space.core.store.read() as conn:
        per_document = conn.execute(
            sa.text("SELECT max(n) FROM (SELECT count(*) AS n FROM chunks GROUP BY document_id) AS t")
        )
        per_date = conn.execute(
            sa.text("SELECT max(n) FROM (SELECT count(*) AS n FROM documents GROUP BY doc_date) AS t")
        )
        deleted = conn.execute(sa.select(sa.func.count()).where(documents.c.deleted_at.is_not(None)))
        assert per_document.scalar_one() >= 5 and per_date.scalar_one() >= 2 and deleted.scalar_one() >= 1


def test_whole_read_orders_dates_by_code_point_and_keeps_the_candidates_width(spaces_with: SpaceOpener) -> None:
    """Dates the store's collation may order otherwise (case, a space for the ``T``) are ordered
    as numpy orders text; dates of deleted documents and of documents outside the filter neither
    enter the calendar nor widen it; K-SRCH-07."""
    space = spaces_with(None)  # type: ignore[arg-type]
    keep = space.user.collections.get("keep").id
    other = space.user.collections.create("other").id
    made = [
        space.user.documents.upsert(collection="keep", key=f"k{i}", title=f"t{i}", body=f"granite {i}").id
        for i in range(6)
    ]
    gone = space.user.documents.upsert(collection="keep", key="gone", title="gone", body="granite gone").id
    elsewhere = space.user.documents.upsert(collection=other, title="elsewhere", body="granite elsewhere").id
    stored = {
        made[0]: "2026-01-05t10:00:00.000z",
        made[1]: "2026-01-05T10:00:00.000Z",
        made[2]: "2026-01-05 10:00:00.000Z",
        made[3]: "2026-01-05",
        made[4]: "2026-01-05",
        made[5]: "2026-1-5",
        # deleted, and outside the filter: wider than every date the candidates below have
        gone: "2026-01-04T00:00:00.000Z",
        elsewhere: "1999-12-31T23:59:59.999Z",
    }
    space.user.documents.delete(gone)
    with space.core.store.engine.begin() as conn:
        for document_id, date in stored.items():
            conn.execute(sa.update(documents).where(documents.c.id == document_id).values(doc_date=date))
    only_short: dict[str, Any] = {
        "collection_ids": {keep},
        "time_range": TimeRange(None, "2026-01-05"),
        "entity_ids": None,
    }
    _assert_reads_plainly(
        space,
        [
            {"collection_ids": {keep}, "time_range": None, "entity_ids": None},
            {"collection_ids": {keep, other}, "time_range": None, "entity_ids": None},
            only_short,
        ],
    )
    with space.core.store.read() as conn:
        read = candidates_read.read_whole(conn, **only_short)
    assert read.calendar.tolist() == ["2026-01-05"] and read.calendar.dtype == np.dtype("<U10")


def test_a_document_missing_from_the_dates_read_fails_rather_than_guess(
    spaces_with: SpaceOpener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should the dates read ever miss a candidate's document (rows that changed under a read
    outside one snapshot), the read fails with a storage error instead of giving it a date."""
    space = spaces_with(None)  # type: ignore[arg-type]
    for i in range(3):
        space.user.documents.upsert(
            collection="keep", key=f"k{i}", title=f"t{i}", body=f"granite {i}", meta={"date": f"2026-01-0{i + 1}"}
        )
    keep = space.user.collections.get("keep").id
    dates = candidates_read._dates

    def missing_one(*args: Any) -> tuple[list[str], Any, Any]:
        found, dated, per_date = dates(*args)
        return found[1:], dated[int(per_date[0]) :], per_date[1:]

    monkeypatch.setattr(candidates_read, "_dates", missing_one)
    with space.core.store.read() as conn, pytest.raises(StorageError, match="changed while"):
        candidates_read.read_whole(conn, collection_ids={keep}, time_range=None, entity_ids=None)
