"""The console in a real browser when a part of a page fails on the server's side: the page's alert
area says so in the reader's language, the page stays as it was, and the next part that arrives
once the store works again takes the alert away (K-UI-01)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from console_harness import WEATHER, ConsoleServer, signed_in_page
from playwright.sync_api import Browser, expect


def _sql(console: ConsoleServer, statement: str) -> None:
    database = sqlite3.connect(Path(console.nc.data_dir) / "spaces" / "personal.db", isolation_level=None)
    try:
        database.execute(statement)
    finally:
        database.close()


def test_a_switch_whose_write_fails_says_so_above_the_page_in_chinese_and_stays_off(
    browser: Browser, console: ConsoleServer
) -> None:
    """The table of the switches is moved away behind the server's back, so the switch's write
    fails in the store: the alert says in Chinese that something went wrong and that the change may
    not have been made, with none of the store's words; the switch stays off and the page is not
    replaced. With the table back, the same click turns it on and the alert goes away."""
    console.space.gems.install(WEATHER)
    page = signed_in_page(browser, console, locale="zh-CN")
    page.goto(f"{console.url}/gems/weather")
    page.evaluate("window.reloaded = false")
    switch = page.get_by_role("switch", name="读取你的居住地")
    alert = page.locator("#console-alert [role=alert]")

    _sql(console, "ALTER TABLE gem_grants RENAME TO gem_grants_elsewhere")
    switch.click()
    expect(alert).to_contain_text("出了点问题")
    _sql(console, "ALTER TABLE gem_grants_elsewhere RENAME TO gem_grants")
    expect(alert).to_contain_text("你要求的操作可能没有完成")
    expect(alert).not_to_contain_text("gem_grants")
    expect(switch).to_have_attribute("aria-checked", "false")
    assert page.evaluate("window.reloaded") is False, "the page was replaced instead of showing the alert"

    switch.click()
    expect(switch).to_have_attribute("aria-checked", "true")
    expect(alert).to_have_count(0)
    assert page.evaluate("window.reloaded") is False
