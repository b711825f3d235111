"""The space a file history's saved versions take is bounded; the oldest are dropped first.

P-FILE-22 keeps every replaced version; nothing in it bounds how many, so a gem rewriting a large
file all day would fill the disk. The history keeps its saved versions within ``max_bytes`` (the
``file_history_max_bytes`` setting), dropping the ones saved longest ago; a rollback (P-FILE-25)
that needs a dropped version leaves that path alone and says why.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from notochord.errors import FileError
from notochord.files.history import HISTORY_MAX_BYTES, FileHistory
from notochord.files.workspace import Workspace

MakeWorkspace = Callable[..., Workspace]
MakeHistory = Callable[..., FileHistory]

SIZE = 100
"""Bytes in every version written here, so a bound is a whole number of versions."""


def _version(n: int) -> bytes:
    """Content ``n``, exactly :data:`SIZE` bytes, different for every ``n``."""
    return f"version {n:04d} ".encode().ljust(SIZE, b".")


def _saved_bytes(store: Path) -> int:
    """Bytes of every saved version on disk, counted from the files themselves."""
    return sum(p.stat().st_size for p in (store / "blobs").rglob("*") if p.is_file())


def _store_bytes(store: Path) -> int:
    """Everything the history takes on disk: its index and its saved versions."""
    return sum(p.stat().st_size for p in store.rglob("*") if p.is_file())


def test_the_default_bound_is_two_gibibytes() -> None:
    assert HISTORY_MAX_BYTES == 2 * 1024 * 1024 * 1024


def test_saved_versions_stay_within_the_bound_after_many_overwrites(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, tmp_path: Path
) -> None:
    """P-FILE-22: every overwrite saves a version, yet the history never holds more than its bound."""
    history = make_history(max_bytes=5 * SIZE)
    ws = make_workspace(history=history)
    (conversation / "report.txt").write_bytes(_version(0))

    for n in range(1, 60):
        ws.write("workspace:report.txt", _version(n))
        assert _saved_bytes(tmp_path / "history") <= 5 * SIZE

    usage = history.usage()
    assert usage.used_bytes == _saved_bytes(tmp_path / "history") == 5 * SIZE
    assert usage.max_bytes == 5 * SIZE
    assert usage.versions == 5
    assert usage.dropped == 59 - 5


def test_the_oldest_versions_are_dropped_first(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path
) -> None:
    history = make_history(max_bytes=3 * SIZE)
    ws = make_workspace(history=history)
    (conversation / "report.txt").write_bytes(_version(0))
    for n in range(1, 7):
        ws.write("workspace:report.txt", _version(n))

    changes = history.changes()
    assert [c.old_dropped for c in changes] == [True, True, True, False, False, False]
    assert [c.old_in_history for c in changes] == [False, False, False, True, True, True]
    assert [history.old_version(c.id) for c in changes[3:]] == [_version(3), _version(4), _version(5)]
    with pytest.raises(FileError, match="dropped to keep the file history within its size"):
        history.old_version(changes[0].id)


def test_saving_content_again_makes_it_the_newest_version(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path
) -> None:
    """Versions are stored once per content: one saved again is as new as its latest save."""
    history = make_history(max_bytes=2 * SIZE)
    ws = make_workspace(history=history)
    (conversation / "a.txt").write_bytes(_version(0))
    (conversation / "b.txt").write_bytes(_version(1))
    ws.write("workspace:a.txt", _version(2))  # keeps version 0
    ws.write("workspace:b.txt", _version(0))  # keeps version 1
    ws.write("workspace:b.txt", _version(3))  # keeps version 0 again: now the newest
    ws.write("workspace:a.txt", _version(4))  # keeps version 2; version 1 is the oldest and goes

    kept = {history.old_version(c.id) for c in history.changes() if c.old_in_history}
    assert kept == {_version(0), _version(2)}


def test_the_version_just_saved_is_kept_even_when_it_alone_exceeds_the_bound(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path
) -> None:
    """P-FILE-26: without a trash there is nowhere else for it; every older one goes instead."""
    history = make_history(headless=True, max_bytes=2 * SIZE)
    ws = make_workspace(history=history)
    (conversation / "small.txt").write_bytes(_version(0))
    ws.write("workspace:small.txt", "new")
    (conversation / "big.bin").write_bytes(b"b" * (3 * SIZE))
    ws.write("workspace:big.bin", "small now")

    small, big = history.changes()
    assert small.old_dropped
    assert history.old_version(big.id) == b"b" * (3 * SIZE)
    assert history.usage().used_bytes == 3 * SIZE


def test_a_version_larger_than_the_whole_bound_goes_to_the_trash(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, trash_dir: Path
) -> None:
    """P-FILE-22, OD-P07: like one over the size limit, it is kept in the trash, and drops nothing."""
    history = make_history(max_bytes=2 * SIZE)
    ws = make_workspace(history=history)
    (conversation / "small.txt").write_bytes(_version(0))
    ws.write("workspace:small.txt", "new")
    (conversation / "big.bin").write_bytes(b"b" * (2 * SIZE + 1))
    ws.write("workspace:big.bin", "small now")

    small, big = history.changes()
    assert big.old_in_trash and not big.old_in_history
    assert [p.read_bytes() for p in trash_dir.iterdir()] == [b"b" * (2 * SIZE + 1)]
    assert small.old_in_history and not small.old_dropped


def test_rollback_of_a_run_whose_version_was_dropped_skips_it_while_a_newer_run_rolls_back(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path
) -> None:
    """P-FILE-25: the older run's earlier version is gone, so its file stays as the run left it, with
    the reason; the newer run's versions are still there and come back."""
    history = make_history(max_bytes=2 * SIZE)
    (conversation / "old.txt").write_bytes(_version(0))
    (conversation / "new.txt").write_bytes(_version(1))
    make_workspace(run_id="run-old", history=history).write("workspace:old.txt", "by the old run")
    newer = make_workspace(run_id="run-new", history=history)
    newer.write("workspace:new.txt", _version(2))
    newer.write("workspace:new.txt", "by the new run")

    skipped = history.rollback_run("run-old")
    restored = history.rollback_run("run-new")

    assert (skipped.restored, skipped.skipped) == ((), ("workspace:old.txt",))
    [(_, why)] = skipped.skip_reasons
    assert why.code == "version_dropped"
    assert why.values == (("setting", "file_history_max_bytes"),)
    assert "dropped to keep the file history within its size" in why.text
    assert "file_history_max_bytes" in why.text
    assert (conversation / "old.txt").read_text() == "by the old run"
    assert (restored.restored, restored.skipped) == (("workspace:new.txt",), ())
    assert (conversation / "new.txt").read_bytes() == _version(1)


