"""A hostile gem and a careful user: keys that are missing, undo that would take a later
edit with it, facts of a deleted person, dates of the first millennium and the calendar's ends, and
JSON nested deeper than every reader can read back.

Each test states a rule the knowledge must keep whatever a gem sends: ``getByKey`` never finds a
document by the absence of a key; undoing the creation of a person never silently drops an
identifier someone added since; nothing acts on the facts of a deleted person until the deletion is
undone; a date is ordered and filtered as a date in every year from 1 to 9999; and a value is
either refused when written or readable by every reader afterwards.
K-DOC-12, K-DOC-13, K-SRCH-06, K-SRCH-07, K-CHG-02, K-CHG-03, K-ENT-13, K-FACT-28, K-QUOTA-10,
K-QUOTA-14, OD-K08, OD-K21, OD-K25, OD-K39, OD-K44.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from knowledge_gem import knowledge_gem
from notochord import Space
from notochord.errors import KnowledgeNotFoundError, KnowledgeValidationError, RevertError
from notochord.knowledge.quotas import MAX_JSON_DEPTH

T = TypeVar("T")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ------------------------------------------------------------------------------ documents by key


@pytest.mark.anyio
async def test_get_by_key_without_a_key_is_refused_not_answered_with_a_document_written_without_one(
    space: Space, tmp_path: Path
) -> None:
    """K-DOC-12, OD-K08: ``getByKey('keep', None)`` names no document; before, it matched the first
    document of the collection written without a key (``key IS NULL``) and handed it out."""
    space.user.documents.upsert(collection="keep", title="Unkeyed", body="written without a key")
    knowledge = knowledge_gem(space, tmp_path, ["collections.read:keep"])

    with pytest.raises(KnowledgeValidationError, match="key must be text"):
        await knowledge.documents.getByKey("keep", None)  # type: ignore[arg-type]
    with pytest.raises(KnowledgeValidationError, match="key must be text"):
        space.user.documents.get_by_key("keep", None)  # type: ignore[arg-type]
    assert await knowledge.documents.getByKey("keep", "2026-09-29") is None


@pytest.mark.anyio
async def test_get_by_key_validates_the_key_before_asking_for_the_permission(space: Space, tmp_path: Path) -> None:
    """OD-K07: argument validation comes before the permission check, so a gem without the switch
    learns what is wrong with its call, exactly as a gem with it does."""
    knowledge = knowledge_gem(space, tmp_path, ["collections.read:diary"])  # not keep

    with pytest.raises(KnowledgeValidationError, match="key must be text"):
        await knowledge.documents.getByKey("keep", None)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------- undo


@pytest.mark.anyio
async def test_undoing_a_persons_creation_is_refused_once_someone_added_an_identifier_to_them(
    space: Space, tmp_path: Path
) -> None:
    """K-CHG-03, OD-K44: a gem created Bob and the user then added his phone; the gem's undo of its
    run would delete Bob and the user's edit with him, so it is refused as superseded and Bob keeps
    both identifiers. Once the user's edit is undone, the gem's undo goes through."""
    knowledge = knowledge_gem(space, tmp_path, ["entities.write:person"])
    bob = await knowledge.entities.resolve({"name": "Bob", "email": "bob@example.nl"}, {"create": True})
    assert bob is not None
    bob_id = knowledge.refs.decode("ent", bob.ref)
    space.user.entities.add_identifier(bob_id, "phone", "+31 6 1234 5678")
    [added] = [c for c in space.changes.list() if c.op == "entities.addIdentifier"]

    with pytest.raises(RevertError, match="superseded"):
        await knowledge.changes.revert({"runId": knowledge.run_id})

    assert [(i.type, i.value) for i in space.user.entities.get(bob_id).identifiers] == [
        ("name", "Bob"),
        ("email", "bob@example.nl"),
        ("phone", "+31 6 1234 5678"),
    ]
    assert space.changes.get(added.id).status == "applied"
    space.changes.revert(added.id)
    assert (await knowledge.changes.revert({"runId": knowledge.run_id})).count == 1
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        space.user.entities.get(bob_id)


# --------------------------------------------------------------------------- deleted entities


@pytest.mark.anyio
async def test_a_fact_of_a_deleted_person_is_not_retracted_and_returns_with_the_person(
    space: Space, tmp_path: Path
) -> None:
    """K-ENT-13, K-FACT-28, OD-K44: once the user deleted Bob, a gem retracting a fact about him
    (by the fact ref it kept) gets ``no entity`` and changes nothing; before, it expired the fact
    behind the deletion, so undoing the deletion brought Bob back without it."""
    knowledge = knowledge_gem(
        space,
        tmp_path,
        ["entities.write:person", "facts.read:person:work.company", "facts.write:person:work.company"],
    )
    bob = await knowledge.entities.resolve({"name": "Bob"}, {"create": True})
    assert bob is not None
    fact = await knowledge.facts.put(subject=bob.ref, predicateHint="work.company", value="ACME")
    deleted = space.user.entities.delete(knowledge.refs.decode("ent", bob.ref))

    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        await knowledge.facts.retract(fact.ref)

    assert [c.op for c in await knowledge.changes.list()] == ["facts.put", "entities.create"]
    space.changes.revert(deleted)
    assert [(f.ref, f.value) for f in await knowledge.facts.lookup(bob.ref, "work")] == [(fact.ref, "ACME")]


# ------------------------------------------------------------------------------------- dates

_DIARY = ["collections.read:diary", "collections.write:diary"]


@pytest.mark.anyio
async def test_documents_of_the_first_millennium_are_ordered_and_filtered_as_dates(
    space: Space, tmp_path: Path
) -> None:
    """K-DOC-13, K-SRCH-06, K-SRCH-07, OD-K39: a diary entry dated 0999 is older than one of 1500 and
    2026. Before, its date was kept as the text ``999-…``, which sorts after ``2026-…``: it was listed
    as the newest, left out of ``from: '1000-01-01'`` (which found nothing at all), and a range from
    0900 to 1000 was refused as reversed."""
    knowledge = knowledge_gem(space, tmp_path, _DIARY)
    for day in ("0999-05-01", "2026-09-01", "1500-01-01", "0050-06-01"):
        await knowledge.documents.upsert(collection="diary", key=day, title=day, body="stew", meta={"date": day})

    listed = [d.title for d in await knowledge.documents.list("diary")]
    since_1000 = [d.title for d in await knowledge.documents.list("diary", timeRange={"from": "1000-01-01"})]
    first = [
        d.title for d in await knowledge.documents.list("diary", timeRange={"from": "0900-01-01", "to": "1000-01-01"})
    ]
    until_1600 = [h.title for h in await knowledge.search("stew", timeRange={"to": "1600-01-01"})]
    newest = [h.title for h in await knowledge.search("")]

    assert listed == ["2026-09-01", "1500-01-01", "0999-05-01", "0050-06-01"]
    assert since_1000 == ["2026-09-01", "1500-01-01"]
    assert first == ["0999-05-01"]
    assert sorted(until_1600) == ["0050-06-01", "0999-05-01", "1500-01-01"]
    assert newest == listed


@pytest.mark.anyio
async def test_entries_dated_at_the_ends_of_the_calendar_sort_oldest_and_newest_in_any_time_zone(
    space: Space, tmp_path: Path
) -> None:
    """OD-K39, OD-K21: in Amsterdam, 0001-01-01 begins before the year 1 in UTC, and
    9999-12-31T23:30-01:00 is the year 10000 in UTC; both are valid ISO dates, so they are held at
    the calendar's ends, not replaced by the day they were written (which listed them as today's)."""
    knowledge = knowledge_gem(space, tmp_path, _DIARY)
    for date in ("0001-01-01", "2026-09-01", "9999-12-31T23:30:00-01:00"):
        await knowledge.documents.upsert(collection="diary", title=date, body="stew", meta={"date": date})

    assert [d.title for d in await knowledge.documents.list("diary")] == [
        "9999-12-31T23:30:00-01:00",
        "2026-09-01",
        "0001-01-01",
    ]
    assert [d.title for d in await knowledge.documents.list("diary", timeRange={"to": "1000-01-01"})] == ["0001-01-01"]


def test_changes_since_a_date_of_the_first_millennium_are_every_change(space: Space) -> None:
    """K-CHG-02, OD-K21: ``since: '0999-01-01'`` keeps every change made since, which is all of them;
    before, it kept none."""
    space.user.facts.put(predicate="pref.food.like", value="stew")
    assert len(space.changes.list(since="0999-01-01")) == 1


# ---------------------------------------------------------------------------------- JSON depth


def _nested(levels: int) -> Any:
    value: Any = "stew"
    for _ in range(levels):
        value = {"dish": value}
    return value


def _deep_in_the_stack(frames: int, read: Callable[[], T]) -> T:
    return read() if frames == 0 else _deep_in_the_stack(frames - 1, read)


_FOOD = [
    "facts.read:self:pref.food.*",
    "facts.write:self:pref.food.*",
    "collections.read:keep",
    "collections.write:keep",
]


@pytest.mark.anyio
@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 600, 980], ids=["one-too-many", "600", "980"])
async def test_a_value_nested_deeper_than_the_limit_is_refused_and_writes_nothing(
    space: Space, tmp_path: Path, levels: int
) -> None:
    """K-QUOTA-10, K-QUOTA-14, OD-K25: the depth a value may nest is a fixed bound. Before, anything
    the encoder managed was stored (up to about 990 levels), and every later ``facts.lookup``,
    ``profile`` and ``changes.list`` of the user then failed with Python's ``RecursionError``."""
    knowledge = knowledge_gem(space, tmp_path, _FOOD)

    with pytest.raises(KnowledgeValidationError, match=f"nested too deeply.*more than {MAX_JSON_DEPTH} levels"):
        await knowledge.facts.put(predicateHint="pref.food.like", value=_nested(levels))
    with pytest.raises(KnowledgeValidationError, match="meta is nested too deeply"):
        await knowledge.documents.upsert(collection="keep", title="Stew", meta=_nested(levels))

    assert await knowledge.facts.lookup("self", "pref") == []
    assert await knowledge.documents.list("keep") == []
    assert await knowledge.changes.list() == []


