"""Write a PNG of every console page, English and Chinese, desktop and 360 px wide (``make screenshots``).

Usage: ``python tests/console/make_screenshots.py OUTPUT_DIR``. The pages show a demo data directory
made afresh in a temporary folder: the weather and recipes gems installed, a few facts about the
user, a switch turned on, a conflict in "View changes", and collections, documents and people for
the Knowledge pages.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from console_harness import EXAMPLES, RECIPES, WEATHER, ConsoleServer, start_console
from playwright.sync_api import Page, sync_playwright
from runs_gem import GEM, grant, run_once, write_gem

from notochord.gems.folders import GemFolders

SIZES = {"desktop": (1280, 860), "360px": (360, 780)}
LOCALES = {"en": "en-US", "zh": "zh-CN"}


def _demo(console: ConsoleServer) -> None:
    space = console.space
    for gem in (WEATHER, RECIPES, EXAMPLES / "contacts"):
        space.gems.install(gem)
    space.gems.set_permission("weather", "facts.read:self:location.home.*", True)
    space.user.facts.put(predicate="location.home.city", value="Amsterdam")
    space.user.facts.put(predicate="pref.food.dislike", value="cilantro")
    space.as_assistant.facts.put(predicate="pref.food.like", value="tomato beef stew", run_id="run-demo")
    space.as_assistant.facts.put(predicate="location.home.city", value="Rotterdam", run_id="run-demo")
    _knowledge_demo(console)


def _knowledge_demo(console: ConsoleServer) -> None:
    """Collections with documents, a deleted one to restore, and two people with facts."""
    space = console.space
    recipes = space.user.collections.create("Recipes")
    soups = space.user.collections.create("Soups", parent=recipes.id)
    stew = "Brown the beef.\n\nAdd tomatoes."
    space.user.documents.upsert(collection=recipes.id, title="Tomato beef stew", body=stew)
    space.user.documents.upsert(collection=soups.id, title="Borscht", body="Beetroot, cabbage and dill.")
    gone = space.user.documents.upsert(collection=recipes.id, title="Burnt toast", body="Never again.")
    space.user.documents.delete(gone.id)
    ann = space.user.entities.resolve(kind="person", create=True, name="Ann Lee", email="ann@example.com")
    space.user.entities.resolve(kind="person", create=True, name="Annie", phone="+31 6 12345678")
    space.user.entities.resolve(kind="org", create=True, name="Acme", domain="acme.nl")
    assert ann is not None
    space.user.facts.put(subject=ann.id, predicate="work.company", value="Acme")
    space.user.facts.put(subject=ann.id, predicate="contact.email", value="ann@example.com")


def _shoot_knowledge(page: Page, console: ConsoleServer, out: Path, suffix: str) -> None:
    space = console.space
    [recipes] = [r for r in space.user.collections.list() if r.name == "Recipes"]
    [doc] = space.user.documents.page(recipes.id).items
    [ann] = space.user.entities.page(kind="person", query="Ann Lee").items
    for name, path in (
        ("knowledge", "/knowledge"),
        ("knowledge-collection", f"/knowledge/collections/{recipes.id}"),
        ("knowledge-document", f"/knowledge/documents/{doc.id}"),
        ("knowledge-entities", "/knowledge/entities"),
        ("knowledge-entity", f"/knowledge/entities/{ann.id}"),
        ("knowledge-contacts", "/knowledge/contacts"),
    ):
        page.goto(f"{console.url}{path}")
        _shoot(page, out, f"{name}-{suffix}")


def _demo_runs(console: ConsoleServer, scratch: Path) -> str:
    """Search, Runs, Network access and a working folder have something to show; the run's id."""
    space = console.space
    space.user.documents.upsert(
        collection="keep", title="Tomato beef stew", body="Brown the beef, add tomato and onion."
    )
    space.user.documents.upsert(collection="diary", key="2026-09-22", title="Tuesday", body="Cooked a tomato soup.")
    space.network.add_external("allowlist", ["api.weather.example"])
    space.network.add_local("localhost:5173")
    space.gems.install(write_gem(scratch, sops=[{"name": "daily-digest", "trigger": "schedule"}]))
    grant(space)
    reports = scratch / "reports"
    reports.mkdir()
    folders = space.gems.services.gem_folders
    assert isinstance(folders, GemFolders)
    folders.set_working_folder(GEM, reports, core=space.core)
    return run_once(space, scratch / "conversation")


def _pages(console: ConsoleServer, run_id: str) -> list[tuple[str, str]]:
    return [
        ("search", "/search?q=tomato"),
        ("runs", "/runs"),
        ("run", f"/runs/{run_id}"),
        ("gem-noter", f"/gems/{GEM}"),
        ("network", "/settings/network"),
    ]


def _shoot(page: Page, out: Path, name: str) -> None:
    page.screenshot(path=str(out / f"{name}.png"), full_page=True)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("make screenshots needs the system's chromium: apt-get install chromium")
    with tempfile.TemporaryDirectory() as scratch:
        console = start_console(Path(scratch) / "data")
        try:
            _demo(console)
            run_id = _demo_runs(console, Path(scratch))
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium)
                for lang, locale in LOCALES.items():
                    for size, (width, height) in SIZES.items():
                        context = browser.new_context(locale=locale, viewport={"width": width, "height": height})
                        page = context.new_page()
                        page.goto(f"{console.url}/gems")
                        _shoot(page, out, f"signin-{lang}-{size}")
                        page.goto(console.login_url())
                        _shoot(page, out, f"gems-{lang}-{size}")
                        page.locator("#gem-path").fill(str(EXAMPLES / "diary"))
                        page.locator("form[action='/gems/review'] button[type=submit]").click()
                        page.wait_for_load_state()
                        _shoot(page, out, f"install-{lang}-{size}")
                        for gem in ("weather", "recipes"):
                            page.goto(f"{console.url}/gems/{gem}")
                            _shoot(page, out, f"gem-{gem}-{lang}-{size}")
                        page.goto(f"{console.url}/changes")
                        _shoot(page, out, f"changes-{lang}-{size}")
                        page.goto(f"{console.url}/gems/recipes/uninstall")
                        _shoot(page, out, f"uninstall-{lang}-{size}")
                        for name, path in _pages(console, run_id):
                            page.goto(f"{console.url}{path}")
                            _shoot(page, out, f"{name}-{lang}-{size}")
                        page.goto(f"{console.url}/studio")
                        editor = page.locator("#manifest")
                        editor.fill(editor.input_value().replace("pref.food.*", "*", 1))
                        page.locator("#studio-result .problems").wait_for()
                        _shoot(page, out, f"studio-{lang}-{size}")
                        _shoot_knowledge(page, console, out, f"{lang}-{size}")
                        context.close()
                browser.close()
        finally:
            console.stop()
    print(f"screenshots written to {out.resolve()}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots"))
