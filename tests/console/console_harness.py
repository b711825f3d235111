"""The harness of the console tests: a real ``notochord serve`` server (the same composition, in a
thread) on 127.0.0.1 over a fresh data directory, and browsers or HTTP clients that sign in to it."""

from __future__ import annotations

import html as html_module
import json
import re
import shutil
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from playwright.sync_api import Browser, Page, expect

import notochord
from notochord.cli.serve_cmd import build_server
from notochord.console.auth import ConsoleKeys
from notochord.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WEATHER = EXAMPLES / "weather"
RECIPES = EXAMPLES / "recipes"
SECRET = "console-tests-jwt-secret-0123456789-abcdefghijklmnop"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ConsoleServer:
    url: str
    port: int
    nc: notochord.Notochord
    server: uvicorn.Server
    thread: threading.Thread
    clients: list[httpx.Client] = field(default_factory=list)

    @property
    def space(self) -> notochord.Space:
        return self.nc.personal

    def login_url(self) -> str:
        return f"{self.url}/login?token={ConsoleKeys(self.nc.data_dir).mint_login_token()}"

    def client(self, *, signed_in: bool = True) -> httpx.Client:
        """An HTTP client of the console; signed in through a one-time link unless told otherwise."""
        client = httpx.Client(base_url=self.url, timeout=30)
        self.clients.append(client)
        if signed_in:
            answer = client.get(self.login_url())
            assert answer.status_code == 303, answer.text
        return client

    def signed_in(self, path: str) -> tuple[httpx.Client, str]:
        """A signed-in HTTP client and the CSRF token of the page at ``path``."""
        client = self.client()
        return client, csrf_of(client.get(path).text)

    def stop(self) -> None:
        for client in self.clients:
            client.close()
        self.server.should_exit = True
        self.thread.join(timeout=20)
        self.nc.close()


def start_console(data_dir: Path, **settings: Any) -> ConsoleServer:
    """A console server over ``data_dir``; ``settings`` override the tests' defaults."""
    chosen = Settings(**{"data_dir": data_dir, "index_in_background": False, "jwt_secret": SECRET, **settings})
    nc = notochord.open(data_dir, chosen, embedder=None)
    nc.personal  # noqa: B018  (the personal space exists before the first page)
    port = free_port()
    server = build_server(nc, chosen, host="127.0.0.1", port=port)
    thread = threading.Thread(target=server.run, name="console-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the console test server did not start")
        time.sleep(0.01)
    return ConsoleServer(url=f"http://127.0.0.1:{port}", port=port, nc=nc, server=server, thread=thread)


@contextmanager
def held_by_another_process(console: ConsoleServer) -> Iterator[None]:
    """The personal space's write lock, held by another connection the way a backup or a repair
    holds it: the console's writes wait ``sqlite_busy_timeout_ms`` for it, then give up."""
    holder = sqlite3.connect(Path(console.nc.data_dir) / "spaces" / "personal.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def chooser_gem(tmp_path: Path) -> Path:
    """A gem folder whose manifest asks only to read the collections the person ticks for it."""
    folder = tmp_path / "reader"
    folder.mkdir()
    manifest = {
        "id": "reader",
        "name": "reader",
        "permissions": {
            "knowledge": {"permissions": ["collections.read:user-selected"], "reason": "Read what you pick"}
        },
    }
    (folder / "notochord.json").write_text(json.dumps(manifest))
    return folder


def shown_text(answer: httpx.Response, pattern: str) -> str:
    """The text ``pattern``'s first group finds in the answer's page, unescaped; the test fails,
    showing the page, when it finds nothing."""
    found = re.search(pattern, answer.text, re.S)
    assert found is not None, answer.text
    return html_module.unescape(found.group(1))


ALERT = r'<p class="errors" role="alert"[^>]*>(.*?)</p>'
"""The refusal a page shows above its form."""


def element_pattern(element_id: str) -> str:
    """What :func:`shown_text` finds for the text of the element ``element_id``."""
    return rf'id="{re.escape(element_id)}"[^>]*>(.*?)</'


def csrf_of(html: str) -> str:
    """The CSRF token a console page embeds in its forms."""
    found = _CSRF.search(html)
    assert found is not None, "the page carries no CSRF token"
    return found.group(1)


def signed_in_page(browser: Browser, console: ConsoleServer, *, locale: str = "en-US", width: int = 1280) -> Page:
    """A fresh browser context signed in to ``console`` through its one-time link, on the gems page."""
    context = browser.new_context(locale=locale, viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(console.login_url())
    expect(page).to_have_url(f"{console.url}/gems")
    return page


def _errors_of(page: Page) -> list[str]:
    """The list the page's script errors and console errors are added to from now on."""
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    return problems


def assert_fits_a_phone(page: Page, url: str) -> None:
    """``url`` opened on a 360 px wide ``page``: no sideways scrolling, htmx loaded, and nothing
    breaking the Content-Security-Policy or raising in the page's scripts."""
    problems = _errors_of(page)
    page.goto(url)
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    # htmx and the style sheet load from the console itself, within its Content-Security-Policy
    assert page.evaluate("typeof window.htmx") == "object"
    assert problems == []


@pytest.fixture(name="console")
def impatient_console(tmp_path: Path) -> Iterator[ConsoleServer]:
    """A console whose store waits 0.2 s for a lock held by another process before giving up: a test
    module that imports this has it as its ``console``."""
    server = start_console(tmp_path / "data", sqlite_busy_timeout_ms=200)
    try:
        yield server
    finally:
        server.stop()
