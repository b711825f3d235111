"""The copy an installation keeps never reaches outside the gem folder, even while the folder changes.

Covers P-GEN-04 (the installed copy is what runs) and the isolation of the installed code: between
the check of the folder and its copy, whoever may write to the folder (a script the user ran, or
another user where the folder is shared) can swap one of its folders for a link to one of the
user's own folders. The copy opens every folder without following a link, so what it copies is
inside the folder it was given, or the install is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from notochord import GemError
from notochord.gems.package import stage_package

SECRET = "PRIVATE KEY"
ATTEMPTS = 300


@pytest.fixture
def swapping(tmp_path: Path) -> Iterator[Path]:
    """A gem folder whose ``lib`` is, again and again, swapped for a link to a folder of secrets."""
    secrets = tmp_path / "ssh"
    secrets.mkdir()
    (secrets / "util.py").write_text(SECRET, encoding="utf-8")
    folder = tmp_path / "gem"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "util.py").write_text("A = 1\n", encoding="utf-8")
    (folder / "notochord.json").write_text(json.dumps({"id": "probe", "name": "probe"}), encoding="utf-8")
    # copied between the look at lib and its copy, which makes the moment of a swap likely to fall there
    (folder / "z.bin").write_bytes(b"0" * 256 * 1024)
    # while one of the two is in the gem folder as lib, the other waits outside it; another process
    # swaps them, so the swaps run while the copy runs
    os.symlink(secrets, tmp_path / "link")
    swapper = subprocess.Popen([sys.executable, "-c", _SWAP, str(folder / "lib"), str(tmp_path / "link")])
    try:
        yield folder
    finally:
        swapper.kill()
        swapper.wait()


_SWAP = """
import os, sys
lib, link = sys.argv[1], sys.argv[2]
aside = lib + ".aside"
while True:
    os.rename(lib, aside)
    os.rename(link, lib)
    os.rename(lib, link)
    os.rename(aside, lib)
"""


def test_a_folder_swapped_for_a_link_while_it_is_copied_never_brings_its_target_in(
    swapping: Path, tmp_path: Path
) -> None:
    target = tmp_path / "code" / "probe"
    for _ in range(ATTEMPTS):
        try:
            staged = stage_package(swapping, target).path
        except GemError:
            continue  # refusing a folder that changed under the copy is fine
        try:
            leaked = [p for p in staged.rglob("*") if p.is_file() and not p.is_symlink() and SECRET in p.read_text()]
            assert leaked == [], f"copied from outside the gem folder: {leaked}"
        finally:
            shutil.rmtree(staged)
