"""The Runs pages and Search in a real browser: Playwright driving the system's Chromium against a
real server, with a real gem run in its own process."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from console_harness import ConsoleServer, signed_in_page
from playwright.sync_api import Browser, expect
from runs_gem import GEM, installed, run_once


@pytest.fixture
def ran(console: ConsoleServer, tmp_path: Path) -> tuple[str, Path]:
    """The gem run once from a conversation, in a thread of its own: Playwright's sync API keeps an
    event loop in this one."""
    installed(console.space, tmp_path)
    conversation = tmp_path / "conversation"
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run_once, console.space, conversation).result(), conversation


def test_undo_a_run_from_its_page(browser: Browser, console: ConsoleServer, ran: tuple[str, Path]) -> None:
    """K-UI-11: from the gem's page to its run, "Undo this run" reverts what it wrote."""
    run_id, conversation = ran
    page = signed_in_page(browser, console)
    page.goto(f"{console.url}/gems/{GEM}")
    page.locator("#runs").get_by_role("link", name=f"{GEM} / note").click()
    expect(page).to_have_url(f"{console.url}/runs/{run_id}")
    expect(page.locator("#run-changes .summary")).to_have_text(["pref.food.like = soup"])
    page.get_by_role("button", name="Undo this run").click()
    expect(page.get_by_role("status")).to_have_text("Undone: 1 change.")
    expect(page.locator("#run-changes .status")).to_have_text(["reverted"])
    assert console.space.user.facts.lookup("self", "pref.food") == []
    assert (conversation / "notes" / "food.md").exists()


def test_roll_back_a_run_s_files_from_its_page(browser: Browser, console: ConsoleServer, ran: tuple[str, Path]) -> None:
    """P-FILE-21, P-FILE-25: the Runs page leads to the run; its files are rolled back."""
    run_id, conversation = ran
    page = signed_in_page(browser, console, width=360)
    page.get_by_role("link", name="Runs").click()
    page.locator(f'a[href="/runs/{run_id}"]').click()
    expect(page.locator("#run-files code")).to_contain_text(["workspace:notes/food.md"])
    page.get_by_role("button", name="Roll back its files").click()
    expect(page.get_by_role("status")).to_contain_text("Rolled back")
    expect(page.get_by_role("button", name="Roll back its files")).to_be_disabled()
    assert not (conversation / "notes" / "food.md").exists()
    assert [f.value for f in console.space.user.facts.lookup("self", "pref.food.like")] == ["soup"]
    overflow = page.evaluate("document.documentElement.scrollWidth > document.documentElement.clientWidth")
    assert overflow is False, "the run's page is wider than a 360 px screen"


def test_search_marks_the_matched_words_and_never_runs_a_document_s_script(
    browser: Browser, console: ConsoleServer
) -> None:
    """Passages are escaped, then the query's words marked; a document's markup stays text."""
    console.space.user.documents.upsert(
        collection="keep", title="Trap", body="<img src=x onerror=\"document.title='owned'\"> tomato soup"
    )
    page = signed_in_page(browser, console)
    page.get_by_role("link", name="Search").click()
    page.get_by_role("searchbox").fill("tomato")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator(".passage mark")).to_have_text(["tomato"])
    expect(page.locator(".passage")).to_contain_text("<img src=x")
    assert page.locator(".passage img").count() == 0
    assert page.title() != "owned"
