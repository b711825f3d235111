"""A document without text is found like any other (K-SRCH-01, K-SRCH-08, K-DOC-01, K-DOC-11, OD-K39).

A document whose body is empty, or holds only whitespace, is indexed as one empty passage
(chunk 0, from 0 to 0) that carries its title: the full-text leg finds it by its title, an empty
query lists it (one result per document), and the vector leg embeds its title. The store's
consistency check, the full-text index a search holds and one rebuilt from the table all agree
on it, on both backends, through edits, reverts and a repair of a store written before.
"""

from __future__ import annotations

import sqlalchemy as sa

import notochord
from notochord.db.schema import chunks
from notochord.knowledge.check import check, repair
from notochord.knowledge.hybrid_search import Hit
from notochord.knowledge.indexing import FTS_TABLE, unindex_document
from notochord.search.inverted_index import build_index, text_index

from .conftest import SpaceOpener
from .fakes import HashedNgramEmbedder
from .index_contents import index_contents


def _titles(hits: list[Hit]) -> list[str]:
    return [h.title for h in hits]


def _matched(space: notochord.Space, query: str) -> list[tuple[int, str]]:
    """The document and passage text of each hit a query word matched (the vector leg also returns
    its nearest neighbours, however far)."""
    return [(h.document_id, h.text) for h in space.user.search(query) if h.text_match]


def _assert_consistent(space: notochord.Space) -> None:
    """The check finds nothing, and the full-text index searches hold is the one a rebuild reads."""
    assert check(space.core) == []
    with space.core.store.read() as conn:
        held, rebuilt = text_index(conn, FTS_TABLE), build_index(conn, FTS_TABLE)
    assert index_contents(held) == index_contents(rebuilt)


def test_a_document_without_text_is_found_by_its_title(spaces_with: SpaceOpener) -> None:
    """K-SRCH-01, K-SRCH-02: an empty body and a body of whitespace, written alone or in a batch,
    are found by a word of their title; the hit is the document's one empty passage."""
    space = spaces_with(HashedNgramEmbedder())
    docs = space.user.documents
    empty = docs.upsert(collection="keep", title="Quarterly zebra plan", body="")
    (blank,) = docs.upsert_many(
        [{"collection": "keep", "title": "Zebra crossing notes", "body": " \n\n\t  \n"}]
    ).results
    docs.upsert(collection="keep", title="Groceries", body="Milk, bread and a zebra-striped bag.")
    space.index.wait()

    hits = {h.document_id: h for h in space.user.search("quarterly zebra plan")}
    assert hits[empty.id].title == "Quarterly zebra plan"
    assert (hits[empty.id].text, hits[empty.id].chunk, hits[empty.id].start, hits[empty.id].end) == ("", 0, 0, 0)
    assert hits[empty.id].text_match
    # the vector leg ranked it too: its passage was embedded as its title
    assert hits[empty.id].similarity is not None
    assert "Zebra crossing notes" in _titles(space.user.search("crossing"))
    assert blank.id in {h.document_id for h in space.user.search("zebra", limit=10)}
    assert space.index.pending() == 0
    _assert_consistent(space)


def test_an_empty_query_lists_documents_without_text_newest_first(spaces_with: SpaceOpener) -> None:
    """K-SRCH-08, OD-K39: an empty query lists one result per document, newest first, whether or not
    the document holds text, and with no title either."""
    space = spaces_with(HashedNgramEmbedder())
    docs = space.user.documents
    docs.upsert(collection="keep", title="Oldest", body="Some words.", meta={"date": "2026-01-01"})
    docs.upsert(collection="keep", title="Middle", body="", meta={"date": "2026-02-01"})
    untitled = docs.upsert(collection="keep", body="   ", meta={"date": "2026-03-01"})
    space.index.wait()

    listed = space.user.search("")
    assert _titles(listed) == ["", "Middle", "Oldest"]
    assert listed[0].document_id == untitled.id
    assert [(h.text, h.chunk) for h in listed[:2]] == [("", 0), ("", 0)]
    _assert_consistent(space)


