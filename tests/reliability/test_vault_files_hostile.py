"""The vault's files when they are damaged, foreign, old, or the disk misbehaves.

A space's database may be replaced by another program's, written by a newer notochord, turn into a
folder, or be held locked by another process; a backup file may be crafted to read or write outside
the folder it is restored into; the disk a backup or a restore writes to may be full, read-only or
a mount of its own. Every one of these is answered with an error of notochord's own tree, in words
that say what is wrong and what to do, and the bad input changes nothing (K-CON-08, OD-K47: each
space is a file of its own, opened on its own).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sqlite3
import sys
import tarfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import notochord
from fault_sandbox import FILL, run_on_small_disk, run_read_only
from notochord import backup as backup_module
from notochord.backup import MANIFEST, backup, restore
from notochord.clock import FixedClock
from notochord.errors import (
    ConfigurationError,
    ReadOnlyStoreError,
    StorageError,
    StorageFullError,
    StoreLockedError,
)
from notochord.settings import Settings

KEY = b"k" * 32


def _settings(data: Path, **extra: Any) -> Settings:
    return Settings(data_dir=data, index_in_background=False, embedder="none", **extra)


@pytest.fixture
def vault(tmp_path: Path, clock: FixedClock) -> Path:
    """A vault closed cleanly, holding one fact and one document in its personal space."""
    data = tmp_path / "vault"
    with notochord.open(data, _settings(data), clock=clock, embedder=None) as nc:
        nc.personal.user.facts.put(predicate="work.title", value="baker")
        nc.personal.user.documents.upsert(collection="keep", key="k", title="Stew", body="carrots and thyme")
    return data


def _open(data: Path, **extra: Any) -> notochord.Notochord:
    return notochord.open(data, _settings(data, **extra), embedder=None, create=False)


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ---------------------------------------------------------------- a space's database


def test_a_space_written_by_a_newer_notochord_is_refused_in_words_and_left_unchanged(vault: Path) -> None:
    """OD-K47: a space file whose schema is newer than this version knows says to upgrade notochord
    (before: Alembic's "Can't locate revision" escaped as a foreign exception)."""
    database = vault / "spaces" / "personal.db"
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    conn.close()
    before = database.read_bytes()
    with pytest.raises(StorageError, match="newer version of notochord wrote it; upgrade notochord") as caught:
        _open(vault).personal  # noqa: B018  (opening the space is the act under test)
    assert "9999" in caught.value.message
    assert "revision" not in caught.value.message
    assert database.read_bytes() == before


def test_another_programs_database_in_place_of_a_space_is_refused_and_not_written_into(vault: Path) -> None:
    """OD-K47: a SQLite file of another program where a space belongs is refused; notochord's tables
    are never written into someone else's data (before: the file was migrated and served as an empty space)."""
    database = vault / "spaces" / "org-acme.db"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
        conn.execute("INSERT INTO people VALUES ('Ada')")
    conn.close()
    with pytest.raises(StorageError, match="is not a notochord database") as caught:
        _open(vault).org("acme")
    assert "restore" in caught.value.message
    with sqlite3.connect(database) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        people = conn.execute("SELECT name FROM people").fetchall()
    conn.close()
    assert tables == {"people"}
    assert people == [("Ada",)]


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _open_by_cli(data: Path, *org: str) -> Any:
    from typer.testing import CliRunner

    from notochord.cli import app as cli_app

    argv = ["--data-dir", str(data), "facts", "lookup", *(["--org", org[0]] if org else [])]
    return CliRunner().invoke(cli_app, argv, env={"NOTOCHORD_EMBEDDER": "none"})


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_another_programs_database_is_refused_byte_for_byte_unchanged_by_the_api_and_the_cli(
    vault: Path, journal: str
) -> None:
    """OD-K47, K-CON-08: another program's SQLite file where a space belongs is refused before
    anything is written to it: not even its journal mode is switched, and no -wal or -shm file is
    left beside it (before: the open had already switched it to WAL, rewriting its header, and left
    its -wal and -shm files behind)."""
    spaces = vault / "spaces"
    database = spaces / "org-acme.db"
    conn = sqlite3.connect(database)
    conn.execute(f"PRAGMA journal_mode={journal}")
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.execute("INSERT INTO people VALUES ('Ada')")
    conn.commit()
    conn.close()
    before, listing = database.read_bytes(), _listing(spaces)
    assert listing == ["org-acme.db", "personal.db"]
    with pytest.raises(StorageError, match="is not a notochord database"), _open(vault) as nc:
        nc.org("acme")
    assert database.read_bytes() == before
    assert _listing(spaces) == listing
    result = _open_by_cli(vault, "acme")
    assert result.exit_code == 1, result.output
    assert "is not a notochord database" in result.output
    assert "move it away" in result.output
    assert database.read_bytes() == before
    assert _listing(spaces) == listing


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_a_space_of_a_newer_notochord_is_refused_byte_for_byte_unchanged_by_the_api_and_the_cli(
    vault: Path, journal: str
) -> None:
    """OD-K47: a space file a newer notochord wrote is refused before anything is written, whatever
    its journal (a backup leaves its files in rollback mode): the file and its folder stay as they
    were (before: a file in rollback mode was switched to WAL before the refusal)."""
    spaces = vault / "spaces"
    database = spaces / "personal.db"
    conn = sqlite3.connect(database)
    conn.execute(f"PRAGMA journal_mode={journal}")
    conn.execute("UPDATE alembic_version SET version_num = '9999'")
    conn.commit()
    conn.close()
    before, listing = database.read_bytes(), _listing(spaces)
    assert listing == ["personal.db"]
    with (
        pytest.raises(StorageError, match="newer version of notochord wrote it; upgrade notochord"),
        _open(vault) as nc,
    ):
        nc.personal  # noqa: B018  (opening the space is the act under test)
    assert database.read_bytes() == before
    assert _listing(spaces) == listing
    result = _open_by_cli(vault)
    assert result.exit_code == 2, result.output  # an expected outcome: upgrade, as the message says
    assert "upgrade notochord" in result.output
    assert database.read_bytes() == before
    assert _listing(spaces) == listing


def test_a_space_restored_in_rollback_mode_is_switched_to_wal_once_it_is_known(vault: Path) -> None:
    """OD-K47: the journal switch waits until the file is known to be notochord's, and still happens:
    a space in rollback mode, as a backup leaves it, is in WAL once opened and keeps its data."""
    database = vault / "spaces" / "personal.db"
    conn = sqlite3.connect(database)
    assert conn.execute("PRAGMA journal_mode=DELETE").fetchone() == ("delete",)
    conn.close()
    with _open(vault) as nc:
        with nc.personal.core.store.read() as read:
            assert read.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert [f.value for f in nc.personal.user.facts.lookup("self")] == ["baker"]


def test_a_space_database_that_is_a_folder_is_named_as_such(vault: Path) -> None:
    """A folder where the space's file belongs: the message says so, not SQLite's "unable to open"."""
    folder = vault / "spaces" / "org-acme.db"
    folder.mkdir()
    with pytest.raises(StorageError, match="is a folder, not a database file") as caught:
        _open(vault).org("acme")
    assert "unable to open" not in caught.value.message
    assert folder.is_dir() and list(folder.iterdir()) == []


def test_a_store_locked_by_another_process_for_long_says_so_and_changes_nothing(vault: Path) -> None:
    """A write that waited out the busy timeout names the cause and the setting, in notochord's words
    (before: SQLite's bare "database is locked")."""
    database = vault / "spaces" / "personal.db"
    with _open(vault, sqlite_busy_timeout_ms=300) as nc:
        space = nc.personal
        holder = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
        try:
            holder.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreLockedError, match="another process kept the store locked") as caught:
                space.user.facts.put(predicate="work.title", value="cook")
            assert "sqlite_busy_timeout_ms" in caught.value.message
            assert "database is locked" not in caught.value.message
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert [f.value for f in space.user.facts.lookup("self")] == ["baker"]


