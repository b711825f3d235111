"""Who may drive the console, tested with HTTP against a real server.

The console acts as the vault's user, so every page and action needs the session a one-time link
gives; a page on another site, a request under another host name (DNS rebinding) and a post without
the session's CSRF token are all refused and change nothing.
"""

from __future__ import annotations

import os
import re
import stat

import httpx
import pytest
from console_harness import WEATHER, ConsoleServer, csrf_of
from fastapi.routing import APIRoute

from notochord.console.auth import SECRET_FILE
from notochord.console.forms import SIGN_IN_PATH
from notochord.console.routes import changes, gems, session, studio, uninstall


def _console_routes() -> list[tuple[str, str]]:
    """Every (method, path) of the console's routers, with sample path parameters."""
    found = []
    for router in (changes.router, gems.router, session.router, studio.router, uninstall.router):
        for route in router.routes:
            assert isinstance(route, APIRoute) and route.methods is not None
            path = re.sub(r"\{gem_id\}", "weather", route.path)
            path = re.sub(r"\{(change_id|fact_id)\}", "1", path)
            found += [(method, path) for method in sorted(route.methods)]
    return found


def _install_weather(client: httpx.Client) -> None:
    token = csrf_of(client.get("/gems").text)
    assert client.post("/gems/install", data={"csrf": token, "path": str(WEATHER)}).status_code == 303


def _switched_on(console: ConsoleServer) -> bool:
    return any(s.on for s in console.space.gems.permissions("weather"))


def test_no_page_and_no_action_without_signing_in(console: ConsoleServer) -> None:
    """Every console route answers 401 to a browser that has not signed in."""
    console.space.gems.install(WEATHER)
    client = console.client(signed_in=False)
    routes = _console_routes()
    assert {m for m, _ in routes} == {"GET", "HEAD", "POST"}  # HEAD: of /login only
    for method, path in routes:
        if path == "/login":
            continue
        answer = client.request(method, path, data={"permission": "facts.read:self:location.home.*", "on": "1"})
        assert answer.status_code == 401, (method, path, answer.status_code)
        assert "notochord console-url" in answer.text
    assert not _switched_on(console)


def test_a_one_time_link_signs_in_once_with_a_strict_http_only_cookie(console: ConsoleServer) -> None:
    """The link sets an HttpOnly, SameSite=Strict session cookie and then is spent."""
    link = console.login_url()
    browser = console.client(signed_in=False)
    answer = browser.get(link)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/"
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    assert "path=/" in cookie
    assert browser.get(f"{console.url}/gems").status_code == 200

    again = console.client(signed_in=False).get(link)
    assert again.status_code == 401
    assert "already used" in again.text


@pytest.mark.parametrize(
    "token",
    ["", "nonsense", "a.1.b", "x" * 300],
)
def test_a_forged_or_malformed_link_signs_nobody_in(console: ConsoleServer, token: str) -> None:
    """Only a token signed with the data directory's secret opens a session."""
    browser = console.client(signed_in=False)
    answer = browser.get("/login", params={"token": token})
    assert answer.status_code == 401
    assert "set-cookie" not in answer.headers
    assert browser.get("/gems").status_code == 401


def test_a_tampered_link_is_refused(console: ConsoleServer) -> None:
    """Changing the expiry of a real link breaks its signature."""
    nonce, expiry, mac = console.login_url().split("token=")[1].split(".")
    forged = f"{nonce}.{int(expiry) + 10**6}.{mac}"
    assert httpx.get(f"{console.url}/login", params={"token": forged}).status_code == 401


def test_the_login_secret_is_readable_by_the_owner_only(console: ConsoleServer) -> None:
    """The secret is created on first start in the data directory, mode 0600."""
    mode = stat.S_IMODE(os.stat(console.nc.data_dir / SECRET_FILE).st_mode)
    assert mode == 0o600


def test_a_post_without_the_csrf_token_is_refused_everywhere_and_changes_nothing(console: ConsoleServer) -> None:
    """Every state-changing route checks the token before doing anything."""
    client = console.client()
    _install_weather(client)
    for method, path in _console_routes():
        # the sign-in form is posted before any session exists: its proof is the one-time token it
        # carries (test_signin_from_another_site.py)
        if method != "POST" or path == SIGN_IN_PATH:
            continue
        for data in ({}, {"csrf": "0" * 64}):
            answer = client.post(path, data={**data, "permission": "facts.read:self:location.home.*", "on": "1"})
            assert answer.status_code == 403, (path, data, answer.status_code)
            assert "nothing was changed" in answer.text
    assert not _switched_on(console)
    assert console.space.gems.list() != []


def test_the_csrf_token_of_another_session_does_not_work(console: ConsoleServer) -> None:
    """A token is bound to its session."""
    mine, other = console.client(), console.client()
    _install_weather(mine)
    foreign_token = csrf_of(other.get("/gems").text)
    answer = mine.post(
        "/gems/weather/permissions",
        data={"csrf": foreign_token, "permission": "facts.read:self:location.home.*", "on": "1"},
    )
    assert answer.status_code == 403
    assert not _switched_on(console)


def test_the_htmx_header_carries_the_token_too(console: ConsoleServer) -> None:
    """A partial update sends the token as X-CSRF-Token and is accepted."""
    client = console.client()
    _install_weather(client)
    token = csrf_of(client.get("/gems/weather").text)
    answer = client.post(
        "/gems/weather/permissions",
        data={"permission": "facts.read:self:location.home.*", "on": "1"},
        headers={"X-CSRF-Token": token, "HX-Request": "true"},
    )
    assert answer.status_code == 200
    assert 'aria-checked="true"' in answer.text
    assert "<html" not in answer.text
    assert _switched_on(console)


