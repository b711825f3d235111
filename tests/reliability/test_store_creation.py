"""A space's file appears complete or not at all, so an empty one is damage, never a new space.

K-CON-08 / OD-K47: each space is one file of the data directory. Made in place, a creation killed
between SQLite creating the file and the schema's commit leaves a zero-byte file, indistinguishable
from a store whose contents were lost (a failed copy, a truncating program) — and such a file used
to be opened as a brand-new empty space, hiding the loss behind a working, empty vault.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

import notochord
from halted_child import running_until_ready
from notochord.built_aside import CREATING_MARK
from notochord.errors import StorageError
from notochord.settings import Settings

# Opens a fresh data directory and stops for good once the new store's schema is in its building
# file, before that file is placed: the parent kills it there.
_CREATING_CHILD = textwrap.dedent(
    """
    import signal, sys
    from pathlib import Path
    import notochord
    import notochord.db.creation as creation
    from notochord.settings import Settings

    data, ready = Path(sys.argv[1]), Path(sys.argv[2])
    real_migrate = creation.migrate

    def stalling(engine):
        real_migrate(engine)
        ready.write_text("schema written, not placed")
        while True:
            signal.pause()

    creation.migrate = stalling
    notochord.open(data, Settings(data_dir=data, index_in_background=False, embedder="none"), embedder=None).personal
    """
)


def _settings(data: Path) -> Settings:
    return Settings(data_dir=data, index_in_background=False, embedder="none")


def _leftovers(spaces: Path) -> list[str]:
    return sorted(p.name for p in spaces.iterdir() if CREATING_MARK in p.name)


def test_a_store_emptied_to_zero_bytes_is_refused_in_words_and_left_as_it_is(tmp_path: Path) -> None:
    """K-CON-08: the loss is reported with what to do; the empty file is not turned into a new space."""
    data = tmp_path / "vault"
    with notochord.open(data, _settings(data), embedder=None) as nc:
        nc.personal.user.facts.put(predicate="location.home.city", value="Utrecht")
    store = data / "spaces" / "personal.db"
    store.write_bytes(b"")
    for side in (Path(f"{store}-wal"), Path(f"{store}-shm")):
        side.unlink(missing_ok=True)

    with pytest.raises(StorageError) as refused, notochord.open(data, _settings(data), embedder=None) as nc:
        nc.personal.status()

    assert "is an empty file" in refused.value.message
    assert "notochord restore" in refused.value.message
    assert store.stat().st_size == 0, "nothing was written into the emptied file"
    assert sorted(p.name for p in store.parent.iterdir()) == ["personal.db"]


def test_a_creation_killed_before_its_store_is_complete_leaves_no_store_at_its_name(tmp_path: Path) -> None:
    """K-CON-08: the half-made store stays under its hidden building name; the next open makes the
    space afresh, removes what the dead process left, and works."""
    data = tmp_path / "vault"
    with running_until_ready(_CREATING_CHILD, str(data), ready=tmp_path / "ready", doing="wrote the schema"):
        spaces = data / "spaces"
        assert not (spaces / "personal.db").exists()
        assert _leftovers(spaces), "the store is built under its hidden name"

    with notochord.open(data, _settings(data), embedder=None) as nc:
        nc.personal.user.facts.put(predicate="location.home.city", value="Utrecht")
        assert _leftovers(spaces) == [], "a dead creation's building files are removed"
        assert [f.value for f in nc.personal.user.facts.lookup("self", "location.home.city")] == ["Utrecht"]


def test_a_building_file_of_a_process_still_running_is_left_alone(tmp_path: Path) -> None:
    """Another process may be building the same store right now: its file is not removed under it."""
    spaces = tmp_path / "vault" / "spaces"
    spaces.mkdir(parents=True)
    alive = spaces / f".personal.db{CREATING_MARK}{os.getpid()}-0abc"
    alive.write_bytes(b"being built")

    with notochord.open(tmp_path / "vault", _settings(tmp_path / "vault"), embedder=None) as nc:
        nc.personal.status()

    assert alive.read_bytes() == b"being built"
    assert nc.spaces() == ["personal"], "no listing of spaces shows a store being built"