def test_a_path_whose_first_version_in_the_run_was_dropped_is_left_as_the_run_left_it(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path
) -> None:
    """P-FILE-25: undoing only the run's later overwrites would leave a version from the middle of
    the run, which no one settled on; the whole path is skipped instead, other paths still go back."""
    history = make_history(max_bytes=3 * SIZE)
    ws = make_workspace(history=history)
    (conversation / "draft.txt").write_bytes(_version(0))
    (conversation / "other.txt").write_text("the user's")
    for n in range(1, 6):
        ws.write("workspace:draft.txt", _version(n))
    ws.write("workspace:other.txt", "the run's")

    report = history.rollback_run("run-1")

    assert report.restored == ("workspace:other.txt",)
    assert report.skipped == ("workspace:draft.txt",)
    assert (conversation / "draft.txt").read_bytes() == _version(5)
    assert (conversation / "other.txt").read_text() == "the user's"
    assert all(c.status == "applied" for c in history.changes() if c.display == "workspace:draft.txt")


def test_a_deleted_file_whose_copy_was_dropped_is_not_brought_back(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path
) -> None:
    """P-FILE-26: headless, the history's copy was the only one; once dropped, rollback says so."""
    history = make_history(headless=True, max_bytes=SIZE)
    ws = make_workspace(history=history)
    (conversation / "gone.txt").write_bytes(_version(0))
    (conversation / "later.txt").write_bytes(_version(1))
    ws.delete("workspace:gone.txt")
    ws.delete("workspace:later.txt")

    report = history.rollback_run("run-1")

    assert report.restored == ("workspace:later.txt",)
    assert report.skipped == ("workspace:gone.txt",)
    assert "file_history_max_bytes" in (report.reason("workspace:gone.txt") or "")
    assert not (conversation / "gone.txt").exists()


def test_the_history_on_disk_stops_growing_once_versions_are_dropped(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, tmp_path: Path
) -> None:
    """A dropped version's file is removed, so its space goes back to the disk at once; what is left
    growing is the index, a short row a change, far smaller than the versions it no longer keeps."""
    store = tmp_path / "history"
    large = 64 * 1024
    history = make_history(max_bytes=4 * large)
    ws = make_workspace(history=history)
    (conversation / "log.bin").write_bytes(b"0" * large)
    for n in range(1, 11):
        ws.write("workspace:log.bin", str(n).encode().ljust(large, b"."))
    after_ten = _saved_bytes(store)
    for n in range(11, 61):
        ws.write("workspace:log.bin", str(n).encode().ljust(large, b"."))

    assert _saved_bytes(store) == after_ten == 4 * large
    assert _store_bytes(store) < 6 * large  # 60 versions would take 60 × 64 KiB


def test_a_lower_bound_shrinks_the_history_at_the_next_save(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, tmp_path: Path
) -> None:
    """Changing the setting changes the bound: the next version saved brings the history within it."""
    store = tmp_path / "history"
    roomy = make_history(max_bytes=10 * SIZE)
    (conversation / "a.txt").write_bytes(_version(0))
    for n in range(1, 9):
        make_workspace(history=roomy).write("workspace:a.txt", _version(n))
    assert _saved_bytes(store) == 8 * SIZE
    roomy.close()

    tight = make_history(max_bytes=3 * SIZE)
    assert tight.usage().used_bytes == 8 * SIZE  # opening alone drops nothing
    make_workspace(history=tight).write("workspace:a.txt", _version(9))

    assert _saved_bytes(store) == 3 * SIZE
    assert tight.usage().max_bytes == 3 * SIZE
    assert [c.old_dropped for c in tight.changes()] == [True] * 6 + [False] * 3


def test_a_history_saved_before_the_bound_counts_its_existing_versions(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, tmp_path: Path
) -> None:
    """A history from before versions were listed is listed on opening, oldest change first."""
    first = make_history()
    (conversation / "a.txt").write_bytes(_version(0))
    for n in range(1, 4):
        make_workspace(history=first).write("workspace:a.txt", _version(n))
    first.close()
    with sqlite3.connect(tmp_path / "history" / "history.db") as db:
        db.execute("DROP TABLE versions")
        db.execute("ALTER TABLE changes DROP COLUMN old_dropped")
    db.close()

    reopened = make_history(max_bytes=2 * SIZE)
    assert reopened.usage().used_bytes == 3 * SIZE
    make_workspace(history=reopened).write("workspace:a.txt", _version(4))

    assert [c.old_dropped for c in reopened.changes()] == [True, True, False, False]


def test_a_bound_below_one_byte_is_refused(make_history: MakeHistory) -> None:
    with pytest.raises(FileError, match="file_history_max_bytes"):
        make_history(max_bytes=0)
