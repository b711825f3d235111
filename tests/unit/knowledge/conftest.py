"""The knowledge unit tests run over both backends (Issue 17): SQLite files and PostgreSQL databases."""

from __future__ import annotations

import pytest

from postgres_server import BACKENDS


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
