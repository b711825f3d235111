"""A request that fails on the server's side for a reason no page foresaw (K-UI-11, K-UI-12).

Here the cause is real: the space's database lost a table behind the server's back (a damaged
store), so every write fails inside the store with the driver's own words. The console used to
answer with Starlette's plain-text "Internal Server Error". It now answers 500 (the server's fault)
with a page in its own look and the reader's language: something went wrong, what was asked may
not have been done, and the details are in the server's log. The exception's text (SQL, table
names, the driver's words, paths) stays out of the page and goes to the log with its traceback.
A part of a page htmx asked for gets the same words in the page's alert area.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from console_harness import WEATHER, ConsoleServer

ENGLISH_TITLE = "Something went wrong"
CHINESE_TITLE = "出了点问题"
CHINESE_WORDS = ("你要求的操作可能没有完成", "详细信息在服务器日志中")
INTERNAL_WORDS = (
    "no such table",
    "sqlite",
    "SQL",
    "StorageError",
    "failed in the store",
    "Traceback",
    "Internal Server Error",
    "personal.db",
    "INSERT",
)


@pytest.fixture
def logged(console: ConsoleServer) -> Iterator[list[logging.LogRecord]]:
    """What the server logs under ``notochord.server`` from now on (its handlers do not propagate)."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep(level=logging.ERROR)
    logger = logging.getLogger("notochord.server")
    logger.addHandler(keep)
    try:
        yield records
    finally:
        logger.removeHandler(keep)


def _damage(console: ConsoleServer) -> None:
    """The change log's table dropped by another program: every write of the space now fails."""
    database = sqlite3.connect(Path(console.nc.data_dir) / "spaces" / "personal.db", isolation_level=None)
    try:
        database.execute("DROP TABLE changes")
    finally:
        database.close()


def _sql(console: ConsoleServer, statement: str) -> None:
    database = sqlite3.connect(Path(console.nc.data_dir) / "spaces" / "personal.db", isolation_level=None)
    try:
        database.execute(statement)
    finally:
        database.close()


def _assert_nothing_internal(answer: httpx.Response, console: ConsoleServer) -> None:
    for word in (*INTERNAL_WORDS, str(console.nc.data_dir)):
        assert word not in answer.text, word


def _names(console: ConsoleServer) -> list[str]:
    return [c.name for c in console.space.user.collections.list() if c.builtin is None]


def test_a_form_that_fails_in_the_store_answers_500_with_a_chinese_page_and_logs_the_traceback(
    console: ConsoleServer, logged: list[logging.LogRecord]
) -> None:
    """The page is the console's own (its style sheet, its title) in Chinese, says the change may
    not have been made and where the details are, leads back to the page the form was on, and
    shows none of the store's words; the log has the exception with its traceback."""
    client, token = console.signed_in("/knowledge")
    _damage(console)

    answer = client.post(
        "/knowledge/collections",
        data={"csrf": token, "name": "Recipes"},
        headers={"Accept-Language": "zh-CN", "Referer": f"{console.url}/knowledge"},
    )

    assert answer.status_code == 500
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["Cache-Control"] == "no-store"
    assert '<link rel="stylesheet" href="/static/console.css">' in answer.text
    assert f"<title>{CHINESE_TITLE} · notochord</title>" in answer.text
    for words in CHINESE_WORDS:
        assert words in answer.text
    assert '<a href="/knowledge" class="button">返回页面</a>' in answer.text
    _assert_nothing_internal(answer, console)
    assert _names(console) == []
    [record] = logged
    assert record.exc_info is not None
    assert "no such table: changes" in logging.Formatter().formatException(record.exc_info)
    assert "POST /knowledge/collections" in record.getMessage()


def test_a_part_of_a_page_that_fails_gets_the_words_in_the_page_s_alert_area(console: ConsoleServer) -> None:
    """htmx swaps a 500 into the alert area every page has, so the page stays as it was."""
    client, token = console.signed_in("/knowledge")
    page = client.get("/knowledge").text
    assert '<div id="console-alert"></div>' in page
    assert '{"code": "500", "swap": true}' in page
    _damage(console)

    answer = client.post(
        "/knowledge/collections",
        data={"csrf": token, "name": "Recipes"},
        headers={"HX-Request": "true", "Accept-Language": "zh-CN"},
    )

    assert answer.status_code == 500
    assert (answer.headers["HX-Retarget"], answer.headers["HX-Reswap"]) == ("#console-alert", "innerHTML")
    assert "<html" not in answer.text and 'role="alert"' in answer.text
    assert CHINESE_TITLE in answer.text and CHINESE_WORDS[0] in answer.text
    _assert_nothing_internal(answer, console)
    assert _names(console) == []


def test_a_page_that_fails_in_english_leads_back_to_itself_and_a_head_of_it_gets_no_body(
    console: ConsoleServer,
) -> None:
    """A page that cannot be read is the same 500 in English; HEAD answers as its GET, bodiless."""
    client = console.client()
    _damage(console)

    answer = client.get("/changes", params={"status": "applied"})
    head = client.head("/changes", params={"status": "applied"})

    assert answer.status_code == 500
    assert f"<title>{ENGLISH_TITLE} · notochord</title>" in answer.text
    assert "may not have been done" in answer.text and "server&#39;s log" in answer.text
    assert '<a href="/changes?status=applied" class="button">Back to the page</a>' in answer.text
    _assert_nothing_internal(answer, console)
    assert (head.status_code, head.content) == (500, b"")
    assert head.headers["content-type"] == answer.headers["content-type"]


def test_a_permission_switch_that_fails_in_the_store_is_not_told_the_gem_is_missing(
    console: ConsoleServer, logged: list[logging.LogRecord]
) -> None:
    """K-UI-01: the switch's route reads a refusal as "not found"; a store that fails is none of
    those: the answer is the 500 alert above the page, and the switch stays off."""
    console.space.gems.install(WEATHER)
    client, token = console.signed_in("/gems/weather")
    switch = {"csrf": token, "permission": "facts.read:self:location.home.*", "on": "1"}
    _sql(console, "ALTER TABLE gem_grants RENAME TO gem_grants_elsewhere")

    answer = client.post("/gems/weather/permissions", data=switch, headers={"HX-Request": "true"})

    _sql(console, "ALTER TABLE gem_grants_elsewhere RENAME TO gem_grants")
    assert answer.status_code == 500, answer.text
    assert answer.headers["HX-Retarget"] == "#console-alert"
    assert ENGLISH_TITLE in answer.text and "may not have been done" in answer.text
    _assert_nothing_internal(answer, console)
    assert [r.getMessage() for r in logged] == ["a console request failed: POST /gems/weather/permissions"]
    assert [(p.permission, p.on) for p in console.space.gems.permissions("weather")] == [
        ("facts.read:self:location.home.*", False)
    ]
