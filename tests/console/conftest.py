"""Fixtures of the console tests: one live server per test over its own data directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from console_harness import ConsoleServer, start_console


@pytest.fixture
def console(tmp_path: Path) -> Iterator[ConsoleServer]:
    server = start_console(tmp_path / "data")
    try:
        yield server
    finally:
        server.stop()
