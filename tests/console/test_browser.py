"""The console in a real browser: Playwright driving the system's Chromium against a real server
. One browser serves the whole module; each test has its own data
directory and browser context."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from console_harness import RECIPES, WEATHER, ConsoleServer, assert_fits_a_phone, signed_in_page
from playwright.sync_api import Browser, Page, expect

HOME = "facts.read:self:location.home.*"


def _install_weather(page: Page) -> None:
    page.get_by_label("From a folder on this computer").fill(str(WEATHER))
    page.get_by_role("button", name="Review").click()
    expect(page.get_by_role("heading", name="Install weather?")).to_be_visible()
    page.get_by_role("button", name="Install", exact=True).click()
    expect(page).to_have_url(f"{console_url(page)}/gems/weather?installed=1")


def _weather_says(console: ConsoleServer) -> object:
    """What the weather gem's ``home`` tool answers now, run as a real tool process.

    It runs in a thread of its own: Playwright's sync API keeps an event loop in this one."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: console.space.gems.runner.run_sync("weather", "home").output).result()


def console_url(page: Page) -> str:
    return page.url.split("/gems")[0]


def test_install_shows_every_sentence_and_reason_then_every_switch_is_off(
    browser: Browser, console: ConsoleServer
) -> None:
    """K-UI-01, K-UI-02, K-UI-03: the install screen reads as sentences with the
    gem's reason, and after install every switch is off."""
    page = signed_in_page(browser, console)
    page.get_by_label("From a folder on this computer").fill(str(WEATHER))
    page.get_by_role("button", name="Review").click()
    expect(page.locator(".sentences li")).to_have_text(["Read where you live"])
    expect(page.locator("#knowledge-reason")).to_have_text("Find the city you live in")
    assert console.space.gems.list() == []
    page.get_by_role("button", name="Install", exact=True).click()
    expect(page.get_by_role("heading", name="Settings › Knowledge")).to_be_visible()
    switches = page.get_by_role("switch")
    expect(switches).to_have_count(1)
    expect(switches.first).to_have_attribute("aria-checked", "false")
    expect(page.get_by_role("heading", name="What it can do")).to_be_visible()
    expect(page.get_by_role("heading", name="Download additional files")).to_be_visible()


def test_a_switch_turned_on_lets_the_gem_s_next_call_read_and_off_stops_it(
    browser: Browser, console: ConsoleServer
) -> None:
    """K-UI-01, K-UI-07, P-KVAL-09: the user fills in their city, turns the one
    switch on (a partial update, no reload) and the gem's next call reads it; off again, it cannot."""
    page = signed_in_page(browser, console)
    _install_weather(page)
    row = page.locator(".fact-row", has_text="City of residence")
    row.get_by_role("textbox").fill("Amsterdam")
    row.get_by_role("button", name="Save").click()
    expect(page.locator("#facts .notice")).to_have_text("Saved.")
    [fact] = console.space.user.facts.lookup("self", "location.home.city")
    assert (fact.value, fact.origin) == ("Amsterdam", "user")

    assert _weather_says(console) == {"error": "I do not know where you live"}

    page.evaluate("window.reloaded = false")
    switch = page.get_by_role("switch", name="Read where you live")
    switch.click()
    expect(page.get_by_role("switch", name="Read where you live")).to_have_attribute("aria-checked", "true")
    assert page.evaluate("window.reloaded") is False, "the switch reloaded the page instead of swapping itself"
    assert _weather_says(console) == {"city": "Amsterdam"}

    page.get_by_role("switch", name="Read where you live").click()
    expect(page.get_by_role("switch", name="Read where you live")).to_have_attribute("aria-checked", "false")
    assert _weather_says(console) == {"error": "I do not know where you live"}


def test_a_self_fact_is_edited_and_deleted_on_the_gem_s_page(browser: Browser, console: ConsoleServer) -> None:
    """K-UI-04, K-UI-05, K-UI-07: values appear under the app's own names and can
    be changed and deleted as the user."""
    console.space.user.facts.put(predicate="location.home.city", value="Utrecht")
    page = signed_in_page(browser, console)
    _install_weather(page)
    row = page.locator(".fact-row", has_text="City of residence")
    expect(row.get_by_role("textbox")).to_have_value("Utrecht")
    row.get_by_role("textbox").fill("Leiden")
    row.get_by_role("button", name="Save").click()
    expect(page.locator("#facts .notice")).to_have_text("Saved.")
    assert [f.value for f in console.space.user.facts.lookup("self", "location.home.city")] == ["Leiden"]
    page.locator(".fact-row", has_text="City of residence").get_by_role("button", name="Delete").click()
    expect(page.locator("#facts .notice")).to_have_text("Deleted.")
    assert console.space.user.facts.lookup("self", "location.home.city") == []


def test_the_chinese_labels_from_accept_language_and_the_switch_back(browser: Browser, console: ConsoleServer) -> None:
    """K-UI-02, K-UI-05, SPEC §24 D-16: a Chinese browser gets the seed's Chinese
    labels and sentences; the header's switch changes the language and keeps it."""
    console.space.gems.install(WEATHER)
    page = signed_in_page(browser, console, locale="zh-CN")
    page.goto(f"{console.url}/gems/weather")
    expect(page.get_by_role("heading", name="设置 › 知识库")).to_be_visible()
    expect(page.get_by_role("switch", name="读取你的居住地")).to_be_visible()
    expect(page.locator(".fact-row", has_text="居住城市")).to_be_visible()
    expect(page.get_by_role("link", name="查看改动")).to_be_visible()
    page.get_by_role("button", name="English").click()
    expect(page.get_by_role("heading", name="Settings › Knowledge")).to_be_visible()
    page.goto(f"{console.url}/changes")
    expect(page.get_by_role("heading", name="View changes")).to_be_visible()


