"""Search never returns, counts or ranks what the caller cannot read (K-SRCH-03, DESIGN §5).

The proof is by comparison: the gem runs the same queries before and after the user adds many
strongly matching documents to a collection the gem cannot read, with both legs of search active.
Whatever the hidden documents are, the gem's results (refs, order, passages) must be identical.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from docs_fixtures import dump, gem, titles

from notochord import Space
from notochord.gems.api.knowledge import KnowledgeApi

pytestmark = pytest.mark.anyio

VISIBLE = {
    "Orchard": "Apples from the orchard.",
    "Market": "Bananas from the market stall on Saturday morning.",
    "Smoothie": "A smoothie of banana and apple with oat milk and honey.",
    "Pears": "Pears poached in red wine with a cinnamon stick.",
    "Bread": "Banana bread needs very ripe bananas and walnuts.",
    "Pie": "Apple pie with a lattice crust, served warm.",
}
QUERIES = ("apples bananas", "banana", "apple pie crust", "oat milk honey", "cinnamon wine", "")


async def _results(api: KnowledgeApi, **options: Any) -> list[list[dict[str, Any]]]:
    return [dump(await api.search(q, options)) for q in QUERIES]


async def _setup(space: Space, gems_root: Path) -> KnowledgeApi:
    for title, body in VISIBLE.items():
        space.user.documents.upsert(collection="keep", title=title, body=body)
    space.index.wait()
    return gem(space, gems_root, "g", ["collections.read:keep"])


def _hide_many_matches(space: Space) -> int:
    """The user's private collection, full of passages that match every query better than any visible one."""
    private = space.user.collections.create("Private")
    for i in range(40):
        space.user.documents.upsert(
            collection=private.id,
            title=f"apple log {i}",
            body="Apples apples apples. Apple pie crust. " * (1 + i % 3) + "Oat milk honey, cinnamon wine.",
        )
    space.index.wait()
    return private.id


async def test_hidden_collections_change_nothing_in_a_gems_results(space: Space, gems_root: Path) -> None:
    """K-SRCH-03, DESIGN §5 "filters run inside the query": identical refs, order and passages for
    every query, with and without the hidden documents, with both legs of search running."""
    api = await _setup(space, gems_root)
    assert space.index.embedder is not None
    before = await _results(api)
    before_limited = await _results(api, limit=2)
    assert [len(r) for r in before] == [6] * len(QUERIES)  # the vector leg ranks every visible passage
    _hide_many_matches(space)
    assert await _results(api) == before
    assert await _results(api, limit=2) == before_limited


async def test_naming_the_hidden_collection_changes_nothing(space: Space, gems_root: Path) -> None:
    """K-SRCH-03: a ref the gem cannot resolve (the user's private collection) is skipped silently."""
    api = await _setup(space, gems_root)
    before = await _results(api, collections=["keep"])
    _hide_many_matches(space)
    foreign = await gem(space, gems_root, "other", ["collections.create"]).collections.create("Other's")
    assert await _results(api, collections=["keep", foreign.ref]) == before


async def test_a_stale_vector_of_a_hidden_passage_never_ranks_a_visible_one(space: Space, gems_root: Path) -> None:
    """K-SRCH-03, DESIGN §5: the user empties a private document (its passage and vector go; what is
    left is one empty passage carrying its title, waiting for its own vector), then the gem writes a
    note that is not embedded yet. A query made of the private words matches no visible
    word and no visible vector, so it must find nothing, whatever vectors the index held before."""
    private = space.user.collections.create("Private")
    secret = space.user.documents.upsert(
        collection=private.id, title="Secret", body="Quantum cryptography roadmap for the merger."
    )
    space.index.wait()
    assert titles(space.user.search("quantum")) == ["Secret"]
    api = gem(space, gems_root, "g", ["collections.read:keep", "collections.write:keep"])
    assert await api.search("quantum") == []
    space.user.documents.upsert(id=secret.id, title="Secret", body="")
    await api.documents.upsert({"collection": "keep", "title": "Note", "body": "Plain note."})
    assert space.index.pending() == 2
    assert titles(await api.search("quantum cryptography roadmap merger")) == []
    space.index.wait()
    assert titles(await api.search("quantum cryptography roadmap merger")) == ["Note"]
