"""Running gem tools for real: one confined process per run, recorded in ``runs``.

A run: pick the tool (the only one, or by name), open the run's ``ctx`` on the host, start the tool's
run folder when the files capability is present, run the tool in its own process
(:mod:`notochord.gems.bridge.host`), finish the run folder (``tmp/`` kept on failure or
cancellation; ``{"output", "folder"}`` when files were left), and record status, output, error,
isolation and log. ``undo`` reverts the run's knowledge changes and rolls back its files.

Rules:

- A run's status is one of :data:`RUN_STATUSES`. ``cancelled`` is a run stopped by its caller
  (Ctrl-C on ``gem run``, a cancelled task); ``timeout`` only a run that outlived its time limit.
- A run's timeout is more than 0 and at most :data:`MAX_TIMEOUT` seconds; anything else, NaN and
  infinity included, is refused before anything is recorded.
- The process running a run holds its lease (:mod:`notochord.gems.run_leases`) from before it is
  recorded ``running`` until after its end is recorded. Listing runs, reading one, and starting one
  first record as ``interrupted`` every ``running`` run whose lease nobody holds: its process ended
  without recording the end (killed, crashed). Its run folder is left as it was, and the record
  names it. On SQLite, whose file only one machine uses, a ``running`` run without any lease file
  (recorded by an older version, or restored from a backup) is interrupted too; on PostgreSQL it
  may be another machine's, so it is left alone.
- What a tool returned or failed with is recorded whatever text it holds: a lone surrogate (half of
  a UTF-16 pair, which a JavaScript string may hold but UTF-8 cannot) is recorded as U+FFFD.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio
import sqlalchemy as sa

from notochord.db.schema import runs
from notochord.errors import GemError, GemNotFoundError, NotochordError, ReadOnlyStoreError
from notochord.files.history import RollbackReport
from notochord.files.runs import Outcome
from notochord.gems.api.files import RunHandle, rollback_run, start_run
from notochord.gems.bridge.host import ToolFailure, ToolOutcome, run_in_process, to_wire
from notochord.gems.context import CapabilityFactory, CapabilityRequest, GemContext, new_run_id
from notochord.gems.manifest import ToolSpec
from notochord.gems.package import remove_code, stage_package, swap_in
from notochord.gems.registry import GemRegistry
from notochord.gems.run_leases import CodeHold, Lease, LeaseState, RunLeases
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.records import RevertResult
from notochord.knowledge.writes import USER

__all__ = ["INTERRUPTED", "MAX_TIMEOUT", "RUN_STATUSES", "GemHost", "RunRecord", "Runner", "files_undone"]

_RUN_ID = re.compile(r"^[\w.:-]{1,200}$")

RUNNING = "running"
INTERRUPTED = "interrupted"
RUN_STATUSES = (RUNNING, "succeeded", "failed", "timeout", "cancelled", INTERRUPTED)
"""Every status a run record can have."""
MAX_TIMEOUT = 86_400.0
"""The longest a run may be given, in seconds (a day)."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _storable(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, which the store (UTF-8) can hold."""
    return _LONE_SURROGATE.sub("\ufffd", text)


_CANCELLED = ToolFailure("ToolCancelled", "E_CANCELLED", "the run was cancelled (Ctrl-C, or its caller stopped it)")
_INTERRUPTED = {
    "name": "RunInterrupted",
    "code": "E_INTERRUPTED",
    "message": (
        "the process running this run ended before the run did (it was killed or crashed); "
        "its run folder, if any, was kept as it was; run the tool again to redo it"
    ),
}


@dataclass(frozen=True)
class RunRecord:
    id: str
    gem_id: str
    tool: str | None
    status: str
    conversation: str | None
    folder: str | None
    input: Any
    output: Any
    error: dict[str, Any] | None
    isolation: list[str]
    log: str
    started_at: str
    finished_at: str | None

    @property
    def result(self) -> Any:
        """What the caller receives: the output, or ``{"output", "folder"}`` when files were left."""
        return self.output


class GemHost(Protocol):
    """What the runner needs of the gem service (:class:`notochord.gems.service.Gems`), which owns it."""

    @property
    def registry(self) -> GemRegistry: ...

    @property
    def factories(self) -> Mapping[str, CapabilityFactory]: ...

    def resources_dir(self, gem_id: str) -> Path: ...

    def open_run(
        self,
        gem_id: str,
        *,
        tool: str | None = ...,
        run_id: str | None = ...,
        conversation: str | Path | None = ...,
    ) -> tuple[GemContext, CapabilityRequest]: ...


