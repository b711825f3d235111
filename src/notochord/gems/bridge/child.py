"""The tool process: confine itself, then run one Python tool, or exec node for a JavaScript tool.

Started by the host as ``python -I -m notochord.gems.bridge.child CONFIG_JSON`` with the channel on
stdin/stdout. It imports only the standard library, the bridge's own protocol and sandbox modules,
:mod:`notochord.errors` (to raise the same error classes as in-process calls) and, for the gem,
whatever the gem imports: never the store. stdout belongs to the channel: the gem's own
``print`` goes to stderr, which the host keeps as the run's log. Where the kernel allows it, the
process the host started does not run the tool itself: it waits for the tool's process, pid 2 of a
PID namespace that ends with it (see :func:`notochord.gems.bridge.sandbox.contain_processes`).
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import inspect
import json
import os
import re
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

import notochord.errors as errors
from notochord.gems.bridge import protocol, sandbox

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
_MAX_REPORT = 100_000
"""The most characters of a failure's message, and of its trace, sent to the host."""


class Record(dict[str, Any]):
    """A result object: ``r["validFrom"]``, ``r.validFrom`` and ``r.valid_from`` all work."""

    def __getattr__(self, name: str) -> Any:
        if name in self:
            return self[name]
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
        if camel in self:
            return self[camel]
        raise AttributeError(name)


class HttpResult(Record):
    """An HTTP response (it carries ``bodyBase64``): also ``text()``, ``json()`` and ``bytes()``."""

    def bytes(self) -> bytes:
        return base64.b64decode(self["bodyBase64"])

    def text(self, encoding: str = "utf-8") -> str:
        return self.bytes().decode(encoding, "replace")

    def json(self) -> Any:
        return json.loads(self.bytes())


