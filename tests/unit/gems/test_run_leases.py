"""Run leases tell a run whose process is alive from one whose process is gone.

A lease is an ``flock`` the running process holds; the operating system drops it when that process
ends, however it ends. These tests hold leases in real processes and kill them with ``SIGKILL``.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from gem_fixtures import python_process

from notochord.errors import GemError
from notochord.gems import run_leases
from notochord.gems.run_leases import LeaseState, RunLeases

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="leases need flock")

_HOLDER = """
import sys, time
from pathlib import Path
from notochord.gems.run_leases import RunLeases
lease = RunLeases(Path(sys.argv[1])).hold(sys.argv[2])
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def leases(tmp_path: Path) -> RunLeases:
    return RunLeases(tmp_path / "run-leases")


@pytest.fixture
def holder(leases: RunLeases) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lease of ``run-1`` until the test kills it."""
    with python_process(_HOLDER, str(leases.folder), "run-1", ready="held") as process:
        yield process


def _state(leases: RunLeases, run_id: str) -> LeaseState:
    with leases.probe(run_id) as state:
        return state


def test_a_lease_held_by_a_live_process_reads_held_and_stays(leases: RunLeases, holder: subprocess.Popen[str]) -> None:
    assert _state(leases, "run-1") is LeaseState.HELD
    assert leases.path("run-1").exists()


def test_a_lease_whose_process_was_killed_reads_free_and_the_probe_removes_it(
    leases: RunLeases, holder: subprocess.Popen[str]
) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with leases.probe("run-1") as state:
        assert state is LeaseState.FREE
        assert leases.path("run-1").exists()  # kept while the caller records the run
    assert not leases.path("run-1").exists()


def test_a_lease_held_in_this_process_reads_held_to_a_probe_in_this_process(leases: RunLeases) -> None:
    """A listing in the process that runs the run must not take the run for abandoned."""
    lease = leases.hold("run-1")
    try:
        assert _state(leases, "run-1") is LeaseState.HELD
    finally:
        lease.release(remove=True)


def test_a_lease_released_after_the_end_was_recorded_leaves_nothing_behind(leases: RunLeases) -> None:
    leases.hold("run-1").release(remove=True)
    assert _state(leases, "run-1") is LeaseState.MISSING


def test_a_lease_given_up_before_the_end_was_recorded_reads_free(leases: RunLeases) -> None:
    leases.hold("run-1").release(remove=False)
    assert _state(leases, "run-1") is LeaseState.FREE


def test_a_run_id_held_by_another_live_process_cannot_be_held_again(
    leases: RunLeases, holder: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_leases, "_WAIT_FOR_PROBER_S", 0.05)
    with pytest.raises(GemError, match="run run-1 is already running in another process"):
        leases.hold("run-1")


def test_a_retry_after_the_holder_was_killed_takes_the_lease_over(
    leases: RunLeases, holder: subprocess.Popen[str]
) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    lease = leases.hold("run-1")
    try:
        assert _state(leases, "run-1") is LeaseState.HELD
    finally:
        lease.release(remove=True)


def test_leases_of_different_runs_are_independent(leases: RunLeases, holder: subprocess.Popen[str]) -> None:
    lease = leases.hold("run-2")
    try:
        assert _state(leases, "run-1") is LeaseState.HELD
        assert leases.path("run-1") != leases.path("run-2")
    finally:
        lease.release(remove=True)


def test_any_run_id_makes_a_plain_file_name_inside_the_lease_folder(leases: RunLeases) -> None:
    for run_id in ("..", "uninstall:gem:2026-09-29T08:00:00.000Z", "a/b", "x" * 200):
        path = leases.path(run_id)
        assert path.parent == leases.folder
        assert path.name.endswith(".lease")
        assert "/" not in path.name
