"""Fixtures for the gem-facing file and storage capabilities: a space wired as the app wires it.

Every test runs with ``HOME`` pointing at a fresh folder, so the working-folder rules judge a home
folder the test owns, and gems are installed from ``notochord.json`` files written per test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gemfiles_fixtures import GemSpace

import notochord
from notochord.gems.api.files import make_files
from notochord.gems.context import CapabilityRequest
from notochord.gems.folders import GemFolders


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home" / "ada"
    folder.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def gem_space(nc: notochord.Notochord, tmp_path: Path) -> GemSpace:
    """The space as the composition root wires it, with each run's capability request kept."""
    space = nc.personal
    folders = space.gems.services.gem_folders
    assert isinstance(folders, GemFolders)
    assert folders.on_uninstalled in space.gems.registry.on_uninstalled
    wired = GemSpace(space=space, data_dir=nc.data_dir, folders=folders, manifests=tmp_path / "manifests")

    def files(request: CapabilityRequest) -> object:
        wired.requests[request.run_id] = request
        return make_files(request)

    space.gems.factories["files"] = files
    return wired


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    """A conversation's folder."""
    folder = tmp_path / "chat"
    folder.mkdir()
    return folder


@pytest.fixture
def gem(gem_space: GemSpace) -> str:
    """The recipes gem, installed with nothing switched on."""
    gem_space.install("recipes")
    return "recipes"
