"""A backup killed part way leaves no copy of the vault behind for good; one still running is left alone.

A backup copies the vault into a hidden staging folder beside its destination (``.notochord-backup-…``)
and archives it from there. Killed part way (SIGKILL, a power cut), the process leaves that folder:
a readable copy of the vault, master key included, hidden on a backup disk the user may hand on. The
next backup into the same folder removes it. A backup still running in another process owns its
staging folder, and another backup into the same folder neither removes it nor waits for it
(OD-K47: every space of the vault is a file of its own, and every one of them is copied).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import textwrap
from contextlib import AbstractContextManager
from pathlib import Path

from halted_child import WAIT_S, running_until_ready
from notochord.backup import backup, restore

KEY = b"k" * 32

# Backs ``vault`` up into ``folder`` and stops for good after copying its first file, having written
# ``ready``: the parent then kills it, or backs up alongside it, at a known point.
_CHILD = textwrap.dedent(
    """
    import signal, sys
    from pathlib import Path
    import notochord.backup as taking

    vault, folder, ready = (Path(a) for a in sys.argv[1:4])
    copy = taking._snapshot

    def stalling(path, into):
        made = copy(path, into)
        ready.write_text("copying")
        while True:
            signal.pause()

    taking._snapshot = stalling
    taking.backup(vault, folder)
    """
)


def _vault(folder: Path) -> Path:
    (folder / "spaces").mkdir(parents=True)
    (folder / "master.key").write_bytes(KEY)
    with sqlite3.connect(folder / "spaces" / "personal.db") as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    conn.close()
    return folder


def _staging(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.startswith(".notochord-backup-"))


def _backing_up(vault: Path, folder: Path, tmp_path: Path) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """A backup running in another process, stopped after it copied one file."""
    return running_until_ready(_CHILD, str(vault), str(folder), ready=tmp_path / "ready", doing="copied anything")


def test_what_a_killed_backup_left_is_removed_by_the_next_backup_into_that_folder(tmp_path: Path) -> None:
    """Before, the hidden copy of the vault (its master key too) stayed on the backup disk for good."""
    vault = _vault(tmp_path / "vault")
    disk = tmp_path / "usb"
    disk.mkdir()
    with _backing_up(vault, disk, tmp_path) as child:
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=WAIT_S) == -signal.SIGKILL
    assert len(_staging(disk)) == 1, "the killed backup left its staging folder, as a real crash does"

    made = backup(vault, disk)

    assert os.listdir(disk) == [made.path.name]
    assert restore(made.path, tmp_path / "restored").files == 2


def test_a_backup_still_running_in_another_process_keeps_its_staging_folder(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    disk = tmp_path / "usb"
    disk.mkdir()
    with _backing_up(vault, disk, tmp_path) as child:
        running = _staging(disk)

        made = backup(vault, disk / "second.tar.gz")

        assert child.poll() is None
        assert sorted(os.listdir(disk)) == sorted([*running, "second.tar.gz"])
    assert restore(made.path, tmp_path / "restored").files == 2


def test_a_folder_of_the_users_that_only_looks_like_a_staging_folder_is_kept(tmp_path: Path) -> None:
    """Only folders named exactly as backups and restores name their own are ever removed."""
    vault = _vault(tmp_path / "vault")
    disk = tmp_path / "usb"
    mine = [disk / ".notochord-backup-notes", disk / ".notochord-restore-old", disk / ".notochord-backup-"]
    for folder in mine:
        folder.mkdir(parents=True)
        (folder / "keep.txt").write_text("mine")

    backup(vault, disk)
    restore(backup(vault, tmp_path / "b.tar.gz").path, disk / "restored")

    assert all((folder / "keep.txt").read_text() == "mine" for folder in mine)
