"""Installing a gem from a hostile folder or manifest: refused in words, and nothing stays behind.

Covers P-KVAL-06 (a failed install leaves nothing), P-GEN-04 (the installed copy is what runs),
P-GEN-06 and OD-P11 (a refused upgrade keeps the installed version, its code and its switches;
ticks go with ``user-selected``), OD-P10 (manifest problems as ``<json path>: <problem>``) and the
isolation of the installed code: nothing outside the gem folder is copied in for its tools to read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from notochord import GemError, ManifestError, Space

Json = dict[str, Any]

TOOL = "def run(input, ctx):\n    return 1\n"


def _manifest(**fields: Any) -> Json:
    manifest: Json = {"id": "probe", "name": "probe", "version": "1.0.0", "tools": [{"name": "one", "entry": "one.py"}]}
    manifest.update(fields)
    return manifest


def _folder(root: Path, manifest: Json | bytes, *, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    text = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode("utf-8")
    (root / "notochord.json").write_bytes(text)
    for name, content in (files if files is not None else {"one.py": TOOL}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content, encoding="utf-8")
    return root


def _code_root(space: Space) -> Path:
    return space.gems.runner.code_root


def _left_in_code_root(space: Space) -> list[str]:
    root = _code_root(space)
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def _assert_nothing_installed(space: Space) -> None:
    assert space.gems.list() == []
    assert _left_in_code_root(space) == []


# ---------------------------------------------------------------- what the gem folder holds


def test_a_link_to_a_file_outside_the_gem_folder_is_refused_and_its_content_never_copied(
    space: Space, tmp_path: Path
) -> None:
    """A link in the folder would hand the file it points to (a key, a password file) to the tool,
    which may read its installed code: the install is refused, naming the link."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET", encoding="utf-8")
    folder = _folder(tmp_path / "probe", _manifest())
    os.symlink(secret, folder / "notes.txt")
    with pytest.raises(GemError, match=r"notes\.txt .*outside the gem folder") as refused:
        space.gems.install(folder)
    assert "replace the link with the file" in str(refused.value)
    _assert_nothing_installed(space)


def test_a_link_to_a_folder_that_holds_the_gem_folder_is_refused_without_copying_it(
    space: Space, tmp_path: Path
) -> None:
    """Following such a link copies the folder into itself without end; it is refused in words."""
    folder = _folder(tmp_path / "probe", _manifest())
    os.symlink(tmp_path, folder / "everything")
    with pytest.raises(GemError, match=r"everything .*outside the gem folder"):
        space.gems.install(folder)
    _assert_nothing_installed(space)


def test_a_link_to_a_device_is_refused(space: Space, tmp_path: Path) -> None:
    """A device read as a file (``/dev/zero``) never ends; no link to one is followed."""
    folder = _folder(tmp_path / "probe", _manifest())
    os.symlink("/dev/null", folder / "data.bin")
    with pytest.raises(GemError, match=r"data\.bin"):
        space.gems.install(folder)
    _assert_nothing_installed(space)


def test_a_link_that_leads_nowhere_is_refused_in_words(space: Space, tmp_path: Path) -> None:
    folder = _folder(tmp_path / "probe", _manifest())
    os.symlink(folder / "gone.py", folder / "helper.py")
    with pytest.raises(GemError, match=r"helper\.py leads to nothing"):
        space.gems.install(folder)
    _assert_nothing_installed(space)


def test_a_named_pipe_in_the_gem_folder_is_refused_in_words(space: Space, tmp_path: Path) -> None:
    folder = _folder(tmp_path / "probe", _manifest())
    (folder / "lib").mkdir()
    os.mkfifo(folder / "lib" / "pipe")
    with pytest.raises(GemError, match=r"lib/pipe is a named pipe") as refused:
        space.gems.install(folder)
    assert "remove it" in str(refused.value)
    _assert_nothing_installed(space)


def test_links_inside_the_gem_folder_install_and_stay_inside_the_installed_copy(space: Space, tmp_path: Path) -> None:
    """A link to a file or folder of the gem itself is kept, pointing into the installed copy."""
    folder = _folder(tmp_path / "probe", _manifest(), files={"real/one.py": TOOL})
    os.symlink("real/one.py", folder / "one.py")
    os.symlink("real", folder / "alias")
    os.symlink(".", folder / "self")
    space.gems.install(folder)
    code = space.gems.runner.code_dir("probe")
    for name in ("one.py", "alias/one.py", "self/real/one.py"):
        resolved = (code / name).resolve()
        assert resolved.is_relative_to(code.resolve())
        assert resolved.read_text(encoding="utf-8") == TOOL


