"""What crosses between a tool process and notochord is bounded, and a bound is told, never a crash
(P-FILE-01, P-FILE-17, P-STOR-02).

Every ``ctx`` call of a tool process and every answer is one line on the channel, at most 64 MB.
Before, a Python tool writing a 70 MB file made the host's reader raise asyncio's ``ValueError``
out of ``gems.runner.run_sync``, and a tool reading a multi-gigabyte file of the conversation made
notochord read it whole into memory. Now:

- a call too large to send fails inside the tool as a ``GemError`` it can catch (Python and
  JavaScript alike), and the run goes on;
- an output too large to return fails the run with words that say what to do;
- a tool process that skips its own check ends its own run, and notochord carries on;
- a file of the conversation larger than a tool may read (40 MB) is refused before it is read, and
  a named pipe is refused without waiting for a writer;
- what a tool prints is kept by its end, and never held whole.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import notochord
from notochord.gems.bridge import host
from notochord.gems.runner import RunRecord

GEM = "bigio"
MB = 1024 * 1024

PY_TOOL = """
import os
import subprocess
import sys
import notochord.errors
import notochord.gems.bridge.protocol as protocol


async def run(input, ctx):
    mode = input["mode"]
    if mode == "write":
        try:
            await ctx.files.write("workspace:big.bin", b"x" * (input["mb"] * 1024 * 1024))
        except notochord.errors.GemError as error:
            return {"caught": type(error).__name__, "code": error.code, "message": str(error)}
        return {"wrote": input["mb"]}
    if mode == "read":
        data = await ctx.files.read("workspace:" + input["name"])
        return {"read": len(data)}
    if mode == "output":
        return "x" * (input["mb"] * 1024 * 1024)
    if mode == "bypass":
        protocol.MAX_LINE_BYTES = 10**12  # a hostile tool skips its side's check
        return "x" * (input["mb"] * 1024 * 1024)
"""

JS_TOOL = """
export default async function (input, ctx) {
  if (input.mode === 'write') {
    try {
      await ctx.files.write('workspace:big-js.bin', new Uint8Array(input.mb * 1024 * 1024));
    } catch (error) {
      return { caught: error.name, code: error.code, message: error.message };
    }
    return { wrote: input.mb };
  }
  return 'x'.repeat(input.mb * 1024 * 1024);
}
"""


@pytest.fixture
def gem_space(space: notochord.Space, tmp_path: Path) -> notochord.Space:
    source = tmp_path / "bigio-source"
    source.mkdir()
    (source / "big.py").write_text(PY_TOOL, encoding="utf-8")
    (source / "big.mjs").write_text(JS_TOOL, encoding="utf-8")
    manifest = {
        "id": GEM,
        "name": "Big I/O",
        "version": "1.0.0",
        "tools": [{"name": "py", "entry": "big.py"}, {"name": "js", "entry": "big.mjs"}],
    }
    (source / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    space.gems.install(source)
    return space


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    folder = tmp_path / "conversation"
    folder.mkdir()
    return folder


def _run(space: notochord.Space, tool: str, conversation: Path, **given: object) -> RunRecord:
    return space.gems.runner.run_sync(GEM, tool, input=dict(given), conversation=conversation)


def test_a_python_call_too_large_for_the_channel_fails_in_the_tool_which_can_catch_it(
    gem_space: notochord.Space, conversation: Path
) -> None:
    record = _run(gem_space, "py", conversation, mode="write", mb=70)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {
        "caught": "GemError",
        "code": "E_GEM",
        "message": "ctx.files.write was given 94 MB, more than one call may carry (64 MB, bytes counting a "
        "third more); pass less at a time",
    }
    assert not (conversation / "big.bin").exists()
    record = _run(gem_space, "py", conversation, mode="write", mb=30)
    assert record.status == "succeeded" and record.output == {"wrote": 30}
    assert (conversation / "big.bin").stat().st_size == 30 * MB


def test_a_javascript_call_too_large_for_the_channel_fails_in_the_tool_alike(
    gem_space: notochord.Space, conversation: Path
) -> None:
    record = _run(gem_space, "js", conversation, mode="write", mb=70)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output["caught"] == "GemError" and record.output["code"] == "E_GEM"
    assert record.output["message"].startswith("ctx.files.write was given 94 MB, more than one call may carry")
    assert not (conversation / "big-js.bin").exists()


@pytest.mark.parametrize("tool", ["py", "js"])
def test_an_output_too_large_to_return_fails_the_run_and_says_what_to_do(
    gem_space: notochord.Space, conversation: Path, tool: str
) -> None:
    record = _run(gem_space, tool, conversation, mode="output", mb=70)
    assert record.status == "failed"
    assert record.error is not None
    assert record.error["message"] == (
        "the tool's output is 71 MB, more than a run may return (64 MB); "
        "leave a large result in a file and return its path"
    )


def test_a_tool_process_that_skips_its_check_ends_its_own_run_and_notochord_carries_on(
    gem_space: notochord.Space, conversation: Path
) -> None:
    record = _run(gem_space, "py", conversation, mode="bypass", mb=70)
    assert record.status == "failed"
    assert record.error is not None
    assert record.error["message"] == (
        "the tool process sent a message of more than 64 MB, more than the channel carries; the run was stopped"
    )
    assert _run(gem_space, "py", conversation, mode="write", mb=1).status == "succeeded"


def test_a_file_larger_than_a_tool_may_read_is_refused_before_it_is_read(
    gem_space: notochord.Space, conversation: Path
) -> None:
    with (conversation / "video.bin").open("wb") as out:
        out.truncate(3 * 1024 * MB)  # sparse: 3 GB that take no disk
    record = _run(gem_space, "py", conversation, mode="read", name="video.bin")
    assert record.status == "failed"
    assert record.error is not None
    assert record.error["message"] == "workspace:video.bin is 3072 MB, more than a tool may read at once (40 MB)"
    (conversation / "small.bin").write_bytes(b"y" * (40 * MB))
    assert _run(gem_space, "py", conversation, mode="read", name="small.bin").output == {"read": 40 * MB}


def test_a_named_pipe_in_the_conversation_is_refused_without_waiting_for_a_writer(
    gem_space: notochord.Space, conversation: Path
) -> None:
    os.mkfifo(conversation / "pipe")
    record = _run(gem_space, "py", conversation, mode="read", name="pipe")
    assert record.status == "failed"
    assert record.error is not None
    assert record.error["message"] == "workspace:pipe is not a file but a pipe, socket or device; it cannot be read"


NOISY_TOOL = """
import sys


