"""The page signing out leads to says the person is signed out and how to sign in again.

Signing out ends at /login, which without a link's token answered "This link was already used or
has expired": no link had been opened, and the sentence sent the person looking for one. The page
now says they are signed out and that a new sign-in link comes from ``notochord console-url``, in
each language of the console (still 401, as every page asking to sign in first), and HEAD tells the
same as GET. A used or forged link is still told
so, and a person still signed in who opens /login is taken to the console.
"""

from __future__ import annotations

import html

import httpx
import pytest
from console_harness import ConsoleServer, csrf_of

_SIGNED_OUT = {"en": "You are signed out", "zh": "你已退出登录"}
_USED = {"en": "already used", "zh": "已经用过"}


def _signed_out(console: ConsoleServer, lang: str) -> httpx.Client:
    browser = console.client()
    browser.cookies.set("lang", lang)
    assert browser.post("/logout", data={"csrf": csrf_of(browser.get("/gems").text)}).status_code == 303
    return browser


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_signing_out_lands_on_a_page_saying_so_and_how_to_sign_in_again(console: ConsoleServer, lang: str) -> None:
    """K-UI-01: after signing out, /login says the person is signed out and names the command that
    gives a new link, in the language they chose; it never speaks of a used or expired link."""
    browser = _signed_out(console, lang)
    page = browser.get("/login")
    assert page.status_code == 401
    shown = html.unescape(page.text)
    assert _SIGNED_OUT[lang] in shown
    assert "notochord console-url" in shown
    assert _USED[lang] not in shown
    assert "set-cookie" not in page.headers
    assert browser.get("/gems").status_code == 401, "the page signs nobody in"
    for empty in (browser.get("/login", params={"token": ""}), browser.get("/login", headers={"Accept": "*/*"})):
        assert empty.status_code == 401 and _SIGNED_OUT[lang] in html.unescape(empty.text)
    head = browser.head("/login")
    assert (head.status_code, head.content) == (401, b"")


def test_a_used_or_forged_link_is_still_called_so(console: ConsoleServer) -> None:
    """K-UI-01: a link already used, or not made by this console, is refused 401 as before."""
    link = console.login_url()
    assert console.client(signed_in=False).get(link).status_code == 303
    browser = console.client(signed_in=False)
    for answer in (browser.get(link), browser.get("/login", params={"token": "forged"})):
        assert answer.status_code == 401
        assert "already used" in answer.text


def test_opening_login_while_signed_in_goes_to_the_console(console: ConsoleServer) -> None:
    """K-UI-01: a person still signed in who opens /login without a link is not told they are
    signed out: they are taken to the console's first page, still signed in."""
    browser = console.client()
    answer = browser.get("/login")
    assert (answer.status_code, answer.headers["location"]) == (303, "/")
    assert browser.get("/gems").status_code == 200


def test_login_without_a_link_opened_from_another_site_tells_every_visitor_the_same(console: ConsoleServer) -> None:
    """K-UI-01: from another site, /login without a link answers alike whether or not a session
    exists (that site learns nothing), naming the command that gives a link."""
    cross_site = {"Sec-Fetch-Site": "cross-site"}
    signed_in = console.client().get("/login", headers=cross_site)
    visitor = console.client(signed_in=False).get("/login", headers=cross_site)
    assert signed_in.status_code == visitor.status_code == 401
    assert signed_in.text == visitor.text
    assert "notochord console-url" in visitor.text
