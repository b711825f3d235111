"""Values a tool process sends that Python cannot walk or UTF-8 cannot hold: refused in words, never
a hang, a traceback in notochord's log or an exception out of the host.

A tool is code notochord does not control, and its code shares the process with the channel's
client, so it can write any line it likes. Two kinds of value are the tool's to send but not the
host's to keep whole:

- a list or object nested hundreds of levels deep: valid JSON, but each side walks values with
  Python's recursion. A call's argument nested too deeply is refused to the tool as a ``GemError``
  it can catch (P-STOR-02); an output nested too deeply fails the run, saying so (P-FILE-13).
- text holding a lone surrogate (half of a UTF-16 pair, which JavaScript's JSON writes as
  ``"\\ud800"``): the error that names it still reaches the tool, and an output or failure that
  holds one is recorded with U+FFFD in its place (P-FILE-13).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import notochord
from notochord.gems.bridge.protocol import MAX_NESTING
from notochord.gems.runner import RunRecord
from one_tool_gem import install_one_tool_gem

GEM = "rogue"

TOOL = r"""
import asyncio
import json

import notochord.errors


async def raw_call(ctx, method, args):
    # the tool's own end of the channel, written past the client's checks as a hostile tool would
    channel = ctx.storage._channel
    channel._next += 1
    answer = channel._loop.create_future()
    channel._pending[channel._next] = answer
    line = json.dumps({"type": "call", "id": channel._next, "method": method, "args": args, "kwargs": {}})
    channel.send_line(line.encode("ascii") + b"\n")
    return await asyncio.wait_for(answer, 20)


def nested(depth):
    return json.loads("[" * depth + "]" * depth)


async def run(input, ctx):
    mode, depth = input["mode"], input.get("depth", 0)
    try:
        if mode == "raw-deep-argument":
            await raw_call(ctx, "storage.kv.set", ["k", nested(depth)])
        elif mode == "deep-argument":
            await ctx.storage.kv.set("k", nested(depth))
        elif mode == "deep-argument-kept":
            await ctx.storage.kv.set("k", nested(depth))
            return await ctx.storage.kv.get("k")
        elif mode == "raw-deep-output":
            ctx.storage._channel.send_line(b'{"type":"done","output":' + b"[" * depth + b"]" * depth + b"}\n")
            await asyncio.sleep(60)
        elif mode == "deep-output":
            return nested(depth)
        elif mode == "raw-surrogate-echoed":
            await raw_call(ctx, "files.read", ["run:a\ud800b"])
        elif mode == "surrogate-echoed":
            await ctx.files.read("run:a\ud800b")
        elif mode == "surrogate-stored":
            await ctx.storage.kv.set("k", "a\ud800b")
        elif mode == "surrogate-output":
            return {"text": "a\ud800b"}
        elif mode == "surrogate-failure":
            raise ValueError("cannot read a\ud800b")
    except notochord.errors.NotochordError as error:
        return {"caught": type(error).__name__, "code": error.code, "message": error.message}
    except asyncio.TimeoutError:
        return {"caught": "no answer"}
    return {"caught": None}