def test_a_cross_site_form_post_is_refused(console: ConsoleServer) -> None:
    """A form on another site, even with a valid token, cannot switch anything on."""
    client = console.client()
    _install_weather(client)
    token = csrf_of(client.get("/gems").text)
    data = {"csrf": token, "permission": "facts.read:self:location.home.*", "on": "1"}
    from_elsewhere = client.post(
        "/gems/weather/permissions",
        data=data,
        headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
    )
    assert from_elsewhere.status_code == 403
    fetch_site_only = client.post("/gems/weather/permissions", data=data, headers={"Sec-Fetch-Site": "cross-site"})
    assert fetch_site_only.status_code == 403
    assert not _switched_on(console)


@pytest.mark.parametrize(
    "origin",
    ["https://evil.example", "http://localhost:1", "null", "http://127.0.0.1.evil.example"],
)
def test_a_foreign_origin_is_refused(console: ConsoleServer, origin: str) -> None:
    """A request whose Origin is not the console's own address is refused."""
    client = console.client()
    _install_weather(client)
    token = csrf_of(client.get("/gems").text)
    answer = client.post(
        "/gems/weather/permissions",
        data={"csrf": token, "permission": "facts.read:self:location.home.*", "on": "1"},
        headers={"Origin": origin},
    )
    assert answer.status_code == 403
    assert not _switched_on(console)


def test_the_console_s_own_origin_is_accepted(console: ConsoleServer) -> None:
    """The browser's own same-origin post goes through."""
    client = console.client()
    _install_weather(client)
    token = csrf_of(client.get("/gems").text)
    answer = client.post(
        "/gems/weather/permissions",
        data={"csrf": token, "permission": "facts.read:self:location.home.*", "on": "1"},
        headers={"Origin": console.url, "Sec-Fetch-Site": "same-origin"},
    )
    assert answer.status_code == 303
    assert _switched_on(console)


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost.evil.example:{port}", "", "[::1"],
)
def test_a_foreign_host_header_is_refused_even_with_a_session(console: ConsoleServer, host: str) -> None:
    """DNS rebinding sends the attacker's own name as Host; the console refuses it."""
    client = console.client()
    _install_weather(client)
    token = csrf_of(client.get("/gems").text)
    header = host.format(port=console.port)
    page = client.get("/gems", headers={"Host": header})
    assert page.status_code in (400, 421)
    action = client.post(
        "/gems/weather/permissions",
        data={"csrf": token, "permission": "facts.read:self:location.home.*", "on": "1"},
        headers={"Host": header},
    )
    assert action.status_code in (400, 421)
    assert not _switched_on(console)


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}", "[::1]:{port}"])
def test_the_loopback_names_of_the_bound_port_are_accepted(console: ConsoleServer, host: str) -> None:
    """Localhost, 127.0.0.1 and [::1] on the console's port all reach it."""
    client = console.client()
    assert client.get("/gems", headers={"Host": host.format(port=console.port)}).status_code == 200


def test_the_rest_service_keeps_its_own_not_found_body_beside_the_console(console: ConsoleServer) -> None:
    """The console at / does not take over /api/knowledge."""
    answer = httpx.get(f"{console.url}/api/knowledge/no-such-route")
    assert answer.status_code == 404
    assert answer.json() == {"error": "Not found"}


def test_pages_are_never_cached_and_never_framed(console: ConsoleServer) -> None:
    """A page of the console cannot be framed by another site or kept by a cache."""
    answer = console.client().get("/gems")
    assert answer.headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert answer.headers["x-frame-options"] == "DENY"


def test_a_form_with_too_many_fields_is_refused_before_anything_runs(console: ConsoleServer) -> None:
    """The form parser's limits answer 400 with a sentence, not a crash."""
    client, token = console.signed_in("/gems")
    fields = [("csrf", token)] + [(f"f{n}", "x") for n in range(500)]
    answer = client.post(
        "/gems/review",
        content=str(httpx.QueryParams(tuple(fields))).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 400
    assert "could not be read" in answer.text


def test_a_wrong_method_on_the_rest_service_is_still_its_own_405(console: ConsoleServer) -> None:
    """The console's catch-all never answers for the REST service's paths."""
    answer = httpx.request("PATCH", f"{console.url}/api/knowledge/kb")
    assert answer.status_code == 405
    assert answer.json()["error"] == "Method Not Allowed"
    assert httpx.get(f"{console.url}/api/knowledgebase").status_code == 401


def test_signing_out_ends_the_session_for_every_copy_of_its_cookie(console: ConsoleServer) -> None:
    """After sign-out, the same cookie replayed by anyone (a copy taken before) is
    refused; before, it stayed valid until it expired, twelve hours on."""
    client, token = console.signed_in("/gems")
    cookies = dict(client.cookies)
    replay = httpx.Client(base_url=console.url, timeout=30, cookies=cookies)
    console.clients.append(replay)
    assert replay.get("/gems").status_code == 200

    assert client.post("/logout", data={"csrf": token}).status_code == 303

    assert replay.get("/gems").status_code == 401
    assert console.client().get("/gems").status_code == 200, "a new sign-in link still works"
