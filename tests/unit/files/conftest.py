"""Fixtures for the files layer: a conversation folder, a trash, a history and workspaces."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from notochord.clock import FixedClock
from notochord.files.history import HISTORY_MAX_BYTES, VERSION_LIMIT, FileHistory, FolderTrash
from notochord.files.workspace import Workspace

MakeWorkspace = Callable[..., Workspace]


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime(2026, 9, 29, 8, 15, 0, tzinfo=UTC), "Europe/Amsterdam")


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    folder = tmp_path / "conversation"
    folder.mkdir()
    return folder


@pytest.fixture
def trash_dir(tmp_path: Path) -> Path:
    return tmp_path / "trash"


@pytest.fixture
def make_history(tmp_path: Path, clock: FixedClock, trash_dir: Path) -> Iterator[Callable[..., FileHistory]]:
    opened: list[FileHistory] = []

    def make(*, headless: bool = False, limit: int = VERSION_LIMIT, max_bytes: int = HISTORY_MAX_BYTES) -> FileHistory:
        history = FileHistory(
            tmp_path / "history",
            clock=clock,
            trash=None if headless else FolderTrash(trash_dir),
            version_limit=limit,
            max_bytes=max_bytes,
        )
        opened.append(history)
        return history

    yield make
    for history in opened:
        history.close()


@pytest.fixture
def history(make_history: Callable[..., FileHistory]) -> FileHistory:
    return make_history()


@pytest.fixture
def make_workspace(conversation: Path, history: FileHistory) -> MakeWorkspace:
    def make(
        *,
        run_id: str = "run-1",
        actor: str = "gem:demo",
        root: Path | None = conversation,
        run_root: Path | None = None,
        history: FileHistory = history,
    ) -> Workspace:
        return Workspace(root, history=history, actor=actor, run_id=run_id, run_root=run_root)

    return make


@pytest.fixture
def ws(make_workspace: MakeWorkspace) -> Workspace:
    return make_workspace()
