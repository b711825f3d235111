"""A restore that was killed part way, and one that is still running in another process.

A restore unpacks into a hidden staging folder beside (or, for an existing empty data directory such
as a mount point, inside) the data directory and moves the vault into place only at the end. When the
process is killed (SIGKILL, a power cut) that folder stays behind. It is not the user's content: the
next restore removes it and goes on. But a restore that is really still running in another process
owns its staging folder; a second restore into the same place is refused in words and does not
trample it (OD-K47: each space is one file of the data directory, restored whole or not at all).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import textwrap
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from halted_child import WAIT_S, running_until_ready
from notochord.backup import backup, restore
from notochord.errors import ConfigurationError

KEY = b"k" * 32

# Restores ``archive`` into ``target`` and stops for good after unpacking its second file, having
# written ``ready``: the parent then kills it, or restores alongside it, at a known point.
_CHILD = textwrap.dedent(
    """
    import signal, sys
    from pathlib import Path
    from notochord.backup import restore, restoring

    archive, target, ready = (Path(a) for a in sys.argv[1:4])
    unpack = restoring._written
    unpacked = []

    def stalling(archive, member, *args):
        digest = unpack(archive, member, *args)
        unpacked.append(member.name)
        if len(unpacked) == 2:
            ready.write_text("unpacking")
            while True:
                signal.pause()
        return digest

    restoring._written = stalling
    restore(archive, target)
    """
)


def _vault(folder: Path) -> Path:
    (folder / "spaces").mkdir(parents=True)
    (folder / "master.key").write_bytes(KEY)
    with sqlite3.connect(folder / "spaces" / "personal.db") as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
        conn.execute("INSERT INTO notes VALUES (?)", ("carrots and thyme",))
    conn.close()
    (folder / "gems").mkdir()
    (folder / "gems" / "a.bin").write_bytes(os.urandom(50_000))
    (folder / "gems" / "b.bin").write_bytes(os.urandom(50_000))
    return folder


def _staging(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.startswith(".notochord-restore-"))


def _restoring(archive: Path, target: Path, tmp_path: Path) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """A restore running in another process, stopped part way through unpacking."""
    return running_until_ready(_CHILD, str(archive), str(target), ready=tmp_path / "ready", doing="unpacked anything")


def test_a_restore_killed_part_way_into_an_empty_folder_can_simply_be_run_again(tmp_path: Path) -> None:
    """The staging folder a killed restore leaves inside the empty data directory is not "content":
    before, the retry was refused with "is not empty" until the user found and deleted a hidden folder."""
    archive = backup(_vault(tmp_path / "vault"), tmp_path / "b.tar.gz").path
    target = tmp_path / "mount"
    target.mkdir()
    with _restoring(archive, target, tmp_path) as child:
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=WAIT_S) == -signal.SIGKILL
    assert len(_staging(target)) == 1, "the killed restore left its staging folder, as a real crash does"

    summary = restore(archive, target)

    assert summary.files == 4
    assert sorted(os.listdir(target)) == ["gems", "master.key", "spaces"]
    assert (target / "master.key").read_bytes() == KEY


def test_a_restore_killed_part_way_into_a_new_folder_leaves_nothing_behind_after_the_retry(tmp_path: Path) -> None:
    """Restoring into a folder that does not exist stages beside it; the retry removes what the
    killed restore left there (a copy of the vault, master key included) instead of keeping it hidden."""
    archive = backup(_vault(tmp_path / "vault"), tmp_path / "b.tar.gz").path
    parent = tmp_path / "restores"
    parent.mkdir()
    target = parent / "vault"
    with _restoring(archive, target, tmp_path) as child:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=WAIT_S)
    assert len(_staging(parent)) == 1

    restore(archive, target)

    assert sorted(os.listdir(parent)) == ["vault"]


def test_a_restore_still_running_in_another_process_is_not_trampled(tmp_path: Path) -> None:
    """A second restore into the same empty folder while the first is unpacking is refused, saying a
    restore is running; the first one's staging folder is left alone. Once it is gone, a retry works."""
    archive = backup(_vault(tmp_path / "vault"), tmp_path / "b.tar.gz").path
    target = tmp_path / "mount"
    target.mkdir()
    with _restoring(archive, target, tmp_path) as child:
        owned = _staging(target)
        with pytest.raises(ConfigurationError) as caught:
            restore(archive, target)
        assert "another restore" in caught.value.message
        assert str(target) in caught.value.message
        assert ".notochord-restore-" not in caught.value.message
        assert _staging(target) == owned
        assert child.poll() is None
        assert sorted(os.listdir(target)) == owned
    assert restore(archive, target).files == 4
    assert sorted(os.listdir(target)) == ["gems", "master.key", "spaces"]


def test_where_folders_cannot_be_locked_a_leftover_is_named_with_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a file system without locks (some network shares) a leftover cannot be told from a restore
    still running, so it is kept, and the refusal names it and says when to delete it. The lock is
    refused by a stand-in here: no such file system can be mounted for a unit test."""
    import errno
    import fcntl

    archive = backup(_vault(tmp_path / "vault"), tmp_path / "b.tar.gz").path
    target = tmp_path / "share"
    leftover = target / ".notochord-restore-k1ll3d_x" / "vault"
    leftover.mkdir(parents=True)
    (leftover / "master.key").write_bytes(KEY)

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(ConfigurationError) as caught:
        restore(archive, target)

    assert ".notochord-restore-k1ll3d_x" in caught.value.message
    assert "if no restore is running, delete it" in caught.value.message
    assert (leftover / "master.key").read_bytes() == KEY
