"""The candidates a search may find are brought forward from the change log, exactly.

After any sequence of writes — new documents, edits, deletions, moves to another collection,
re-dated documents, reverts, fact writes — the candidate set a search uses is compared with one read
from scratch in the same snapshot: the chunk ids, their documents, the order of their dates, the
mask over the full-text index, every term's postings among the candidates, the document groups of
document ranking, and the rankings themselves. With and without a time range and an entity filter,
on both backends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.db.schema import change_objects, changes
from notochord.knowledge import candidates as cands
from notochord.knowledge.hybrid_search import full_text_leg
from notochord.knowledge.timeranges import TimeRange, parse_time_range
from notochord.search.bm25 import document_groups, rank, rank_documents
from notochord.settings import Settings

from .conftest import SpaceOpener
from .random_writes import QUERIES, Writer


def _filters(space: notochord.Space, writer: Writer, alice: int) -> list[dict[str, Any]]:
    tz = space.core.store.clock.tz
    every = {c.id for c in space.user.collections.list()}
    spring = parse_time_range({"from": "2026-02-01", "to": "2026-06-30"}, tz=tz)
    return [
        {"collection_ids": every, "time_range": None, "entity_ids": None},
        {"collection_ids": {writer.keep}, "time_range": None, "entity_ids": None},
        {"collection_ids": every, "time_range": spring, "entity_ids": None},
        {
            "collection_ids": {writer.other},
            "time_range": TimeRange(None, spring.end if spring else None),
            "entity_ids": None,
        },
        {"collection_ids": every, "time_range": None, "entity_ids": [alice]},
    ]


def _assert_same(space: notochord.Space, filters: list[dict[str, Any]]) -> int:
    """Compares; returns how many of the candidate sets the search would use were read whole."""
    whole = 0
    with space.core.store.read() as conn:
        for given in filters:
            before = cands.reads.whole
            ours = cands.candidate_set(conn, **given)
            whole += cands.reads.whole - before
            theirs = cands._read_whole(conn, ours.index, ours.key, ours.feed, **given)
            index = ours.index
            assert ours.ids.tolist() == theirs.ids.tolist()
            assert ours.owners.documents.tolist() == theirs.owners.documents.tolist()
            assert ours.owners.newness.tolist() == theirs.owners.newness.tolist()
            assert ours.owners.groups.tolist() == theirs.owners.groups.tolist()
            assert ours.text.mask.tolist() == theirs.text.mask.tolist()
            assert (ours.text.count, ours.text.mean_length) == (theirs.text.count, theirs.text.mean_length)
            for term in index.terms:
                mine, tf = ours.text.postings(index, term)
                fresh, fresh_tf = theirs.text.postings(index, term)
                assert mine.tolist() == fresh.tolist(), term
                assert tf.tolist() == fresh_tf.tolist(), term
            made, again = ours.document_groups(), document_groups(index, theirs.text, theirs.owners.groups)
            assert made.lengths.tolist() == again.lengths.tolist()
            assert made.present.tolist() == again.present.tolist()
            assert (made.total, made.mean) == (again.total, again.mean)
            for query in QUERIES:
                tokens = dict.fromkeys(query.lower().split(), 1)
                assert rank(index, ours.text, tokens, limit=30) == rank(index, theirs.text, tokens, limit=30)
                assert rank_documents(index, ours.text, tokens, made, limit=30) == rank_documents(
                    index, theirs.text, tokens, again, limit=30
                )
                assert full_text_leg(conn, query, limit=20, candidates=ours, **given) == full_text_leg(
                    conn, query, limit=20, candidates=theirs, **given
                )
    return whole


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_candidates_after_random_writes_equal_a_fresh_read(spaces_with: SpaceOpener, seed: int) -> None:
    """A write is visible to the next search: after every write of a random sequence, the
    candidates brought forward from the change log equal the ones read from scratch, for five filters
    (every collection, one, a time range, a collection and a time range, an entity); K-SRCH-03."""
    space = spaces_with(None)  # type: ignore[arg-type]
    alice = space.user.entities.resolve(name="Alice", create=True)
    assert alice is not None
    writer = Writer(space, seed)
    for _ in range(6):
        writer.step()
    filters = _filters(space, writer, alice.id)
    _assert_same(space, filters)
    done: list[str] = []
    whole = 0
    for _ in range(30):
        done.append(writer.step())
        whole += _assert_same(space, filters)
    # brought forward, not read again: only a revert of a move may make the entity filter read whole
    assert whole <= done.count("revert"), done


def test_the_ids_of_a_spliced_mask_stay_ascending_per_term(spaces_with: SpaceOpener) -> None:
    """A document moved back into the filter has chunks below the newest: its postings are
    merged in order, as BM25's look-ups need."""
    space = spaces_with(None)  # type: ignore[arg-type]
    other = space.user.collections.create("elsewhere").id
    keep = space.user.collections.get("keep").id
    moved = space.user.documents.upsert(collection=other, title="first", body="granite river granite").id
    space.user.documents.upsert(collection=other, title="stays", body="granite violet")
    for i in range(30):
        space.user.documents.upsert(collection="keep", title=f"d{i}", body="granite copper meadow " * (i % 4 + 1))
    given: dict[str, Any] = {"collection_ids": {keep}, "time_range": None, "entity_ids": None}
    with space.core.store.read() as conn:
        cands.candidate_set(conn, **given)
    space.user.documents.move(moved, collection=keep)
    with space.core.store.read() as conn:
        ours = cands.candidate_set(conn, **given)
        assert isinstance(ours.text, cands.SplicedMask)
        positions, _ = ours.text.postings(ours.index, "granit")
        assert np.all(np.diff(positions) > 0)
    _assert_same(space, [given])


