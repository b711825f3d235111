"""Paths in the command line's output are absolute: a ``--data-dir`` (or a backup file) named
relative to the folder the command ran in is printed as the full, resolved path, so that the output
can be pasted into another terminal, a script in another folder, or an assistant's configuration."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_harness import Cli


@pytest.fixture
def relative_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """A vault named ``vault``, relative to the folder the commands run in."""
    monkeypatch.chdir(tmp_path)
    made = Cli(Path("vault"))
    made.run("init")
    return made


def _paths_in(value: object) -> list[str]:
    """Every string in ``value`` that names something inside the vault."""
    if isinstance(value, dict):
        return [p for v in value.values() for p in _paths_in(v)]
    if isinstance(value, list):
        return [p for v in value for p in _paths_in(v)]
    return [value] if isinstance(value, str) and "vault" in value else []


def test_init_json_names_the_data_directory_and_the_space_file_by_absolute_paths(
    relative_vault: Cli, tmp_path: Path
) -> None:
    """``init --json`` with a relative ``--data-dir`` gives the resolved paths of the directory and
    of the personal space's file."""
    made = relative_vault.json("init")
    assert made["dataDir"] == str((tmp_path / "vault").resolve())
    assert Path(made["personal"]).is_absolute()
    assert Path(made["personal"]).is_file()


def test_init_of_an_organization_names_its_space_file_by_an_absolute_path(relative_vault: Cli) -> None:
    made = relative_vault.json("init", "--org", "acme")
    assert Path(made["space"]).is_absolute()
    assert Path(made["space"]).is_file()


def test_status_json_names_every_space_file_by_an_absolute_path(relative_vault: Cli) -> None:
    shown = relative_vault.json("status")
    paths = _paths_in(shown)
    assert paths
    assert all(Path(p).is_absolute() for p in paths), paths


def test_backup_json_names_the_backup_file_and_the_vault_by_absolute_paths(relative_vault: Cli) -> None:
    written = relative_vault.json("backup", "copy-of-vault.tar.gz")
    assert Path(written["path"]).is_absolute()
    assert Path(written["path"]).is_file()


def test_restore_json_names_the_restored_data_directory_by_an_absolute_path(
    relative_vault: Cli, tmp_path: Path
) -> None:
    relative_vault.run("backup", "copy.tar.gz")
    restored = Cli(Path("restored")).json("restore", "copy.tar.gz")
    assert restored["path"] == str((tmp_path / "restored").resolve())


def test_the_text_of_init_names_the_absolute_data_directory(relative_vault: Cli, tmp_path: Path) -> None:
    said = relative_vault.run("init").stdout
    assert f"ready at {(tmp_path / 'vault').resolve()}" in said


def test_a_data_directory_that_is_a_link_loop_is_named_as_missing_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Making the directory absolute never trips over a link that points at itself: the command
    answers as for any directory that holds no vault (exit code 3)."""
    monkeypatch.chdir(tmp_path)
    Path("loop").symlink_to("loop")
    result = Cli(Path("loop")).run("status", code=3)
    assert f"no vault at {tmp_path / 'loop'}" in result.stderr


def test_docs_import_json_names_every_file_by_its_absolute_path(relative_vault: Cli, tmp_path: Path) -> None:
    """Imported, skipped and failed files alike, for a folder named relative to where the command ran."""
    notes = Path("notes")
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nbody\n", encoding="utf-8")
    (notes / "b.bin").write_bytes(b"\x00")
    (notes / "c.txt").write_bytes(b"\xff\xfe not text")
    report = relative_vault.json("docs", "import", "notes", "../" + tmp_path.name + "/notes/a.md", code=2)
    named = [d["path"] for d in report["documents"]]
    named += [s["path"] for s in report["skippedFiles"]] + report["skippedPaths"]
    named += [f["path"] for f in report["failures"]]
    assert len(named) == 5, report
    assert all(p.startswith(str(tmp_path / "notes") + "/") for p in named), named


def test_docs_import_text_names_the_files_as_they_were_given(relative_vault: Cli) -> None:
    """People read the paths they typed; the full ones are in the JSON."""
    Path("notes").mkdir()
    (Path("notes") / "a.md").write_text("# A\n\nbody\n", encoding="utf-8")
    said = relative_vault.run("docs", "import", "notes").stdout
    assert "created   notes/a.md" in said