@pytest.mark.parametrize("path", ["/gems", "/gems/weather", "/gems/weather/uninstall", "/changes", "/studio"])
def test_at_360_px_no_page_is_wider_than_the_screen(browser: Browser, console: ConsoleServer, path: str) -> None:
    """The console works on a 360 px wide phone, with no sideways scrolling, and
    nothing on the page breaks the Content-Security-Policy."""
    console.space.gems.install(WEATHER)
    console.space.user.facts.put(predicate="location.home.city", value="Amsterdam")
    page = signed_in_page(browser, console, width=360)
    assert_fits_a_phone(page, f"{console.url}{path}")


def test_gem_studio_lists_a_manifest_mistake_while_typing(browser: Browser, console: ConsoleServer) -> None:
    """K-UI-14, P-KVAL-07, P-KVAL-03: install's own message appears as the
    user types, with no button pressed, and goes away when the mistake is fixed."""
    page = signed_in_page(browser, console)
    page.get_by_role("link", name="Gem Studio").click()
    result = page.locator("#studio-result")
    expect(result).to_contain_text("No mistakes: the install checks pass.")
    expect(result).to_contain_text("Record your food preferences")
    editor = page.get_by_label("Manifest", exact=True)
    text = editor.input_value()
    editor.fill(text.replace("facts.read:self:pref.food.*", "facts.read:self:*"))
    expect(result.locator(".problems li").first).to_contain_text("knowledge.permissions[0]")
    editor.fill(text)
    expect(result).to_contain_text("No mistakes: the install checks pass.")


def _recipes_rated(console: ConsoleServer, *dishes: str) -> None:
    """The recipes gem, with its food switches on, records ``dishes`` through its own ``ctx``."""
    space = console.space
    space.gems.install(RECIPES)
    for permission in ("facts.read:self:pref.food.*", "facts.write:self:pref.food.*"):
        space.gems.set_permission("recipes", permission, True)
    knowledge = space.gems.context("recipes").knowledge
    assert knowledge is not None

    async def write() -> None:
        for dish in dishes:
            await knowledge.facts.put(predicate_hint="pref.food.rated", value=dish)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, write()).result()


def test_uninstall_with_delete_them_too_and_undo_in_the_browser(browser: Browser, console: ConsoleServer) -> None:
    """K-UI-13, K-UNINST-01, K-UNINST-02, K-UNINST-09: the dialog counts what the
    gem wrote with Keep focused first; "Delete them too" removes it, and the undo brings it back."""
    _recipes_rated(console, "braised pork", "mapo tofu")
    page = signed_in_page(browser, console)
    page.goto(f"{console.url}/gems/recipes")
    page.get_by_role("link", name="Uninstall…").click()
    expect(page.locator('[data-count="facts"]')).to_have_text("2")
    expect(page.get_by_role("button", name="Keep")).to_be_focused()
    page.get_by_role("button", name="Delete them too").click()
    expect(page.get_by_role("status")).to_have_text("Deleted 2 facts, 0 documents and 0 collections.")
    assert console.space.gems.list() == []
    assert console.space.user.facts.lookup("self", "pref.food.rated") == []
    page.get_by_role("button", name="Undo the deletion").click()
    expect(page.get_by_role("status")).to_have_text("Undone: 2 changes.")
    assert len(console.space.user.facts.lookup("self", "pref.food.rated")) == 2


def _mover_gem(folder: Path) -> Path:
    folder.mkdir()
    permissions = ["facts.read:self:location.home.*", "facts.write:self:location.home.*"]
    manifest = {"id": "mover", "name": "mover", "permissions": {"knowledge": {"permissions": permissions}}}
    (folder / "notochord.json").write_text(json.dumps(manifest))
    return folder


def test_a_value_the_user_edited_turns_a_gem_s_write_into_a_conflict_shown_with_both_values(
    browser: Browser, console: ConsoleServer, tmp_path: Path
) -> None:
    """K-UI-07, K-UI-08, K-UI-11: the user's city, entered on the gem's page,
    is kept when the gem writes another; "View changes" shows the conflict with both values."""
    console.space.gems.install(_mover_gem(tmp_path / "mover"))
    for permission in ("facts.read:self:location.home.*", "facts.write:self:location.home.*"):
        console.space.gems.set_permission("mover", permission, True)
    page = signed_in_page(browser, console)
    page.goto(f"{console.url}/gems/mover")
    row = page.locator(".fact-row", has_text="City of residence")
    row.get_by_role("textbox").fill("Leiden")
    row.get_by_role("button", name="Save").click()
    expect(page.locator("#facts .notice")).to_have_text("Saved.")

    knowledge = console.space.gems.context("mover").knowledge
    assert knowledge is not None
    with ThreadPoolExecutor(max_workers=1) as pool:
        put = pool.submit(asyncio.run, knowledge.facts.put(predicate_hint="location.home.city", value="Paris")).result()
    assert put.status == "conflict"

    page.get_by_role("link", name="View changes").click()
    page.get_by_label("Status").select_option("conflict")
    page.get_by_role("button", name="Filter").click()
    conflict = page.locator(".change.status-conflict")
    expect(conflict).to_have_count(1)
    expect(conflict.locator(".who")).to_have_text("mover")
    expect(conflict.locator(".yours")).to_have_text("Leiden")
    expect(conflict.locator(".theirs")).to_have_text("Paris")
    assert [f.value for f in console.space.user.facts.lookup("self", "location.home.city")] == ["Leiden"]
