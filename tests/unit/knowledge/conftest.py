"""The knowledge unit tests run over both backends: SQLite files and PostgreSQL databases."""

from __future__ import annotations

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
    with (
        notochord.open(
            tmp_path / "a",
            Settings(data_dir=tmp_path / "a", index_in_background=False, database_url=new_database_url()),
            clock=clock,
            embedder=None,
        ) as first,
        notochord.open(
            tmp_path / "b",
            Settings(data_dir=tmp_path / "b", index_in_background=False, database_url=new_database_url()),
            clock=clock,
            embedder=None,
        ) as second,
    ):
        yield [first.personal, second.personal]
