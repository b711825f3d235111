"""A new user's first steps in the console, as docs/console.md describes them: install the weather
example from its folder, and land on its page told once that it is installed with every switch off."""

from __future__ import annotations

from console_harness import WEATHER, ConsoleServer, signed_in_page
from playwright.sync_api import Browser, expect


def test_installing_a_gem_from_its_folder_says_so_once_on_its_page(browser: Browser, console: ConsoleServer) -> None:
    page = signed_in_page(browser, console)
    page.get_by_label("From a folder on this computer").fill(str(WEATHER))
    page.get_by_role("button", name="Review").click()
    page.get_by_role("button", name="Install").click()

    expect(page).to_have_url(f"{console.url}/gems/weather?installed=1")
    installed = page.get_by_role("status").filter(has_text="Installed weather")
    expect(installed).to_have_count(1)
    # the facts panel still shows what its own forms did, once
    page.locator("li[data-predicate='location.home.city'] input[name=value]").fill("Utrecht")
    page.locator("li[data-predicate='location.home.city']").get_by_role("button", name="Save").click()
    expect(page.locator("#facts").get_by_role("status")).to_have_text("Saved.")
    expect(page.get_by_role("status").filter(has_text="Installed weather")).to_have_count(1)
