"""A run whose process is gone is never shown as running (runs are recorded by ``space.gems.runner``).

The process that runs a run holds its lease until the run's end is recorded. Listing runs, reading
one or starting one first records as ``interrupted`` every ``running`` run whose lease no process
holds. Here the holder is a real process that records a host-driven run (as an MCP session does)
and is killed with ``SIGKILL``; it runs against both stores.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from gem_fixtures import python_process

import notochord
from notochord.db.schema import runs
from notochord.gems.runner import INTERRUPTED
from notochord.knowledge.writes import USER

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="leases need flock")

_SESSION = """
import json, sys, time
from pathlib import Path
import notochord
from notochord.settings import Settings
given = json.loads(sys.argv[1])
settings = Settings(data_dir=Path(given["data_dir"]), index_in_background=False, database_url=given["url"])
with notochord.open(Path(given["data_dir"]), settings, embedder=None) as nc:
    nc.personal.gems.runner.begin("session-1", "assistant", tool="mcp-session")
    print("begun", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def session(nc: notochord.Notochord) -> Iterator[subprocess.Popen[str]]:
    """Another process that has begun run ``session-1`` and lives until the test kills it."""
    given = json.dumps({"data_dir": str(nc.data_dir), "url": nc.settings.database_url})
    with python_process(_SESSION, given, ready="begun") as process:
        yield process


def _killed(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait()


def test_a_run_of_a_live_process_stays_running_when_listed(
    space: notochord.Space, session: subprocess.Popen[str]
) -> None:
    assert [(r.id, r.status) for r in space.gems.runner.list()] == [("session-1", "running")]
    assert space.gems.runner.get("session-1").status == "running"


def test_a_run_whose_process_was_killed_is_listed_interrupted_with_why(
    space: notochord.Space, session: subprocess.Popen[str]
) -> None:
    _killed(session)
    [record] = space.gems.runner.list()
    assert (record.id, record.status) == ("session-1", INTERRUPTED)
    assert record.finished_at is not None
    assert record.error is not None
    assert record.error["code"] == "E_INTERRUPTED"
    assert "ended before the run did" in record.error["message"]


def test_reading_one_run_whose_process_was_killed_shows_it_interrupted(
    space: notochord.Space, session: subprocess.Popen[str]
) -> None:
    _killed(session)
    assert space.gems.runner.get("session-1").status == INTERRUPTED


def test_starting_another_run_settles_the_abandoned_ones_first(
    space: notochord.Space, session: subprocess.Popen[str]
) -> None:
    _killed(session)
    space.gems.runner.begin("session-2", "assistant", tool="mcp-session")
    try:
        with space.core.store.read() as conn:
            statuses = {row.id: row.status for row in conn.execute(sa.select(runs.c.id, runs.c.status))}
        assert statuses == {"session-1": INTERRUPTED, "session-2": "running"}
    finally:
        space.gems.runner.end("session-2")


def test_a_run_begun_and_ended_in_this_process_keeps_its_own_status(space: notochord.Space) -> None:
    runner = space.gems.runner
    runner.begin("session-1", "assistant", tool="mcp-session")
    assert runner.get("session-1").status == "running"  # this process holds it
    runner.end("session-1", output={"toolCalls": 0})
    assert runner.get("session-1").status == "succeeded"


def test_a_running_run_recorded_without_any_lease_is_interrupted_only_where_one_machine_holds_the_store(
    space: notochord.Space, backend: str
) -> None:
    """A record left ``running`` by a version without leases (or restored from a backup): a SQLite
    file is used on one machine, so its process is gone; on PostgreSQL another machine may run it."""
    with space.core.store.write(actor=USER, run_id=None) as tx:
        tx.conn.execute(
            sa.insert(runs).values(id="old-1", gem_id="weather", tool="home", status="running", started_at=tx.now)
        )
    expected = INTERRUPTED if backend == "sqlite" else "running"
    assert space.gems.runner.get("old-1").status == expected
