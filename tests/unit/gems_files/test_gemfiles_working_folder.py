"""Choosing a gem's working folder: P-FILE-29, P-FILE-31, P-FILE-33."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from gemfiles_fixtures import GemSpace

from notochord.db.schema import gem_settings
from notochord.errors import FileNotFoundInWorkspaceError, FilePermissionError, GemError
from notochord.gems.folders import WORKING_FOLDER


def _stored(gem_space: GemSpace, gem_id: str) -> list[str]:
    with gem_space.space.core.store.read() as conn:
        rows = conn.execute(
            sa.select(gem_settings.c.value_json).where(
                gem_settings.c.gem_id == gem_id, gem_settings.c.key == WORKING_FOLDER
            )
        ).scalars()
        return [json.loads(r) for r in rows]


def test_a_chosen_folder_is_stored_resolved_in_the_gems_settings(gem_space: GemSpace, gem: str, tmp_path: Path) -> None:
    """P-FILE-29: the user chooses the folder per gem, on the gem's page."""
    project = tmp_path / "projects" / "invoices"
    project.mkdir(parents=True)
    (tmp_path / "link").symlink_to(project)
    core = gem_space.space.core

    chosen = gem_space.folders.set_working_folder(gem, tmp_path / "link", core=core)

    assert chosen == project.resolve()
    assert gem_space.folders.working_folder(gem, core=core) == project.resolve()
    assert _stored(gem_space, gem) == [str(project.resolve())]


def test_choosing_again_replaces_and_none_clears(gem_space: GemSpace, gem: str, tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    core = gem_space.space.core
    gem_space.folders.set_working_folder(gem, first, core=core)
    gem_space.folders.set_working_folder(gem, second, core=core)
    assert _stored(gem_space, gem) == [str(second.resolve())]
    assert gem_space.folders.set_working_folder(gem, None, core=core) is None
    assert gem_space.folders.working_folder(gem, core=core) is None
    assert _stored(gem_space, gem) == []


def test_each_gem_has_its_own_working_folder(gem_space: GemSpace, gem: str, tmp_path: Path) -> None:
    gem_space.install("other")
    project = tmp_path / "project"
    project.mkdir()
    gem_space.folders.set_working_folder(gem, project, core=gem_space.space.core)
    assert gem_space.folders.working_folder("other", core=gem_space.space.core) is None


@pytest.mark.parametrize(
    ("pick", "rule"),
    [
        (lambda tmp, home, data: Path("/"), "filesystem root"),
        (lambda tmp, home, data: home, "home folder"),
        (lambda tmp, home, data: home.parent, "home folder"),
        (lambda tmp, home, data: data, "data directory"),
        (lambda tmp, home, data: data / "spaces", "data directory"),
        (lambda tmp, home, data: Path("/etc"), "system folder"),
        (lambda tmp, home, data: home / ".config" / "tool", "application folder"),
        (lambda tmp, home, data: tmp / "projects" / ".hidden", "hidden folder"),
    ],
    ids=["root", "home", "above-home", "data-dir", "inside-data-dir", "system", "app-data", "hidden"],
)
def test_forbidden_folders_are_refused_naming_the_rule_and_nothing_is_stored(
    gem_space: GemSpace, gem: str, tmp_path: Path, home: Path, pick: object, rule: str
) -> None:
    """P-FILE-31: as for "Chat about a folder"; the message names the rule (E_PERM_DENIED)."""
    assert callable(pick)
    folder: Path = pick(tmp_path, home, gem_space.data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with pytest.raises(FilePermissionError, match=rf"\({rule}\)") as raised:
        gem_space.folders.set_working_folder(gem, folder, core=gem_space.space.core)
    assert raised.value.code == "E_PERM_DENIED"
    assert _stored(gem_space, gem) == []


def test_a_folder_that_does_not_exist_is_not_found(gem_space: GemSpace, gem: str, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundInWorkspaceError):
        gem_space.folders.set_working_folder(gem, tmp_path / "missing", core=gem_space.space.core)


def test_only_an_installed_gem_can_have_a_working_folder(gem_space: GemSpace, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with pytest.raises(GemError, match="no gem 'ghost'"):
        gem_space.folders.set_working_folder("ghost", project, core=gem_space.space.core)
    with pytest.raises(GemError, match="not a gem id"):
        gem_space.folders.set_working_folder("../escape", project, core=gem_space.space.core)


def test_uninstall_forgets_the_working_folder(gem_space: GemSpace, gem: str, tmp_path: Path) -> None:
    """K-UNINST-11: a reinstalled gem starts without the earlier installation's settings."""
    project = tmp_path / "project"
    project.mkdir()
    gem_space.folders.set_working_folder(gem, project, core=gem_space.space.core)
    gem_space.uninstall(gem)
    gem_space.install(gem)
    assert gem_space.folders.working_folder(gem, core=gem_space.space.core) is None
