"""A tool process that breaks the channel's protocol ends its own run, and notochord carries on.

The tool's code runs in the same process as the channel's client, so it can write to the channel
itself. Before, each of these made ``gems.runner.run_sync`` raise Python's exception
(``RecursionError``, ``KeyError``, ``AttributeError``, ``TypeError``, ``binascii.Error``) out of
the host, or answered ``E_INTERNAL`` with a traceback in notochord's log. Now a message that is not
one fails the run as a protocol error, bytes that are not base64 are refused to the tool as a
``GemError`` it can catch, and a second ``ready`` is ignored (P-NET-10, OD-P06).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import notochord
from notochord.gems.runner import RunRecord

GEM = "rogue"

TOOL = """
import asyncio
import notochord.errors


async def run(input, ctx):
    channel = ctx.storage._channel  # the tool's own end of the channel
    mode = input["mode"]
    if mode == "deep":
        channel.send_line(b'{"type": "call", "id": 1, "method": "storage.kv.get", "args": '
                          + b"[" * 100_000 + b"]" * 100_000 + b"}\\n")
    elif mode == "no-id":
        channel.send({"type": "call", "method": "storage.kv.get", "args": ["k"]})
    elif mode == "args-not-a-list":
        channel.send({"type": "call", "id": 7, "method": "storage.kv.get", "args": "k"})
    elif mode == "failed-without-an-error-object":
        channel.send({"type": "failed", "error": "just words"})
    elif mode == "bytes-not-base64-in-the-output":
        channel.send({"type": "done", "output": {"$bytes": "!!not base64!!"}})
    elif mode == "ready-again":
        channel.send({"type": "ready", "isolation": 5})
        await ctx.storage.kv.set("after", 1)
        return {"ok": await ctx.storage.kv.get("after")}
    elif mode == "bytes-not-base64-in-a-call":
        try:
            await channel.call("storage.kv.set", ["k", {"$bytes": 5}], {})
        except notochord.errors.GemError as error:
            return {"caught": type(error).__name__, "message": str(error)}
    await asyncio.sleep(60)  # the host ends the run first
"""


@pytest.fixture
def rogue(space: notochord.Space, tmp_path: Path) -> notochord.Space:
    source = tmp_path / "rogue-source"
    source.mkdir()
    (source / "rogue.py").write_text(TOOL, encoding="utf-8")
    manifest = {"id": GEM, "name": "Rogue", "version": "1.0.0", "tools": [{"name": "rogue", "entry": "rogue.py"}]}
    (source / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    space.gems.install(source)
    return space


def _run(space: notochord.Space, mode: str) -> RunRecord:
    return space.gems.runner.run_sync(GEM, "rogue", input={"mode": mode}, timeout=30)


@pytest.mark.parametrize(
    "mode", ["deep", "no-id", "args-not-a-list", "bytes-not-base64-in-the-output"], ids=lambda mode: mode
)
def test_a_message_that_is_not_one_fails_the_run_as_a_protocol_error(
    rogue: notochord.Space, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        record = _run(rogue, mode)
    assert record.status == "failed"
    assert record.error is not None
    assert record.error["message"] == "the tool process wrote something that is not a channel message"
    assert not caplog.records, caplog.records[0].getMessage()
    assert _run(rogue, "ready-again").status == "succeeded"  # and notochord carries on


def test_a_failure_without_an_error_object_is_still_a_failure(rogue: notochord.Space) -> None:
    record = _run(rogue, "failed-without-an-error-object")
    assert record.status == "failed"
    assert record.error is not None and record.error["name"] == "Error"


def test_a_second_ready_is_ignored(rogue: notochord.Space) -> None:
    record = _run(rogue, "ready-again")
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {"ok": 1}


def test_bytes_that_are_not_base64_are_refused_to_the_tool_which_can_catch_it(
    rogue: notochord.Space, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        record = _run(rogue, "bytes-not-base64-in-a-call")
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {
        "caught": "GemError",
        "message": 'bytes cross as {"$bytes": base64 text}; this one is not base64',
    }
    assert not caplog.records
