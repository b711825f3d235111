"""The vector leg of hybrid search over a real space: in-memory vectors kept in step with the store
, with the deterministic fake embedder."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import notochord
from notochord.clock import FixedClock
from notochord.errors import RevertError
from notochord.knowledge.check import repair
from notochord.search.vector_index import VectorIndex
from notochord.settings import Settings
from sent_sql import statements_sent

from .fakes import HashedNgramEmbedder

WORDS = ("apple", "pear", "river", "boat", "engine", "violin", "bread", "stone", "cloud", "garden")


@pytest.fixture
def space(tmp_path: Path, clock: FixedClock) -> Iterator[notochord.Space]:
    settings = Settings(data_dir=tmp_path / "d", index_in_background=False)
    with notochord.open(tmp_path / "d", settings, clock=clock, embedder=HashedNgramEmbedder()) as opened:
        yield opened.personal


def held(index: VectorIndex) -> dict[int, bytes]:
    """What the in-memory vectors hold: id → float32 bytes."""
    memory = index.memory
    assert memory is not None
    ids = memory.matrix.ids()
    return {int(i): v.tobytes() for i, v in zip(ids, memory.matrix.get(ids), strict=True)}


def rebuilt(space: notochord.Space) -> dict[int, bytes]:
    """The in-memory vectors a fresh process would load from the store now."""
    fresh = VectorIndex(space.core.store.engine, space.index.embedder, background=False)
    fresh.search("anything", k=1, allowed=[1])
    return held(fresh)


def vector_leg(
    space: notochord.Space, query: str, collections: list[str | int] | None = None
) -> list[tuple[int, float]]:
    """The passages the vector leg ranked for ``query``, best first, with their similarities."""
    hits = space.user.search(query, collections=collections, limit=50)
    return [(h.document_id * 1000 + h.chunk, h.similarity) for h in hits if h.similarity is not None]


OPERATION = st.one_of(
    st.tuples(st.just("upsert"), st.integers(0, 2), st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)),
    st.tuples(st.just("delete"), st.integers(0, 2), st.just([])),
    st.tuples(st.just("revert"), st.integers(0, 2), st.just([])),
    st.tuples(st.just("embed"), st.just(0), st.just([])),
    st.tuples(st.just("search"), st.just(0), st.lists(st.sampled_from(WORDS), min_size=1, max_size=2)),
    st.tuples(st.just("repair"), st.just(0), st.just([])),
    st.tuples(st.just("reset"), st.just(0), st.just([])),
)


# each example opens a space and embeds: no shrinking (minutes); a failure prints its operations
@settings(
    max_examples=20,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(operations=st.lists(OPERATION, min_size=1, max_size=14))
@example(
    operations=[
        ("upsert", 0, ["apple"]),
        ("embed", 0, []),
        ("search", 0, ["apple"]),
        ("upsert", 0, ["river", "boat"]),
        ("embed", 0, []),
    ]
)
def test_the_vectors_in_memory_equal_a_fresh_load_after_any_writes(
    tmp_path_factory: pytest.TempPathFactory, clock: FixedClock, operations: list[tuple[str, int, list[str]]]
) -> None:
    """After any sequence of upserts, deletions, reverts, embedding rounds, repairs
    (reindexing) and searches, the next search holds exactly the vectors a fresh load would."""
    directory = tmp_path_factory.mktemp("seq")
    settings_ = Settings(data_dir=directory, index_in_background=False)
    with notochord.open(directory, settings_, clock=clock, embedder=HashedNgramEmbedder()) as opened:
        space = opened.personal
        # a document no operation touches, so that every search has a candidate and loads the vectors
        space.user.documents.upsert(collection="diary", title="anchor", body="A garden stone.")
        change_ids: list[int] = []
        for op, slot, words in operations:
            if op == "upsert":
                outcome = space.user.documents.upsert(
                    collection="keep", key=f"k{slot}", title=f"t{slot}", body=" ".join(words) + "."
                )
                if outcome.change_id is not None:
                    change_ids.append(outcome.change_id)
            elif op == "delete":
                found = space.user.documents.get_by_key("keep", f"k{slot}")
                if found is not None:
                    space.user.documents.delete(found.id)
            elif op == "revert" and change_ids:
                with contextlib.suppress(RevertError):  # superseded by a later change: refused, nothing moves
                    space.changes.revert(change_ids[slot % len(change_ids)])
            elif op == "embed":
                space.index.wait()
            elif op == "search":
                space.user.search(" ".join(words))
            elif op == "repair":
                repair(space.core)
            elif op == "reset":
                space.core.vectors.reset()
        space.user.search("garden")
        assert held(space.index) == rebuilt(space)


def test_a_vector_stored_by_another_process_is_searched_by_the_next_query(tmp_path: Path, clock: FixedClock) -> None:
    """A write is visible to the next search — here a vector another process embedded."""
    settings_ = Settings(data_dir=tmp_path / "d", index_in_background=False)
    embedder = HashedNgramEmbedder()
    with (
        notochord.open(tmp_path / "d", settings_, clock=clock, embedder=embedder) as serving,
        notochord.open(tmp_path / "d", settings_, clock=clock, embedder=embedder) as command,
    ):
        serving.personal.user.documents.upsert(collection="keep", title="Stew", body="Simmer the beef two hours.")
        serving.personal.index.wait()
        assert serving.personal.user.search("simmer beef", limit=1)[0].title == "Stew"  # loaded now
        command.personal.user.documents.upsert(collection="keep", title="Tyres", body="Patch the bicycle tyre.")
        command.personal.index.wait()
        hits = serving.personal.user.search("bicycle tyre", limit=5)
        assert any(h.title == "Tyres" and h.similarity is not None for h in hits)


def test_a_deleted_document_never_ranks_by_its_old_vector(space: notochord.Space) -> None:
    """The vector of a deleted document stays out of the very next search."""
    gone = space.user.documents.upsert(collection="keep", title="Kayak", body="Paddle the kayak downstream.")
    space.user.documents.upsert(collection="keep", title="Bread", body="Knead the dough.")
    space.index.wait()
    assert "Kayak" in {h.title for h in space.user.search("kayak paddle")}
    space.user.documents.delete(gone.id)
    assert "Kayak" not in {h.title for h in space.user.search("kayak paddle")}


def test_vector_rankings_are_identical_with_and_without_hidden_collections(space: notochord.Space) -> None:
    """K-SRCH-03: a caller reading only ``keep`` gets the same vector ranking and
    similarities whether or not a collection it cannot read holds better-matching passages."""
    for i, word in enumerate(WORDS):
        space.user.documents.upsert(collection="keep", title=f"note {i}", body=f"A note about the {word}.")
    space.index.wait()
    queries = [f"the {w} and the {v}" for w, v in zip(WORDS, reversed(WORDS), strict=True)]
    before = [vector_leg(space, q, ["keep"]) for q in queries]
    private = space.user.collections.create("Private")
    for i, q in enumerate(queries * 3):
        space.user.documents.upsert(collection=private.id, title=q, body=f"{q}. {q}. ({i})")
    space.index.wait()
    after = [vector_leg(space, q, ["keep"]) for q in queries]
    assert before == after
    assert all(before)


def test_a_repeated_search_reads_no_candidate_ids_again(space: notochord.Space) -> None:
    """The caller's candidates are read once per (filter, data version) and shared by
    both legs; a repeated search runs no query over the documents' collections again."""
    for i, word in enumerate(WORDS):
        space.user.documents.upsert(collection="keep", title=f"note {i}", body=f"A note about the {word}.")
    space.index.wait()
    space.user.search("river boat")
    with statements_sent(space.core.store.engine) as statements:
        space.user.search("violin garden")
    assert statements, "the listener saw the search"
    assert not [s for s in statements if "collection_id IN" in s or "chunk_vectors.chunk_id IN" in s]
    assert len([s for s in statements if "chunk_vectors" in s]) == 1  # the vectors' version, one lookup


def test_the_vector_leg_ranks_exactly_as_a_brute_force_cosine(space: notochord.Space) -> None:
    """The in-memory leg returns the exact cosine order of the allowed passages."""
    for i, word in enumerate(WORDS):
        space.user.documents.upsert(collection="keep", title=f"note {i}", body=f"A note about the {word} {i}.")
    space.index.wait()
    embedder = space.index.embedder
    assert embedder is not None
    with space.core.store.read() as conn:
        rows = conn.execute(
            sa.text("SELECT c.id, c.text, d.title FROM chunks c JOIN documents d ON d.id = c.document_id")
        )
        passages = {int(r[0]): f"{r[2]}\n{r[1]}" for r in rows}
    query = "a violin in the garden"
    q = embedder.embed_query(query)
    expected = sorted(passages, key=lambda i: (-float(embedder.embed_passages([passages[i]])[0] @ q), i))
    found = space.index.search(query, k=len(passages), allowed=list(passages))
    assert [i for i, _ in found] == expected
    assert np.allclose([s for _, s in found], [float(embedder.embed_passages([passages[i]])[0] @ q) for i in expected])
