"""Files with the longest names a folder holds, on their way to the trash: P-FILE-22, P-FILE-23, OD-P07.

A name may have up to 255 bytes (a gem may write one). The trash keeps each item under a unique
name built from the original; that name must still fit, or a gem could never delete such a file,
nor replace it once it is too large for the history, nor could its creation be rolled back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from notochord.files.history import FileHistory, FolderTrash
from notochord.files.workspace import Workspace

MakeWorkspace = Callable[..., Workspace]
MakeHistory = Callable[..., FileHistory]

LONGEST = "n" * 251 + ".txt"  # 255 bytes
LONGEST_ACCENTED = "é" * 125 + ".md"  # 253 bytes, two to a character


def test_a_file_with_a_name_of_255_bytes_is_deleted_to_the_trash_and_comes_back(
    ws: Workspace, history: FileHistory, conversation: Path, trash_dir: Path
) -> None:
    """P-FILE-23: to the trash, with a copy in the history; a rollback brings it back."""
    (conversation / LONGEST).write_text("kept")

    ws.delete(f"workspace:{LONGEST}")

    assert not (conversation / LONGEST).exists()
    (trashed,) = trash_dir.iterdir()
    assert trashed.read_text() == "kept"
    assert trashed.name.endswith(".txt")
    assert history.rollback_run("run-1").restored == (f"workspace:{LONGEST}",)
    assert (conversation / LONGEST).read_text() == "kept"


def test_a_large_file_with_a_long_accented_name_is_replaced_its_old_version_in_the_trash(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, trash_dir: Path
) -> None:
    """P-FILE-22, OD-P07: the old version goes to the trash whatever the length of its name, and its
    name there is still whole characters."""
    history = make_history(limit=4)
    (conversation / LONGEST_ACCENTED).write_bytes(b"0123456789")

    make_workspace(history=history).write(f"workspace:{LONGEST_ACCENTED}", b"new")

    (trashed,) = trash_dir.iterdir()
    assert trashed.read_bytes() == b"0123456789"
    assert trashed.name.endswith("é.md")
    assert len(trashed.name.encode()) <= 255
    assert (conversation / LONGEST_ACCENTED).read_bytes() == b"new"


def test_rolling_back_the_creation_of_a_file_with_a_name_of_255_bytes_puts_it_in_the_trash(
    ws: Workspace, history: FileHistory, conversation: Path, trash_dir: Path
) -> None:
    ws.write(f"workspace:{LONGEST}", "made by the gem")

    report = history.rollback_run("run-1")

    assert report.restored == (f"workspace:{LONGEST}",)
    assert not (conversation / LONGEST).exists()
    assert [p.read_text() for p in trash_dir.iterdir()] == ["made by the gem"]


def test_short_names_keep_their_whole_name_in_the_trash(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("n")
    location = Path(FolderTrash(tmp_path / "trash").put(tmp_path / "notes.txt"))
    assert location.name.endswith("-notes.txt")
    assert location.read_text() == "n"