def test_a_refused_upgrade_keeps_the_installed_version_its_code_and_its_switches(space: Space, tmp_path: Path) -> None:
    """Before, the new manifest was recorded (and switches dropped) before its folder was found to
    be uncopyable, leaving the new manifest over the old code."""
    permissions = {"knowledge": {"permissions": ["facts.read:self:location.home.*"]}}
    space.gems.install(_folder(tmp_path / "v1", _manifest(permissions=permissions)))
    space.gems.set_permission("probe", "facts.read:self:location.home.*", True)
    v2 = _folder(
        tmp_path / "v2",
        _manifest(version="2.0.0", tools=[{"name": "two", "entry": "one.py"}]),
        files={"one.py": "def run(input, ctx):\n    return 2\n"},
    )
    os.mkfifo(v2 / "pipe")
    with pytest.raises(GemError, match="pipe is a named pipe"):
        space.gems.upgrade(v2)
    gem = space.gems.get("probe")
    assert (gem.version, [t.name for t in gem.manifest.tools]) == ("1.0.0", ["one"])
    assert [(s.permission, s.on) for s in space.gems.permissions("probe")] == [
        ("facts.read:self:location.home.*", True)
    ]
    code = space.gems.runner.code_dir("probe")
    assert (code / "one.py").read_text(encoding="utf-8") == TOOL
    assert _left_in_code_root(space) == ["probe"]


def test_an_upgrade_replaces_the_installed_code(space: Space, tmp_path: Path) -> None:
    space.gems.install(_folder(tmp_path / "v1", _manifest(), files={"one.py": TOOL, "old.py": TOOL}))
    new_tool = "def run(input, ctx):\n    return 2\n"
    space.gems.upgrade(_folder(tmp_path / "v2", _manifest(version="2.0.0"), files={"one.py": new_tool}))
    code = space.gems.runner.code_dir("probe")
    assert sorted(p.name for p in code.iterdir()) == ["notochord.json", "one.py"]
    assert (code / "one.py").read_text(encoding="utf-8") == new_tool
    assert _left_in_code_root(space) == ["probe"]


def test_an_upgrade_that_no_longer_asks_for_chosen_collections_drops_the_ticks(space: Space, tmp_path: Path) -> None:
    """OD-P11: ticks are kept while ``user-selected`` is requested; when a later version asks for it
    again, the switch starts off and no collection is ticked until the user ticks it again."""
    chosen = {"knowledge": {"permissions": ["collections.read:user-selected"]}}
    space.gems.install(_folder(tmp_path / "v1", _manifest(permissions=chosen)))
    travel = space.user.collections.create("Travel")
    space.gems.tick_collection("probe", travel.id, on=True)
    space.gems.upgrade(_folder(tmp_path / "v2", _manifest(version="2.0.0", permissions=chosen)))
    assert space.core.collections.ticked_now("probe") == {travel.id}
    space.gems.upgrade(_folder(tmp_path / "v3", _manifest(version="3.0.0")))
    assert space.core.collections.ticked_now("probe") == set()
    space.gems.upgrade(_folder(tmp_path / "v4", _manifest(version="4.0.0", permissions=chosen)))
    assert space.core.collections.ticked_now("probe") == set()


# ---------------------------------------------------------------- what the manifest says


@pytest.mark.parametrize("entry", ["one\x00.py", "x" * 5000, "a/" * 3000 + "one.py"])
def test_an_entry_the_system_cannot_name_is_a_manifest_problem(space: Space, tmp_path: Path, entry: str) -> None:
    folder = _folder(tmp_path / "probe", _manifest(tools=[{"name": "one", "entry": entry}]))
    with pytest.raises(ManifestError) as refused:
        space.gems.install(folder)
    [problem] = refused.value.problems
    assert problem.startswith("tools[0].entry: tool 'one': ")
    assert "is not a path a file can have" in problem
    _assert_nothing_installed(space)