def _inbound(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$bytes"}:
            return base64.b64decode(value["$bytes"])
        kind = HttpResult if isinstance(value.get("bodyBase64"), str) else Record
        return kind({k: _inbound(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_inbound(v) for v in value]
    return value


class _TooDeepError(Exception):
    """A value the tool sends nests more lists or objects than the channel carries."""


def _outbound(value: Any, depth: int = 0) -> Any:
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dict | list | tuple) and depth >= protocol.MAX_NESTING:
        raise _TooDeepError
    if isinstance(value, dict):
        return {str(k): _outbound(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_outbound(v, depth + 1) for v in value]
    return value


def _too_deep(what: str) -> errors.GemError:
    return errors.GemError(
        f"{what} nests more than {protocol.MAX_NESTING} levels of lists or objects, more than the channel "
        "between notochord and a tool carries; flatten it into fewer levels"
    )


def _error_class(error: dict[str, Any]) -> type[Exception]:
    cls = getattr(errors, str(error.get("name")), None)
    return cls if isinstance(cls, type) and issubclass(cls, Exception) else errors.NotochordError


def _raise(error: dict[str, Any]) -> Exception:
    cls = _error_class(error)
    exc = cls.__new__(cls)
    Exception.__init__(exc, error.get("message", ""))
    exc.message = error.get("message", "")  # type: ignore[attr-defined]
    exc.code = error.get("code", "E_NOTOCHORD")  # type: ignore[attr-defined]
    for name, value in (error.get("attributes") or {}).items():
        setattr(exc, name, value)
    return exc


class Inbox:
    """Lines from the host, read straight from the channel's file descriptor.

    The reader thread blocks here for the whole run. A buffered ``sys.stdin`` read would hold the
    reader's lock while it blocks, and the interpreter cannot shut down around a daemon thread that
    holds it ("Fatal Python error: _enter_buffered_busy" in the run's log); ``os.read`` holds no lock.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._rest = b""

    def readline(self) -> bytes:
        """The next line with its newline; whatever is left (maybe ``b""``) at end of input."""
        parts: list[bytes] = []
        while True:
            cut = self._rest.find(b"\n")
            if cut >= 0:
                parts.append(self._rest[: cut + 1])
                self._rest = self._rest[cut + 1 :]
                return b"".join(parts)
            parts.append(self._rest)
            try:
                self._rest = os.read(self._fd, 1 << 16)
            except OSError:
                self._rest = b""
            if not self._rest:
                return b"".join(parts)


class Channel:
    def __init__(self, out: Any, inbox: Inbox | None = None) -> None:
        self._out = out
        self.inbox = inbox
        self._lock = threading.Lock()
        self._next = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def send(self, message: dict[str, Any]) -> None:
        self.send_line(protocol.encode(message))

    def send_line(self, line: bytes) -> None:
        with self._lock:
            self._out.write(line)
            self._out.flush()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self) -> None:
        assert self.inbox is not None
        while line := self.inbox.readline():
            message = protocol.decode(line)
            future = self._pending.pop(int(message.get("id", -1)), None)
            if future is None or self._loop is None:
                continue
            try:
                self._loop.call_soon_threadsafe(_settle, future, message)
            except RuntimeError:  # the tool returned without awaiting this call; its loop is closed
                return

    async def call(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        assert self._loop is not None
        self._next += 1
        call_id = self._next
        try:
            sent = {"args": _outbound(args), "kwargs": _outbound(kwargs)}
        except _TooDeepError:
            raise _too_deep(f"an argument of ctx.{method}") from None
        line = protocol.encode({"type": "call", "id": call_id, "method": method, **sent})
        if len(line) > protocol.MAX_LINE_BYTES:
            raise errors.GemError(
                f"ctx.{method} was given {protocol.megabytes(len(line))}, more than one call may carry "
                f"({protocol.megabytes(protocol.MAX_LINE_BYTES)}, bytes counting a third more); pass less at a time"
            )
        future: asyncio.Future[Any] = self._loop.create_future()
        self._pending[call_id] = future
        self.send_line(line)
        return await future


def _settle(future: asyncio.Future[Any], message: dict[str, Any]) -> None:
    if future.done():
        return
    if message["type"] == "result":
        future.set_result(_inbound(message.get("value")))
    else:
        future.set_exception(_raise(message.get("error", {})))


class _Remote:
    def __init__(self, channel: Channel, path: str) -> None:
        self._channel = channel
        self._path = path

    def __getattr__(self, name: str) -> _Remote:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Remote(self._channel, f"{self._path}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._channel.call(self._path, list(args), kwargs)


class RemoteContext:
    """``ctx`` inside a tool process: the same names as in-process, every call crossing the channel."""

    def __init__(self, channel: Channel, start: dict[str, Any]) -> None:
        self.run_id = start["runId"]
        self.runId = start["runId"]
        self.gem_id = start["gemId"]
        self.tool = start.get("tool")
        capabilities = set(start.get("capabilities", []))
        for name in ("knowledge", "http", "extract", "files", "storage", "data"):
            setattr(self, name, _Remote(channel, name) if name in capabilities else None)


def _load_function(entry: str, export: str | None) -> Any:
    spec = importlib.util.spec_from_file_location("gem_tool", entry)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {entry}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gem_tool"] = module
    spec.loader.exec_module(module)
    name = export or "run"
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise ImportError(f"{Path(entry).name} defines no function {name}(input, ctx)")
    return fn


def _run_python(config: dict[str, Any], channel: Channel) -> None:
    assert channel.inbox is not None
    start = protocol.decode(channel.inbox.readline())
    try:
        fn = _load_function(config["entry"], config.get("export"))

        async def main() -> Any:
            channel.attach(asyncio.get_running_loop())
            ctx = RemoteContext(channel, start)
            result = fn(_inbound(start.get("input")), ctx)
            return await result if inspect.isawaitable(result) else result

        output = asyncio.run(main())
        sys.stdout.flush()
        try:
            done = protocol.encode({"type": "done", "output": _outbound(output)})
        except _TooDeepError:
            raise _too_deep("the tool's output") from None
        if len(done) > protocol.MAX_LINE_BYTES:
            raise errors.GemError(
                f"the tool's output is {protocol.megabytes(len(done))}, more than a run may return "
                f"({protocol.megabytes(protocol.MAX_LINE_BYTES)}); leave a large result in a file and return its path"
            )
        channel.send_line(done)
    except BaseException as exc:  # report every failure of gem code to the host, then exit non-zero
        sys.stdout.flush()
        channel.send(
            {
                "type": "failed",
                "error": {
                    "name": type(exc).__name__,
                    # a failure's words are for a person: a message of megabytes would not fit the channel
                    "message": str(exc)[:_MAX_REPORT],
                    "code": getattr(exc, "code", "E_TOOL"),
                    "trace": traceback.format_exc(limit=20)[-_MAX_REPORT:],
                },
            }
        )
        sys.stderr.flush()
        os._exit(1)


def _take_stdin() -> int:
    """The channel's input on a descriptor of its own; a gem reading ``sys.stdin`` finds it empty."""
    channel_in = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return channel_in


def main() -> None:
    config = json.loads(sys.argv[1])
    sandbox.die_with_parent(int(config.get("parent") or os.getppid()))
    # before the processes split, so that the two that stay outside the tool have no network either
    report = [sandbox.isolate_network()]
    # from here on this is the tool's process (pid 2 of a namespace of its own, where the kernel
    # allows one): the one the host started waits for it, and ends the namespace as it ends
    report.append(sandbox.contain_processes())
    node = config["kind"] == "node"
    # the channel keeps the real stdout; everything the gem prints goes to stderr
    channel_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    # node reads the channel from fd 0 itself, after exec
    inbox = None if node else Inbox(_take_stdin())
    # -I ignores PYTHONUNBUFFERED: make the gem's prints reach the log line by line
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    # Landlock for the tool alone: it may not trace or write into the processes above it, which hold
    # nothing of the host's but are not confined
    report.append(sandbox.confine_files(read_only=config["read_only"], read_write=config["read_write"]))
    # last: unsharing and Landlock may need what is dropped here
    report.append(sandbox.drop_privileges())
    if config.get("cwd"):
        os.chdir(config["cwd"])
    channel = Channel(channel_out, inbox)
    channel.send({"type": "ready", "isolation": report})
    if node:
        # hand the confined process to node: namespaces and Landlock survive exec
        os.dup2(channel_out.fileno(), 1)
        node_config = {k: config[k] for k in ("entry", "export") if k in config}
        os.execv(config["node"], [config["node"], config["shim"], json.dumps(node_config)])
    _run_python(config, channel)


if __name__ == "__main__":
    main()