def test_a_command_that_finds_the_store_locked_for_long_exits_busy(vault: Path) -> None:
    """Exit code 10 (busy: retry later), as for any other work that must wait its turn, not 1
    ("unexpected"): a script can tell a store another process holds from a fault."""
    from typer.testing import CliRunner

    from notochord.cli import app as cli_app

    holder = sqlite3.connect(vault / "spaces" / "personal.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        argv = ["--data-dir", str(vault), "facts", "put", "work.title", "cook"]
        env = {"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_SQLITE_BUSY_TIMEOUT_MS": "300"}
        result = CliRunner().invoke(cli_app, argv, env=env)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == 10, result.output
    assert "another process kept the store locked" in result.output
    with _open(vault) as nc:
        assert [f.value for f in nc.personal.user.facts.lookup("self")] == ["baker"]


# ---------------------------------------------------------------- backups crafted to harm


def _crafted(path: Path, files: list[Any], members: dict[str, bytes]) -> Path:
    """A gzip tar with a manifest listing ``files`` and the ``members`` under ``vault/``."""
    manifest = json.dumps({"format": "notochord-backup", "version": 1, "created": "x", "files": files}).encode()
    with tarfile.open(path, "w:gz") as archive:
        for name, data in {MANIFEST: manifest, **{f"vault/{k}": v for k, v in members.items()}}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def _entry(path: str, data: bytes) -> dict[str, Any]:
    return {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


OUTSIDE = Path("/etc/hostname") if Path("/etc/hostname").is_file() else Path("/etc/passwd")


@pytest.mark.parametrize(
    "listed",
    [
        pytest.param(lambda: _entry(str(OUTSIDE), OUTSIDE.read_bytes()), id="absolute-path-outside"),
        pytest.param(lambda: _entry("../../outside", b"x"), id="dot-dot"),
        pytest.param(lambda: _entry("spaces/../master.key", KEY), id="dot-dot-inside"),
        pytest.param(lambda: "master.key", id="not-an-object"),
        pytest.param(
            lambda: {"path": "master.key", "size": "32", "sha256": _entry("k", KEY)["sha256"]}, id="size-text"
        ),
        pytest.param(lambda: {"path": "master.key", "size": 32}, id="no-digest"),
        pytest.param(lambda: _entry("master.key", KEY), id="listed-twice"),
        pytest.param(lambda: _entry("spaces/a\x00b", b"x"), id="nul-in-path"),
    ],
)
def test_a_backup_whose_record_names_files_outside_or_malformed_is_refused_and_restores_nothing(
    tmp_path: Path, listed: Callable[[], Any]
) -> None:
    """The manifest is hostile input: a path outside the vault is never read (before: an absolute
    path was hashed where it lay and counted as restored), and an entry that is not a file record
    is refused by name (before: AttributeError or ValueError, the latter after the vault was in place)."""
    archive = _crafted(tmp_path / "crafted.tar.gz", [_entry("master.key", KEY), listed()], {"master.key": KEY})
    target = tmp_path / "restored"
    with pytest.raises(ConfigurationError, match=r"is damaged|is not a notochord backup"):
        restore(archive, target)
    assert not target.exists()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".notochord-restore-")] == []


