"""The host end of a tool process: spawn it confined, answer its calls through the ctx facades.

Rules:

- The tool process gets no database handle, no key and no host object: only the channel. Every call
  it makes is looked up in :data:`~notochord.gems.bridge.protocol.METHODS` and executed on the run's
  host-side :class:`~notochord.gems.context.GemContext`, so permissions, refs, quotas, the run id and
  file history apply exactly as for in-process calls.
- Results cross as JSON: models become their documented camelCase shape, bytes become
  ``{"$bytes": base64}``. Errors cross as ``{name, code, message}`` and are raised again on the other
  side as the same class (Python) or an ``Error`` with that ``code`` (JavaScript).
- A run ends with the tool's output, its failure, a timeout or a cancellation; the process is killed
  in the last two cases.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from notochord.errors import GemError, NotochordError
from notochord.gems.bridge.arguments import check_arguments
from notochord.gems.bridge.protocol import (
    MAX_LINE_BYTES,
    MAX_NESTING,
    METHODS,
    Call,
    decode,
    encode,
    megabytes,
    read_call,
    read_failure,
    read_notes,
)
from notochord.gems.context import CAPABILITIES, GemContext

__all__ = ["ToolFailure", "ToolOutcome", "run_in_process"]

log = logging.getLogger(__name__)

_BRIDGE = Path(__file__).resolve().parent
_SYSTEM_READ = (
    "/usr",
    "/lib",
    "/lib64",
    "/bin",
    "/etc",
    "/proc",
    "/sys/devices/system/cpu",
    "/dev/null",
    "/dev/urandom",
)
_ISOLATION_WARNED: set[str] = set()


@dataclass
class ToolFailure:
    name: str
    code: str
    message: str
    trace: str = ""


@dataclass
class ToolOutcome:
    status: str
    """``succeeded``, ``failed``, ``timeout`` or ``cancelled``."""
    output: Any = None
    error: ToolFailure | None = None
    isolation: list[str] = field(default_factory=list)
    log: str = ""


class _NestedTooDeeplyError(GemError):
    """A value on the channel nests more than :data:`~notochord.gems.bridge.protocol.MAX_NESTING`
    lists or objects. It crosses to the tool as a plain :class:`GemError` naming the value."""

    def __init__(self, what: str = "a value") -> None:
        super().__init__(_too_deep(what))


def _too_deep(what: str) -> str:
    return (
        f"{what} nests more than {MAX_NESTING} levels of lists or objects, more than the channel between "
        "notochord and a tool carries; flatten it into fewer levels"
    )


def to_wire(value: Any, depth: int = 0) -> Any:
    """A facade result as JSON-ready data in the documented shape.

    Raises:
        _NestedTooDeeplyError: the result nests more than ``MAX_NESTING`` lists or objects.
    """
    if isinstance(value, BaseModel):
        return to_wire(value.model_dump(by_alias=True), depth)
    own = getattr(value, "to_wire", None)
    if callable(own):
        return to_wire(own(), depth)
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, Mapping | list | tuple) and depth >= MAX_NESTING:
        raise _NestedTooDeeplyError()
    if isinstance(value, Mapping):
        return {str(k): to_wire(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_wire(v, depth + 1) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return to_wire({k: getattr(value, k) for k in value.__dataclass_fields__}, depth)
    return value


def from_wire(value: Any, depth: int = 0) -> Any:
    """JSON from the tool process as Python values: ``{"$bytes": base64}`` as bytes.

    Raises:
        GemError: ``$bytes`` that are not base64.
        _NestedTooDeeplyError: the value nests more than ``MAX_NESTING`` lists or objects.
    """
    if isinstance(value, dict | list) and depth >= MAX_NESTING:
        raise _NestedTooDeeplyError()
    if isinstance(value, dict):
        if set(value) == {"$bytes"}:
            encoded = value["$bytes"]
            try:
                if isinstance(encoded, str):
                    return base64.b64decode(encoded, validate=True)
            except ValueError:
                pass
            raise GemError('bytes cross as {"$bytes": base64 text}; this one is not base64')
        return {k: from_wire(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [from_wire(v, depth + 1) for v in value]
    return value


_ERROR_ATTRIBUTES = ("permission", "what", "ref", "host", "rule", "path", "problems", "retry_after")


def _error_body(error: BaseException, *, attributes: bool = True) -> dict[str, Any]:
    if isinstance(error, NotochordError):
        body: dict[str, Any] = {"name": type(error).__name__, "code": error.code, "message": error.message}
        extra = {a: getattr(error, a) for a in _ERROR_ATTRIBUTES if getattr(error, a, None) is not None}
        if extra and attributes:
            body["attributes"] = to_wire(extra)
        return body
    return {"name": "NotochordError", "code": "E_INTERNAL", "message": "the host failed to complete the call"}


def _error_line(call_id: int, error: BaseException) -> bytes:
    """The answer to call ``call_id`` that failed with ``error``. It never fails itself: a call left
    unanswered would hold the tool until its run times out."""
    try:
        return encode({"type": "error", "id": call_id, "error": _error_body(error)})
    except Exception:  # an attribute that cannot cross: the words without it
        log.exception("the error of ctx call %s could not be sent whole", call_id)
        return encode({"type": "error", "id": call_id, "error": _error_body(error, attributes=False)})


async def _dispatch(ctx: GemContext, method: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    if method not in METHODS:
        raise GemError(f"no such ctx method {method!r}")
    root, *path = method.split(".")
    target: Any = getattr(ctx, root, None)
    if target is None:
        raise GemError(f"this tool has no ctx.{root} (see the tool's permissions in the manifest)")
    for part in path:
        found = getattr(target, part, None)
        if found is None:
            raise GemError(f"ctx.{method} is not available to this tool")
        target = found
    try:
        positional = [from_wire(a) for a in args]
        keywords = {k: from_wire(v) for k, v in kwargs.items()}
    except _NestedTooDeeplyError:
        raise GemError(_too_deep(f"an argument of ctx.{method}")) from None
    check_arguments(method, target, positional, keywords)
    result = target(*positional, **keywords)
    if asyncio.iscoroutine(result):
        result = await result
    try:
        return to_wire(result)
    except _NestedTooDeeplyError:
        raise GemError(_too_deep(f"the answer of ctx.{method}")) from None


CALLS_IN_FLIGHT = 64
"""How many calls of one run the host works on at once."""
LOG_CHARACTERS = 100_000
"""How much of a tool's own output (its prints, to stderr) a run keeps: the end of it."""


