"""Signing in again starts afresh: the session the browser held before ends on the server.

Each sign-in opens a new session with a new cookie, so nobody can choose the session a person is
given. The one the browser held before used to stay valid until it expired, twelve hours on, for
any copy of its cookie taken before: signing in again now ends it, as signing out does. Other
browsers' sessions are theirs and are left alone, and a sign-in link stays good for one browser
only, before and after signing out.
"""

from __future__ import annotations

import httpx
from console_harness import ConsoleServer

from notochord.console.guard import SESSION_COOKIE


def _copy(console: ConsoleServer, client: httpx.Client) -> httpx.Client:
    """Another client holding a copy of ``client``'s session cookie, as it is now."""
    copy = httpx.Client(base_url=console.url, timeout=30, cookies={SESSION_COOKIE: client.cookies[SESSION_COOKIE]})
    console.clients.append(copy)
    return copy


def test_signing_in_again_ends_the_session_the_browser_held(console: ConsoleServer) -> None:
    """A copy of the earlier cookie is refused once the browser signs in with a new link; the
    session of another browser is left alone."""
    browser, other = console.client(), console.client()
    earlier = _copy(console, browser)
    assert earlier.get("/gems").status_code == 200

    assert browser.get(console.login_url()).status_code == 303

    assert browser.get("/gems").status_code == 200
    assert earlier.get("/gems").status_code == 401
    assert _copy(console, browser).get("/gems").status_code == 200, "the new session is the one that works"
    assert other.get("/gems").status_code == 200, "another browser's session is its own"


def test_signing_in_through_the_asking_page_ends_the_earlier_session_too(console: ConsoleServer) -> None:
    """The same when the link came from another site and the console's own button signed in."""
    browser = console.client()
    earlier = _copy(console, browser)
    token = console.login_url().split("token=")[1]
    assert browser.get("/login", params={"token": token}, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200
    assert earlier.get("/gems").status_code == 200, "asking signs nobody out"

    assert browser.post("/login", data={"token": token}, headers={"Origin": console.url}).status_code == 303

    assert earlier.get("/gems").status_code == 401
    assert browser.get("/gems").status_code == 200


def test_a_refused_link_ends_no_session_and_a_used_link_stays_used_after_signing_out(console: ConsoleServer) -> None:
    """A link already used, opened in a signed-in browser, is refused and signs it out of nothing;
    signing out does not bring the link that opened the session back to life."""
    link = console.login_url()
    browser = console.client(signed_in=False)
    assert browser.get(link).status_code == 303
    other = console.client()
    refused = other.get(link)
    assert refused.status_code == 401
    assert "already used" in refused.text
    assert other.get("/gems").status_code == 200

    token = browser.get("/gems").text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    assert browser.post("/logout", data={"csrf": token}).status_code == 303
    again = browser.get(link)
    assert again.status_code == 401
    assert "set-cookie" not in again.headers
    assert browser.get("/gems").status_code == 401
