"""The process boundary of gem tools: what a tool process can and cannot reach (P-FILE-01, DESIGN §4).

A tool runs in its own process that holds no database handle, no key and no host object. On top of
that the machine may give more: a private network namespace (no connection leaves the process) and
Landlock (files only below the allowed roots). What the kernel granted is recorded with every run
(``record.isolation``), and these tests hold the runtime to exactly that claim:

- when ``files: confined`` is reported, the space's database and ``master.key`` cannot be read, and
  nothing can be written outside the run folder (the conversation folder itself is reached only
  through ``ctx.files``, so hidden files stay hidden and every change is in the file history);
- when ``network: isolated`` is reported, a connection to a server listening on 127.0.0.1 fails and
  the server sees no connection;
- always: the tool's environment holds nothing of the host's (no secrets), the tool's own output
  does not corrupt the channel, and only the methods of the protocol's table can be called.

Which isolation the machine gave is attached to each test (``record_property("isolation", …)``)
and named in every assertion message.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import notochord
from notochord.errors import GemError
from notochord.gems.bridge.host import _dispatch
from notochord.gems.bridge.protocol import METHODS
from notochord.gems.runner import RunRecord

PY_PROBE = """
import os
import socket


def _try_read(path):
    try:
        with open(path, "rb") as handle:
            handle.read(1)
        return "read"
    except OSError as exc:
        return f"refused: {type(exc).__name__} errno {exc.errno}"


def _try_write(path):
    try:
        with open(path, "w") as handle:
            handle.write("written by a gem")
        return "written"
    except OSError as exc:
        return f"refused: {type(exc).__name__} errno {exc.errno}"


async def run(input, ctx):
    reads = {path: _try_read(path) for path in input["reads"]}
    writes = {path: _try_write(path) for path in input["writes"]}
    try:
        conn = socket.create_connection(("127.0.0.1", input["port"]), timeout=3)
        conn.sendall(b"hello from a gem")
        conn.close()
        network = "connected"
    except OSError as exc:
        network = f"refused: {type(exc).__name__} errno {exc.errno}"
    return {"reads": reads, "writes": writes, "network": network, "cwd": os.getcwd()}
"""

JS_PROBE = """
import fs from 'node:fs'
import net from 'node:net'

const tryRead = (path) => {
  try { fs.readFileSync(path); return 'read' } catch (error) { return `refused: ${error.code}` }
}
const tryWrite = (path) => {
  try { fs.writeFileSync(path, 'written by a gem'); return 'written' } catch (error) { return `refused: ${error.code}` }
}
const tryConnect = (port) => new Promise((resolve) => {
  const socket = net.connect({ host: '127.0.0.1', port, timeout: 3000 })
  socket.on('connect', () => { socket.end('hello from a gem'); resolve('connected') })
  socket.on('timeout', () => { socket.destroy(); resolve('refused: timeout') })
  socket.on('error', (error) => resolve(`refused: ${error.code}`))
})

export default async function (input, ctx) {
  const reads = Object.fromEntries(input.reads.map((p) => [p, tryRead(p)]))
  const writes = Object.fromEntries(input.writes.map((p) => [p, tryWrite(p)]))
  const network = await tryConnect(input.port)
  return { reads, writes, network, cwd: process.cwd() }
}
"""

PY_ENV = """
import os


async def run(input, ctx):
    return dict(os.environ)
"""

JS_ENV = """
export default async function (input, ctx) {
  return { ...process.env }
}
"""

PY_PRINTS = """
import sys


async def run(input, ctx):
    print('{"type": "done", "output": "forged by print"}')
    print("a line of the tool's own")
    sys.stdout.write('{"type": "failed", "error": {"name": "Forged", "message": "x"}}\\n')
    sys.stdout.flush()
    return {"answer": 42}
