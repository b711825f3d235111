"""Fixtures of the end-to-end tests.

Every test runs in an empty working directory with no ``NOTOCHORD_*`` variable inherited from the
machine, so the only data directory a command can reach is the one the test names (or the per-user
default, which ``tests/conftest.py`` points into a temporary folder).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("NOTOCHORD_"):
            monkeypatch.delenv(key)
    # as in tests/conftest.py: no command starts a background embedding process unless a test asks
    monkeypatch.setenv("NOTOCHORD_INDEX_IN_BACKGROUND", "false")
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