"""


@pytest.fixture
def backend() -> str:
    """The channel is the same over either store; the one store that matters here is the run record's,
    and SQLite and PostgreSQL both keep UTF-8 only."""
    return "sqlite"


@pytest.fixture
def rogue(space: notochord.Space, tmp_path: Path) -> notochord.Space:
    install_one_tool_gem(space, tmp_path / "rogue", GEM, TOOL)
    return space


def _run(space: notochord.Space, mode: str, depth: int = 0) -> RunRecord:
    return space.gems.runner.run_sync(GEM, "main", input={"mode": mode, "depth": depth}, timeout=60)


TOO_DEEP = 4 * MAX_NESTING
"""Deep enough to exhaust Python's recursion where a value is walked whole, shallow enough to be JSON
Python reads."""


@pytest.mark.parametrize("mode", ["raw-deep-argument", "deep-argument"])
def test_an_argument_nested_too_deeply_is_refused_to_the_tool_which_can_catch_it(
    rogue: notochord.Space, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """P-STOR-02: the tool gets a ``GemError`` that names the method and the bound, and the host logs
    no traceback of its own."""
    with caplog.at_level(logging.ERROR):
        record = _run(rogue, mode, TOO_DEEP)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {
        "caught": "GemError",
        "code": "E_GEM",
        "message": f"an argument of ctx.storage.kv.set nests more than {MAX_NESTING} levels of lists or "
        "objects, more than the channel between notochord and a tool carries; flatten it into fewer levels",
    }
    assert not caplog.records, caplog.records[0].getMessage()


def test_a_value_as_deep_as_the_channel_carries_goes_there_and_back(rogue: notochord.Space) -> None:
    """P-STOR-02: the bound refuses only what is deeper than it: a value of ``MAX_NESTING - 1`` levels
    inside the call's argument list is kept and read back whole."""
    record = _run(rogue, "deep-argument-kept", MAX_NESTING - 1)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    depth, value = 0, record.output
    while isinstance(value, list):
        depth, value = depth + 1, value[0] if value else None
    assert depth == MAX_NESTING - 1


@pytest.mark.parametrize("mode", ["raw-deep-output", "deep-output"])
def test_an_output_nested_too_deeply_fails_the_run_and_says_why(
    rogue: notochord.Space, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """P-FILE-13: the run ends ``failed`` with words about the output, recorded like any failure; the
    host raises nothing and logs nothing."""
    with caplog.at_level(logging.ERROR):
        record = _run(rogue, mode, TOO_DEEP)
    assert record.status == "failed"
    assert record.error is not None
    assert f"the tool's output nests more than {MAX_NESTING} levels of lists or objects" in record.error["message"]
    assert not caplog.records, caplog.records[0].getMessage()
    assert _run(rogue, "surrogate-echoed").status == "succeeded"  # and notochord carries on


@pytest.mark.parametrize("mode", ["raw-surrogate-echoed", "surrogate-echoed"])
def test_an_error_that_echoes_a_lone_surrogate_still_reaches_the_tool(
    rogue: notochord.Space, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """P-FILE-01: the refusal naming the path the tool gave is the answer to its call, at once, rather
    than a call left without an answer until the run times out."""
    with caplog.at_level(logging.ERROR):
        record = _run(rogue, mode)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output is not None
    assert record.output["caught"] == "FilePermissionError", record.output
    assert "lone surrogate" in record.output["message"]
    assert not caplog.records, caplog.records[0].getMessage()


def test_a_lone_surrogate_a_python_tool_passes_gets_the_hosts_own_refusal(rogue: notochord.Space) -> None:
    """P-STOR-02: the tool's side of the channel sends the text as JSON carries it, and the key-value
    store refuses it in words (``E_FILE``), not Python's codec error inside the tool."""
    record = _run(rogue, "surrogate-stored")
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output is not None
    assert (record.output["caught"], record.output["code"]) == ("FileError", "E_FILE"), record.output
    assert "lone surrogate" in record.output["message"]


def test_an_output_holding_a_lone_surrogate_is_recorded_with_a_replacement_character(
    rogue: notochord.Space,
) -> None:
    """P-FILE-13: the run ends ``succeeded`` and its record keeps the output, the half pair as U+FFFD."""
    record = _run(rogue, "surrogate-output")
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {"text": "a\ufffdb"}
    assert rogue.gems.runner.get(record.id).output == {"text": "a\ufffdb"}


def test_a_failure_whose_message_holds_a_lone_surrogate_is_recorded(rogue: notochord.Space) -> None:
    """P-FILE-13: the run ends ``failed`` with the tool's own words, the half pair as U+FFFD, instead of
    the host failing to record the run's end."""
    record = _run(rogue, "surrogate-failure")
    assert record.status == "failed"
    assert record.error is not None
    assert (record.error["name"], record.error["message"]) == ("ValueError", "cannot read a\ufffdb")