def test_a_backup_with_a_master_key_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    """A vault restored with such a key could never be opened: refused before it is put in place."""
    short = b"abc"
    archive = _crafted(tmp_path / "short-key.tar.gz", [_entry("master.key", short)], {"master.key": short})
    target = tmp_path / "restored"
    with pytest.raises(ConfigurationError, match="master key is not 32 bytes"):
        restore(archive, target)
    assert not target.exists()


def test_restore_into_a_path_that_is_a_file_says_it_is_a_file_and_leaves_it(vault: Path, tmp_path: Path) -> None:
    """Not "is not empty": the path is a file, and it is left as it was."""
    archive = backup(vault, tmp_path / "b.tar.gz").path
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    with pytest.raises(ConfigurationError, match="is a file, not a folder"):
        restore(archive, target)
    assert target.read_text() == "mine"


# ---------------------------------------------------------------- where a backup is written


def test_a_backup_into_the_vault_through_a_symlinked_folder_is_refused(vault: Path, tmp_path: Path) -> None:
    """The destination is judged where it really is: a link to a folder of the vault does not
    smuggle the backup inside (where the next backup would carry it)."""
    link = tmp_path / "elsewhere"
    link.symlink_to(vault / "spaces")
    before = _digest(vault)
    with pytest.raises(ConfigurationError, match="inside the data directory"):
        backup(vault, link / "b.tar.gz")
    assert _digest(vault) == before
    linked_vault = tmp_path / "vault-link"
    linked_vault.symlink_to(vault)
    with pytest.raises(ConfigurationError, match="inside the data directory"):
        backup(linked_vault, vault / "b.tar.gz")
    assert _digest(vault) == before


