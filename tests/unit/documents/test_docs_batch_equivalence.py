"""``upsert_many`` stores exactly what one ``upsert`` per item stores.

The batch path reads the documents its items name once and writes the chunks, full-text rows,
postings (PostgreSQL) and mentions of the whole batch in a few statements at its end. These tests
write the same items into two spaces with the same entities: one ``upsert`` at a time into the
first, ``upsert_many`` into the second, and compare everything stored — documents, chunks,
full-text rows, postings, mentions, change records with the objects they touched, the writer's
quota — ids included, and every outcome (K-DOC, K-CHG, K-QUOTA). Tables of chosen cases, then
seeded random sequences (hypothesis), on both backends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import notochord
from notochord.clock import FixedClock
from notochord.errors import KnowledgeNotFoundError
from notochord.knowledge.batches import BatchItemError
from notochord.knowledge.user import HostDocuments
from notochord.settings import Settings

PEOPLE = ["Anna Bakker", "Bram de Vries", "Chen Wei", "Daan Smit", "王芳"]
PARAGRAPHS = [
    "Anna Bakker brought the dumplings; Bram de Vries asked about the quarterly report again. " * 3,
    "Chen Wei is training for a marathon and 王芳 recommended the noodle place near the station. " * 3,
    "Nobody mentioned anyone here, only the weather in Utrecht and the long queue at the bakery. " * 3,
    "Daan Smit, anna bakker and BRAM DE VRIES met at the conference; Daan Smits is someone else. " * 3,
    "# Heading\n\n- a list item naming Chen Wei\n- another one\n\n```\ncode that names Daan Smit\n```",
]


def _stored(space: notochord.Space) -> dict[str, list[tuple[Any, ...]]]:
    """Every row a document write leaves, in a comparable order (the full-text version counter aside)."""
    queries = {
        "documents": "SELECT id, collection_id, key, title, body, meta_json, source_uri, content_hash, "
        "created_by, writer, created_at, updated_at, doc_date, deleted_at FROM documents ORDER BY id",
        "chunks": 'SELECT id, document_id, idx, text, start, "end", text_hash FROM chunks ORDER BY id',
        "fulltext": "SELECT rowid, body FROM chunks_fts ORDER BY rowid",
        "mentions": "SELECT chunk_id, entity_id FROM mentions ORDER BY chunk_id, entity_id",
        "changes": "SELECT id, run_id, actor, op, target_type, target_id, summary, before_json, after_json, "
        "status, created_at FROM changes ORDER BY id",
        "objects": "SELECT change_id, object_type, object_id FROM change_objects ORDER BY change_id, object_type, "
        "object_id",
        "quota": "SELECT writer, day, writes, chars FROM quota_usage ORDER BY writer, day",
    }
    with space.core.store.read() as conn:
        found = {name: [tuple(r) for r in conn.execute(sa.text(sql))] for name, sql in queries.items()}
        if conn.dialect.name == "postgresql":
            found["postings"] = [
                tuple(r)
                for r in conn.execute(
                    sa.text("SELECT term, chunk_id, tf FROM chunks_fts_terms ORDER BY chunk_id, term")
                )
            ]
    return found


@pytest.fixture
def pair(
    tmp_path: Path, clock: FixedClock, new_database_url: Callable[[], str | None]
) -> Iterator[tuple[notochord.Space, notochord.Space]]:
    """Two spaces with the same people and the same two documents (ids 1 and 2)."""
    spaces: list[notochord.Space] = []
    opened: list[notochord.Notochord] = []
    try:
        for name in ("one-by-one", "batched"):
            settings = Settings(data_dir=tmp_path / name, index_in_background=False, database_url=new_database_url())
            nc = notochord.open(tmp_path / name, settings, clock=clock, embedder=None)
            opened.append(nc)
            space = nc.personal
            for person in PEOPLE:
                space.user.entities.resolve(name=person, create=True)
            space.user.documents.upsert(collection="keep", title="first", body=PARAGRAPHS[0])
            space.user.documents.upsert(collection="keep", title="imported", text=PARAGRAPHS[1], source_uri="file:///i")
            spaces.append(space)
        yield spaces[0], spaces[1]
    finally:
        for nc in opened:
            nc.close()


def _writer(space: notochord.Space, who: str) -> HostDocuments:
    return space.user.documents if who == "user" else space.as_assistant.documents


def _both_ways(pair: tuple[notochord.Space, notochord.Space], items: list[dict[str, Any]], who: str) -> None:
    single, batched = pair
    one_by_one = [_writer(single, who).upsert(**item, run_id="run-1") for item in items]
    outcome = _writer(batched, who).upsert_many(items, run_id="run-1")
    assert outcome.results == one_by_one
    assert _stored(batched) == _stored(single)


CASES: dict[str, list[dict[str, Any]]] = {
    "new documents of one and of many chunks": [
        {"collection": "keep", "title": "short", "body": "Anna Bakker says hello."},
        {"collection": "keep", "title": "long", "body": "\n\n".join(PARAGRAPHS)},
        {"collection": "diary", "title": "empty", "body": ""},
    ],
    "a key written twice in one batch, then unchanged": [
        {"collection": "keep", "key": "k", "title": "v1", "body": PARAGRAPHS[2]},
        {"collection": "keep", "key": "k", "title": "v2", "body": PARAGRAPHS[3]},
        {"collection": "keep", "key": "k", "title": "v2", "body": PARAGRAPHS[3]},
    ],
    "an imported document updated twice in one batch": [
        {"collection": "keep", "key": "imp", "title": "i", "text": PARAGRAPHS[0], "source_uri": "https://x.example/a"},
        {"collection": "keep", "key": "imp", "title": "i", "text": PARAGRAPHS[4], "source_uri": "https://x.example/a"},
        {"collection": "keep", "key": "imp", "title": "j", "body": "now my own words about Chen Wei"},
    ],
    "updates by id of documents written before, and a new one between them": [
        {"id": 1, "title": "first, again", "body": PARAGRAPHS[3]},
        {"collection": "keep", "title": "between", "body": PARAGRAPHS[1]},
        {"id": 2, "title": "imported, again", "text": PARAGRAPHS[2], "source_uri": "file:///i"},
        {"id": 1, "title": "first, third time", "body": PARAGRAPHS[4]},
    ],
    "a new document named by its id by a later item of the same batch": [
        {"collection": "keep", "title": "third", "body": PARAGRAPHS[0]},
        {"collection": "keep", "key": "fourth", "title": "fourth", "body": PARAGRAPHS[1]},
        {"id": 3, "title": "third, again", "body": PARAGRAPHS[2]},
        {"collection": "keep", "title": "fifth", "body": PARAGRAPHS[3]},
        {"collection": "keep", "key": "fourth", "title": "fourth, again", "body": PARAGRAPHS[4]},
    ],
    "a diary entry keyed by its date, and the same key elsewhere": [
        {"collection": "diary", "key": "2026-09-29", "title": "Tuesday", "body": PARAGRAPHS[0]},
        {"collection": "keep", "key": "2026-09-29", "title": "not a diary", "body": PARAGRAPHS[1], "meta": {"x": 1}},
    ],
}


@pytest.mark.parametrize("who", ["user", "assistant"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_batch_stores_what_one_upsert_at_a_time_stores(
    pair: tuple[notochord.Space, notochord.Space], case: str, who: str
) -> None:
    """The same documents, chunks, full-text rows, postings, mentions, changes and
    quota, ids included, for the chosen cases; the assistant's items are each charged alone."""
    _both_ways(pair, CASES[case], who)