class Runner:
    def __init__(self, gems: GemHost, core: KnowledgeCore, *, code_root: Path, data_dir: Path, lease_dir: Path) -> None:
        self._gems = gems
        self._core = core
        self._data_dir = data_dir
        self.code_root = code_root
        self.timeout = 120.0
        self._leases = RunLeases(lease_dir)
        # a SQLite file is used by one machine only, so its runs' leases are all in lease_dir
        self._all_leases_here = core.store.engine.dialect.name == "sqlite"
        self._held: dict[str, Lease] = {}

    # ---------------------------------------------------------------- code

    def code_dir(self, gem_id: str) -> Path:
        return self.code_root / gem_id

    def store_code(self, gem_id: str, source: Path) -> None:
        """Keep the installed gem's code, so a run never reads the author's folder again.

        The copy follows no link out of the folder (:mod:`notochord.gems.package`).

        Raises:
            GemError: the folder holds what an installation cannot keep, or cannot be copied.
        """
        source = source if source.is_dir() else source.parent
        target = self.code_dir(gem_id)
        swap_in(stage_package(source, target).path, target)

    def drop_code(self, gem_id: str) -> None:
        remove_code(self.code_dir(gem_id))

    def changing_code(self, gem_id: str) -> CodeHold:
        """Hold the gem's code alone while it is replaced or removed; no run of the gem starts
        meanwhile. Waits a few seconds for its running runs to end.

        Raises:
            BusyError: a run of the gem (named) is still running; change nothing.
        """
        return self._leases.change_code(gem_id, running=lambda: self._running_runs(gem_id))

    def _running_runs(self, gem_id: str) -> builtins.list[str]:
        query = sa.select(runs.c.id).where(runs.c.gem_id == gem_id, runs.c.status == RUNNING).order_by(runs.c.id)
        with self._core.store.read() as conn:
            return builtins.list(conn.execute(query).scalars())

    def tool(self, gem_id: str, name: str | None) -> ToolSpec:
        tools = self._gems.registry.manifest(gem_id).tools
        if name is None:
            if len(tools) != 1:
                names = ", ".join(t.name for t in tools) or "none"
                raise GemError(f"gem {gem_id} has several tools ({names}); name the one to run")
            return tools[0]
        for spec in tools:
            if spec.name == name:
                return spec
        names = ", ".join(t.name for t in tools) or "none"
        raise GemNotFoundError(f"gem {gem_id} has no tool {name!r} (tools: {names})")

    # ---------------------------------------------------------------- running

    async def run(
        self,
        gem_id: str,
        tool: str | None = None,
        *,
        input: Any = None,
        conversation: str | Path | None = None,
        run_id: str | None = None,
        timeout: float | None = None,
    ) -> RunRecord:
        """Run a tool to its end (success, failure, timeout or cancellation) and record it.

        The gem's code and manifest stay as they are until the run ends: an upgrade or uninstall
        meanwhile waits, then is refused as busy (:meth:`changing_code`).

        Raises:
            GemError: ``timeout`` is not more than 0 and at most :data:`MAX_TIMEOUT` seconds, the
                tool cannot be run, or a run with this id is running in another process.
            BusyError: the gem is being upgraded or uninstalled and was not done in time.
        """
        self.tool(gem_id, tool)  # an unknown gem or tool is refused before anything waits
        hold = await self._leases.use_code(gem_id)
        try:
            return await self._run(gem_id, tool, input=input, conversation=conversation, run_id=run_id, timeout=timeout)
        finally:
            hold.release()

    async def _run(
        self,
        gem_id: str,
        tool: str | None,
        *,
        input: Any,
        conversation: str | Path | None,
        run_id: str | None,
        timeout: float | None,
    ) -> RunRecord:
        limit = self.timeout if timeout is None else checked_timeout(timeout)
        spec = self.tool(gem_id, tool)
        if spec.entry is None:
            raise GemError(f"tool {spec.name} of gem {gem_id} has no entry file")
        code = self.code_dir(gem_id)
        entry = (code / spec.entry).resolve()
        if not entry.is_relative_to(code.resolve()) or not entry.is_file():
            raise GemError(f"tool {spec.name}: entry {spec.entry} is not a file of the installed gem")
        if run_id is not None and not _RUN_ID.match(run_id):
            raise GemError("a run id is 1-200 letters, digits, '.', ':', '_' or '-'")
        run = run_id or new_run_id()
        conversation_path = Path(conversation).resolve() if conversation is not None else None
        if conversation_path is not None and not conversation_path.is_dir():
            raise GemError(f"conversation folder {conversation_path} does not exist")
        self.settle_abandoned()
        lease = self._leases.hold(run)
        recorded_end = False
        try:
            ctx, request = self._gems.open_run(gem_id, tool=spec.name, run_id=run, conversation=conversation_path)
            handle = start_run(request, name=spec.name) if "files" in self._gems.factories else None
            # The process may write only its own run folder. The rest of the conversation folder is
            # reached through ctx.files, so hidden files stay invisible (P-FILE-20) and every change
            # goes to the file history first (P-FILE-21), which direct access would bypass.
            writable = [p for p in (getattr(handle, "path", None),) if p is not None]
            # the folder is named from the start, so a run whose process dies still says where it is
            started_in = getattr(handle, "relative", None)
            self._record_start(run, gem_id, spec.name, conversation_path, input, folder=started_in)
            isolation: list[str] = []
            outcome = ToolOutcome(status="cancelled", error=_CANCELLED, isolation=isolation)
            try:
                outcome = await run_in_process(
                    ctx,
                    entry=entry,
                    export=None,
                    code_dir=code,
                    input=input,
                    writable=writable,
                    cwd=getattr(handle, "path", None),
                    timeout=limit,
                    readable=[self._gems.resources_dir(gem_id)],
                    isolation=isolation,
                )
            finally:
                result = outcome.output
                folder = None
                if handle is not None:
                    finished = _finish_folder(handle, outcome)
                    if outcome.status == "succeeded":
                        result = finished
                    folder = finished.get("folder") if isinstance(finished, dict) and "folder" in finished else None
                await anyio.to_thread.run_sync(lambda: self._record_end(run, outcome, result, folder))
                recorded_end = True
        finally:
            # without its end recorded, the lease file stays for the next listing to find abandoned
            lease.release(remove=recorded_end)
        return self.get(run)

    def run_sync(self, gem_id: str, tool: str | None = None, **kwargs: Any) -> RunRecord:
        async def main() -> RunRecord:
            return await self.run(gem_id, tool, **kwargs)

        return asyncio.run(main())

    # ---------------------------------------------------------------- runs the host drives

    def begin(self, run_id: str, gem_id: str, *, tool: str, input: Any = None) -> None:
        """Record a run the host drives itself rather than a tool process (an assistant's session).

        This process holds the run's lease until :meth:`end`; if it ends first, the run is found
        interrupted.
        """
        if not _RUN_ID.match(run_id):
            raise GemError("a run id is 1-200 letters, digits, '.', ':', '_' or '-'")
        self.settle_abandoned()
        lease = self._leases.hold(run_id)
        try:
            self._record_start(run_id, gem_id, tool, None, input)
        except BaseException:
            lease.release(remove=False)
            raise
        self._held[run_id] = lease

    def end(self, run_id: str, *, status: str = "succeeded", output: Any = None) -> None:
        """Close a run opened with :meth:`begin`."""
        lease = self._held.pop(run_id, None)
        recorded = False
        try:
            self._record_end(run_id, ToolOutcome(status=status), output, None)
            recorded = True
        finally:
            if lease is not None:
                lease.release(remove=recorded)

    # ---------------------------------------------------------------- runs whose process is gone

    def settle_abandoned(self, run_ids: builtins.list[str] | None = None) -> builtins.list[str]:
        """Record as ``interrupted`` the ``running`` runs (of ``run_ids``, default all) whose process
        is gone, and return their ids. Their run folders are not touched."""
        query = sa.select(runs.c.id).where(runs.c.status == RUNNING)
        if run_ids is not None:
            query = query.where(runs.c.id.in_(run_ids))
        with self._core.store.read() as conn:
            running = builtins.list(conn.execute(query).scalars())
        settled = []
        for run_id in running:
            try:
                with self._leases.probe(run_id) as state:
                    gone = state is LeaseState.FREE or (state is LeaseState.MISSING and self._all_leases_here)
                    if gone and self._record_interrupted(run_id):
                        settled.append(run_id)
            except ReadOnlyStoreError:
                # a vault that cannot be written can still be read (its lease files stay for later)
                break
        return settled

    # ---------------------------------------------------------------- the record

    def _record_start(
        self, run: str, gem_id: str, tool: str, conversation: Path | None, input: Any, *, folder: str | None = None
    ) -> None:
        with self._core.store.write(actor=USER, run_id=None) as tx:
            if tx.conn.execute(sa.select(runs.c.id).where(runs.c.id == run)).first() is not None:
                tx.conn.execute(sa.delete(runs).where(runs.c.id == run))  # a retry of the same run
            tx.conn.execute(
                sa.insert(runs).values(
                    id=run,
                    gem_id=gem_id,
                    tool=tool,
                    status=RUNNING,
                    conversation=str(conversation) if conversation else None,
                    folder=folder,
                    input_json=json.dumps(input, ensure_ascii=False, default=str),
                    started_at=tx.now,
                )
            )

    def _record_end(self, run: str, outcome: ToolOutcome, result: Any, folder: str | None) -> None:
        error = None
        if outcome.error is not None:
            error = {"name": outcome.error.name, "code": outcome.error.code, "message": outcome.error.message}
        with self._core.store.write(actor=USER, run_id=None) as tx:
            tx.conn.execute(
                sa.update(runs)
                .where(runs.c.id == run)
                .values(
                    status=outcome.status,
                    folder=folder,
                    # bytes a tool returned go to the caller as the channel carries them, never as a repr
                    output_json=_storable(json.dumps(to_wire(result), ensure_ascii=False, default=str)),
                    error_json=_storable(json.dumps(error, ensure_ascii=False)) if error else None,
                    isolation_json=json.dumps(outcome.isolation),
                    log=outcome.log,
                    finished_at=tx.now,
                )
            )

    def _record_interrupted(self, run: str) -> bool:
        """Mark ``run`` interrupted if it is still ``running``; whether it was."""
        with self._core.store.write(actor=USER, run_id=None) as tx:
            changed = tx.conn.execute(
                sa.update(runs)
                .where(runs.c.id == run, runs.c.status == RUNNING)
                .values(status=INTERRUPTED, error_json=json.dumps(_INTERRUPTED, ensure_ascii=False), finished_at=tx.now)
            )
        return bool(changed.rowcount)

    def get(self, run_id: str) -> RunRecord:
        """One run; a ``running`` run whose process is gone is recorded ``interrupted`` first."""
        self.settle_abandoned([run_id])
        with self._core.store.read() as conn:
            row = conn.execute(sa.select(runs).where(runs.c.id == run_id)).first()
        if row is None:
            raise GemNotFoundError(f"no run {run_id!r} in this space; see the recent ones with: notochord runs list")
        return _record(row)

    def list(self, *, gem_id: str | None = None, limit: int = 50) -> builtins.list[RunRecord]:
        """Runs, newest first; ``running`` runs whose process is gone are recorded ``interrupted`` first."""
        self.settle_abandoned()
        query = sa.select(runs).order_by(runs.c.started_at.desc()).limit(limit)
        if gem_id is not None:
            query = query.where(runs.c.gem_id == gem_id)
        with self._core.store.read() as conn:
            return [_record(r) for r in conn.execute(query)]

    def undo(self, run_id: str) -> dict[str, Any]:
        """Revert the run's knowledge changes and roll back the files it changed.

        ``files`` is ``None`` for a run without a conversation, else ``restored`` and ``skipped``
        (display paths) and ``reasons``: why each skipped path was left alone, in words for the user.
        """
        record = self.get(run_id)
        reverted: RevertResult = self._core.changes.revert(actor=USER, run_id=run_id)
        files: dict[str, Any] | None = None
        if record.conversation:
            files = files_undone(rollback_run(self._data_dir, Path(record.conversation), run_id))
        return {"run": run_id, "knowledge": reverted.model_dump(), "files": files}


