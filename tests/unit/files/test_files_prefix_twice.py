"""A path that names its prefix twice: P-FILE-17, P-FILE-18.

The AI passes relative paths and the gem adds ``workspace:`` itself (P-FILE-18); when the AI already
wrote ``workspace:notes.txt``, the gem asks for ``workspace:workspace:notes.txt``. Creating a file
literally named ``workspace:notes.txt`` would leave the user a strange file and the AI a file it
cannot find again: a change is refused in words that give the path to use, and creates nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from notochord.errors import FileError
from notochord.files.history import FileHistory
from notochord.files.workspace import Workspace

MakeWorkspace = Callable[..., Workspace]


@pytest.mark.parametrize(
    ("call", "named"),
    [
        pytest.param(
            lambda ws: ws.write("workspace:workspace:notes.txt", "n"), "workspace:workspace:notes.txt", id="write"
        ),
        pytest.param(lambda ws: ws.mkdir("workspace:run:out"), "workspace:run:out", id="mkdir"),
        pytest.param(lambda ws: ws.write("run:workspace:a/b.txt", "n"), "run:workspace:a/b.txt", id="run-write"),
        pytest.param(
            lambda ws: ws.move("workspace:a.txt", "workspace:workspace:b.txt"), "workspace:workspace:b.txt", id="move"
        ),
    ],
)
def test_a_change_naming_the_prefix_twice_is_refused_and_creates_nothing(
    make_workspace: MakeWorkspace,
    history: FileHistory,
    conversation: Path,
    tmp_path: Path,
    call: Callable[[Workspace], object],
    named: str,
) -> None:
    run_root = tmp_path / "run"
    run_root.mkdir()
    (conversation / "a.txt").write_text("a")
    ws = make_workspace(run_root=run_root)

    with pytest.raises(FileError) as info:
        call(ws)

    assert info.value.code == "E_FILE"
    assert info.value.message.startswith(f"{named} names a prefix twice; give it once (")
    assert sorted(p.name for p in conversation.iterdir()) == ["a.txt"]
    assert list(run_root.iterdir()) == []
    assert history.changes() == []


def test_the_hint_gives_the_path_with_the_prefix_once(ws: Workspace) -> None:
    with pytest.raises(FileError, match=r"\(workspace:notes\.txt\)$"):
        ws.write("workspace:workspace:notes.txt", "n")


def test_a_folder_the_user_named_so_is_still_written_into(ws: Workspace, conversation: Path) -> None:
    """Only a name that does not exist yet is refused: the user's own folder stays reachable."""
    (conversation / "workspace:old").mkdir()
    ws.write("workspace:workspace:old/notes.txt", "n")
    assert (conversation / "workspace:old" / "notes.txt").read_text() == "n"
