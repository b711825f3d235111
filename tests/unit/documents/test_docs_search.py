"""``ctx.knowledge.search``: hybrid search over the collections a gem can read (K-SRCH-01…11).

Also OD-K38…K41 (engine, defaults, locator, mentions), EX-09, and K-CON-20 (mentions recognized).
Every space here embeds with the fake embedder, so both legs run; ``text_space`` is full text only.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from docs_fixtures import col_ref, dump, gem, titles

from notochord import KnowledgeValidationError, Space
from notochord.clock import FixedClock
from notochord.gems.api.knowledge import KnowledgeApi

pytestmark = pytest.mark.anyio

KEEP_RW = ["collections.read:keep", "collections.write:keep"]
DIARY_RW = ["collections.read:diary", "collections.write:diary"]
MENU = "# Starter\n\nTomato soup with basil.\n\n# Main\n\nBeef stew with carrots.\n\n# Dessert\n\nApple pie."


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


# ---------------------------------------------------------------------- shape and engine


async def test_hits_have_the_documented_shape_and_locator(space: Space, gems_root: Path) -> None:
    """K-SRCH-01, OD-K40, EX-09: ``{document, title, collection, text, locator, meta}``; the locator's
    offsets cut the passage out of the body, and its chunk index fetches it with ``range``."""
    api = gem(space, gems_root, "g", KEEP_RW)
    created = await api.documents.upsert({"collection": "keep", "title": "Menu", "body": MENU, "meta": {"n": 3}})
    space.index.wait()
    top = (await api.search("beef stew carrots"))[0]
    assert dump(top) == {
        "document": created.ref,
        "title": "Menu",
        "collection": await col_ref(api, "keep"),
        "text": "# Main\n\nBeef stew with carrots.",
        "locator": {"chunk": 1, "from": MENU.index("# Main"), "to": MENU.index("# Dessert") - 2},
        "meta": {"n": 3},
    }
    assert MENU[top.locator["from"] : top.locator["to"]] == top.text
    window = {"from": top.locator["chunk"], "to": top.locator["chunk"] + 1}
    assert (await api.documents.get(created.ref, {"range": window})).body == top.text


async def test_search_is_hybrid_the_vector_leg_finds_what_words_miss(
    space: Space, text_space: Space, gems_root: Path
) -> None:
    """K-SRCH-02, OD-K38: a misspelled query shares no word with the passage, so full text alone finds
    nothing, while the semantic leg (character n-grams in the fake embedder) ranks it first."""
    body = "Layers of lasagna with ricotta, spinach and a slow tomato ragu."
    for s in (space, text_space):
        s.user.documents.upsert(collection="keep", title="Pasta bake", body=body)
        s.user.documents.upsert(collection="keep", title="Garden", body="Prune the roses in early spring.")
        s.index.wait()
    hybrid = gem(space, gems_root, "g", ["collections.read:keep"])
    words_only = gem(text_space, gems_root, "g", ["collections.read:keep"])
    assert titles(await words_only.search("lasagne ricota")) == []
    assert titles(await hybrid.search("lasagne ricota"))[0] == "Pasta bake"
    # and the words still count: the exact word ranks its passage first in both
    assert titles(await words_only.search("roses")) == ["Garden"]
    assert titles(await hybrid.search("roses"))[0] == "Garden"


async def test_query_syntax_characters_are_plain_text(space: Space, gems_root: Path) -> None:
    """OD-K38: quotes, stars, NEAR and parentheses never act as full-text syntax or raise."""
    api = gem(space, gems_root, "g", KEEP_RW)
    await api.documents.upsert({"collection": "keep", "title": "Stew", "body": "Tomato beef stew."})
    space.index.wait()
    for query in ('"tomato', "stew*", "NEAR(tomato beef)", "tomato AND NOT", "-beef", "a:b ^c"):
        assert titles(await api.search(query)) == ["Stew"]


# ---------------------------------------------------------------------- which collections


async def test_unreadable_collections_are_skipped_silently(space: Space, gems_root: Path) -> None:
    """K-SRCH-03: naming the diary without permission, another gem's ref or junk is no error: those
    collections just add nothing."""
    space.user.documents.upsert(collection="diary", key="2026-09-29", title="Diary", body="Secret tomato plans.")
    space.user.documents.upsert(collection="keep", title="Kept", body="Tomato seeds to sow.")
    other = gem(space, gems_root, "other", ["collections.create"])
    foreign = await other.collections.create("Other's")
    space.index.wait()
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    assert await api.search("tomato", {"collections": ["diary"]}) == []
    assert await api.search("tomato", {"collections": [foreign.ref, "col_junk", "nonsense"]}) == []
    assert titles(await api.search("tomato", {"collections": ["diary", "keep"]})) == ["Kept"]
    assert titles(await api.search("tomato")) == ["Kept"]


async def test_a_named_collection_includes_its_subfolders(space: Space, gems_root: Path) -> None:
    """K-SRCH-04, K-COL-17: unlike ``documents.list``, search covers the whole subtree."""
    travel = space.user.collections.create("Travel", parent="keep")
    italy = space.user.collections.create("Italy", parent=travel.id)
    space.user.documents.upsert(collection=italy.id, title="Rome", body="Pasta carbonara in Rome.")
    space.user.documents.upsert(collection=travel.id, title="Trips", body="Pasta on every trip.")
    space.user.documents.upsert(collection="keep", title="Pantry", body="Pasta, rice and beans.")
    space.index.wait()
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    travel_ref = await col_ref(api, "Travel")
    assert sorted(titles(await api.search("pasta", {"collections": [travel_ref]}))) == ["Rome", "Trips"]
    assert sorted(titles(await api.search("pasta", {"collections": ["keep"]}))) == ["Pantry", "Rome", "Trips"]
    assert [d.title for d in await api.documents.list(travel_ref)] == ["Trips"]


async def test_without_collections_every_readable_collection_is_searched(space: Space, gems_root: Path) -> None:
    """K-SRCH-05, OD-K39: diary and keep by switch, a ticked collection, the gem's own collection; an
    unticked user collection stays out."""
    ticked = space.user.collections.create("Ticked")
    unticked = space.user.collections.create("Unticked")
    for collection, title in (("diary", "D"), ("keep", "K"), (ticked.id, "T"), (unticked.id, "U")):
        space.user.documents.upsert(collection=collection, title=title, body="Notes about walnuts.")
    api = gem(
        space,
        gems_root,
        "g",
        ["collections.read:diary", "collections.read:keep", "collections.read:user-selected", "collections.create"],
    )
    space.gems.tick_collection("g", ticked.id, on=True)
    own = await api.collections.create("Own")
    await api.documents.upsert({"collection": own.ref, "title": "O", "body": "Walnuts in the own collection."})
    space.index.wait()
    assert sorted(titles(await api.search("walnuts"))) == ["D", "K", "O", "T"]
    assert sorted(titles(space.user.search("walnuts"))) == ["D", "K", "O", "T", "U"]


async def test_content_moved_in_appears_and_moved_out_disappears(space: Space, gems_root: Path) -> None:
    """K-SRCH-11, K-COL-14: the user moves a document and a whole collection in and out of keep."""
    private = space.user.collections.create("Private")
    note = space.user.documents.upsert(collection=private.id, title="Note", body="Hazelnut praline.")
    folder = space.user.collections.create("Folder")
    space.user.documents.upsert(collection=folder.id, title="Folder note", body="Hazelnut cake.")
    space.index.wait()
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    assert await api.search("hazelnut") == []
    space.user.documents.move(note.id, collection="keep")
    space.user.collections.move(folder.id, parent="keep")
    assert sorted(titles(await api.search("hazelnut"))) == ["Folder note", "Note"]
    assert sorted(titles(await api.search(""))) == ["Folder note", "Note"]
    space.user.documents.move(note.id, collection=private.id)
    space.user.collections.move(folder.id, parent=None)
    assert await api.search("hazelnut") == []
    assert await api.search("") == []


# ---------------------------------------------------------------------- time ranges


async def _dated(space: Space, clock: FixedClock) -> None:
    """Diary entries dated by ``meta.date`` (written today), and keep notes dated by when they were
    written: one at 00:30 on the 22nd in Amsterdam (22:30 UTC on the 21st), one at 00:30 on the 23rd."""
    for day in ("2026-09-21", "2026-09-22", "2026-09-23"):
        space.user.documents.upsert(collection="diary", key=day, title=f"diary {day}", body="Cooked tomato beef stew.")
    clock.set(datetime(2026, 9, 21, 22, 30, tzinfo=UTC))
    space.user.documents.upsert(collection="keep", title="early on the 22nd", body="Tomato beef stew notes.")
    clock.set(datetime(2026, 9, 22, 22, 30, tzinfo=UTC))
    space.user.documents.upsert(collection="keep", title="early on the 23rd", body="Tomato beef stew notes.")
    clock.set(datetime(2026, 9, 29, 8, 0, tzinfo=UTC))
    space.index.wait()


async def test_ex09_a_date_without_time_is_the_whole_local_day(
    space: Space, gems_root: Path, clock: FixedClock
) -> None:
    """K-SRCH-06, K-SRCH-07, OD-K21, EX-09: ``{from: '2026-09-22', to: '2026-09-22'}`` is that day in
    Europe/Amsterdam; diary entries count by ``meta.date``, other documents by when they were written."""
    await _dated(space, clock)
    api = gem(space, gems_root, "g", ["collections.read:diary", "collections.read:keep"])
    day = {"from": "2026-09-22", "to": "2026-09-22"}
    hits = await api.search("tomato beef stew", {"collections": ["diary"], "timeRange": day, "limit": 10})
    assert titles(hits) == ["diary 2026-09-22"]
    assert sorted(titles(await api.search("tomato beef stew", {"timeRange": day}))) == [
        "diary 2026-09-22",
        "early on the 22nd",
    ]


async def test_time_range_accepts_epoch_milliseconds_and_iso_times(
    space: Space, gems_root: Path, clock: FixedClock
) -> None:
    """K-SRCH-06, OD-K21: numbers are epoch milliseconds; ISO date-times are exact, inclusive bounds."""
    await _dated(space, clock)
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    start = datetime(2026, 9, 21, 22, 30, tzinfo=UTC)
    exact = {"from": _ms(start), "to": _ms(start)}
    assert titles(await api.search("stew", {"timeRange": exact})) == ["early on the 22nd"]
    after = {"from": _ms(start + timedelta(milliseconds=1))}
    assert titles(await api.search("stew", time_range=after)) == ["early on the 23rd"]
    iso = {"from": "2026-09-22T00:00:00+02:00", "to": "2026-09-23T00:29:59.999+02:00"}
    assert titles(await api.search("stew", {"timeRange": iso})) == ["early on the 22nd"]
    until = {"to": "2026-09-22T22:30:00.000Z"}
    assert sorted(titles(await api.search("stew", {"timeRange": until}))) == ["early on the 22nd", "early on the 23rd"]


async def test_a_bad_time_range_is_refused(space: Space, gems_root: Path) -> None:
    """K-SRCH-06: anything but milliseconds or ISO dates is a validation error."""
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    for window in ({"from": "yesterday"}, {"since": "2026-09-01"}, "2026-09-22", {"from": True}):
        with pytest.raises(KnowledgeValidationError, match="timeRange"):
            await api.search("x", {"timeRange": window})


# ---------------------------------------------------------------------- empty query, limit


async def test_empty_query_lists_one_passage_per_document_newest_first(
    space: Space, gems_root: Path, clock: FixedClock
) -> None:
    """K-SRCH-08, OD-K39: the first chunk of each document, by document date, newest first."""
    api = gem(space, gems_root, "g", [*KEEP_RW, *DIARY_RW])
    await api.documents.upsert({"collection": "keep", "title": "Menu", "body": MENU})
    clock.advance(timedelta(minutes=5))
    await api.documents.upsert({"collection": "keep", "title": "Later", "body": "Written later."})
    await api.documents.upsert({"collection": "diary", "key": "2026-09-30", "title": "Tomorrow", "body": "Plans."})
    await api.documents.upsert({"collection": "diary", "key": "2026-01-02", "title": "January", "body": "Snow."})
    space.index.wait()
    hits = await api.search("")
    assert titles(hits) == ["Tomorrow", "Later", "Menu", "January"]
    assert hits[2].locator["chunk"] == 0 and hits[2].text == "# Starter\n\nTomato soup with basil."
    assert titles(await api.search("   ", {"collections": ["diary"]})) == ["Tomorrow", "January"]


async def test_limit_defaults_to_ten_and_is_capped_at_one_hundred(space: Space, gems_root: Path) -> None:
    """K-SRCH-10, OD-K39."""
    for i in range(105):
        space.user.documents.upsert(collection="keep", title=f"Note {i}", body=f"Almond note number {i}.")
    space.index.wait()
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    assert len(await api.search("almond")) == 10
    assert len(await api.search("")) == 10
    assert len(await api.search("almond", {"limit": 3})) == 3
    assert len(await api.search("almond", {"limit": 500})) == 100
    assert len(await api.search("", {"limit": 100})) == 100


async def test_a_bad_limit_is_refused(space: Space, gems_root: Path) -> None:
    """K-SRCH-10: a whole number from 1 up; the words say what a larger one does, since it is not refused."""
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    for limit in (0, -1, 2.5, "5", True):
        with pytest.raises(KnowledgeValidationError, match=r"at least 1 \(more than 100 gives 100\)"):
            await api.search("x", {"limit": limit})


# ---------------------------------------------------------------------- entities


async def _people(space: Space, gems_root: Path) -> tuple[KnowledgeApi, dict[str, int]]:
    user = space.user.entities
    kim = user.resolve(name="Kim Jansen", create=True)
    assert kim is not None
    user.add_identifier(kim.id, "email", "kim@acme.nl")
    kimberly = user.resolve(name="Kimberly de Vries", create=True)
    piet = user.resolve(name="Piet", create=True)
    assert kimberly is not None and piet is not None
    for title, body in (
        ("Lunch", "Lunch with Kim Jansen about the roadmap."),
        ("Mail", "Sent the roadmap to KIM@ACME.NL yesterday."),
        ("Kimberly", "Kimberly de Vries reviewed the roadmap."),
        ("Piet", "Piet skipped the roadmap meeting."),
        ("Nobody", "The roadmap has three phases."),
        ("Pieter", "Pieterburen is a village."),
    ):
        space.user.documents.upsert(collection="keep", title=title, body=body)
    space.index.wait()
    api = gem(space, gems_root, "g", ["collections.read:keep", "entities.read:person"])
    return api, {"kim": kim.id, "kimberly": kimberly.id, "piet": piet.id}


async def _ref(api: KnowledgeApi, name: str) -> str:
    found = await api.entities.resolve({"name": name})
    assert found is not None
    return found.ref


async def test_entities_limit_results_to_passages_that_mention_them(space: Space, gems_root: Path) -> None:
    """K-SRCH-09, OD-K41, K-CON-20: display name or email, case-insensitive, on word boundaries
    (``Piet`` is not mentioned by ``Pieterburen``)."""
    api, _ = await _people(space, gems_root)
    kim = await _ref(api, "Kim Jansen")
    piet = await _ref(api, "Piet")
    assert sorted(titles(await api.search("roadmap", {"entities": [kim]}))) == ["Lunch", "Mail"]
    assert sorted(titles(await api.search("", {"entities": [kim]}))) == ["Lunch", "Mail"]
    assert titles(await api.search("", {"entities": [piet]})) == ["Piet"]
    assert sorted(titles(await api.search("roadmap", {"entities": [kim, piet]}))) == ["Lunch", "Mail", "Piet"]
    assert await api.search("roadmap", {"entities": ["ent_unknown"]}) == []
    assert await api.search("roadmap", {"entities": []}) == []


async def test_mentions_of_merged_entities_follow_the_kept_one(space: Space, gems_root: Path) -> None:
    """OD-K41: after the user merges Kimberly into Kim, Kim's filter finds both, and so does the old ref."""
    api, ids = await _people(space, gems_root)
    kimberly = await _ref(api, "Kimberly de Vries")
    space.user.entities.merge(keep=ids["kim"], merge=ids["kimberly"])
    kim = await _ref(api, "Kim Jansen")
    expected = ["Kimberly", "Lunch", "Mail"]
    assert sorted(titles(await api.search("roadmap", {"entities": [kim]}))) == expected
    assert sorted(titles(await api.search("roadmap", {"entities": [kimberly]}))) == expected


async def test_host_search_filters_by_entity_ids_too(space: Space, gems_root: Path) -> None:
    """K-SRCH-09 through the user's host API."""
    _, ids = await _people(space, gems_root)
    assert sorted(titles(space.user.search("", entities=[ids["kim"]]))) == ["Lunch", "Mail"]
