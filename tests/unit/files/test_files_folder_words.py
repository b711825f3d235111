"""What a gem is told about folders, in the terms of what it can see: P-FILE-19, P-FILE-20, OD-P06.

A gem sees files and folders only: hidden entries, pipes, sockets and devices are left out of
``list``. A refusal must not send it after entries it cannot see, nor call a file "a part of the
path" when it named the file itself.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from notochord.errors import FileError
from notochord.files.history import FileHistory
from notochord.files.workspace import Workspace


def test_listing_a_file_says_it_is_a_file_not_a_folder(ws: Workspace, conversation: Path) -> None:
    """P-FILE-19: the gem named a file where a folder was wanted; the words say exactly that."""
    (conversation / "notes.txt").write_text("n")
    with pytest.raises(FileError) as info:
        ws.list("workspace:notes.txt")
    assert info.value.code == "E_FILE"
    assert info.value.message == "workspace:notes.txt is a file, not a folder; read it, or list the folder holding it"


def test_listing_a_pipe_says_it_is_neither_file_nor_folder(ws: Workspace, conversation: Path) -> None:
    os.mkfifo(conversation / "queue")
    with pytest.raises(FileError) as info:
        ws.list("workspace:queue")
    assert info.value.message == "workspace:queue is a pipe, socket or device, not a folder; a gem cannot use it"


def test_a_missing_folder_on_the_way_is_still_named_as_part_of_the_path(ws: Workspace, conversation: Path) -> None:
    (conversation / "notes.txt").write_text("n")
    with pytest.raises(FileError, match="a part of the path is a file, not a folder"):
        ws.list("workspace:notes.txt/inner")


@pytest.mark.parametrize("unseen", ["pipe", "pipe and hidden"])
def test_a_folder_holding_only_entries_a_gem_cannot_see_is_not_deleted_and_the_refusal_says_why(
    ws: Workspace, history: FileHistory, conversation: Path, unseen: str
) -> None:
    """P-FILE-20: list shows the folder empty; the refusal must not ask the gem to delete entries it
    cannot see or remove."""
    folder = conversation / "box"
    folder.mkdir()
    os.mkfifo(folder / "queue")
    if "hidden" in unseen:
        (folder / ".cache").write_text("c")
    assert ws.list("workspace:box") == []

    with pytest.raises(FileError) as info:
        ws.delete("workspace:box")

    assert info.value.message == (
        "workspace:box holds only entries a gem cannot see or remove (hidden names, links, pipes, sockets "
        "or devices); the folder stays"
    )
    assert folder.is_dir()
    assert history.changes() == []


def test_a_folder_holding_a_file_still_asks_for_its_entries_to_be_deleted_first(
    ws: Workspace, conversation: Path
) -> None:
    (conversation / "box").mkdir()
    os.mkfifo(conversation / "box" / "queue")
    (conversation / "box" / "a.txt").write_text("a")
    with pytest.raises(FileError, match="workspace:box is a folder that is not empty; delete its entries first"):
        ws.delete("workspace:box")
