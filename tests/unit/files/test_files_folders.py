"""Working-folder choice: P-FILE-29…31, P-FILE-33."""

from __future__ import annotations

from pathlib import Path

import pytest

from notochord.errors import FileError, FileNotFoundInWorkspaceError, FilePermissionError
from notochord.files.working_folders import check_working_folder


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home" / "ada"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def data_dir(home: Path) -> Path:
    folder = home / ".notochord"
    folder.mkdir()
    return folder


def _check(path: Path, home: Path, data_dir: Path) -> Path:
    return check_working_folder(path, home=home, data_dir=data_dir)


def test_an_ordinary_project_folder_is_accepted(home: Path, data_dir: Path) -> None:
    """P-FILE-29: the chosen folder becomes the SOP's ``workspace:``."""
    project = home / "projects" / "invoices"
    project.mkdir(parents=True)
    assert _check(project, home, data_dir) == project.resolve()


def test_a_symlink_is_judged_by_where_it_leads(home: Path, data_dir: Path) -> None:
    project = home / "projects"
    project.mkdir()
    (home / "shortcut").symlink_to(project)
    assert _check(home / "shortcut", home, data_dir) == project.resolve()
    (home / "sneaky").symlink_to("/etc")
    with pytest.raises(FilePermissionError, match=r"\(system folder\)"):
        _check(home / "sneaky", home, data_dir)


@pytest.mark.parametrize(
    ("chosen", "rule"),
    [
        ("/", "filesystem root"),
        ("/etc", "system folder"),
        ("/usr/share", "system folder"),
        ("/var/tmp", "system folder"),
        ("/proc", "system folder"),
        ("/dev", "system folder"),
    ],
)
def test_root_and_system_folders_are_refused(home: Path, data_dir: Path, chosen: str, rule: str) -> None:
    """P-FILE-31: the filesystem root and system folders (and what is inside them) are refused."""
    with pytest.raises(FilePermissionError, match=rf"E_PERM_DENIED: .*\({rule}\)"):
        _check(Path(chosen), home, data_dir)


def test_the_home_folder_and_folders_containing_it_are_refused(home: Path, data_dir: Path) -> None:
    """P-FILE-31: home itself, its parent and grandparent are refused."""
    for chosen in (home, home.parent, home.parent.parent):
        with pytest.raises(FilePermissionError, match=r"\(home folder\)"):
            _check(chosen, home, data_dir)


def test_the_data_directory_and_anything_inside_or_around_it_are_refused(tmp_path: Path, home: Path) -> None:
    """P-FILE-31: notochord's data directory cannot be opened to gems."""
    data = tmp_path / "srv" / "notochord-data"
    (data / "spaces").mkdir(parents=True)
    for chosen in (data, data / "spaces", data.parent):
        with pytest.raises(FilePermissionError, match=r"\(data directory\)"):
            _check(chosen, home, data)


def test_the_hidden_data_directory_is_reported_as_the_data_directory(home: Path, data_dir: Path) -> None:
    with pytest.raises(FilePermissionError, match=r"\(data directory\)"):
        _check(data_dir, home, data_dir)


@pytest.mark.parametrize(
    "inside_home",
    [".config/someapp", "Library/Application Support/SomeApp", "AppData/Roaming/App", "snap/firefox"],
)
def test_other_applications_folders_are_refused(home: Path, data_dir: Path, inside_home: str) -> None:
    """P-FILE-31: other applications' folders are refused."""
    folder = home / inside_home
    folder.mkdir(parents=True)
    with pytest.raises(FilePermissionError, match=r"\(application folder\)"):
        _check(folder, home, data_dir)


def test_folders_inside_an_application_bundle_are_refused(home: Path, data_dir: Path) -> None:
    bundle = home / "Apps" / "Editor.app" / "Contents" / "Resources"
    bundle.mkdir(parents=True)
    with pytest.raises(FilePermissionError, match=r"\(application folder\)"):
        _check(bundle, home, data_dir)


@pytest.mark.parametrize("hidden", [".secrets", "projects/.cache", ".ssh/keys"])
def test_hidden_folders_are_refused(home: Path, data_dir: Path, hidden: str) -> None:
    """P-FILE-31: any segment starting with ``.`` is a hidden folder."""
    folder = home / hidden
    folder.mkdir(parents=True)
    with pytest.raises(FilePermissionError, match=r"\(hidden folder\)"):
        _check(folder, home, data_dir)


def test_a_link_whose_own_name_is_hidden_is_refused(home: Path, data_dir: Path) -> None:
    (home / "visible").mkdir()
    (home / ".alias").symlink_to(home / "visible")
    with pytest.raises(FilePermissionError, match=r"\(hidden folder\)"):
        _check(home / ".alias", home, data_dir)


def test_system_folders_can_be_given_for_other_systems(home: Path, data_dir: Path, tmp_path: Path) -> None:
    fake_system = tmp_path / "Applications"
    (fake_system / "Tool").mkdir(parents=True)
    with pytest.raises(FilePermissionError, match=r"\(system folder\)"):
        check_working_folder(fake_system / "Tool", home=home, data_dir=data_dir, system_folders=(str(fake_system),))


def test_missing_relative_or_file_paths_are_refused_with_their_own_errors(home: Path, data_dir: Path) -> None:
    with pytest.raises(FileNotFoundInWorkspaceError):
        _check(home / "nowhere", home, data_dir)
    with pytest.raises(FileError, match="not an absolute path"):
        _check(Path("projects"), home, data_dir)
    (home / "file.txt").write_text("x")
    with pytest.raises(FileError, match="is a file"):
        _check(home / "file.txt", home, data_dir)


def test_a_path_holding_a_nul_character_is_refused_in_words(home: Path, data_dir: Path) -> None:
    """P-FILE-29: a typed path with NUL names no folder; it is refused as the project's own error."""
    with pytest.raises(FileError, match="holds a NUL character"):
        _check(home / "pro\x00jects", home, data_dir)
