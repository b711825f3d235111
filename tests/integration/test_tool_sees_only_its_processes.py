"""A tool sees only its own run's processes in ``/proc`` (P-FILE-01, DESIGN §4).

The tool runs in a PID namespace of its own, and where the kernel allows it, with a ``/proc`` of that
namespace mounted in a mount namespace of its own. The host's process is then not there at all: a
gem with no permission cannot read the environment notochord was started with (where API keys and
database passwords live), nor the command lines of the user's other programs. ``/proc/self`` and
the machine-wide files a runtime reads (``cpuinfo``, ``meminfo``) still work.

Where the kernel refuses the mount, the run's isolation says so, and the test that needs it is
skipped with that note.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import notochord
from one_tool_gem import install_one_tool_gem

pytestmark = pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")

LOOKS_AROUND = """
import os


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read(4096).decode(errors="replace")
    except OSError as error:
        return f"refused: {type(error).__name__}"


async def run(input, ctx):
    host = input["host"]
    return {
        "pids": sorted(int(d) for d in os.listdir("/proc") if d.isdigit()),
        "own_pid": os.getpid(),
        "self_status": _read("/proc/self/status"),
        "host_environ": _read(f"/proc/{host}/environ"),
        "host_cmdline": _read(f"/proc/{host}/cmdline"),
        "cpuinfo": _read("/proc/cpuinfo")[:200],
    }
"""


@pytest.fixture
def looking(tmp_path: Path, space: notochord.Space) -> notochord.Space:
    install_one_tool_gem(space, tmp_path / "proc-gem", "looks", LOOKS_AROUND)
    return space


def test_a_tool_does_not_see_the_host_process_or_its_environment(
    looking: notochord.Space, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-FILE-01: the host's pid is not in the tool's ``/proc``; its environment cannot be read."""
    record = looking.gems.runner.run_sync("looks", "main", input={"host": os.getpid()}, timeout=60)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    processes = next(note for note in record.isolation if note.startswith("processes:"))
    if "own /proc" not in processes:
        pytest.skip(f"the kernel gives tools no /proc of their own here: {processes}")
    seen = record.output
    # the namespace's first process and the tool itself, nothing of the machine's
    assert seen["pids"] == [1, 2], seen["pids"]
    assert seen["own_pid"] == 2
    assert "\nPid:\t2\n" in seen["self_status"]
    if os.getpid() not in (1, 2):
        assert seen["host_environ"] == "refused: FileNotFoundError"
        assert seen["host_cmdline"] == "refused: FileNotFoundError"
    assert "processor" in seen["cpuinfo"]


def test_the_hosts_own_proc_is_left_as_it_was(looking: notochord.Space) -> None:
    """The tool's ``/proc`` is mounted in its own mount namespace: the host still sees every process."""
    looking.gems.runner.run_sync("looks", "main", input={"host": os.getpid()}, timeout=60)
    assert Path(f"/proc/{os.getpid()}/cmdline").exists()
    assert len([d for d in os.listdir("/proc") if d.isdigit()]) > 2
    with open("/proc/self/status") as status:
        assert f"\nPid:\t{os.getpid()}\n" in status.read()
