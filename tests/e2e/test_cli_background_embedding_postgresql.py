"""On PostgreSQL, a one-shot command hands its pending passages to a background worker as on SQLite.

K-SRCH: ``docs import`` with ``NOTOCHORD_DATABASE_URL`` set writes to the space's
database and returns at once; the worker it starts finds the passages through the store, embeds them
with the real default model and exits by itself. Real processes (``python -m notochord``) and a real
PostgreSQL server throughout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from notochord.cli import handoff
from notochord.search.vault_indexer import indexer_pid

pytestmark = [pytest.mark.postgresql, pytest.mark.slow]


def _notochord(data_dir: Path, url: str, *args: str, background: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
    env["NOTOCHORD_INDEX_IN_BACKGROUND"] = "true" if background else "false"
    env["NOTOCHORD_DATABASE_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "notochord", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=True,
    )


def _pending(data_dir: Path, url: str) -> dict[str, int]:
    status = json.loads(_notochord(data_dir, url, "status", "--json", background=False).stdout)
    return {space["space"]: int(space["pending"]) for space in status["spaces"]}


def test_a_command_on_postgresql_hands_its_passages_to_a_worker_that_embeds_them(
    tmp_path: Path, database_url: str
) -> None:
    """The import returns with its passages pending in the organization's database; within bounded
    time the worker has embedded them, a query sharing no word with the note finds it by meaning,
    and the worker has exited."""
    data_dir = tmp_path / "vault"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "leave.md").write_text(
        "# Leave\n\nHolidays are booked through the staff portal two weeks ahead.", encoding="utf-8"
    )
    (notes / "bread.md").write_text("# Bread\n\nKnead the dough and let it rise overnight.", encoding="utf-8")
    _notochord(data_dir, database_url, "init", background=False)
    _notochord(data_dir, database_url, "init", "--org", "acme", background=False)
    _notochord(data_dir, database_url, "docs", "import", str(notes), "--org", "acme", background=True)
    deadline = time.monotonic() + 240
    while (pending := _pending(data_dir, database_url)).get("org:acme", 0) > 0:
        if time.monotonic() > deadline:
            log = (data_dir / "logs" / handoff.LOG_NAME).read_text(encoding="utf-8", errors="replace")
            pytest.fail(f"passages still pending after four minutes ({pending}); worker log:\n{log}")
        time.sleep(1)
    assert "org:acme" in pending
    found = json.loads(
        _notochord(
            data_dir, database_url, "search", "vacation days", "--org", "acme", "--json", background=False
        ).stdout
    )
    assert found and found[0]["title"] == "Leave"
    deadline = time.monotonic() + 60
    while indexer_pid(data_dir) is not None:
        assert time.monotonic() < deadline, "the background worker did not exit once nothing was pending"
        time.sleep(0.5)