async def run(input, ctx):
    line = "n" * 1023 + "\\n"
    for _ in range(input["mb"] * 1024):
        sys.stderr.write(line)
    sys.stderr.write("the last line\\n")
    return {"printed": input["mb"]}
"""

MEASURE_A_NOISY_RUN = """
import json, pathlib, resource, sys
import notochord
from notochord.gems.bridge import host
from notochord.settings import Settings

data, source = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
with notochord.open(data, Settings(data_dir=data, index_in_background=False), embedder=None) as nc:
    nc.personal.gems.install(source)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    record = nc.personal.gems.runner.run_sync("noisy", "noisy", input={"mb": 300})
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps({"status": record.status, "log": record.log, "grown_kb": grown}))
"""


def test_what_a_tool_prints_is_kept_by_its_end_and_never_held_whole(tmp_path: Path) -> None:
    """A tool printing 300 MB in its time leaves the last 100,000 characters in the run's log; the
    host holds no more than that at any moment (it held all 300 MB before, and a tool printing for
    its whole two minutes could take the host's memory). Measured in a process of its own, whose
    peak memory is the host's."""
    source = tmp_path / "noisy-source"
    source.mkdir()
    (source / "noisy.py").write_text(NOISY_TOOL, encoding="utf-8")
    manifest = {"id": "noisy", "name": "Noisy", "version": "1.0.0", "tools": [{"name": "noisy", "entry": "noisy.py"}]}
    (source / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    measured = subprocess.run(
        [sys.executable, "-c", MEASURE_A_NOISY_RUN, str(tmp_path / "data"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    found = json.loads(measured.stdout.strip().splitlines()[-1])
    assert found["status"] == "succeeded"
    assert len(found["log"]) == 100_000
    assert found["log"].endswith("n\nthe last line\n")
    assert found["grown_kb"] < 100 * 1024, f"the host grew by {found['grown_kb'] // 1024} MB"


FLOOD_TOOL = """
export default async function (input, ctx) {
  const calls = [];
  for (let i = 0; i < input.n; i++) calls.push(ctx.storage.kv.get('k' + i, i));
  const got = await Promise.all(calls);
  return { answered: got.length, last: got[got.length - 1] };
}
"""


def test_a_tool_firing_many_calls_at_once_has_at_most_sixty_four_worked_on(
    space: notochord.Space, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """500 calls fired at once are all answered, but the host takes up at most 64 at a time and reads
    the rest as those finish. Before, it started a task for every call it read: a tool firing a
    million calls made notochord hold a million tasks and their arguments (100,000 took 680 MB)."""
    source = tmp_path / "flood-source"
    source.mkdir()
    (source / "flood.mjs").write_text(FLOOD_TOOL, encoding="utf-8")
    manifest = {"id": "flood", "name": "Flood", "version": "1.0.0", "tools": [{"name": "flood", "entry": "flood.mjs"}]}
    (source / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    space.gems.install(source)

    working = 0
    most = 0
    dispatch = host._dispatch

    async def counted(*args: Any) -> Any:
        nonlocal working, most
        working += 1
        most = max(most, working)
        try:
            return await dispatch(*args)
        finally:
            working -= 1

    monkeypatch.setattr(host, "_dispatch", counted)
    record = space.gems.runner.run_sync("flood", "flood", input={"n": 500})
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {"answered": 500, "last": 499}
    assert most == host.CALLS_IN_FLIGHT == 64