@pytest.mark.anyio
async def test_the_deepest_value_accepted_reads_back_from_deep_in_any_call_stack(space: Space, tmp_path: Path) -> None:
    """K-QUOTA-10, OD-K25: a fact value and a ``meta`` nested exactly to the limit are stored, and
    read back by lookups, listings, search and the change log even from 600 frames down."""
    knowledge = knowledge_gem(space, tmp_path, _FOOD)
    deepest = _nested(MAX_JSON_DEPTH)
    await knowledge.facts.put(predicateHint="pref.food.like", value=deepest)
    await knowledge.documents.upsert(collection="keep", title="Stew", body="stew", meta=deepest)

    facts = _deep_in_the_stack(600, lambda: space.user.facts.lookup("self", "pref"))
    documents = _deep_in_the_stack(600, lambda: space.user.documents.list("keep"))
    hits = _deep_in_the_stack(600, lambda: space.user.search("stew"))
    logged = _deep_in_the_stack(600, space.changes.list)

    assert [f.value for f in facts] == [deepest]
    assert [d.meta for d in documents] == [h.meta for h in hits] == [deepest]
    assert len(logged) == 2


@pytest.mark.parametrize("source_uri", [[0, False], {"url": "x"}, 7, "", "   ", "x" * 8193], ids=repr)
def test_an_imported_text_whose_source_is_not_a_text_is_refused_by_name(space: Space, source_uri: object) -> None:
    """K-DOC-07, OD-K07: ``sourceUri`` is checked with the other arguments; before, a list reached
    the database, which PostgreSQL answered as a broken store."""
    with pytest.raises(KnowledgeValidationError, match="sourceUri"):
        space.user.documents.upsert(collection="diary", text="imported", source_uri=source_uri)  # type: ignore[arg-type]
    assert space.user.documents.list("diary") == []
