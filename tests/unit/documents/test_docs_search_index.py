"""Search over the shared in-memory full-text index sees every write at once.

The index and the candidate masks are cached per data version; these tests prove that every kind
of write — upsert, edit, delete, move between collections, revert — changes what the next search
returns exactly as a search with empty caches would, and that ``group_by="document"`` counts
documents, not passages.
"""

from __future__ import annotations

import contextlib
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from docs_fixtures import gem
from hypothesis import given, settings
from hypothesis import strategies as st

import notochord
from notochord import KnowledgeValidationError, Space
from notochord.clock import FixedClock
from notochord.knowledge.hybrid_search import forget_search_caches
from notochord.settings import Settings

WORDS = ["granite", "willow", "harbor", "ember", "lantern", "meadow"]


def titles(space: Space, query: str, **options: object) -> list[str]:
    return [h.title for h in space.search(query, **options)]  # type: ignore[arg-type]


def test_every_kind_of_write_is_seen_by_the_next_search(text_space: Space) -> None:
    """Upsert, edit, delete, move to another collection and revert each change
    the very next search (the cached index and masks follow the data version)."""
    space = text_space
    assert titles(space, "granite") == []
    first = space.user.documents.upsert(collection="keep", title="Quarry", body="granite blocks")
    assert titles(space, "granite") == ["Quarry"]
    space.user.documents.upsert(id=first.id, title="Quarry", body="limestone blocks")
    assert titles(space, "granite") == []
    assert titles(space, "limestone") == ["Quarry"]
    assert titles(space, "limestone", collections=["keep"]) == ["Quarry"]
    rocks = space.user.collections.create("Rocks").id
    space.user.documents.move(first.id, collection=rocks)
    assert titles(space, "limestone", collections=["keep"]) == []
    assert titles(space, "limestone", collections=[rocks]) == ["Quarry"]
    deleted = space.user.documents.delete(first.id)
    assert titles(space, "limestone") == []
    space.changes.revert(deleted)
    assert titles(space, "limestone") == ["Quarry"]


def test_a_write_through_another_open_of_the_data_directory_is_seen(tmp_path: Path, clock: FixedClock) -> None:
    """The data version is read from the database, not kept in the process, so a
    write committed through another engine (as another process would) is seen by the next search."""
    data = tmp_path / "data"
    settings_ = Settings(data_dir=data, index_in_background=False)
    with notochord.open(data, settings_, clock=clock, embedder=None) as reader:
        reader.personal.user.documents.upsert(collection="keep", title="Old", body="harbor lights")
        assert titles(reader.personal, "harbor") == ["Old"]
        with notochord.open(data, settings_, clock=clock, embedder=None) as writer:
            writer.personal.user.documents.upsert(collection="keep", title="New", body="harbor harbor ferry")
        assert sorted(titles(reader.personal, "harbor")) == ["New", "Old"]


operations = st.lists(
    st.tuples(
        st.sampled_from(["upsert", "edit", "delete", "move", "revert"]),
        st.integers(min_value=0, max_value=5),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=30, deadline=None)
@given(ops=operations, query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join))
def test_cached_search_equals_a_cold_search_after_any_writes_and_reverts(
    ops: list[tuple[str, int, str]], query: str
) -> None:
    """After any sequence of upserts, edits, deletes, moves and reverts, the
    search that reuses the cached index and masks returns exactly what a search with the caches
    dropped (a rebuild from the store) returns, for every collection filter."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        settings_ = Settings(data_dir=data, index_in_background=False)
        with notochord.open(
            data,
            settings_,
            clock=FixedClock(datetime(2026, 9, 29, 8, 0, tzinfo=UTC), tz_name="Europe/Amsterdam"),
            embedder=None,
        ) as opened:
            space = opened.personal
            other = space.user.collections.create("Other").id
            ids: list[int] = []
            change_ids: list[int] = []
            for op, pick, body in ops:
                if op == "upsert" or not ids:
                    done = space.user.documents.upsert(collection="keep", title=f"d{len(ids)}", body=body)
                    ids.append(done.id)
                    change = done.change_id
                elif op == "edit":
                    change = None
                    with contextlib.suppress(notochord.NotochordError):
                        change = space.user.documents.upsert(
                            id=ids[pick % len(ids)], title="edited", body=body + " ember"
                        ).change_id
                elif op == "delete":
                    try:
                        change = space.user.documents.delete(ids[pick % len(ids)])
                    except notochord.NotochordError:
                        change = None
                elif op == "move":
                    target: str | int = other if pick % 2 else "keep"
                    try:
                        change = space.user.documents.move(ids[pick % len(ids)], collection=target)
                    except notochord.NotochordError:
                        change = None
                else:
                    change = None
                    if change_ids:
                        with contextlib.suppress(notochord.NotochordError):
                            space.changes.revert(change_ids[pick % len(change_ids)])
                if change is not None:
                    change_ids.append(change)
                for scope in (None, ["keep"], [other]):
                    warm = space.search(query, collections=scope, limit=20)  # type: ignore[arg-type]
                    forget_search_caches(space.core.store.engine)
                    cold = space.search(query, collections=scope, limit=20)  # type: ignore[arg-type]
                    assert [(h.document_id, h.chunk, h.score) for h in warm] == [
                        (h.document_id, h.chunk, h.score) for h in cold
                    ]


def _long(topic: str, n: int) -> str:
    return "\n\n".join(f"# Part {i}\n\n" + f"{topic} notes, section {i}. " * 30 for i in range(n))


def test_group_by_document_returns_limit_documents_each_once(text_space: Space) -> None:
    """With ``group_by="document"`` passages collapse into their documents before
    the limit, so asking for 3 returns 3 different documents, each at its best passage — where per
    passage the first 3 hits all come from the one long document."""
    space = text_space
    space.user.documents.upsert(collection="keep", title="Long", body=_long("lantern lantern lantern", 6))
    for name in ("A", "B", "C"):
        space.user.documents.upsert(collection="keep", title=name, body=f"a lantern in {name} meadow " * 20)
    by_chunk = space.search("lantern", limit=3)
    assert {h.title for h in by_chunk} == {"Long"}
    by_doc = space.search("lantern", limit=3, group_by="document")
    assert len(by_doc) == 3
    assert len({h.document_id for h in by_doc}) == 3
    assert by_doc[0].title == "Long"
    assert by_doc[0].score == by_chunk[0].score


def test_group_by_must_be_chunk_or_document(text_space: Space) -> None:
    with pytest.raises(KnowledgeValidationError, match="hits group by"):
        text_space.search("lantern", group_by="page")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_gem_can_ask_for_one_hit_per_document(text_space: Space, gems_root: Path) -> None:
    """``groupBy: "document"`` on a gem's search returns ``limit`` documents."""
    space = text_space
    space.user.documents.upsert(collection="keep", title="Long", body=_long("lantern lantern lantern", 6))
    for name in ("A", "B"):
        space.user.documents.upsert(collection="keep", title=name, body=f"a lantern in {name} meadow " * 20)
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    per_passage = await api.search("lantern", {"limit": 3})
    assert {h.title for h in per_passage} == {"Long"}
    per_document = await api.search("lantern", {"limit": 3, "groupBy": "document"})
    assert len({h.document for h in per_document}) == 3
    with pytest.raises(KnowledgeValidationError, match="hits group by"):
        await api.search("lantern", {"groupBy": "page"})
