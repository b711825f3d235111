"""The knowledge unit tests run over both backends: SQLite files and PostgreSQL databases."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import notochord
from notochord.clock import FixedClock
from notochord.settings import Settings
from postgres_server import BACKENDS


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def two(tmp_path: Path, clock: FixedClock, new_database_url: Callable[[], str | None]) -> Iterator[list[Any]]:
    """Two fresh personal spaces on the same clock and backend: one written one way, one the other."""
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(
                notochord.open(
                    tmp_path / name,
                    Settings(data_dir=tmp_path / name, index_in_background=False, database_url=new_database_url()),
                    clock=clock,
                    embedder=None,
                )
            ).personal
            for name in ("a", "b")
        ]
