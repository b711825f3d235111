"""A developer's gem folder installs as it is: well-known clutter is left out, counted and told.

Covers P-GEN-04 (the installed copy is what runs) and K-UI-02 (installing from an uploaded package
holds it to the folder install's rules). Version control, caches, environments, ``.DS_Store`` and
editor swap files are never part of a gem: a folder install and an uploaded ``.zip`` leave out the
same ones, neither copies nor counts them against the limits, and both say how many of each kind
they left out. A tool whose entry is there is refused by name, never dropped in silence.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from notochord import Space
from notochord.console.uploads import Uploads
from notochord.errors import ManifestError
from notochord.gems.package import MAX_ENTRIES, SWAP_FILES, describe_left_out

TOOL = "def run(input, ctx):\n    return 'ran'\n"

# the clutter of a developer's checkout, and the kind each is told as
CLUTTER: dict[str, bytes] = {
    ".git/HEAD": b"ref: refs/heads/main\n",
    ".git/objects/ab/cdef": b"x",
    "lib/__pycache__/util.cpython-311.pyc": b"\0",
    ".venv/bin/python": b"",
    ".DS_Store": b"\0\0\0\1Bud1",
    "lib/.DS_Store": b"\0\0\0\1Bud1",
    ".tool.py.swp": b"b0VIM",
    "tool.py~": b"old",
}
EXPECTED = {".git": 1, "__pycache__": 1, ".venv": 1, ".DS_Store": 2, SWAP_FILES: 2, ".hg": 1}


def _manifest(entry: str = "tool.py") -> bytes:
    return json.dumps(
        {"id": "probe", "name": "probe", "version": "1.0.0", "tools": [{"name": "main", "entry": entry}]}
    ).encode()


def _tree(entry: str = "tool.py") -> dict[str, bytes]:
    """The gem's own files, its clutter, and a Mercurial store with more entries than a gem may hold."""
    files = {"notochord.json": _manifest(entry), "tool.py": TOOL.encode(), "lib/util.py": b"A = 1\n", **CLUTTER}
    files.update({f".hg/store/data/{index}.i": b"" for index in range(MAX_ENTRIES + 1)})
    return files


def _folder(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def _zip(files: dict[str, bytes], *, wrapped: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(wrapped + name, data)
        if wrapped:
            # what macOS's Finder adds beside the folder it packs
            archive.writestr(f"__MACOSX/{wrapped}._tool.py", b"\0\5\26\7")
    return buffer.getvalue()


def _kept(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


def test_p_gen_04_a_folder_with_clutter_over_the_limits_installs_without_it_and_says_what_it_left_out(
    space: Space, tmp_path: Path
) -> None:
    folder = _folder(tmp_path / "probe", _tree())
    # an editor's lock file: a link to nothing, which the copy would refuse if it were looked at
    os.symlink("user@host.1234:1700000000", folder / ".#tool.py")

    gem = space.gems.install(folder)

    assert dict(gem.left_out) == {**EXPECTED, SWAP_FILES: 3}
    code = space.gems.runner.code_dir("probe")
    assert _kept(code) == ["lib", "lib/util.py", "notochord.json", "tool.py"]
    assert space.gems.runner.run_sync("probe", "main").output == "ran"


def test_p_gen_06_an_upgrade_says_what_it_left_out_too(space: Space, tmp_path: Path) -> None:
    space.gems.install(_folder(tmp_path / "v1", {"notochord.json": _manifest(), "tool.py": TOOL.encode()}))
    gem = space.gems.upgrade(_folder(tmp_path / "v2", _tree()))
    assert dict(gem.left_out) == EXPECTED
    assert ".hg" not in _kept(space.gems.runner.code_dir("probe"))


def test_p_gen_04_a_folder_without_clutter_says_nothing_was_left_out(space: Space, tmp_path: Path) -> None:
    gem = space.gems.install(_folder(tmp_path / "probe", {"notochord.json": _manifest(), "tool.py": TOOL.encode()}))
    assert gem.left_out == ()


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        (".hg/tool.py", "is inside .hg, which an installation does not copy"),
        ("lib/.git/tool.py", "is inside .git, which an installation does not copy"),
        ("tool.py~", f"is left out of every installation as clutter ({SWAP_FILES}); rename the file"),
    ],
    ids=["mercurial", "nested-git", "backup-file"],
)
def test_p_gen_04_a_tool_whose_entry_is_in_the_clutter_is_refused_by_name_in_both_paths(
    space: Space, tmp_path: Path, entry: str, words: str
) -> None:
    files = {**_tree(entry), entry: TOOL.encode()}
    with pytest.raises(ManifestError) as by_folder:
        space.gems.install(_folder(tmp_path / "probe", files))
    assert f"tools[0].entry: tool 'main': {entry} {words}" in str(by_folder.value)
    assert space.gems.list() == []

    uploads = Uploads(tmp_path / "data")
    with pytest.raises(ManifestError) as by_upload:
        uploads.stage("probe.zip", _zip(files))
    assert f"tools[0].entry: tool 'main': {entry} {words}" in str(by_upload.value)
    assert not any((tmp_path / "data" / "console-uploads").iterdir()), "nothing of the upload is kept"


@pytest.mark.parametrize("wrapped", ["", "probe/"], ids=["at-the-top", "in-one-folder"])
def test_k_ui_02_an_upload_leaves_out_the_same_clutter_as_a_folder_install_and_says_so(
    space: Space, tmp_path: Path, wrapped: str
) -> None:
    staged = Uploads(tmp_path / "data").stage("probe.zip", _zip(_tree(), wrapped=wrapped))

    expected = {**EXPECTED, "__MACOSX": 1} if wrapped else EXPECTED
    assert staged.left_out == expected
    assert _kept(staged.folder) == ["lib", "lib/util.py", "notochord.json", "tool.py"]
    gem = space.gems.install(staged.folder)
    assert gem.left_out == (), "nothing of the clutter reached the install"
    # the same tree from a folder leaves out the same kinds
    from_folder = space.gems.upgrade(_folder(tmp_path / "probe", _tree()))
    assert dict(from_folder.left_out) == EXPECTED


def test_k_ui_02_what_was_left_out_is_told_per_kind() -> None:
    told = describe_left_out({".venv": 1, ".git": 1, SWAP_FILES: 3})
    assert told == f".git (1), .venv (1), {SWAP_FILES} (3)"


def test_p_gen_04_node_modules_is_the_gem_s_own_and_is_copied(space: Space, tmp_path: Path) -> None:
    """A JavaScript tool imports the packages it ships in ``node_modules``: they are no clutter."""
    files = {"notochord.json": _manifest(), "tool.py": TOOL.encode(), "node_modules/pkg/index.js": b"export {};\n"}
    gem = space.gems.install(_folder(tmp_path / "probe", files))
    assert gem.left_out == ()
    assert "node_modules/pkg/index.js" in _kept(space.gems.runner.code_dir("probe"))
