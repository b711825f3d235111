"""Fixtures of the document, collection and search tests.

Here ``nc`` / ``space`` run hybrid search: the deterministic fake embedder is injected, so both the
full-text and the vector leg take part, and tests call ``space.index.wait()`` before searching.
``text_space`` is a space without an embedder, for the properties of the full-text leg alone (a
vector leg ranks every readable passage by similarity, so only full text can show that a word is
*not* found).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from docs_fixtures import fake_embedder

import notochord
from notochord.clock import FixedClock
from notochord.settings import Settings
from postgres_server import BACKENDS


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def gems_root(tmp_path: Path) -> Path:
    """Where a test writes the manifests it installs."""
    return tmp_path / "gem-folders"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The search suite runs over both backends: SQLite files and PostgreSQL databases."""
    return str(request.param)


@pytest.fixture
def nc(tmp_path: Path, clock: FixedClock, new_database_url: Callable[[], str | None]) -> Iterator[notochord.Notochord]:
    """A data directory whose spaces embed with the fake embedder (indexing in the caller's thread)."""
    url = new_database_url()
    settings = Settings(data_dir=tmp_path / "data", index_in_background=False, database_url=url)
    with notochord.open(tmp_path / "data", settings, clock=clock, embedder=fake_embedder()) as opened:
        yield opened


@pytest.fixture
def text_space(
    tmp_path: Path, clock: FixedClock, new_database_url: Callable[[], str | None]
) -> Iterator[notochord.Space]:
    """A personal space with full-text search only."""
    url = new_database_url()
    settings = Settings(data_dir=tmp_path / "text-data", index_in_background=False, database_url=url)
    with notochord.open(tmp_path / "text-data", settings, clock=clock, embedder=None) as opened:
        yield opened.personal
