"""The ``file_history_max_bytes`` setting: read, checked, wired to the gems' file history, and shown
by ``notochord files history`` against the space the saved versions take.

P-FILE-21 (the history is visible), P-FILE-22 (old versions are saved, within the bound).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gemfiles_fixtures import GemSpace
from typer.testing import CliRunner

import notochord
from notochord.cli import files_cmd
from notochord.clock import FixedClock
from notochord.errors import ConfigurationError
from notochord.files.history import HISTORY_MAX_BYTES
from notochord.gems.folders import GemFolders
from notochord.settings import Settings

pytestmark = pytest.mark.anyio


def _run(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(files_cmd.app, [*args, "--data-dir", str(data_dir)], env=env)
    assert result.exit_code == 0, f"{args}: {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _json(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return json.loads(_run(data_dir, *args, "--json", env=env))


def test_the_setting_defaults_to_the_history_bound() -> None:
    assert Settings().file_history_max_bytes == HISTORY_MAX_BYTES == 2 * 1024**3


def test_the_setting_is_read_from_the_environment() -> None:
    settings = Settings.load(environ={"NOTOCHORD_FILE_HISTORY_MAX_BYTES": "1048576"})
    assert settings.file_history_max_bytes == 1024 * 1024


@pytest.mark.parametrize("value", ["0", "-5", "lots"], ids=["zero", "negative", "not-a-number"])
def test_a_bound_that_is_not_a_positive_number_is_refused(value: str) -> None:
    with pytest.raises(ConfigurationError, match="file_history_max_bytes"):
        Settings.load(environ={"NOTOCHORD_FILE_HISTORY_MAX_BYTES": value})


def test_the_setting_bounds_the_history_the_composition_root_gives_gems(tmp_path: Path, clock: FixedClock) -> None:
    settings = Settings(data_dir=tmp_path / "data", index_in_background=False, file_history_max_bytes=300)
    with notochord.open(tmp_path / "data", settings, clock=clock, embedder=None) as nc:
        folders = nc.personal.gems.services.gem_folders
        assert isinstance(folders, GemFolders)
        history = folders.history(tmp_path, clock=clock)
        try:
            assert history.max_bytes == 300
        finally:
            history.close()


async def test_files_history_shows_the_space_against_the_bound_and_the_dropped_versions(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    gem_space.folders.history_max_bytes = 250
    (chat / "menu.md").write_bytes(b"a" * 100)
    ctx = gem_space.ctx(gem, conversation=chat, run_id="run-edit")
    for n in range(1, 5):
        await ctx.files.write("workspace:menu.md", str(n).encode() * 100)
    env = {"NOTOCHORD_FILE_HISTORY_MAX_BYTES": "250"}

    space = _json(gem_space.data_dir, "history", str(chat), "--space", env=env)
    changes = _json(gem_space.data_dir, "history", str(chat), env=env)
    text = _run(gem_space.data_dir, "history", str(chat), env=env)

    assert space == {
        "usedBytes": 200,
        "maxBytes": 250,
        "versions": 2,
        "droppedVersions": 2,
        "setting": "file_history_max_bytes",
    }
    assert [c["oldVersionDropped"] for c in changes] == [True, True, False, False]
    assert [c["oldVersionKept"] for c in changes] == [False, False, True, True]
    assert "saved versions: 200 bytes of 250 bytes" in text
    assert "2 earlier version(s) dropped" in text
    assert text.count("(earlier version dropped)") == 2


def test_files_history_of_an_untouched_folder_shows_the_default_bound(gem_space: GemSpace, chat: Path) -> None:
    text = _run(gem_space.data_dir, "history", str(chat))
    assert "(no changes recorded)" in text
    assert "saved versions: 0 bytes of 2.0 GiB" in text
