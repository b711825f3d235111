"""The console's pages over HTTP against a real server: what the gem pages list
and refuse, installing from an uploaded package, and "View changes"."""

from __future__ import annotations

import asyncio
import html
import io
import json
import zipfile
from pathlib import Path

import pytest
from console_harness import EXAMPLES, RECIPES, WEATHER, ConsoleServer, chooser_gem, csrf_of

from notochord.console.views.changes import PAGE_SIZE


def _zip_of(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"{folder.name}/{path.relative_to(folder)}")
    return buffer.getvalue()


def test_a_gem_declared_predicate_is_labelled_added_by_this_gem(console: ConsoleServer) -> None:
    """K-UI-04, K-UI-06: the recipes gem's own predicate shows its description."""
    console.space.gems.install(RECIPES)
    html = console.client().get("/gems/recipes").text
    assert "Dishes you have rated highly, used to recommend similar dishes. Example: braised pork" in html
    assert html.count("Added by this gem") == 1
    assert "Foods you like" in html


def test_facts_about_contacts_are_never_listed_on_a_gem_s_page(console: ConsoleServer) -> None:
    """K-UI-09: a gem reading facts about people lists no facts on its page."""
    console.space.gems.install(EXAMPLES / "contacts")
    person = console.space.user.entities.resolve(kind="person", create=True, email="ann@example.com")
    assert person is not None
    console.space.user.facts.put(subject=person.id, predicate="work.company", value="Acme")
    html = console.client().get("/gems/contacts").text
    assert "Acme" not in html
    assert 'id="facts"' not in html


def test_a_fact_the_gem_s_permissions_do_not_cover_cannot_be_written_from_its_page(console: ConsoleServer) -> None:
    """K-UI-04: the page edits only what it lists."""
    console.space.gems.install(WEATHER)
    client, token = console.signed_in("/gems/weather")
    answer = client.post("/gems/weather/facts", data={"csrf": token, "predicate": "health.allergy", "value": "nuts"})
    assert answer.status_code == 404
    assert console.space.user.facts.lookup("self", "health") == []


def test_an_empty_value_is_refused_next_to_its_field(console: ConsoleServer) -> None:
    """A form error says what to do, beside the field, and writes nothing."""
    console.space.gems.install(WEATHER)
    client, token = console.signed_in("/gems/weather")
    answer = client.post(
        "/gems/weather/facts",
        data={"csrf": token, "predicate": "location.home.city", "value": "  "},
        headers={"HX-Request": "true"},
    )
    assert answer.status_code == 422
    assert "Type a value first." in answer.text
    assert 'aria-invalid="true"' in answer.text
    assert console.space.user.facts.lookup("self", "location.home") == []


def test_a_packaged_file_is_installed_from_an_upload(console: ConsoleServer) -> None:
    """K-UI-02, K-UI-03: an uploaded .zip shows the install screen, then installs."""
    client, token = console.signed_in("/gems")
    review = client.post(
        "/gems/review",
        data={"csrf": token, "path": ""},
        files={"package": ("weather.zip", _zip_of(WEATHER), "application/zip")},
    )
    assert review.status_code == 200
    assert "Read where you live" in review.text
    assert "Find the city you live in" in review.text
    assert console.space.gems.list() == []
    upload = review.text.split('name="upload" value="')[1].split('"')[0]
    done = client.post("/gems/install", data={"csrf": token, "upload": upload, "path": ""})
    assert done.status_code == 303
    assert [g.id for g in console.space.gems.list()] == ["weather"]
    assert not any(s.on for s in console.space.gems.permissions("weather"))
    again = client.post("/gems/install", data={"csrf": token, "upload": upload, "path": ""})
    assert "choose the file again" in again.text


def test_an_invalid_manifest_lists_its_mistakes_and_installs_nothing(console: ConsoleServer, tmp_path: Path) -> None:
    """P-KVAL-02, P-KVAL-03: install's own messages, on the Gems page."""
    gem = tmp_path / "bad"
    gem.mkdir()
    manifest = {"id": "bad", "name": "bad", "permissions": {"knowledge": {"permissions": ["facts.read:self:*"]}}}
    (gem / "notochord.json").write_text(json.dumps(manifest))
    client, token = console.signed_in("/gems")
    answer = client.post("/gems/review", data={"csrf": token, "path": str(gem)})
    assert answer.status_code == 422
    assert "permissions.knowledge.permissions[0]" in answer.text
    assert 'role="alert"' in answer.text
    assert console.space.gems.list() == []


def test_a_gem_that_is_not_installed_is_a_not_found_page(console: ConsoleServer) -> None:
    answer = console.client().get("/gems/nothing-here")
    assert answer.status_code == 404
    assert "There is nothing at this address." in answer.text


def _changes(console: ConsoleServer, **query: str) -> str:
    answer = console.client().get("/changes", params=query)
    assert answer.status_code == 200, answer.text
    return answer.text


