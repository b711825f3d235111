"""A sign-in link opened from another site: a chat, a web mail, a page that links to it.

The browser says such a visit is ``Sec-Fetch-Site: cross-site``, and the console refuses cross-site
requests, so that no other site can drive it. A sign-in link is the one thing a person may well
open that way; the console then asks before it signs in: a page with one button, whose form is
posted from the console's own page. Opening the link spends nothing and starts no session, so a
link a page opens on its own signs nobody in; everything else stays refused cross-site.
"""

from __future__ import annotations

import http.server
import re
import threading

from console_harness import ConsoleServer
from playwright.sync_api import Browser, expect

CROSS_SITE = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}


def _token(console: ConsoleServer) -> str:
    return console.login_url().split("token=")[1]


def test_a_link_opened_from_another_site_asks_before_it_signs_in(console: ConsoleServer) -> None:
    token = _token(console)
    browser = console.client(signed_in=False)
    asked = browser.get("/login", params={"token": token}, headers=CROSS_SITE)
    assert asked.status_code == 200
    assert "set-cookie" not in asked.headers
    assert asked.headers["cache-control"] == "no-store"
    # the link, in the page's address, is never sent to another site
    assert asked.headers["referrer-policy"] == "same-origin"
    assert "frame-ancestors 'none'" in asked.headers["content-security-policy"]
    form = re.search(r'<form method="post" action="/login">(.*?)</form>', asked.text, re.S)
    assert form is not None, asked.text
    assert f'name="token" value="{token}"' in form.group(1)
    assert "Continue" in form.group(1)
    assert browser.get("/gems").status_code == 401

    signed_in = browser.post("/login", data={"token": token}, headers={"Origin": console.url})
    assert signed_in.status_code == 303
    assert signed_in.headers["location"] == "/"
    assert "samesite=strict" in signed_in.headers["set-cookie"].lower()
    assert browser.get("/gems").status_code == 200


def test_asking_spends_nothing_and_the_link_still_works_once(console: ConsoleServer) -> None:
    token = _token(console)
    browser = console.client(signed_in=False)
    for _ in range(3):
        assert browser.get("/login", params={"token": token}, headers=CROSS_SITE).status_code == 200
        assert browser.head("/login", params={"token": token}, headers=CROSS_SITE).status_code == 200
    assert browser.post("/login", data={"token": token}).status_code == 303
    again = console.client(signed_in=False).post("/login", data={"token": token})
    assert again.status_code == 401
    assert "already used" in again.text
    used = console.client(signed_in=False).get("/login", params={"token": token}, headers=CROSS_SITE)
    assert used.status_code == 401
    assert "already used" in used.text


def test_a_post_of_the_sign_in_form_from_another_site_is_refused(console: ConsoleServer) -> None:
    """Another site may link to the console, never post to it: the form only works from the console."""
    token = _token(console)
    browser = console.client(signed_in=False)
    refused = browser.post(
        "/login", data={"token": token}, headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    )
    assert refused.status_code == 403
    assert "set-cookie" not in refused.headers
    assert browser.post("/login", data={"token": token}).status_code == 303


def test_a_forged_token_posted_signs_nobody_in(console: ConsoleServer) -> None:
    browser = console.client(signed_in=False)
    for data in ({"token": "nonsense"}, {}, {"token": ""}):
        answer = browser.post("/login", data=data)
        assert answer.status_code == 401
        assert "set-cookie" not in answer.headers
    assert browser.get("/gems").status_code == 401


def test_every_other_page_is_still_refused_cross_site(console: ConsoleServer) -> None:
    browser, _ = console.signed_in("/gems")
    for path in ("/gems", "/changes", "/knowledge", "/login/other", "/"):
        assert browser.get(path, headers=CROSS_SITE).status_code == 403, path


def test_in_a_browser_a_link_clicked_on_another_site_signs_in_after_one_click(
    browser: Browser, console: ConsoleServer
) -> None:
    """The whole way in Chromium: a page on another site (``localhost`` is another site than
    ``127.0.0.1``) links to the sign-in link; the console asks, and its button signs in."""
    link = console.login_url()
    assert link.startswith("http://127.0.0.1:")
    page_with_link = f'<!doctype html><a href="{link}">open my vault</a>'.encode()

    class Linking(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page_with_link)))
            self.end_headers()
            self.wfile.write(page_with_link)

        def log_message(self, format: str, *args: object) -> None:
            pass

    other_site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Linking)
    threading.Thread(target=other_site.serve_forever, daemon=True).start()
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"http://localhost:{other_site.server_address[1]}/")
        page.get_by_role("link", name="open my vault").click()
        expect(page.get_by_role("heading", name="Sign in to the console")).to_be_visible()
        page.get_by_role("button", name="Continue").click()
        expect(page).to_have_url(f"{console.url}/gems")
        expect(page.get_by_role("heading", name="Gems")).to_be_visible()
    finally:
        context.close()
        other_site.shutdown()
        other_site.server_close()