def test_what_the_change_log_cannot_vouch_for_is_read_whole(spaces_with: SpaceOpener) -> None:
    """A collection changed, an entity changed under an entity filter, or change records
    that went missing below the newest held make the next search read its candidates whole — and
    they still equal a fresh read; a document write under the same filters does not."""
    space = spaces_with(None)  # type: ignore[arg-type]
    alice = space.user.entities.resolve(name="Alice", create=True)
    assert alice is not None
    for i in range(5):
        space.user.documents.upsert(collection="keep", key=f"k{i}", title=f"t{i}", body=f"Alice granite {i}")
    keep = space.user.collections.get("keep").id
    plain: dict[str, Any] = {"collection_ids": {keep}, "time_range": None, "entity_ids": None}
    named: dict[str, Any] = {"collection_ids": {keep}, "time_range": None, "entity_ids": [alice.id]}

    def read_whole_by_next_search() -> tuple[bool, bool]:
        return _assert_same(space, [plain]) > 0, _assert_same(space, [named]) > 0

    read_whole_by_next_search()
    space.user.documents.upsert(collection="keep", key="k9", title="t9", body="Alice river")
    assert read_whole_by_next_search() == (False, False)
    space.user.entities.resolve(name="Bob", create=True)
    assert read_whole_by_next_search() == (False, True)
    space.user.collections.rename(space.user.collections.create("Elsewhere").id, "Far away")
    assert read_whole_by_next_search() == (True, True)
    # a change record below the newest held disappears (as a purge removes them), then a write
    with space.core.store.engine.begin() as conn:
        newest = conn.execute(sa.select(sa.func.max(changes.c.id))).scalar_one()
        conn.execute(sa.delete(change_objects).where(change_objects.c.change_id == newest - 1))
        conn.execute(sa.delete(changes).where(changes.c.id == newest - 1))
    space.user.documents.upsert(collection="keep", key="k1", title="t1", body="Alice quartz")
    assert read_whole_by_next_search() == (True, True)
    space.user.documents.upsert(collection="keep", key="k2", title="t2", body="Alice violet")
    assert read_whole_by_next_search() == (False, False)


def test_a_search_a_write_behind_brings_forward_an_older_set(tmp_path: Path, clock: FixedClock) -> None:
    """A search whose snapshot began before another search saw a newer write (concurrent
    requests) brings forward the newest set held at or below its snapshot, not a newer one, and
    reads nothing whole."""
    settings = Settings(data_dir=tmp_path, index_in_background=False)
    with notochord.open(tmp_path, settings, clock=clock, embedder=None) as nc:
        space = nc.personal
        for i in range(10):
            space.user.documents.upsert(collection="keep", key=f"k{i}", title=f"t{i}", body=f"granite {i}")
        keep = space.user.collections.get("keep").id
        given: dict[str, Any] = {"collection_ids": {keep}, "time_range": None, "entity_ids": None}
        _assert_same(space, [given])
        space.user.documents.upsert(collection="keep", key="one", title="one", body="granite obsidian")
        with space.core.store.read() as behind:
            behind.execute(sa.select(changes.c.id).limit(1)).all()  # its snapshot starts here
            space.user.documents.upsert(collection="keep", key="two", title="two", body="granite basalt")
            assert _assert_same(space, [given]) == 0
            before = cands.reads.whole
            ours = cands.candidate_set(behind, **given)
            assert cands.reads.whole == before
            with space.core.store.read() as now:
                assert ours.feed < now.execute(sa.select(sa.func.max(changes.c.id))).scalar_one()
            fresh = cands._read_whole(behind, ours.index, ours.key, ours.feed, **given)
            assert ours.ids.tolist() == fresh.ids.tolist()
            assert ours.text.mask.tolist() == fresh.text.mask.tolist()
            assert ours.owners.newness.tolist() == fresh.owners.newness.tolist()
