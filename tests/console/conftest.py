"""Fixtures of the console tests: one live server per test over its own data directory, and one
system Chromium per browser-test module (each test opens its own browser context)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from console_harness import CHROMIUM, ConsoleServer, start_console
from playwright.sync_api import Browser, sync_playwright


@pytest.fixture
def console(tmp_path: Path) -> Iterator[ConsoleServer]:
    server = start_console(tmp_path / "data")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM is not None, "the browser tests drive the system's Chromium: apt-get install chromium"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()