def files_undone(report: RollbackReport) -> dict[str, Any]:
    """The ``files`` part of an undo's answer: what was restored, what was left alone and why."""
    return {
        "restored": list(report.restored),
        "skipped": list(report.skipped),
        # every skipped path has its reason; the fallback only keeps the answer whole if one had none
        "reasons": {path: report.reason(path) or "it changed since" for path in report.skipped},
    }


def _finish_folder(handle: RunHandle, outcome: ToolOutcome) -> object:
    """End the run folder; a folder that cannot be tidied is kept and named in the run's log.

    The tool process wrote that folder itself and may have left it in any state (a folder it may not
    enter, a file where ``tmp/`` was): the run's end must be recorded all the same, or the run would
    later be reported as killed.
    """
    ending: Outcome = (
        "success" if outcome.status == "succeeded" else ("cancelled" if outcome.status == "cancelled" else "failure")
    )
    try:
        return handle.finish(ending, outcome.output)
    except NotochordError as exc:
        note = f"notochord could not tidy the run folder {handle.relative}, which was kept: {exc.message}"
        outcome.log = f"{outcome.log}\n{note}" if outcome.log else note
        return {"output": outcome.output, "folder": handle.relative}


def checked_timeout(timeout: float) -> float:
    """``timeout`` if it is a number of seconds a run may be given.

    Raises:
        GemError: it is not more than 0 and at most :data:`MAX_TIMEOUT` (NaN and infinity included).
    """
    number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
    if number and math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT:
        return float(timeout)
    shown = f"{timeout:g}" if number else repr(timeout)
    raise GemError(
        f"a run's timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds (a day), not {shown}; "
        "give a number of seconds in that range"
    )


def _record(row: Any) -> RunRecord:
    def load(text: str | None) -> Any:
        return None if text is None else json.loads(text)

    return RunRecord(
        id=row.id,
        gem_id=row.gem_id,
        tool=row.tool,
        status=row.status,
        conversation=row.conversation,
        folder=row.folder,
        input=load(row.input_json),
        output=load(row.output_json),
        error=load(row.error_json),
        isolation=load(row.isolation_json) or [],
        log=row.log or "",
        started_at=row.started_at,
        finished_at=row.finished_at,
    )
