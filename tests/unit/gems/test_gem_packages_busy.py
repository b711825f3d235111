"""A gem's code is never swapped or removed under a run of its tool.

Covers P-GEN-04 (the installed copy is what runs: a run keeps the code it started with), P-GEN-06
(a refused upgrade keeps the installed version and its switches) and K-UNINST (a refused uninstall
changes nothing). An upgrade or uninstall waits a few seconds for the gem's running runs to end;
when one still runs, it is refused with a busy error naming that run, and nothing changes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from notochord import Space
from notochord.errors import BusyError, GemNotFoundError
from notochord.gems import run_leases
from notochord.gems.run_leases import RunLeases

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="runs are guarded with flock")

WAITS = "import time\n\ndef run(input, ctx):\n    time.sleep(600)\n"
RETURNS = "def run(input, ctx):\n    return 2\n"
RUN_ID = "long-run"


def _folder(root: Path, source: str, *, version: str) -> Path:
    root.mkdir(parents=True)
    (root / "tool.py").write_text(source, encoding="utf-8")
    manifest = {"id": "probe", "name": "probe", "version": version, "tools": [{"name": "main", "entry": "tool.py"}]}
    (root / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


class _Run:
    """A run of the gem's tool that sleeps until it is stopped, driven on a thread of its own."""

    def __init__(self, space: Space) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._task: asyncio.Task[object] | None = None
        self._future = asyncio.run_coroutine_threadsafe(self._main(space), self._loop)
        deadline = time.monotonic() + 60
        while not self._running(space):
            assert not self._future.done(), f"the run ended before it was seen running: {self._future.result()}"
            assert time.monotonic() < deadline, "the run was not recorded running within a minute"
            time.sleep(0.05)

    async def _main(self, space: Space) -> object:
        self._task = asyncio.current_task()
        try:
            return await space.gems.runner.run("probe", "main", run_id=RUN_ID, timeout=600)
        except asyncio.CancelledError:
            return None

    @staticmethod
    def _running(space: Space) -> bool:
        try:
            return space.gems.runner.get(RUN_ID).status == "running"
        except GemNotFoundError:
            return False

    def stop(self) -> None:
        """Cancel the run and wait until its end is recorded."""
        if self._loop.is_closed():
            return
        if self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
        self._future.result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


@pytest.fixture
def running(space: Space, tmp_path: Path) -> Iterator[_Run]:
    space.gems.install(_folder(tmp_path / "v1", WAITS, version="1.0.0"))
    run = _Run(space)
    try:
        yield run
    finally:
        run.stop()


def test_p_gen_04_an_upgrade_while_a_run_of_the_gem_runs_is_refused_as_busy_naming_the_run(
    space: Space, tmp_path: Path, running: _Run
) -> None:
    v2 = _folder(tmp_path / "v2", RETURNS, version="2.0.0")
    with pytest.raises(BusyError) as refused:
        space.gems.upgrade(v2)
    message = str(refused.value)
    assert RUN_ID in message and "probe" in message
    assert refused.value.retry_after > 0
    assert space.gems.get("probe").version == "1.0.0"
    code = space.gems.runner.code_dir("probe")
    assert (code / "tool.py").read_text(encoding="utf-8") == WAITS


def test_k_uninst_an_uninstall_while_a_run_of_the_gem_runs_is_refused_as_busy_and_changes_nothing(
    space: Space, running: _Run
) -> None:
    with pytest.raises(BusyError, match=RUN_ID):
        space.gems.uninstall("probe", delete_data=True)
    assert space.gems.get("probe").version == "1.0.0"
    assert (space.gems.runner.code_dir("probe") / "tool.py").is_file()


def test_p_gen_06_once_the_run_has_ended_the_upgrade_goes_through(space: Space, tmp_path: Path, running: _Run) -> None:
    running.stop()
    assert space.gems.runner.get(RUN_ID).status == "cancelled"
    space.gems.upgrade(_folder(tmp_path / "v2", RETURNS, version="2.0.0"))
    assert space.gems.get("probe").version == "2.0.0"
    assert space.gems.runner.run_sync("probe", "main").output == 2


def test_p_gen_04_a_run_that_starts_while_the_code_is_being_replaced_waits_then_is_refused_as_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run never starts from half-replaced code: it waits for the change, then gives up in words."""
    monkeypatch.setattr(run_leases, "_WAIT_FOR_CHANGE_S", 0.2)
    changer, runner = RunLeases(tmp_path / "leases"), RunLeases(tmp_path / "leases")
    with changer.change_code("probe", running=list):
        with pytest.raises(BusyError, match="gem probe is being upgraded or uninstalled"):
            asyncio.run(runner.use_code("probe"))
        asyncio.run(runner.use_code("other")).release()
    asyncio.run(runner.use_code("probe")).release()


def test_p_gen_04_runs_of_one_gem_share_its_code_and_keep_a_change_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_leases, "_WAIT_FOR_RUNS_S", 0.2)
    leases = RunLeases(tmp_path / "leases")
    first, second = asyncio.run(leases.use_code("probe")), asyncio.run(leases.use_code("probe"))
    with first, second, pytest.raises(BusyError, match=r"run r-1, r-2\)"):
        leases.change_code("probe", running=lambda: ["r-1", "r-2"])
    leases.change_code("probe", running=list).release()
