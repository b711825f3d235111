"""A run's log holds what the tool printed and nothing else (DESIGN §4).

The tool process reads the host's answers on a thread of its own while the tool runs. Python tools
that finished successfully used to leave ``Fatal Python error: _enter_buffered_busy`` in the log
most of the time: that thread was still blocked in a buffered ``sys.stdin`` read when the
interpreter shut down. These tests run real tool processes many times, against a real space.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import notochord

RUNS = 12

CHATTY = """
import sys


async def run(input, ctx):
    print("looking up", input["n"])
    facts = await ctx.knowledge.facts.lookup("self", "pref.food")
    print("found", len(facts), file=sys.stderr)
    return {"n": input["n"], "facts": len(facts)}
"""

QUIET = """
async def run(input, ctx):
    await ctx.knowledge.facts.lookup("self", "pref.food")
    return "ok"
"""

LEAVES_A_CALL = """
import asyncio


async def run(input, ctx):
    asyncio.ensure_future(ctx.knowledge.facts.lookup("self", "pref.food"))
    await asyncio.sleep(0)  # the call is on its way; the tool returns without waiting for the answer
    return "left"
"""

READS_STDIN = """
import sys


def run(input, ctx):
    return {"stdin": sys.stdin.read()}
"""


@pytest.fixture
def gem_space(tmp_path: Path, space: notochord.Space) -> notochord.Space:
    folder = tmp_path / "chatty"
    folder.mkdir()
    tools = {"chatty": CHATTY, "quiet": QUIET, "stdin": READS_STDIN, "leaves": LEAVES_A_CALL}
    for name, source in tools.items():
        (folder / f"{name}.py").write_text(source, encoding="utf-8")
    manifest = {
        "id": "chatty",
        "name": "chatty",
        "version": "1.0.0",
        "permissions": {"knowledge": {"permissions": ["facts.read:self:pref.food.*"], "reason": "Read tastes"}},
        "tools": [{"name": n, "entry": f"{n}.py", "permissions": {"knowledge": True}} for n in tools],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    space.gems.install(folder)
    space.gems.set_permission("chatty", "facts.read:self:pref.food.*", True)
    space.user.facts.put(predicate="pref.food.like", value="pancakes")
    return space


def test_every_successful_run_logs_exactly_what_the_tool_printed(gem_space: notochord.Space) -> None:
    """Twelve runs in a row, each log is the tool's two lines, in order."""
    for n in range(RUNS):
        record = gem_space.gems.runner.run_sync("chatty", "chatty", input={"n": n})
        assert record.status == "succeeded", f"{record.error}\n{record.log}"
        assert record.output == {"n": n, "facts": 1}
        assert record.log == f"looking up {n}\nfound 1\n", f"run {n} logged:\n{record.log}"


def test_a_tool_that_prints_nothing_leaves_an_empty_log(gem_space: notochord.Space) -> None:
    """Nothing printed, nothing logged, run after run."""
    logs = [gem_space.gems.runner.run_sync("chatty", "quiet").log for _ in range(RUNS)]
    assert logs == [""] * RUNS


def test_the_channel_is_not_the_tools_stdin(gem_space: notochord.Space) -> None:
    """``sys.stdin`` in a tool is empty; the host's messages cannot be read off it."""
    record = gem_space.gems.runner.run_sync("chatty", "stdin")
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {"stdin": ""}
    assert record.log == ""


def test_an_answer_arriving_after_the_tool_returned_leaves_no_trace(gem_space: notochord.Space) -> None:
    """A call the tool did not wait for is answered into a closed loop, silently."""
    for _ in range(RUNS):
        record = gem_space.gems.runner.run_sync("chatty", "leaves")
        assert record.status == "succeeded", f"{record.error}\n{record.log}"
        assert record.output == "left"
        assert record.log == ""