def test_a_file_deleted_while_the_backup_runs_is_left_out_not_a_failure(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gem or a file history removes its files while the vault is in use: the backup carries what
    is there when it is copied (before: "cannot write the backup … No such file or directory")."""
    fleeting = vault / "gems" / "personal" / "scratch.txt"
    fleeting.parent.mkdir(parents=True)
    fleeting.write_text("gone soon")
    listed = backup_module._files

    def listing_then_deleting(root: Path) -> Any:
        found = listed(root)
        fleeting.unlink()
        return found

    monkeypatch.setattr(backup_module, "_files", listing_then_deleting)
    summary = backup(vault, tmp_path / "b.tar.gz")
    monkeypatch.undo()
    assert summary.files == 2
    restored = restore(summary.path, tmp_path / "restored")
    assert sorted(_digest(restored.path)) == ["master.key", "spaces/personal.db"]


# ---------------------------------------------------------------- the disk misbehaves

DISK_CHILD = FILL + textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from notochord.backup import backup, restore
    from notochord.errors import NotochordError

    disk, vault, archive = (Path(a) for a in sys.argv[1:4])

    def outcome(call):
        try:
            call()
            return {"ok": True}
        except NotochordError as exc:
            return {"error": type(exc).__name__, "message": exc.message}
        except Exception as exc:
            return {"foreign": repr(exc)}

    report = {"into-mount": outcome(lambda: restore(archive, disk))}
    report["restored"] = sorted(os.listdir(disk))
    for name in report["restored"]:
        os.system(f"rm -rf {disk / name}")
    fill(disk / "ballast")
    report["backup-full"] = outcome(lambda: backup(vault, disk / "b.tar.gz"))
    report["restore-full"] = outcome(lambda: restore(archive, disk / "restored"))
    report["left"] = sorted(os.listdir(disk))
    print(json.dumps(report))
    """
)


@pytest.mark.slow
def test_restore_into_an_empty_mount_point_works_and_a_full_disk_says_so(vault: Path, tmp_path: Path) -> None:
    """An empty data directory that is a file system of its own (a volume, a new disk) takes the
    vault (before: "Invalid cross-device link"); on a full disk backup and restore raise
    StorageFullError and leave nothing behind (before: a StorageError quoting errno 28)."""
    archive = backup(vault, tmp_path / "b.tar.gz").path
    disk = tmp_path / "disk"
    disk.mkdir()
    done = run_on_small_disk(disk, "2m", DISK_CHILD, args=[str(disk), str(vault), str(archive)])
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["into-mount"] == {"ok": True}
    assert report["restored"] == ["master.key", "spaces"]
    for kind in ("backup-full", "restore-full"):
        assert report[kind]["error"] == StorageFullError.__name__, report[kind]
        assert "the disk is full" in report[kind]["message"]
        assert "Errno" not in report[kind]["message"]
    assert report["left"] == ["ballast"]


READ_ONLY_CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from notochord.backup import backup, restore
    from notochord.errors import NotochordError

    folder, vault, archive = (Path(a) for a in sys.argv[1:4])
    report = {}
    for name, call in (
        ("backup", lambda: backup(vault, folder / "b.tar.gz")),
        ("restore", lambda: restore(archive, folder / "restored")),
    ):
        try:
            call()
            report[name] = {"ok": True}
        except NotochordError as exc:
            report[name] = {"error": type(exc).__name__, "message": exc.message}
    print(json.dumps(report))
    """
)


@pytest.mark.slow
def test_backup_and_restore_on_a_read_only_folder_say_which_folder_and_what_to_do(vault: Path, tmp_path: Path) -> None:
    """Restoring into a read-only place is ReadOnlyStoreError; both name the folder, not a hidden
    staging file, and say what to do instead of quoting errno 30."""
    archive = backup(vault, tmp_path / "b.tar.gz").path
    folder = tmp_path / "read-only"
    folder.mkdir()
    done = run_read_only(folder, [sys.executable, "-c", READ_ONLY_CHILD, str(folder), str(vault), str(archive)])
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["restore"]["error"] == ReadOnlyStoreError.__name__
    for name in ("backup", "restore"):
        message = report[name]["message"]
        assert f"the folder {folder} is read-only" in message, message
        assert ".notochord-" not in message and "Errno" not in message
    assert list(folder.iterdir()) == []