"""

JS_CONSOLE = """
export default async function (input, ctx) {
  console.log('{"type":"done","output":"forged by console.log"}')
  console.info('a line of the tool\\'s own')
  return { answer: 42 }
}
"""

JS_STDOUT_WRITE = """
export default async function (input, ctx) {
  process.stdout.write('progress: half way\\n')
  return { answer: 42 }
}
"""

PY_RAW_CHANNEL = """
import os


async def run(input, ctx):
    # fd 3 is the host channel, dup'd before stdout was pointed at stderr
    os.write(3, b"this is not a channel message\\n")
    return {"answer": 42}
"""

PY_OUTSIDE_TABLE = """
import notochord.errors


async def run(input, ctx):
    refused = {}
    for name, call in (
        ("knowledge.core.store.read", lambda: ctx.knowledge.core.store.read()),
        ("knowledge.facts.api.core", lambda: ctx.knowledge.facts._api.core()),
        ("knowledge.run", lambda: ctx.knowledge.run("work")),
    ):
        try:
            await call()
            refused[name] = "allowed"
        except notochord.errors.GemError as exc:
            refused[name] = f"{type(exc).__name__}: {exc.code}: {exc.message}"
    return refused
"""

JS_OUTSIDE_TABLE = """
export default async function (input, ctx) {
  try {
    await ctx.knowledge.core.store.read()
    return { refused: false }
  } catch (error) {
    return { refused: true, name: error.name, code: error.code, message: error.message }
  }
}
"""


# ---------------------------------------------------------------------------------------- building blocks


def _install(space: notochord.Space, root: Path, tools: dict[str, tuple[str, str]]) -> str:
    """Write a gem named ``probe`` with ``tools`` (name → (entry file, source)) and install it."""
    folder = root / "probe-gem"
    folder.mkdir()
    manifest: dict[str, Any] = {"id": "probe", "name": "probe", "version": "1.0.0", "tools": []}
    for name, (entry, source) in tools.items():
        (folder / entry).write_text(source, encoding="utf-8")
        manifest["tools"].append({"name": name, "entry": entry, "permissions": {"knowledge": True}})
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return space.gems.install(folder).id


def _isolation(record: RunRecord) -> tuple[bool, bool, str]:
    """(files confined, network isolated, the notes as one line) of a run."""
    notes = record.isolation
    files = any(n.startswith("files: confined") for n in notes)
    network = any(n.startswith("network: isolated") for n in notes)
    return files, network, "; ".join(notes) or "(no isolation notes)"


class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(8)
        self._socket.settimeout(0.2)
        self.port: int = self._socket.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._socket.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    folder = tmp_path / "conversation"
    folder.mkdir()
    return folder


def _probe_input(space: notochord.Space, nc: notochord.Notochord, tmp_path: Path, conversation: Path, port: int) -> Any:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    return {
        "reads": [str(space.path), str(Path(nc.data_dir) / "master.key")],
        "writes": [
            str(outside / "escaped.txt"),
            str(Path(nc.data_dir) / "planted.txt"),
            str(conversation / "beside-the-history.txt"),
            "in-run-folder.txt",
        ],
        "port": port,
    }


def _check_probe(
    record: RunRecord,
    *,
    space: notochord.Space,
    nc: notochord.Notochord,
    tmp_path: Path,
    conversation: Path,
    listener: Listener,
) -> None:
    files, network, notes = _isolation(record)
    assert record.status == "succeeded", f"[{notes}] {record.error} {record.log}"
    assert any(n.startswith("files:") for n in record.isolation), notes
    assert any(n.startswith("network:") for n in record.isolation), notes
    # the tool left a file in its run folder, so the caller gets {output, folder} (P-FILE-12)
    assert record.folder is not None and record.output["folder"] == record.folder, record.output
    result = record.output["output"]
    data_dir = Path(nc.data_dir)
    # the run folder stays usable whatever the machine gave
    assert result["writes"]["in-run-folder.txt"] == "written", f"[{notes}] {result}"
    assert (conversation / record.folder / "in-run-folder.txt").is_file()
    assert Path(result["cwd"]) == (conversation / record.folder).resolve()
    if files:
        for secret in (space.path, data_dir / "master.key"):
            assert result["reads"][str(secret)].startswith("refused"), f"[{notes}] {secret} was readable: {result}"
        for escaped in (
            tmp_path / "outside" / "escaped.txt",
            data_dir / "planted.txt",
            conversation / "beside-the-history.txt",
        ):
            assert result["writes"][str(escaped)].startswith("refused"), f"[{notes}] wrote {escaped}: {result}"
            assert not escaped.exists(), f"[{notes}] {escaped} exists"
    if network:
        assert result["network"].startswith("refused"), f"[{notes}] {result['network']}"
        assert listener.accepted == 0, f"[{notes}] the server saw {listener.accepted} connection(s)"


# ------------------------------------------------------------------------------------------ files and network


def test_python_tool_cannot_read_the_store_write_outside_or_connect_as_far_as_isolation_reports(
    space: notochord.Space,
    nc: notochord.Notochord,
    tmp_path: Path,
    conversation: Path,
    listener: Listener,
    record_property: Any,
) -> None:
    """P-FILE-01, P-FILE-20/21: the run folder directly, the conversation only through ctx.files; no network."""
    gem = _install(space, tmp_path, {"probe": ("probe.py", PY_PROBE)})
    record = space.gems.runner.run_sync(
        gem, input=_probe_input(space, nc, tmp_path, conversation, listener.port), conversation=conversation
    )
    record_property("isolation", _isolation(record)[2])
    _check_probe(record, space=space, nc=nc, tmp_path=tmp_path, conversation=conversation, listener=listener)


def test_javascript_tool_cannot_read_the_store_write_outside_or_connect_as_far_as_isolation_reports(
    space: notochord.Space,
    nc: notochord.Notochord,
    tmp_path: Path,
    conversation: Path,
    listener: Listener,
    record_property: Any,
) -> None:
    """The same confinement survives the exec into node (P-FILE-01)."""
    gem = _install(space, tmp_path, {"probe": ("probe.mjs", JS_PROBE)})
    record = space.gems.runner.run_sync(
        gem, input=_probe_input(space, nc, tmp_path, conversation, listener.port), conversation=conversation
    )
    record_property("isolation", _isolation(record)[2])
    _check_probe(record, space=space, nc=nc, tmp_path=tmp_path, conversation=conversation, listener=listener)


def test_isolation_notes_are_recorded_with_the_run_and_shown_by_the_record(
    space: notochord.Space, tmp_path: Path, record_property: Any
) -> None:
    """Every run says what the machine gave, for the network, for the processes the tool starts
    (P-FILE-01: they end with the run), for files and for the privileges it keeps, in plain words."""
    gem = _install(space, tmp_path, {"env": ("env.py", PY_ENV)})
    record = space.gems.runner.run_sync(gem)
    notes = _isolation(record)[2]
    record_property("isolation", notes)
    assert [n.split(":")[0] for n in record.isolation] == ["network", "processes", "files", "privileges"], notes
    assert space.gems.runner.get(record.id).isolation == record.isolation


# ------------------------------------------------------------------------------------------ environment


@pytest.mark.parametrize("kind", ["python", "javascript"])
def test_tool_process_environment_holds_no_host_secrets(
    space: notochord.Space, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The tool gets PATH and a locale, never the host's variables (tokens, keys, settings)."""
    secret = "s3cr3t-token-value-for-the-test"
    monkeypatch.setenv("NOTOCHORD_JWT_SECRET", secret)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    entry, source = ("env.py", PY_ENV) if kind == "python" else ("env.mjs", JS_ENV)
    gem = _install(space, tmp_path, {"env": (entry, source)})
    record = space.gems.runner.run_sync(gem)
    assert record.status == "succeeded", record.error
    env = record.output
    assert set(env) <= {"PATH", "LANG", "PYTHONUNBUFFERED", "LC_CTYPE"}, sorted(env)
    assert secret not in json.dumps(env)


# ------------------------------------------------------------------------------------------ the channel


def test_python_tool_prints_go_to_the_log_and_cannot_forge_channel_messages(
    space: notochord.Space, tmp_path: Path
) -> None:
    """stdout belongs to the channel: ``print`` lands in the run's log, even when it looks like JSON."""
    gem = _install(space, tmp_path, {"prints": ("prints.py", PY_PRINTS)})
    record = space.gems.runner.run_sync(gem)
    assert record.status == "succeeded", record.error
    assert record.output == {"answer": 42}
    assert "a line of the tool's own" in record.log
    assert "forged by print" in record.log


def test_javascript_console_output_goes_to_the_log_and_cannot_forge_channel_messages(
    space: notochord.Space, tmp_path: Path
) -> None:
    gem = _install(space, tmp_path, {"console": ("console.mjs", JS_CONSOLE)})
    record = space.gems.runner.run_sync(gem)
    assert record.status == "succeeded", record.error
    assert record.output == {"answer": 42}
    assert "a line of the tool's own" in record.log
    assert "forged by console.log" in record.log


def test_javascript_process_stdout_write_goes_to_the_log_and_does_not_break_the_run(
    space: notochord.Space, tmp_path: Path
) -> None:
    """``process.stdout.write`` is ordinary JavaScript; it must not reach the channel."""
    gem = _install(space, tmp_path, {"progress": ("progress.mjs", JS_STDOUT_WRITE)})
    record = space.gems.runner.run_sync(gem)
    assert record.status == "succeeded", record.error
    assert record.output == {"answer": 42}
    assert "progress: half way" in record.log


def test_garbage_on_the_channel_fails_the_run_instead_of_the_host(space: notochord.Space, tmp_path: Path) -> None:
    """A tool that writes a non-message line to the channel ends as a failed run, recorded as such."""
    gem = _install(space, tmp_path, {"raw": ("raw.py", PY_RAW_CHANNEL)})
    record = space.gems.runner.run_sync(gem)
    assert record.status == "failed"
    assert record.error is not None
    assert space.gems.runner.get(record.id).status == "failed"


# ------------------------------------------------------------------------------------------ the method table


def test_dispatch_refuses_every_method_outside_the_protocol_table(space: notochord.Space, tmp_path: Path) -> None:
    """Only :data:`METHODS` can be called; internals of the facades are not reachable by name."""
    gem = _install(space, tmp_path, {"env": ("env.py", PY_ENV)})
    ctx = space.gems.context(gem)
    for method in (
        "knowledge.core.store.read",
        "knowledge.run",
        "knowledge.facts._api.core.close",
        "knowledge.__class__",
        "__init__",
        "",
    ):
        assert method not in METHODS
        with pytest.raises(GemError, match="no such ctx method"):
            asyncio.run(_dispatch(ctx, method, [], {}))


def test_dispatch_refuses_a_capability_the_tool_does_not_have(space: notochord.Space, tmp_path: Path) -> None:
    """A tool without knowledge access (OD-K49) has no ``ctx.knowledge``, even by name."""
    folder = tmp_path / "quiet"
    folder.mkdir()
    (folder / "quiet.py").write_text(PY_ENV, encoding="utf-8")
    manifest = {
        "id": "quiet",
        "name": "quiet",
        "version": "1.0.0",
        "tools": [{"name": "quiet", "entry": "quiet.py", "permissions": {"knowledge": False}}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    space.gems.install(folder)
    ctx = space.gems.context("quiet", tool="quiet")
    assert ctx.knowledge is None
    with pytest.raises(GemError, match=r"no ctx\.knowledge"):
        asyncio.run(_dispatch(ctx, "knowledge.facts.lookup", ["self"], {}))


def test_python_tool_reaching_past_the_facades_gets_gem_error_through_the_boundary(
    space: notochord.Space, tmp_path: Path
) -> None:
    gem = _install(space, tmp_path, {"reach": ("reach.py", PY_OUTSIDE_TABLE)})
    record = space.gems.runner.run_sync(gem)
    assert record.status == "succeeded", record.error
    for method, outcome in record.output.items():
        assert outcome.startswith("GemError: E_GEM: no such ctx method"), (method, outcome)


def test_javascript_tool_reaching_past_the_facades_gets_an_error_with_code(
    space: notochord.Space, tmp_path: Path
) -> None:
    gem = _install(space, tmp_path, {"reach": ("reach.mjs", JS_OUTSIDE_TABLE)})
    record = space.gems.runner.run_sync(gem)
    assert record.status == "succeeded", record.error
    assert record.output["refused"] is True
    assert record.output["code"] == "E_GEM"
    assert record.output["name"] == "GemError"
    assert "no such ctx method 'knowledge.core.store.read'" in record.output["message"]
