"""Passages written by one-shot commands become searchable by meaning without a manual reindex.

K-SRCH: a command that writes hands its pending passages to a background worker
and returns at once; the worker embeds them with the real default model and exits by itself. Real
processes throughout: each command is ``python -m notochord`` as a person would run it.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from notochord.cli import handoff
from notochord.search.vault_indexer import LOCK_NAME, SpaceStore, indexer_pid

NOTES = {
    "bread.md": "# Bread\n\nKnead the dough and let it rise overnight before baking.",
    "leave.md": "# Leave\n\nHolidays are booked through the staff portal two weeks ahead.",
}


def _notochord(data_dir: Path, *args: str, background: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
    env["NOTOCHORD_INDEX_IN_BACKGROUND"] = "true" if background else "false"
    return subprocess.run(
        [sys.executable, "-m", "notochord", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=True,
    )


@contextlib.contextmanager
def _embedding_elsewhere(data_dir: Path) -> Iterator[None]:
    """Hold the vault's indexer lock as a running ``serve`` (or worker) would, under this pid."""
    import fcntl

    with (data_dir / LOCK_NAME).open("w", encoding="ascii") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        lock.write(str(os.getpid()))
        lock.flush()
        yield


def _pending(data_dir: Path) -> int:
    status = json.loads(_notochord(data_dir, "status", "--json", background=False).stdout)
    return sum(int(space["pending"]) for space in status["spaces"])


def _notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.slow
def test_a_command_that_writes_hands_its_passages_to_a_worker_that_embeds_them_and_exits(tmp_path: Path) -> None:
    """The import returns before anything is embedded; within bounded time every passage has its
    vector, a query sharing no word with a note finds it, and the worker has exited."""
    data_dir = tmp_path / "vault"
    _notochord(data_dir, "init", background=True)
    _notochord(data_dir, "docs", "import", str(_notes(tmp_path)), background=True)
    deadline = time.monotonic() + 240
    while _pending(data_dir) > 0:
        if time.monotonic() > deadline:
            log = (data_dir / "logs" / handoff.LOG_NAME).read_text(encoding="utf-8", errors="replace")
            pytest.fail(f"passages still pending after four minutes; worker log:\n{log}")
        time.sleep(1)
    found = json.loads(_notochord(data_dir, "search", "vacation days", "--json", background=False).stdout)
    assert found and found[0]["title"] == "Leave"
    deadline = time.monotonic() + 60
    while indexer_pid(data_dir) is not None:
        assert time.monotonic() < deadline, "the background worker did not exit once nothing was pending"
        time.sleep(0.5)


def test_with_background_indexing_off_a_command_starts_no_worker(tmp_path: Path) -> None:
    """``index_in_background = false``: passages wait for ``notochord reindex``; no worker, no log."""
    data_dir = tmp_path / "vault"
    _notochord(data_dir, "init", background=False)
    _notochord(data_dir, "docs", "import", str(_notes(tmp_path)), background=False)
    assert _pending(data_dir) == len(NOTES)
    assert not (data_dir / "logs" / handoff.LOG_NAME).exists()
    assert indexer_pid(data_dir) is None


def test_nothing_is_handed_off_while_another_process_embeds_the_vault(tmp_path: Path) -> None:
    """A running ``serve`` (or worker) holds the lock: commands leave their passages to it."""
    data_dir = tmp_path / "vault"
    _notochord(data_dir, "init", background=False)
    _notochord(data_dir, "docs", "import", str(_notes(tmp_path)), background=False)
    with _embedding_elsewhere(data_dir):
        spaces: list[tuple[str, SpaceStore]] = [("personal", data_dir / "spaces" / "personal.db")]
        assert handoff.hand_off(data_dir, spaces, "any-model") is False
    assert not (data_dir / "logs" / handoff.LOG_NAME).exists()


def test_nothing_is_handed_off_when_no_passage_is_pending(tmp_path: Path) -> None:
    data_dir = tmp_path / "vault"
    _notochord(data_dir, "init", background=False)
    spaces: list[tuple[str, SpaceStore]] = [("personal", data_dir / "spaces" / "personal.db")]
    assert handoff.hand_off(data_dir, spaces, "any-model") is False
    assert not (data_dir / "logs").exists()


def test_reindex_while_another_process_embeds_the_vault_is_busy_and_embeds_nothing(tmp_path: Path) -> None:
    """Two processes embedding the same passages side by side would each do all the work: a reindex
    started while a running serve or worker holds the lock says who embeds them and where to follow
    it, and exits busy (10)."""
    data_dir = tmp_path / "vault"
    _notochord(data_dir, "init", background=False)
    _notochord(data_dir, "docs", "import", str(_notes(tmp_path)), background=False)
    with _embedding_elsewhere(data_dir):
        env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
        busy = subprocess.run(
            [sys.executable, "-m", "notochord", "--data-dir", str(data_dir), "reindex", "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
    assert busy.returncode == 10, busy.stderr
    refusal = json.loads(busy.stdout or busy.stderr)
    assert refusal["error"]["code"] == "E_BUSY"
    assert f"pid {os.getpid()}" in refusal["error"]["message"]
    assert "notochord status" in refusal["error"]["message"]
    assert _pending(data_dir) == len(NOTES)
