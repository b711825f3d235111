"""What a gem folder may hold to be installed: bounded in size, no hard links, names any system keeps.

Covers P-KVAL-06 (a refused install leaves nothing, and copies nothing into the vault), P-GEN-04
(the installed copy is what runs, so it holds only the gem's own files) and the isolation of the
installed code: a tool may read its installed code, so nothing of the user's (a key hard-linked
into a downloaded folder) may reach it.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

from notochord import GemError, Space
from notochord.console.uploads import Uploads
from notochord.gems.package import MAX_ENTRIES, MAX_TOTAL_BYTES

Json = dict[str, Any]

TOOL = "def run(input, ctx):\n    return 1\n"


def _folder(root: Path, *, files: dict[str, str] | None = None, version: str = "1.0.0") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    manifest: Json = {"id": "probe", "name": "probe", "version": version, "tools": [{"name": "one", "entry": "one.py"}]}
    (root / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    for name, content in (files if files is not None else {"one.py": TOOL}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content, encoding="utf-8")
    return root


def _left_in_code_root(space: Space) -> list[str]:
    root = space.gems.runner.code_root
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def _assert_nothing_installed(space: Space) -> None:
    assert space.gems.list() == []
    assert _left_in_code_root(space) == []


# ---------------------------------------------------------------- size and number of files


def test_p_kval_06_a_folder_larger_than_the_limit_is_refused_before_anything_is_copied(
    space: Space, tmp_path: Path
) -> None:
    """``gem install ~/`` by mistake, or a hostile folder, would copy gigabytes into the vault; the
    folder is refused naming the limit and the folder. (The file is sparse: it takes no disk.)"""
    folder = _folder(tmp_path / "probe")
    with (folder / "data.bin").open("wb") as sparse:
        sparse.truncate(MAX_TOTAL_BYTES + 1)
    with pytest.raises(GemError) as refused:
        space.gems.install(folder)
    message = str(refused.value)
    assert str(folder) in message
    assert f"{MAX_TOTAL_BYTES // (1024 * 1024)} MiB" in message
    assert "nothing was installed" in message
    _assert_nothing_installed(space)


def test_p_kval_06_a_folder_with_more_entries_than_the_limit_is_refused_before_anything_is_copied(
    space: Space, tmp_path: Path
) -> None:
    folder = _folder(tmp_path / "probe")
    many = folder / "many"
    many.mkdir()
    for index in range(MAX_ENTRIES):
        (many / f"{index}.txt").touch()
    with pytest.raises(GemError) as refused:
        space.gems.install(folder)
    message = str(refused.value)
    assert str(folder) in message
    assert f"more than {MAX_ENTRIES} files and folders" in message
    _assert_nothing_installed(space)


def test_p_gen_04_what_an_installation_leaves_out_does_not_count_towards_the_limits(
    space: Space, tmp_path: Path
) -> None:
    """A checkout with a large ``.git`` or ``.venv`` still installs: those folders are never copied."""
    folder = _folder(tmp_path / "probe")
    (folder / ".venv").mkdir()
    with (folder / ".venv" / "big.bin").open("wb") as big:
        big.truncate(MAX_TOTAL_BYTES + 1)
    assert space.gems.install(folder).id == "probe"
    assert not (space.gems.runner.code_dir("probe") / ".venv").exists()


def test_p_gen_06_an_upgrade_from_a_folder_over_the_limit_keeps_the_installed_version(
    space: Space, tmp_path: Path
) -> None:
    space.gems.install(_folder(tmp_path / "v1"))
    v2 = _folder(tmp_path / "v2", version="2.0.0")
    with (v2 / "data.bin").open("wb") as sparse:
        sparse.truncate(MAX_TOTAL_BYTES + 1)
    with pytest.raises(GemError, match="MiB"):
        space.gems.upgrade(v2)
    assert space.gems.get("probe").version == "1.0.0"
    assert _left_in_code_root(space) == ["probe"]


# ---------------------------------------------------------------- hard links


def test_a_hard_link_to_a_file_outside_the_gem_folder_is_refused_and_never_copied(space: Space, tmp_path: Path) -> None:
    """A hostile script can hard-link the user's key into a downloaded gem folder; the installed copy
    would hand it to the gem's tools. A gem folder needs no hard links: the file is refused by name."""
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY", encoding="utf-8")
    folder = _folder(tmp_path / "probe")
    os.link(secret, folder / "notes.txt")
    with pytest.raises(GemError) as refused:
        space.gems.install(folder)
    message = str(refused.value)
    assert "notes.txt is a hard link" in message
    assert "replace it with a copy of the file" in message
    _assert_nothing_installed(space)


def test_a_tool_entry_that_is_a_hard_link_is_refused(space: Space, tmp_path: Path) -> None:
    folder = _folder(tmp_path / "probe", files={})
    (tmp_path / "elsewhere.py").write_text(TOOL, encoding="utf-8")
    os.link(tmp_path / "elsewhere.py", folder / "one.py")
    with pytest.raises(GemError, match=r"one\.py is a hard link"):
        space.gems.install(folder)
    _assert_nothing_installed(space)


# ---------------------------------------------------------------- names other systems cannot keep


def test_p_kval_06_names_that_differ_only_in_case_are_refused(space: Space, tmp_path: Path) -> None:
    """A vault or backup carried to a system whose file names ignore case (Windows, macOS) would keep
    one of the two files, silently; the folder is refused naming both."""
    folder = _folder(tmp_path / "probe", files={"one.py": TOOL, "lib/util.py": "A = 1\n", "lib/Util.py": "A = 2\n"})
    with pytest.raises(GemError) as refused:
        space.gems.install(folder)
    message = str(refused.value)
    assert "lib/Util.py" in message and "lib/util.py" in message
    assert "differ only in case" in message
    _assert_nothing_installed(space)


# ---------------------------------------------------------------- where the gem folder is


def test_p_kval_06_a_folder_that_holds_the_vault_is_refused_before_it_is_copied_into_itself(
    space: Space, tmp_path: Path
) -> None:
    """The installed code is kept inside the vault's folder; copying a folder that holds the vault
    would copy the copy as it is made (and the vault's own files). It is refused in words."""
    vault = tmp_path / "data"
    assert space.gems.runner.code_root.is_relative_to(vault)
    _folder(vault)
    with pytest.raises(GemError) as refused:
        space.gems.install(vault)
    message = str(refused.value)
    assert f"the gem folder {vault} holds this vault's installed gems" in message
    assert "nothing was installed" in message
    _assert_nothing_installed(space)


def test_p_kval_06_a_zip_whose_names_differ_only_in_case_is_refused_before_it_is_unpacked(
    space: Space, tmp_path: Path
) -> None:
    """On a disk whose names ignore case, unpacking would keep one of them before the install could
    see both; the upload is refused as a folder is, so the installed copy is the same wherever the
    vault goes."""
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        manifest: Json = {"id": "probe", "name": "probe", "tools": [{"name": "one", "entry": "one.py"}]}
        archive.writestr("notochord.json", json.dumps(manifest))
        archive.writestr("one.py", TOOL)
        archive.writestr("ONE.py", "import os\n")
    with pytest.raises(GemError, match=r"one\.py and ONE\.py differ only in case"):
        Uploads(tmp_path / "uploads").stage("probe.zip", packed.getvalue())
    _assert_nothing_installed(space)
