"""The console while the store cannot be used: another process holds it locked, or its PostgreSQL
server is down.

Neither is the person's mistake nor an unexplained failure: a page, a form and a part of a page
each answer 503 with ``Retry-After``, in the console's own look and in the reader's language, saying
that the vault cannot be reached right now, that nothing was changed and to try again in a few
seconds. The page never tells where the database server is or as whom notochord logs in (OD-K47:
each space is its own store, and each can be out of reach on its own). Once the store answers
again, so does the console, without a restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from console_harness import (
    WEATHER,
    ConsoleServer,
    held_by_another_process,
    impatient_console,  # noqa: F401  (this module's console: quick to give up on a lock)
    start_console,
)

from notochord.server.errors import UNAVAILABLE_RETRY_AFTER
from postgres_server import drop_databases, unique_database_url
from tcp_relay import Relay

ENGLISH = "Your vault cannot be reached right now"
CHINESE = "暂时无法访问你的知识库"
STORE_WORDS = ("sqlite", "database is locked", "sqlite_busy_timeout_ms", "Traceback", "Internal Server Error")


def _assert_unavailable(answer: httpx.Response, *, secrets: tuple[str, ...] = STORE_WORDS) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == str(UNAVAILABLE_RETRY_AFTER)
    assert answer.headers["Cache-Control"] == "no-store"
    for secret in secrets:
        assert secret not in answer.text, secret


def test_a_form_sent_while_another_process_holds_the_store_answers_503_saying_nothing_changed(
    console: ConsoleServer,
) -> None:
    """The page is the console's own (its style sheet, its title), says what happened and what to do,
    and leads back to the page the form was on; the collection is not created until the store is
    free, and then it is."""
    client, token = console.signed_in("/knowledge")
    form = {"csrf": token, "name": "Recipes"}
    came_from = {"Referer": f"{console.url}/knowledge?view=tree"}

    with held_by_another_process(console):
        answer = client.post("/knowledge/collections", data=form, headers=came_from)

    _assert_unavailable(answer)
    assert '<link rel="stylesheet" href="/static/console.css">' in answer.text
    assert f"<title>{ENGLISH} · notochord</title>" in answer.text
    assert "Another program is using your vault right now" in answer.text
    assert "Nothing was changed. Try again in a few seconds." in answer.text
    assert '<a href="/knowledge?view=tree" class="button">Try again</a>' in answer.text
    assert "Recipes" not in client.get("/knowledge").text

    again = client.post("/knowledge/collections", data=form, headers=came_from)
    assert again.status_code in (200, 303)
    assert "Recipes" in client.get("/knowledge").text


@pytest.mark.parametrize(
    "referer",
    ["http://elsewhere.example/knowledge", "//elsewhere.example/knowledge", "", "http://{host}//elsewhere.example/x"],
    ids=["another-site", "scheme-relative", "none", "double-slash-path"],
)
def test_try_again_after_a_form_leads_only_to_a_page_of_this_console(console: ConsoleServer, referer: str) -> None:
    """The page a form came from is taken from ``Referer`` only when it is this console's own; any
    other leads to the gems page, never to another site."""
    client, token = console.signed_in("/knowledge")
    came_from = {"Referer": referer.format(host=console.url.removeprefix("http://"))} if referer else {}

    with held_by_another_process(console):
        answer = client.post("/knowledge/collections", data={"csrf": token, "name": "Recipes"}, headers=came_from)

    _assert_unavailable(answer)
    assert '<a href="/gems" class="button">Try again</a>' in answer.text


def test_a_part_of_a_page_asked_for_by_htmx_gets_the_words_in_the_pages_alert_area_in_chinese(
    console: ConsoleServer,
) -> None:
    """An htmx request gets the sentence alone, retargeted into the alert area every page has (which
    htmx is told to swap a 503 into), so the page the person is on stays as it was."""
    client, token = console.signed_in("/knowledge")
    page = client.get("/knowledge").text
    assert '<div id="console-alert"></div>' in page
    assert '{"code": "503", "swap": true}' in page

    with held_by_another_process(console):
        answer = client.post(
            "/knowledge/collections",
            data={"csrf": token, "name": "Recipes"},
            headers={"HX-Request": "true", "Accept-Language": "zh-CN"},
        )

    _assert_unavailable(answer)
    assert (answer.headers["HX-Retarget"], answer.headers["HX-Reswap"]) == ("#console-alert", "innerHTML")
    assert "<html" not in answer.text and 'role="alert"' in answer.text
    assert CHINESE in answer.text
    assert "另一个程序正在使用你的知识库" in answer.text and "没有做任何改动" in answer.text


def test_a_permission_switch_while_the_store_is_held_is_not_told_the_gem_is_missing(console: ConsoleServer) -> None:
    """K-UI-01: the switch's route reads any refusal as "not found"; a store out of reach is none of
    those, and the switch stays off."""
    console.space.gems.install(WEATHER)
    client, token = console.signed_in("/gems/weather")
    switch = {"csrf": token, "permission": "facts.read:self:location.home.*", "on": "1"}

    with held_by_another_process(console):
        answer = client.post("/gems/weather/permissions", data=switch)

    _assert_unavailable(answer)
    assert ENGLISH in answer.text
    assert not any(s.on for s in console.space.gems.permissions("weather"))


# --- a PostgreSQL server that goes away ---------------------------------------------------------


@pytest.fixture
def relayed(postgres_server_url: str, tmp_path: Path) -> Iterator[tuple[ConsoleServer, Relay, str]]:
    """A console over a vault on the test PostgreSQL server, reached through a relay the test cuts;
    also the user notochord logs in as."""
    relay = Relay(postgres_server_url)
    url = sa.make_url(unique_database_url(postgres_server_url))
    through_relay = url.set(host="127.0.0.1", port=relay.port, query={})
    try:
        server = start_console(tmp_path / "data", database_url=through_relay.render_as_string(hide_password=False))
        try:
            yield server, relay, str(url.username or "")
        finally:
            relay.start()  # the vault closes its connections through it
            server.stop()
    finally:
        relay.cut()
        drop_databases(postgres_server_url, url.render_as_string(hide_password=False))


@pytest.mark.postgresql
def test_pages_and_forms_of_a_console_whose_database_server_is_down_answer_503_and_recover(
    relayed: tuple[ConsoleServer, Relay, str],
) -> None:
    """OD-K47: every page, form and part of a page answers 503 with ``Retry-After`` while the server
    cannot be reached, never naming its host, port or user, and answers again once it is back."""
    console, relay, user = relayed
    client, token = console.signed_in("/gems")
    named = ("127.0.0.1", str(relay.port), "psycopg", "PostgreSQL", "connection", "database_url", user)
    secrets: tuple[str, ...] = (*STORE_WORDS, *(word for word in named if word))

    relay.cut()
    for path in ("/gems", "/knowledge", "/runs", "/search?q=stew", "/changes"):
        answer = client.get(path)
        _assert_unavailable(answer, secrets=secrets)
        assert "The database server that holds your vault does not answer at the moment." in answer.text
        assert f'<a href="{path}" class="button">Try again</a>' in answer.text
    posted = client.post("/knowledge/collections", data={"csrf": token, "name": "Recipes"})
    _assert_unavailable(posted, secrets=secrets)
    part = client.post(
        "/knowledge/collections",
        data={"csrf": token, "name": "Recipes"},
        headers={"HX-Request": "true", "Accept-Language": "zh-CN"},
    )
    _assert_unavailable(part, secrets=secrets)
    assert "保存你知识库的数据库服务器暂时没有响应" in part.text

    relay.start()
    assert client.get("/gems").status_code == 200
    assert "Recipes" not in client.get("/knowledge").text