def test_a_manifest_saved_with_a_byte_order_mark_installs(space: Space, tmp_path: Path) -> None:
    """Editors that save UTF-8 with a byte order mark produce a manifest that is otherwise JSON."""
    folder = _folder(tmp_path / "probe", b"\xef\xbb\xbf" + json.dumps(_manifest()).encode("utf-8"))
    assert space.gems.install(folder).id == "probe"


@pytest.mark.parametrize("word", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(space: Space, tmp_path: Path, word: str) -> None:
    text = json.dumps(_manifest(extra=0)).replace('"extra": 0', f'"extra": {word}')
    folder = _folder(tmp_path / "probe", text.encode("utf-8"))
    with pytest.raises(ManifestError) as refused:
        space.gems.install(folder)
    [problem] = refused.value.problems
    assert problem.startswith("$: the manifest is not valid JSON")
    assert f"{word} is not a JSON number" in problem
    _assert_nothing_installed(space)


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"version": ""}, "version"),
        ({"version": "1" * 101}, "version"),
        ({"version": "1.0\n"}, "version"),
        ({"name": "probe\x1b[2J"}, "name"),
        ({"tools": [{"name": "one\rtwo", "entry": "one.py"}]}, "tools[0].name"),
        ({"name": "weather\u202egnirts"}, "name"),
        ({"tools": [{"name": "rate\u2066", "entry": "one.py"}]}, "tools[0].name"),
    ],
)
def test_names_and_versions_are_short_single_lines(space: Space, tmp_path: Path, fields: Json, path: str) -> None:
    """A version is at most 100 characters and not blank; no name or version holds a control
    character, which would rewrite what a terminal shows next to it, nor one that turns the
    direction of text, which makes a name read as another."""
    folder = _folder(tmp_path / "probe", _manifest(**fields))
    with pytest.raises(ManifestError) as refused:
        space.gems.install(folder)
    assert [p.split(": ")[0] for p in refused.value.problems] == [path]
    _assert_nothing_installed(space)


@pytest.mark.parametrize(("first", "second"), [("rate", "Rate"), ("caf\u00e9", "cafe\u0301")])
def test_tool_names_that_differ_only_in_case_or_unicode_form_are_duplicates(
    space: Space, tmp_path: Path, first: str, second: str
) -> None:
    """Such names look the same to whoever picks a tool to run; the second one is refused."""
    tools = [{"name": first, "entry": "one.py"}, {"name": second, "entry": "one.py"}]
    with pytest.raises(ManifestError) as refused:
        space.gems.install(_folder(tmp_path / "probe", _manifest(tools=tools)))
    [problem] = refused.value.problems
    assert problem.startswith(f"tools[1].name: duplicate tool name {second!r}")
    _assert_nothing_installed(space)


def test_an_entry_inside_a_folder_the_installation_leaves_out_is_refused(space: Space, tmp_path: Path) -> None:
    """``.git``, ``__pycache__`` and ``.venv`` are not copied, so a tool there could never run."""
    folder = _folder(
        tmp_path / "probe", _manifest(tools=[{"name": "one", "entry": ".venv/one.py"}]), files={".venv/one.py": TOOL}
    )
    with pytest.raises(ManifestError) as refused:
        space.gems.install(folder)
    [problem] = refused.value.problems
    assert problem.startswith("tools[0].entry: tool 'one': .venv/one.py is inside .venv")
    _assert_nothing_installed(space)


def test_a_manifest_file_over_four_mebibytes_is_refused_unread(space: Space, tmp_path: Path) -> None:
    """A manifest is a few kilobytes; a larger file is refused before it is parsed, whatever it holds."""
    text = json.dumps(_manifest()).encode("utf-8")
    folder = _folder(tmp_path / "probe", text[:-1] + b" " * (4 * 1024 * 1024 - len(text) + 1) + b"}")
    with pytest.raises(ManifestError) as refused:
        space.gems.install(folder)
    assert refused.value.problems == ("$: the manifest file is larger than 4 MiB; a manifest is a few kilobytes",)
    _assert_nothing_installed(space)


def test_a_manifest_file_of_exactly_four_mebibytes_is_read(space: Space, tmp_path: Path) -> None:
    text = json.dumps(_manifest()).encode("utf-8")
    folder = _folder(tmp_path / "probe", text[:-1] + b" " * (4 * 1024 * 1024 - len(text)) + b"}")
    assert space.gems.install(folder).id == "probe"
