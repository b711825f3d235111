"""``notochord backup`` onto a disk without room for it says so before it starts, and by how much.

A backup is written beside its destination first (a copy of every file of the vault, then the
archive made from it), so while it is written it needs about twice the vault's size on that disk.
When the disk plainly has less, the backup is refused at once, with how much it needs and where,
instead of copying gigabytes first and failing late (OD-K47: a vault is a folder of separate files,
all of which are copied). The disk here is real: a small tmpfs mounted for the child process alone.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

KEY = b"k" * 32


def _vault(folder: Path, blob_bytes: int) -> Path:
    (folder / "spaces").mkdir(parents=True)
    (folder / "master.key").write_bytes(KEY)
    with sqlite3.connect(folder / "spaces" / "personal.db") as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    conn.close()
    (folder / "gems").mkdir()
    # random bytes: the archive is as large as the files, as a vault of encrypted gem storage is
    (folder / "gems" / "blob.bin").write_bytes(os.urandom(blob_bytes))
    return folder


def _backup_on_a_small_disk(disk: Path, size: str, vault: Path) -> subprocess.CompletedProcess[str]:
    """``notochord backup DISK/ --json`` with a tmpfs of ``size`` mounted at ``disk`` for it alone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
    env["NOTOCHORD_EMBEDDER"] = "none"
    command = [sys.executable, "-m", "notochord", "--data-dir", str(vault), "backup", f"{disk}/", "--json"]
    script = (
        f"mount -t tmpfs -o size={size} tmpfs {shlex.quote(str(disk))} && "
        f'"$@"; code=$?; ls -A {shlex.quote(str(disk))} >&2; exit $code'
    )
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", *command],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_a_backup_the_disk_has_no_room_for_is_refused_up_front_with_what_it_needs(tmp_path: Path) -> None:
    """3 MB of vault onto a 4 MB disk: the copy fits, the archive beside it would not. Before, the
    copy was made and the backup failed late with "the disk is full" and no sizes."""
    vault = _vault(tmp_path / "vault", 3_000_000)
    disk = tmp_path / "usb"
    disk.mkdir()

    done = _backup_on_a_small_disk(disk, "4m", vault)

    assert done.returncode == 8, done.stdout + done.stderr
    error = json.loads(done.stderr.splitlines()[0])["error"]
    assert error["code"] == "E_STORAGE_FULL"
    message = error["message"]
    assert f"needs about 6.0 MB free in {disk}" in message, message
    assert "4.2 MB are free" in message, message
    assert "Errno" not in message and ".notochord-" not in message
    assert done.stderr.splitlines()[1:] == [], "nothing is left on the disk"


def test_a_backup_the_disk_has_room_for_is_written(tmp_path: Path) -> None:
    """The control: the same vault onto a disk with room for both copies."""
    vault = _vault(tmp_path / "vault", 3_000_000)
    disk = tmp_path / "usb"
    disk.mkdir()

    done = _backup_on_a_small_disk(disk, "8m", vault)

    assert done.returncode == 0, done.stderr
    written = Path(json.loads(done.stdout)["path"])
    assert written.parent == disk
    assert [line for line in done.stderr.splitlines() if line] == [written.name]
