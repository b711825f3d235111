"""Pipes and sockets in a gem's folders: P-FILE-17, P-FILE-19, P-FILE-21…24, OD-P06.

A gem knows two kinds of entry, ``file`` and ``dir``. Anything else (a named pipe, a socket, a
device) is neither: ``list`` leaves it out, and every call that names it is refused in words
(``E_FILE``) without opening it for reading, so nothing waits on a pipe and no gem is ever told it is
a file it could read or copy.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from notochord.errors import FileError
from notochord.files.history import FileHistory
from notochord.files.workspace import Workspace

REFUSED = "is a pipe, socket or device, not a file or folder"


@pytest.fixture(params=["pipe", "socket"])
def special(request: pytest.FixtureRequest, conversation: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``workspace:special``: a named pipe or a listening socket in the conversation folder."""
    if request.param == "pipe":
        os.mkfifo(conversation / "special")
        yield "workspace:special"
        return
    # a relative bind: the absolute temporary path may be longer than a socket address holds
    monkeypatch.chdir(conversation)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind("special")
        yield "workspace:special"


def test_stat_of_a_pipe_or_socket_is_refused_and_never_reports_a_file(ws: Workspace, special: str) -> None:
    """P-FILE-19: ``stat`` answers ``file`` only for a regular file a gem can read."""
    with pytest.raises(FileError, match=f"workspace:special {REFUSED}; a gem cannot use it") as info:
        ws.stat(special)
    assert info.value.code == "E_FILE"


def test_stat_through_a_link_to_a_pipe_or_socket_is_refused_too(
    ws: Workspace, conversation: Path, special: str
) -> None:
    (conversation / "alias").symlink_to(conversation / "special")
    with pytest.raises(FileError, match=REFUSED):
        ws.stat("workspace:alias")


def test_list_leaves_out_pipes_and_sockets_that_stat_refuses(ws: Workspace, conversation: Path, special: str) -> None:
    """P-FILE-19: the entries a gem handles itself are only files and folders."""
    (conversation / "notes.txt").write_text("n")
    (conversation / "alias").symlink_to(conversation / "special")
    assert [(e.name, e.kind) for e in ws.list("workspace:")] == [("notes.txt", "file")]


def test_delete_of_a_pipe_or_socket_is_refused_in_words_and_changes_nothing(
    ws: Workspace, history: FileHistory, conversation: Path, special: str
) -> None:
    """P-FILE-21, P-FILE-23: nothing could be kept to roll back, so it stays; the error says why."""
    with pytest.raises(FileError, match=f"workspace:special {REFUSED}; it cannot be deleted"):
        ws.delete(special)
    assert (conversation / "special").exists()
    assert history.changes() == []


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda ws: ws.read("workspace:special"), id="read"),
        pytest.param(lambda ws: ws.write("workspace:special", "x"), id="write"),
        pytest.param(lambda ws: ws.move("workspace:special", "workspace:moved"), id="move"),
        pytest.param(lambda ws: ws.stat("workspace:special"), id="stat"),
        pytest.param(lambda ws: ws.delete("workspace:special"), id="delete"),
    ],
)
def test_every_call_naming_a_pipe_or_socket_is_refused_the_same_way(
    ws: Workspace, history: FileHistory, conversation: Path, special: str, call: Callable[[Workspace], object]
) -> None:
    """P-FILE-22, P-FILE-24: one answer for every call, with the E_FILE code and no change made."""
    with pytest.raises(FileError, match="pipe, socket or device") as info:
        call(ws)
    assert info.value.code == "E_FILE"
    assert sorted(p.name for p in conversation.iterdir()) == ["special"]
    assert history.changes() == []