def test_changes_are_listed_newest_first_a_page_at_a_time(console: ConsoleServer) -> None:
    """K-UI-11: paginated, newest first."""
    for number in range(PAGE_SIZE + 3):
        console.space.user.facts.put(predicate="identity.nickname", value=f"nick {number}")
    first = _changes(console)
    assert first.index(f"nick {PAGE_SIZE + 2}") < first.index(f"nick {PAGE_SIZE + 1}")
    assert "nick 2<" not in first
    assert "Older" in first
    second = _changes(console, page="2")
    assert "nick 0<" in second
    assert "Newer" in second
    assert "Older" not in second


def test_a_conflict_shows_both_values_and_the_status_filter_finds_it(console: ConsoleServer) -> None:
    """K-UI-08, K-UI-11: the user's value was kept; the proposed one is shown beside it."""
    console.space.user.facts.put(predicate="location.home.city", value="Leiden")
    result = console.space.as_assistant.facts.put(predicate="location.home.city", value="Paris")
    assert result.status == "conflict"
    html = _changes(console, status="conflict")
    assert html.count('class="change status-conflict"') == 1
    assert '<dd class="yours">Leiden</dd>' in html
    assert '<dd class="theirs">Paris</dd>' in html
    assert "status-applied" not in html


@pytest.mark.parametrize(
    ("take", "current", "notice"),
    [("theirs", "Paris", "The gem's value is now yours."), ("mine", "Leiden", "Kept your value.")],
)
def test_a_conflict_is_settled_from_the_page_and_the_choice_can_be_undone(
    console: ConsoleServer, take: str, current: str, notice: str
) -> None:
    """K-UI-11: "Keep mine" / "Take the gem's" settle a conflict as an undoable change."""
    console.space.user.facts.put(predicate="location.home.city", value="Leiden")
    proposed = console.space.as_assistant.facts.put(predicate="location.home.city", value="Paris")
    client = console.client()
    page = client.get("/changes", params={"status": "conflict"}).text
    assert f'action="/changes/{proposed.change_id}/resolve"' in page
    answer = client.post(f"/changes/{proposed.change_id}/resolve", data={"csrf": csrf_of(page), "take": take})
    assert answer.status_code == 200
    assert notice in html.unescape(answer.text)
    assert [f.value for f in console.space.user.facts.lookup("self", "location.home.city")] == [current]
    assert console.space.changes.list(status="conflict") == []
    resolution = console.space.changes.list()[0]
    console.space.changes.revert(resolution.id)
    assert [c.id for c in console.space.changes.list(status="conflict")] == [proposed.change_id]


def test_a_conflict_resolution_without_a_choice_changes_nothing(console: ConsoleServer) -> None:
    """A bad choice is refused with a sentence and the conflict stays open."""
    console.space.user.facts.put(predicate="location.home.city", value="Leiden")
    proposed = console.space.as_assistant.facts.put(predicate="location.home.city", value="Paris")
    client, token = console.signed_in("/changes")
    answer = client.post(f"/changes/{proposed.change_id}/resolve", data={"csrf": token, "take": "both"})
    assert answer.status_code == 422
    assert "This conflict cannot be settled" in answer.text
    assert [f.value for f in console.space.user.facts.lookup("self", "location.home.city")] == ["Leiden"]
    assert len(console.space.changes.list(status="conflict")) == 1


def test_undo_one_change_from_the_page(console: ConsoleServer) -> None:
    """K-UI-11: undo a single change as the user."""
    put = console.space.user.facts.put(predicate="identity.nickname", value="Bo")
    client, token = console.signed_in("/changes")
    answer = client.post(f"/changes/{put.change_id}/undo", data={"csrf": token})
    assert answer.status_code == 200
    assert "Undone: 1 change." in answer.text
    assert console.space.user.facts.lookup("self", "identity.nickname") == []


def test_undo_a_whole_run_from_the_page(console: ConsoleServer) -> None:
    """K-UI-11: every change of a run is undone together."""
    for value in ("A", "B"):
        console.space.as_assistant.facts.put(predicate="identity.nickname", value=value, run_id="run-7")
    client = console.client()
    html = client.get("/changes", params={"run": "run-7"}).text
    assert html.count("Undo the whole run") == 2
    answer = client.post("/changes/undo-run", data={"csrf": csrf_of(html), "run": "run-7"})
    assert "Undone: 2 changes." in answer.text
    assert console.space.user.facts.lookup("self", "identity.nickname") == []


def test_a_superseded_undo_is_refused_with_a_sentence(console: ConsoleServer) -> None:
    """K-UI-11: undo never overwrites a later edit by someone else, and says so."""
    first = console.space.as_assistant.facts.put(predicate="location.home.city", value="Paris")
    console.space.user.facts.put(predicate="location.home.city", value="Leiden")
    client, token = console.signed_in("/changes")
    answer = client.post(f"/changes/{first.change_id}/undo", data={"csrf": token})
    assert answer.status_code == 422
    assert "This cannot be undone: superseded by the later change" in answer.text
    assert "revert that one first (or the whole run), or edit the value directly" in answer.text
    assert [f.value for f in console.space.user.facts.lookup("self", "location.home.city")] == ["Leiden"]