def test_a_negative_id_names_no_document_of_the_batch(pair: tuple[notochord.Space, notochord.Space]) -> None:
    """K-DOC: the documents a batch creates wait under ids of their own until its end; an item naming
    such an id is refused as one upsert refuses it ("no document"), and nothing is written."""
    single, batched = pair
    with pytest.raises(KnowledgeNotFoundError):
        single.user.documents.upsert(id=-1, title="x", body="y")
    before = _stored(batched)
    with pytest.raises(BatchItemError) as refused:
        batched.user.documents.upsert_many(
            [{"collection": "keep", "title": "new", "body": PARAGRAPHS[0]}, {"id": -1, "title": "x", "body": "y"}]
        )
    assert refused.value.index == 1 and "no document" in refused.value.problem
    assert _stored(batched) == before


@pytest.mark.parametrize("field", ["title", "body", "text", "key"])
def test_a_nul_character_in_a_later_item_names_it_and_writes_nothing(
    pair: tuple[notochord.Space, notochord.Space], field: str
) -> None:
    """K-DOC, K-API errors: a document held for the end of the batch is still checked in its turn, so
    U+0000 in any of its texts is refused naming the item, on both backends, and nothing is written."""
    _, batched = pair
    bad: dict[str, Any] = {"collection": "keep", "title": "bad", "body": "fine"}
    if field == "text":
        bad = {"collection": "keep", "title": "bad", "text": "imported\x00text", "source_uri": "https://x.example"}
    else:
        bad[field] = "with\x00nul"
    before = _stored(batched)
    with pytest.raises(BatchItemError, match=r"NUL character \(U\+0000\).*remove it") as refused:
        batched.user.documents.upsert_many([{"collection": "keep", "title": "fine", "body": PARAGRAPHS[0]}, bad])
    assert refused.value.index == 1
    assert _stored(batched) == before


_ITEM = st.one_of(
    st.fixed_dictionaries(
        {
            "collection": st.sampled_from(["keep", "diary"]),
            "key": st.sampled_from([None, "a", "b", "2026-09-30"]),
            "title": st.sampled_from(["", "t", "Anna Bakker's notes"]),
            "body": st.lists(st.sampled_from(PARAGRAPHS), max_size=4).map("\n\n".join),
        }
    ),
    st.fixed_dictionaries(
        {
            "collection": st.just("keep"),
            "key": st.sampled_from(["a", "c"]),
            "title": st.just("imported"),
            "text": st.lists(st.sampled_from(PARAGRAPHS), min_size=1, max_size=3).map("\n\n".join),
            "source_uri": st.just("https://x.example/c"),
        }
    ),
    st.fixed_dictionaries(
        {
            "id": st.sampled_from([1, 2]),
            "title": st.sampled_from(["again", "first"]),
            "body": st.lists(st.sampled_from(PARAGRAPHS), max_size=3).map("\n\n".join),
        }
    ),
)


@settings(max_examples=12, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(_ITEM, min_size=1, max_size=6), min_size=1, max_size=3))
def test_random_batches_store_what_one_upsert_at_a_time_stores(
    pair: tuple[notochord.Space, notochord.Space], batches: list[list[dict[str, Any]]]
) -> None:
    """Random sequences of batches — new, keyed, imported and by-id documents,
    repeats and re-imports — leave both spaces identical after every batch. The two spaces carry
    over from one example to the next, so every example starts from equal, ever larger stores."""
    for items in batches:
        _both_ways(pair, [{k: v for k, v in item.items() if v is not None} for item in items], "assistant")