async def _tail(stream: asyncio.StreamReader) -> str:
    """The last :data:`LOG_CHARACTERS` of what ``stream`` carries, read as it comes: a tool printing
    gigabytes in its time must not have notochord hold them all."""
    keep = 4 * LOG_CHARACTERS  # bytes: a character is at most 4 of them in UTF-8
    kept = bytearray()
    while chunk := await stream.read(1 << 16):
        kept += chunk
        if len(kept) > 2 * keep:
            del kept[:-keep]
    return kept.decode("utf-8", "replace")[-LOG_CHARACTERS:]


def _node() -> str:
    found = shutil.which("node")
    if found is None:
        raise GemError("JavaScript tools need node on the PATH; install Node.js 20 or newer")
    return found


def _python_roots() -> list[str]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.update(p for p in (sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")) if p)
    roots.update(p for p in sys.path if p and os.path.isdir(p))
    # the notochord package itself (for notochord.errors), wherever it is installed
    roots.add(str(Path(__file__).resolve().parents[3]))
    return sorted(roots)


async def run_in_process(
    ctx: GemContext,
    *,
    entry: Path,
    export: str | None,
    code_dir: Path,
    input: Any,
    writable: Sequence[Path],
    cwd: Path | None,
    timeout: float,
    readable: Sequence[Path] = (),
    isolation: list[str] | None = None,
) -> ToolOutcome:
    """Run one tool in its own confined process and answer its ctx calls until it finishes.

    ``isolation``, when given, receives the tool's isolation notes as soon as the tool reports
    them: a run cancelled before it returns an outcome still knows how it was confined.
    """
    kind = "node" if entry.suffix in {".js", ".mjs"} else "python"
    if kind == "python" and entry.suffix != ".py":
        raise GemError(f"tool entry {entry.name} must be a .py, .js or .mjs file")
    read_only = [*_python_roots(), *_SYSTEM_READ, str(code_dir), *(str(p) for p in readable)]
    config: dict[str, Any] = {
        "kind": kind,
        "entry": str(entry),
        "export": export,
        "read_only": read_only,
        "read_write": [str(p) for p in writable],
        "cwd": str(cwd) if cwd else None,
        "parent": os.getpid(),
    }
    if kind == "node":
        node = _node()
        config.update(node=node, shim=str(_BRIDGE / "shim.mjs"))
        config["read_only"].append(str(Path(node).resolve().parent.parent))
        config["read_only"].append(str(_BRIDGE))
    # The channel's and the log's pipes are notochord's own, not the subprocess transport's: a process
    # the tool forked and detached may hold their other ends open for ever, and these ends must then
    # be closed, not waited on.
    channel_read, channel_write = os.pipe()
    log_read, log_write = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-m",
            "notochord.gems.bridge.child",
            json.dumps(config),
            stdin=asyncio.subprocess.PIPE,
            stdout=channel_write,
            stderr=log_write,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"},
            # its own process group, so that whatever it forks ends with the run (see _end_group)
            start_new_session=True,
        )
    except BaseException:
        os.close(channel_read)
        os.close(log_read)
        raise
    finally:
        os.close(channel_write)
        os.close(log_write)
    assert process.stdin is not None
    channel, channel_transport = await _read_pipe(channel_read, limit=MAX_LINE_BYTES)
    log_stream, log_transport = await _read_pipe(log_read, limit=1 << 16)
    stderr_task = asyncio.create_task(_tail(log_stream))
    outcome = ToolOutcome(status="failed")
    calls: set[asyncio.Task[None]] = set()
    # past this many unanswered calls the host reads no further message of the tool until one is
    # answered: the pipe fills and the tool's next call waits, instead of notochord holding a task
    # and its arguments for each of a million calls fired at once
    slots = asyncio.Semaphore(CALLS_IN_FLIGHT)

    async def answer(call: Call) -> None:
        try:
            value = await _dispatch(ctx, call.method, call.args, call.kwargs)
            line = encode({"type": "result", "id": call.id, "value": value})
            if len(line) > MAX_LINE_BYTES:
                raise GemError(
                    f"the answer to ctx.{call.method} is {megabytes(len(line))}, more than one call may carry "
                    f"({megabytes(MAX_LINE_BYTES)}, bytes counting a third more); ask for less at a time"
                )
        except Exception as error:  # every failure goes back to the tool as an error message
            if not isinstance(error, NotochordError):
                log.exception("ctx call %s failed in the host", call.method)
            line = _error_line(call.id, error)
        assert process.stdin is not None
        process.stdin.write(line)
        await process.stdin.drain()

    async def converse() -> None:
        assert process.stdin is not None
        capabilities = [name for name in ("knowledge", *CAPABILITIES) if getattr(ctx, name) is not None]
        started = False
        while True:
            try:
                line = await channel.readline()
            except ValueError:  # asyncio's words for a line longer than the limit: the tool skipped its check
                outcome.error = ToolFailure(
                    "ToolProtocolError",
                    "E_TOOL",
                    f"the tool process sent a message of more than {megabytes(MAX_LINE_BYTES)}, more than the "
                    "channel carries; the run was stopped",
                )
                return
            if not line:
                break
            try:
                message = decode(line)
                call = read_call(message) if message["type"] == "call" else None
                output = from_wire(message.get("output")) if message["type"] == "done" else None
            except _NestedTooDeeplyError:
                outcome.error = ToolFailure("ToolProtocolError", "E_TOOL", _too_deep("the tool's output"))
                return
            except (ValueError, GemError):
                # a tool process that keeps to the protocol never gets here: its code wrote to the channel
                outcome.error = ToolFailure(
                    "ToolProtocolError", "E_TOOL", "the tool process wrote something that is not a channel message"
                )
                return
            if message["type"] == "ready" and not started:  # once, before the tool's code runs
                outcome.isolation = read_notes(message)
                if isolation is not None:
                    isolation[:] = outcome.isolation
                for note in outcome.isolation:
                    if "not " in note and note not in _ISOLATION_WARNED:
                        _ISOLATION_WARNED.add(note)
                        log.warning("gem tool isolation on this machine: %s", note)
                process.stdin.write(
                    encode(
                        {
                            "type": "start",
                            "input": to_wire(input),
                            "runId": ctx.run_id,
                            "gemId": ctx.gem_id,
                            "tool": ctx.tool,
                            "capabilities": capabilities,
                        }
                    )
                )
                await process.stdin.drain()
                started = True
            elif call is not None:
                await slots.acquire()
                task = asyncio.create_task(answer(call))
                calls.add(task)
                task.add_done_callback(calls.discard)
                task.add_done_callback(lambda _task: slots.release())
            elif message["type"] == "done":
                outcome.status = "succeeded"
                outcome.output = output
                return
            elif message["type"] == "failed":
                failure = read_failure(message)
                outcome.error = ToolFailure(
                    name=failure["name"] or "Error",
                    code=failure["code"] or "E_TOOL",
                    message=failure["message"],
                    trace=failure["trace"],
                )
                return
        outcome.error = outcome.error or ToolFailure("ToolCrashed", "E_TOOL", "the tool process ended without a result")

    try:
        await asyncio.wait_for(converse(), timeout=timeout)
    except TimeoutError:
        outcome.status = "timeout"
        outcome.error = ToolFailure("ToolTimeout", "E_TIMEOUT", f"the tool did not finish within {timeout:g} s")
    except asyncio.CancelledError:
        outcome.status = "cancelled"
        outcome.error = ToolFailure("ToolCancelled", "E_CANCELLED", "the run was cancelled")
        raise
    finally:
        for task in list(calls):
            task.cancel()
        # end of input tells the tool process's reader that no more answers come
        process.stdin.close()
        if process.returncode is None and outcome.status == "succeeded":
            # a finished tool exits by itself; give it a moment to flush what it printed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 2)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        _end_group(process.pid)
        await process.wait()
        try:
            # what is still in the pipe; a process that left the group would hold it open for ever
            await asyncio.wait_for(asyncio.shield(stderr_task), LOG_GRACE_SECONDS)
        except TimeoutError:
            log_transport.close()
        outcome.log = await stderr_task
        channel_transport.close()
    return outcome


async def _read_pipe(fd: int, *, limit: int) -> tuple[asyncio.StreamReader, asyncio.ReadTransport]:
    """A stream over the reading end ``fd`` of a pipe, and the transport that closes it."""
    stream = asyncio.StreamReader(limit=limit)
    pipe = os.fdopen(fd, "rb", buffering=0)
    try:
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), pipe
        )
    except BaseException:
        pipe.close()
        raise
    return stream, transport


LOG_GRACE_SECONDS = 2.0
"""How long the end of a run waits for the rest of the tool's log once its process is gone."""


def _end_group(group: int) -> None:
    """Kill every process left in the tool process's group: a run's processes end with the run.

    Where the kernel gave the tool a PID namespace (the run's isolation says ``processes:
    contained``), the end of the process the host started ends every process of the run, in
    whatever group or session (see :func:`~notochord.gems.bridge.sandbox.contain_processes`).
    Elsewhere this is what ends them: a child the tool forked (``os.fork``, ``subprocess.Popen``
    with ``&``) would live on after the run, still confined but unwatched, and hold the log pipe
    open, so the run never ended. There a process that left the group (``os.setsid``) escapes.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
