"""Install and upgrade check each tool's entry file against the gem folder (P-KVAL-06).

The problems come as one :class:`~notochord.errors.ManifestError` with a problem per tool, in the
manifest's own JSON paths, and a refused install or upgrade changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from notochord import ManifestError, Space


def _folder(root: Path, entries: dict[str, str], *, version: str = "1.0.0", files: tuple[str, ...] = ()) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    manifest = {
        "id": "probe",
        "name": "probe",
        "version": version,
        "tools": [{"name": name, "entry": entry} for name, entry in entries.items()],
    }
    (root / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("def run(input, ctx):\n    return 1\n", encoding="utf-8")
    return root


def test_a_missing_entry_is_a_manifest_problem_naming_tool_and_path(space: Space, tmp_path: Path) -> None:
    """``tools[1].entry`` names the tool and the file that is not there."""
    folder = _folder(tmp_path / "probe", {"one": "one.py", "two": "lib/two.py"}, files=("one.py",))
    with pytest.raises(ManifestError) as refused:
        space.gems.install(folder)
    [problem] = refused.value.problems
    assert problem.startswith("tools[1].entry: tool 'two': lib/two.py is not a file in the gem folder")
    assert space.gems.list() == []


def test_a_folder_is_not_an_entry_file(space: Space, tmp_path: Path) -> None:
    """The entry must be a file, not a directory of that name."""
    folder = _folder(tmp_path / "probe", {"one": "lib"}, files=("lib/x.py",))
    with pytest.raises(ManifestError, match="tool 'one': lib is not a file"):
        space.gems.install(folder)


def test_an_installed_manifest_file_path_checks_its_own_folder(space: Space, tmp_path: Path) -> None:
    """Installing from the manifest file itself reads entries beside it."""
    folder = _folder(tmp_path / "probe", {"one": "one.py"}, files=("one.py",))
    assert space.gems.install(folder / "notochord.json").id == "probe"


def test_a_refused_upgrade_keeps_the_installed_manifest_and_switches(space: Space, tmp_path: Path) -> None:
    """Also on upgrade; the installed version stays as it was."""
    space.gems.install(_folder(tmp_path / "v1", {"one": "one.py"}, files=("one.py",)))
    v2 = _folder(tmp_path / "v2", {"one": "one.py", "two": "../two.py"}, version="2.0.0", files=("one.py",))
    (tmp_path / "two.py").write_text("def run(input, ctx):\n    return 2\n", encoding="utf-8")
    with pytest.raises(ManifestError, match=r"tools\[1\]\.entry: tool 'two': \.\./two\.py points outside"):
        space.gems.upgrade(v2)
    assert space.gems.get("probe").version == "1.0.0"
    assert [t.name for t in space.gems.get("probe").manifest.tools] == ["one"]
