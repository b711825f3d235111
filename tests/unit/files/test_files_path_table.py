"""The workspace path table: what a gem gets for each path it may try (P-FILE-01, P-FILE-17, P-FILE-20).

Each row names a path, what reading it gives and what writing it does, against one fixed tree: a
conversation folder with ordinary files, dotfiles (``.env``, ``.git/config``, ``a/.git/config``),
symlinks that lead out of the folder or into hidden names, files whose names only look like dots,
and a run folder inside it. Outside the conversation folder sit files a gem must never reach.

Outcomes: the bytes read; ``NOT_FOUND`` (E_NOT_FOUND, exactly as for a missing file); ``DENIED``
(E_PERM_DENIED); ``FOLDER`` (a plain file error: the path is a folder); ``TWICE`` (a plain file
error: a new name would start with a prefix, the prefix given twice). A write outcome that is a
relative path means the write succeeded and landed there (relative to the conversation folder); for
every other outcome the whole tree, inside and outside the folder, must be left exactly as it was
(OD-P06, OD-P13).

The last tests prove that a gem cannot tell an existing dotfile from a missing one (P-FILE-20).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest

from notochord.errors import FileError, FileNotFoundInWorkspaceError, FilePermissionError
from notochord.files.history import FileHistory
from notochord.files.workspace import Workspace

NOT_FOUND: Final = "not-found"
DENIED: Final = "denied"
FOLDER: Final = "folder"
TWICE: Final = "prefix-twice"

Outcome = bytes | str
"""Bytes read, a landing path for a write, or one of NOT_FOUND, DENIED, FOLDER, TWICE."""

FULLWIDTH_DOT = "\uff0e"
ONE_DOT_LEADER = "\u2024"
IDEOGRAPHIC_STOP = "\u3002"
SMALL_FULL_STOP = "\ufe52"
DIVISION_SLASH = "\u2215"

# (path as the gem writes it, what reading gives, what writing does)
PATH_TABLE: list[tuple[str, Outcome, Outcome]] = [
    # ordinary paths and their normal forms
    ("workspace:a.txt", b"A", "a.txt"),
    ("workspace:docs/b.txt", b"B", "docs/b.txt"),
    ("workspace:docs/sub/c.txt", b"C", "docs/sub/c.txt"),
    ("workspace:./a.txt", b"A", "a.txt"),
    ("workspace:docs//b.txt", b"B", "docs/b.txt"),
    ("workspace:docs/./b.txt", b"B", "docs/b.txt"),
    ("workspace:docs/sub/../b.txt", b"B", "docs/b.txt"),
    ("workspace:docs/b.txt/.", b"B", "docs/b.txt"),
    ("workspace:docs\\b.txt", b"B", "docs/b.txt"),
    ("workspace:docs\\sub\\c.txt", b"C", "docs/sub/c.txt"),
    ("workspace:docs/", FOLDER, FOLDER),
    ("workspace:", FOLDER, FOLDER),
    ("workspace:docs/..", FOLDER, FOLDER),
    ("workspace:missing.txt", NOT_FOUND, "missing.txt"),
    ("workspace:new/deep/file.txt", NOT_FOUND, "new/deep/file.txt"),
    ("workspace:run:a.txt", NOT_FOUND, TWICE),
    # the run folder: run: and bare paths, which cannot climb into the conversation above it
    ("run:out.txt", b"RUN", "runs/tool-1/out.txt"),
    ("out.txt", b"RUN", "runs/tool-1/out.txt"),
    ("run:../../a.txt", DENIED, DENIED),
    ("run:..", DENIED, DENIED),
    ("../../a.txt", DENIED, DENIED),
    # traversal out of the conversation folder
    ("workspace:..", DENIED, DENIED),
    ("workspace:../secret.txt", DENIED, DENIED),
    ("workspace:../../etc/passwd", DENIED, DENIED),
    ("workspace:docs/../../secret.txt", DENIED, DENIED),
    ("workspace:docs/sub/../../../secret.txt", DENIED, DENIED),
    ("workspace:..\\secret.txt", DENIED, DENIED),
    ("workspace:docs\\..\\..\\secret.txt", DENIED, DENIED),
    ("workspace:a/../../outside/secret.txt", DENIED, DENIED),
    # absolute paths, even ones that point into the folder itself
    ("workspace:/etc/passwd", DENIED, DENIED),
    ("workspace:/", DENIED, DENIED),
    ("workspace://etc/passwd", DENIED, DENIED),
    ("/etc/passwd", DENIED, DENIED),
    ("workspace:C:\\Windows\\win.ini", DENIED, DENIED),
    ("workspace:c:/x.txt", DENIED, DENIED),
    ("C:\\x.txt", DENIED, DENIED),
    ("workspace:\\\\server\\share\\x.txt", DENIED, DENIED),
    ("workspace:{root}/a.txt", DENIED, DENIED),
    # prefixes that are not workspace: or run:
    ("file:///etc/passwd", DENIED, DENIED),
    ("worksapce:a.txt", DENIED, DENIED),
    ("WORKSPACE:a.txt", DENIED, DENIED),
    # symlinks: judged by where they lead
    ("workspace:link-out/secret.txt", DENIED, DENIED),
    ("workspace:link-out", DENIED, DENIED),
    ("workspace:file-link-out", DENIED, DENIED),
    ("workspace:link-up/secret.txt", DENIED, DENIED),
    ("workspace:docs/sub/../../link-out/secret.txt", DENIED, DENIED),
    ("workspace:rel-link-in/b.txt", b"B", "docs/b.txt"),
    ("workspace:abs-link-in/b.txt", b"B", "docs/b.txt"),
    ("workspace:link-dot", NOT_FOUND, DENIED),
    ("workspace:link-dotdir/config", NOT_FOUND, DENIED),
    ("workspace:loop", DENIED, DENIED),
    ("workspace:dangling", NOT_FOUND, "nowhere.txt"),
    # dotfiles and dot folders do not exist for a gem
    ("workspace:.env", NOT_FOUND, DENIED),
    ("workspace:./.env", NOT_FOUND, DENIED),
    ("workspace:.\\.env", NOT_FOUND, DENIED),
    ("workspace:.git", NOT_FOUND, DENIED),
    ("workspace:.git/config", NOT_FOUND, DENIED),
    ("workspace:a/.git/config", NOT_FOUND, DENIED),
    ("workspace:a\\.git\\config", NOT_FOUND, DENIED),
    ("workspace:x/../.env", NOT_FOUND, DENIED),
    ("workspace:docs/../.env", NOT_FOUND, DENIED),
    ("workspace:.missing", NOT_FOUND, DENIED),
    ("workspace:docs/.hidden/new.txt", NOT_FOUND, DENIED),
    ("workspace:...", NOT_FOUND, DENIED),
    ("workspace:..../x.txt", NOT_FOUND, DENIED),
    # Unicode look-alikes of "." are ordinary names: they neither hide nor climb
    (f"workspace:{FULLWIDTH_DOT}env", b"LOOKALIKE", f"{FULLWIDTH_DOT}env"),
    (f"workspace:{ONE_DOT_LEADER}env", b"LEADER", f"{ONE_DOT_LEADER}env"),
    (f"workspace:{FULLWIDTH_DOT * 2}/z.txt", b"Z", f"{FULLWIDTH_DOT * 2}/z.txt"),
    (f"workspace:{ONE_DOT_LEADER * 2}/secret.txt", NOT_FOUND, f"{ONE_DOT_LEADER * 2}/secret.txt"),
    (
        f"workspace:{FULLWIDTH_DOT * 2}/{FULLWIDTH_DOT * 2}/secret.txt",
        NOT_FOUND,
        f"{FULLWIDTH_DOT * 2}/{FULLWIDTH_DOT * 2}/secret.txt",
    ),
    (f"workspace:{IDEOGRAPHIC_STOP}env", NOT_FOUND, f"{IDEOGRAPHIC_STOP}env"),
    (f"workspace:{SMALL_FULL_STOP}env", NOT_FOUND, f"{SMALL_FULL_STOP}env"),
    (f"workspace:docs{DIVISION_SLASH}b.txt", NOT_FOUND, f"docs{DIVISION_SLASH}b.txt"),
    # percent-encoding is not decoded: %2e%2e is a folder name, not a parent
    ("workspace:%2e%2e/secret.txt", NOT_FOUND, "%2e%2e/secret.txt"),
    ("workspace:%2eenv", NOT_FOUND, "%2eenv"),
    # NUL bytes are refused before anything else
    ("workspace:a.txt\x00.png", DENIED, DENIED),
    ("workspace:\x00", DENIED, DENIED),
    ("workspace:docs/\x00/../b.txt", DENIED, DENIED),
    ("\x00", DENIED, DENIED),
]

Snapshot = dict[str, object]


def _snapshot(base: Path) -> Snapshot:
    """Every file, folder and link under ``base`` (history and trash left out), without following links."""
    seen: Snapshot = {}
    for folder, dirs, files in os.walk(base):
        rel_folder = Path(folder).relative_to(base)
        if rel_folder.parts[:1] in (("history",), ("trash",)):
            continue
        for name in [*dirs, *files]:
            path = Path(folder) / name
            rel = (rel_folder / name).as_posix()
            if path.is_symlink():
                seen[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                seen[rel] = "dir"
            else:
                seen[rel] = path.read_bytes()
    return seen


@pytest.fixture
def tree(tmp_path: Path, conversation: Path) -> Path:
    """The conversation folder of every row, with secrets outside it."""
    (tmp_path / "secret.txt").write_bytes(b"PARENT")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"OUTSIDE")
    files = {
        "a.txt": b"A",
        "docs/b.txt": b"B",
        "docs/sub/c.txt": b"C",
        ".env": b"SECRET=1",
        ".git/config": b"[core]",
        "a/.git/config": b"[core] a",
        "a/x.txt": b"AX",
        "x/y.txt": b"XY",
        f"{FULLWIDTH_DOT}env": b"LOOKALIKE",
        f"{ONE_DOT_LEADER}env": b"LEADER",
        f"{FULLWIDTH_DOT * 2}/z.txt": b"Z",
        "runs/tool-1/out.txt": b"RUN",
    }
    for rel, data in files.items():
        path = conversation / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (conversation / "link-out").symlink_to(outside)
    (conversation / "file-link-out").symlink_to(outside / "secret.txt")
    (conversation / "link-up").symlink_to("..")
    (conversation / "rel-link-in").symlink_to("docs")
    (conversation / "abs-link-in").symlink_to(conversation / "docs")
    (conversation / "link-dot").symlink_to(".env")
    (conversation / "link-dotdir").symlink_to(".git")
    (conversation / "loop").symlink_to("loop")
    (conversation / "dangling").symlink_to("nowhere.txt")
    return conversation


@pytest.fixture
def table_ws(tree: Path, history: FileHistory) -> Workspace:
    return Workspace(tree, history=history, actor="gem:demo", run_id="run-1", run_root=tree / "runs" / "tool-1")


def _expect(outcome: Outcome, action: Callable[[], object]) -> object:
    if outcome == DENIED:
        with pytest.raises(FilePermissionError) as denied:
            action()
        assert denied.value.code == "E_PERM_DENIED"
        return None
    if outcome == NOT_FOUND:
        with pytest.raises(FileNotFoundInWorkspaceError) as missing:
            action()
        assert missing.value.code == "E_NOT_FOUND"
        return None
    if outcome == FOLDER:
        with pytest.raises(FileError, match="is a folder") as folder:
            action()
        assert type(folder.value) is FileError
        return None
    if outcome == TWICE:
        with pytest.raises(FileError, match="names a prefix twice") as twice:
            action()
        assert type(twice.value) is FileError
        return None
    return action()


def _ids() -> list[str]:
    return [f"{index:02d}-{path!r}" for index, (path, _, _) in enumerate(PATH_TABLE)]


@pytest.mark.parametrize(("path", "read", "write"), PATH_TABLE, ids=_ids())
def test_reading_each_path_gives_the_outcome_in_the_table(
    table_ws: Workspace, tmp_path: Path, tree: Path, path: str, read: Outcome, write: Outcome
) -> None:
    """P-FILE-01, P-FILE-17, P-FILE-20, OD-P06: reads never leave the folder and never see dotfiles."""
    path = path.replace("{root}", str(tree))
    before = _snapshot(tmp_path)
    got = _expect(read, lambda: table_ws.read(path))
    if isinstance(read, bytes):
        assert got == read
    assert _snapshot(tmp_path) == before, "a read changed the tree"


@pytest.mark.parametrize(("path", "read", "write"), PATH_TABLE, ids=_ids())
def test_writing_each_path_lands_where_the_table_says_or_changes_nothing(
    table_ws: Workspace, tmp_path: Path, tree: Path, path: str, read: Outcome, write: Outcome
) -> None:
    """P-FILE-01, P-FILE-20, OD-P06: a write lands inside the folder at its real place, or nowhere."""
    path = path.replace("{root}", str(tree))
    before = _snapshot(tmp_path)
    _expect(write, lambda: table_ws.write(path, b"WRITTEN"))
    after = _snapshot(tmp_path)
    if write in (DENIED, NOT_FOUND, FOLDER, TWICE):
        assert after == before, "a refused write changed the tree"
        return
    assert isinstance(write, str)
    landed = f"conversation/{write}"
    assert after[landed] == b"WRITTEN"
    changed = {rel for rel in after if before.get(rel) != after[rel]}
    created_folders = {rel for rel in changed if after[rel] == "dir"}
    assert changed - created_folders == {landed}
    assert all(landed.startswith(f"{folder}/") for folder in created_folders)
    assert set(before) <= set(after), "a write removed something"


def test_the_table_has_at_least_60_distinct_paths() -> None:
    """60+ workspace paths, including each kind SPEC names (P-FILE)."""
    paths = [path for path, _, _ in PATH_TABLE]
    assert len(set(paths)) == len(paths) >= 60
    assert "workspace:./.env" in paths
    assert "workspace:a/.git/config" in paths
    assert "workspace:x/../.env" in paths
    assert any("\x00" in p for p in paths)
    assert any("\\" in p for p in paths)
    assert any(FULLWIDTH_DOT in p or ONE_DOT_LEADER in p for p in paths)
    assert any(p.startswith("workspace:/") for p in paths)
    assert any("link-out" in p for p in paths)


# -- a dotfile and a missing file give identical errors (P-FILE-20) ---------------------------------


def _error(action: Callable[[], object]) -> tuple[type[BaseException], str, str, str | None]:
    with pytest.raises(FileNotFoundInWorkspaceError) as raised:
        action()
    return type(raised.value), raised.value.code, raised.value.message, raised.value.path


@pytest.mark.parametrize("path", ["workspace:.env", "workspace:.git/config", "workspace:a/.git/config"])
def test_an_existing_dotfile_and_a_missing_one_give_identical_errors(
    table_ws: Workspace, tree: Path, path: str
) -> None:
    """P-FILE-20: read, read_text and stat of a dotfile fail exactly as when it does not exist."""
    operations: list[Callable[[], object]] = [
        lambda: table_ws.read(path),
        lambda: table_ws.read_text(path),
        lambda: table_ws.stat(path),
    ]
    present = [_error(op) for op in operations]
    target = tree / path.removeprefix("workspace:")
    assert target.is_file()
    target.unlink()
    absent = [_error(op) for op in operations]
    assert present == absent


def test_an_existing_dot_folder_and_a_missing_one_list_identically(table_ws: Workspace, tree: Path) -> None:
    """P-FILE-20: listing ``.git`` fails as listing a folder that is not there, and it is never listed."""
    present = _error(lambda: table_ws.list("workspace:.git"))
    (tree / ".git" / "config").unlink()
    (tree / ".git").rmdir()
    absent = _error(lambda: table_ws.list("workspace:.git"))
    assert present == absent
    assert ".env" not in {entry.name for entry in table_ws.list("workspace:")}


def test_a_dotfile_errs_exactly_as_an_ordinary_missing_file_of_the_same_shape(table_ws: Workspace) -> None:
    """P-FILE-20: nothing in the error tells a hidden name from a missing one, only the path differs."""
    hidden = _error(lambda: table_ws.read("workspace:.env"))
    missing = _error(lambda: table_ws.read("workspace:xenv"))
    assert hidden[:2] == missing[:2]
    assert hidden[2].replace(".env", "xenv") == missing[2]
    assert (hidden[3], missing[3]) == ("workspace:.env", "workspace:xenv")