def test_a_malformed_filter_is_explained_not_a_crash(console: ConsoleServer) -> None:
    """A bad date or page says what is wrong."""
    client = console.client()
    bad_date = client.get("/changes", params={"since": "yesterday"})
    assert bad_date.status_code == 422
    assert "YYYY-MM-DD" in bad_date.text
    bad_page = client.get("/changes", params={"page": "0"})
    assert bad_page.status_code == 422
    assert "page number" in bad_page.text


def _recipes_wrote_two_facts(console: ConsoleServer) -> None:
    console.space.gems.install(RECIPES)
    for permission in ("facts.read:self:pref.food.*", "facts.write:self:pref.food.*"):
        console.space.gems.set_permission("recipes", permission, True)
    ctx = console.space.gems.context("recipes")
    assert ctx.knowledge is not None

    async def write() -> None:
        assert ctx.knowledge is not None
        for dish in ("braised pork", "mapo tofu"):
            await ctx.knowledge.facts.put(predicate_hint="pref.food.rated", value=dish)

    asyncio.run(write())


def test_the_uninstall_dialog_counts_what_the_gem_wrote(console: ConsoleServer) -> None:
    """K-UI-13, K-UNINST-01, K-UNINST-02: the counts, and Keep first (the default)."""
    _recipes_wrote_two_facts(console)
    html = console.client().get("/gems/recipes/uninstall").text
    assert '<strong data-count="facts">2</strong>' in html
    assert '<strong data-count="documents">0</strong>' in html
    assert html.index(">Keep<") < html.index(">Delete them too<")


def test_uninstall_with_keep_leaves_the_gem_s_facts(console: ConsoleServer) -> None:
    """K-UI-13, K-UNINST-05."""
    _recipes_wrote_two_facts(console)
    client, token = console.signed_in("/gems/recipes/uninstall")
    done = client.post("/gems/recipes/uninstall", data={"csrf": token, "choice": "keep"})
    assert "Kept 2 facts, 0 documents and 0 collections." in done.text
    assert console.space.gems.list() == []
    assert len(console.space.user.facts.lookup("self", "pref.food.rated")) == 2


def test_uninstall_with_delete_them_too_can_be_undone(console: ConsoleServer) -> None:
    """K-UI-13, K-UNINST-07, K-UNINST-09: the deletion is one run the page undoes."""
    _recipes_wrote_two_facts(console)
    client, token = console.signed_in("/gems/recipes/uninstall")
    done = client.post("/gems/recipes/uninstall", data={"csrf": token, "choice": "delete"})
    assert "Deleted 2 facts, 0 documents and 0 collections." in done.text
    assert console.space.user.facts.lookup("self", "pref.food.rated") == []
    run = done.text.split('name="run" value="')[1].split('"')[0]
    undone = client.post("/changes/undo-run", data={"csrf": token, "run": run})
    assert "Undone: 2 changes." in undone.text
    assert sorted(f.value for f in console.space.user.facts.lookup("self", "pref.food.rated")) == [
        "braised pork",
        "mapo tofu",
    ]


def test_a_user_selected_gem_lists_the_user_s_collections_to_tick(console: ConsoleServer, tmp_path: Path) -> None:
    """K-UI-10: only collections outside diary and keep, each unticked at first;
    a tick is recorded for this gem."""
    console.space.gems.install(chooser_gem(tmp_path))
    recipes = console.space.user.collections.create("Recipes")
    client = console.client()
    html = client.get("/gems/reader").text
    assert "Collections you choose" in html
    assert 'aria-label="Recipes"' in html
    assert 'aria-label="diary"' not in html
    assert console.space.core.collections.ticked_now("reader") == set()
    answer = client.post(
        "/gems/reader/ticks",
        data={"csrf": csrf_of(html), "collection": str(recipes.id), "on": "1"},
        headers={"HX-Request": "true"},
    )
    assert 'aria-checked="true"' in answer.text
    assert console.space.core.collections.ticked_now("reader") == {recipes.id}


def test_a_builtin_collection_cannot_be_ticked_from_the_page(console: ConsoleServer, tmp_path: Path) -> None:
    """K-UI-10: diary and keep are granted by their own permissions."""
    console.space.gems.install(chooser_gem(tmp_path))
    diary = console.space.user.collections.get("diary")
    client, token = console.signed_in("/gems/reader")
    answer = client.post("/gems/reader/ticks", data={"csrf": token, "collection": str(diary.id), "on": "1"})
    assert answer.status_code == 404
    assert console.space.core.collections.ticked_now("reader") == set()


@pytest.mark.parametrize("field", ["run", "gem"])
def test_a_changes_filter_holding_a_nul_is_refused_with_a_sentence_not_an_error_page(
    console: ConsoleServer, field: str
) -> None:
    """K-UI-11: no change holds U+0000 in its run or its gem, so the filter is refused and named."""
    console.space.user.facts.put(predicate="location.home.city", value="Leiden")
    answer = console.client().get(f"/changes?{field}=a%00b")
    assert answer.status_code == 422, answer.text
    assert "the NUL character (U+0000), which no stored text can hold" in answer.text
    assert "Leiden" in answer.text  # the list without the filter, as for any refused filter
