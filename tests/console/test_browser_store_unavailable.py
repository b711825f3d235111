"""The console in a real browser while another process holds the store: a part of a page that
could not be changed says why in the page's alert area, in the reader's language, and the page
stays as it was; the next part that arrives once the store is free takes the alert away."""

from __future__ import annotations

from console_harness import (
    WEATHER,
    ConsoleServer,
    held_by_another_process,
    impatient_console,  # noqa: F401  (this module's console: quick to give up on a lock)
    signed_in_page,
)
from playwright.sync_api import Browser, expect


def test_a_switch_clicked_while_the_store_is_held_says_why_in_the_page_and_stays_off(
    browser: Browser, console: ConsoleServer
) -> None:
    """K-UI-01: the switch is not turned on, the page is not replaced, and the alert says in Chinese
    that nothing was changed; clicked again once the store is free, the switch turns on and the
    alert is gone."""
    console.space.gems.install(WEATHER)
    page = signed_in_page(browser, console, locale="zh-CN")
    page.goto(f"{console.url}/gems/weather")
    page.evaluate("window.reloaded = false")
    switch = page.get_by_role("switch", name="读取你的居住地")
    alert = page.locator("#console-alert [role=alert]")

    with held_by_another_process(console):
        switch.click()
        expect(alert).to_contain_text("另一个程序正在使用你的知识库")
    expect(alert).to_contain_text("没有做任何改动")
    expect(switch).to_have_attribute("aria-checked", "false")
    assert page.evaluate("window.reloaded") is False, "the page was replaced instead of showing the alert"

    switch.click()
    expect(switch).to_have_attribute("aria-checked", "true")
    expect(alert).to_have_count(0)
    assert page.evaluate("window.reloaded") is False