def test_a_document_without_text_has_one_empty_passage(spaces_with: SpaceOpener) -> None:
    """K-DOC-11, OD-K36, OD-K40: the passage a hit names is the one ``get`` counts and reads by range."""
    space = spaces_with(HashedNgramEmbedder())
    docs = space.user.documents
    written = docs.upsert(collection="keep", title="Placeholder", body="\n\n")
    assert docs.get(written.id).chunk_count == 1
    assert docs.passages(written.id, start=0, end=5) == ([""], 1)


def test_emptying_a_document_keeps_it_findable_and_a_revert_restores_its_text(spaces_with: SpaceOpener) -> None:
    """K-DOC-04, K-CHG-03, OD-K44: a body emptied by an update still leaves the document found by its
    title; reverting the update brings the old passages back; an imported document whose text holds
    only whitespace is found by its title too (K-DOC-06). Index and check agree after every step."""
    space = spaces_with(HashedNgramEmbedder())
    docs = space.user.documents
    first = docs.upsert(collection="keep", key="note", title="Harbor log", body="The lantern was lit at dusk.")
    _assert_consistent(space)
    emptied = docs.upsert(collection="keep", key="note", title="Harbor log", body="")
    assert emptied.status == "updated"
    assert _matched(space, "harbor") == [(first.id, "")]
    assert _matched(space, "lantern") == []
    _assert_consistent(space)

    assert emptied.change_id is not None
    space.changes.revert(emptied.change_id)
    assert _matched(space, "lantern") == [(first.id, "The lantern was lit at dusk.")]
    _assert_consistent(space)

    imported = docs.upsert(
        collection="keep", title="Imported falcon page", text=" \n ", source_uri="https://x.example/"
    )
    assert _matched(space, "falcon") == [(imported.id, "")]
    space.index.wait()
    _assert_consistent(space)


def test_a_store_written_before_is_reported_and_repaired(spaces_with: SpaceOpener) -> None:
    """A store written before every document had a passage holds documents without one: the check
    reports them (their body, and an imported document's text, cut into one empty passage), and
    the repair makes them findable by title."""
    space = spaces_with(HashedNgramEmbedder())
    docs = space.user.documents
    kept = docs.upsert(collection="keep", title="Meadow survey", body="")
    imported = docs.upsert(collection="keep", title="Quartz listing", text="", source_uri="https://x.example/q")
    with space.core.store.engine.begin() as conn:
        for doc_id in (kept.id, imported.id):
            unindex_document(conn, doc_id)
    found = check(space.core)
    assert {(p.kind, p.target) for p in found} == {
        ("chunks_differ_from_body", f"document:{kept.id}"),
        ("chunks_differ_from_body", f"document:{imported.id}"),
    }
    assert all(p.repairable for p in found)

    repair(space.core)
    space.index.wait()
    assert _matched(space, "meadow") == [(kept.id, "")]
    assert _matched(space, "quartz") == [(imported.id, "")]
    with space.core.store.read() as conn:
        query = sa.select(chunks.c.document_id, sa.func.count()).group_by(chunks.c.document_id)
        counts = {int(document_id): int(count) for document_id, count in conn.execute(query)}
    assert counts == {kept.id: 1, imported.id: 1}
    _assert_consistent(space)


def test_an_untitled_empty_document_matches_no_query_word(spaces_with: SpaceOpener) -> None:
    """K-SRCH-02: a document with neither title nor text has nothing for a word to match; it is
    listed by an empty query only, and never found by full text."""
    space = spaces_with(HashedNgramEmbedder())
    docs = space.user.documents
    nothing = docs.upsert(collection="keep", body="")
    docs.upsert(collection="keep", title="Copper", body="Copper wire.")
    space.index.wait()
    assert nothing.id in {h.document_id for h in space.user.search("")}
    assert all(not h.text_match for h in space.user.search("copper") if h.document_id == nothing.id)
    _assert_consistent(space)
