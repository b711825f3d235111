"""Fixtures shared by every test: a data directory with an injected clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import settings

import notochord
from notochord.clock import FixedClock
from notochord.settings import Settings

# Property tests judge behaviour, never speed: a slower machine must not turn an example into a failure.
settings.register_profile("notochord", deadline=None)
settings.load_profile("notochord")

# a real PostgreSQL server for the suites that run on both backends (started only when one asks)
pytest_plugins = ["postgres_server"]


@pytest.fixture(autouse=True)
def _per_user_data_dir_in_a_temporary_folder(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default data directory (the per-user data folder) points into a temporary folder, so no
    test, nor any command it starts, reads or writes the vault of the person running the tests."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


@pytest.fixture(autouse=True)
def _commands_hand_off_no_embedding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands run by the tests start no background embedding process (each would load the model
    while the suite runs); the tests of that hand-off switch it back on."""
    monkeypatch.setenv("NOTOCHORD_INDEX_IN_BACKGROUND", "false")


@pytest.fixture
def clock() -> FixedClock:
    """2026-09-29 10:00 in Amsterdam (08:00 UTC)."""
    return FixedClock(datetime(2026, 9, 29, 8, 0, tzinfo=UTC), tz_name="Europe/Amsterdam")


@pytest.fixture
def nc(tmp_path: Path, clock: FixedClock, new_database_url: Callable[[], str | None]) -> Iterator[notochord.Notochord]:
    """A data directory without an embedder: search runs on full text only, deterministic and fast.

    Tests of the vector leg inject a fake embedder, and integration tests use the real default one.
    Its spaces are SQLite files, or databases on the test PostgreSQL server where ``backend`` says so.
    """
    url = new_database_url()
    settings = Settings(data_dir=tmp_path / "data", index_in_background=False, database_url=url)
    with notochord.open(tmp_path / "data", settings, clock=clock, embedder=None) as opened:
        yield opened


@pytest.fixture
def space(nc: notochord.Notochord) -> notochord.Space:
    return nc.personal
