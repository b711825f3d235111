"""A hostile or careless gem against its run folder, the file history and the end of its run.

The tool process may write its own run folder directly (P-FILE-01/03), so it can leave there
whatever the file system allows: a named pipe, a file where ``tmp/`` was, a folder swapped for a
link while a ``ctx.files`` call is under way. It may also fork. None of this may hang notochord,
leave a run unrecorded, reach a file outside the folders, or slip past the file history:

- the end of a run never opens a named pipe left as the step journal, and removes whatever the
  tool put where ``tmp/`` was (P-FILE-09, P-FILE-10, P-FILE-11);
- the end of a run is recorded even when its folder cannot be tidied (P-FILE-12);
- ``move`` refuses a pipe, and the history never waits on one (P-FILE-21, P-FILE-24, P-FILE-25);
- an overwrite keeps the file's permissions, and a rollback restores them (P-FILE-22, P-FILE-25);
- a ``delete`` whose folder is swapped for a link after the check trashes the checked file, never
  one outside the folder (P-FILE-01, P-FILE-23, OD-P06);
- processes a tool forks end with its run, and do not keep the run from ending (P-FILE-01).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import notochord
from notochord.clock import FixedClock
from notochord.errors import FileError
from notochord.files.history import FileHistory, FolderTrash, path_state
from notochord.files.runs import RunFolder, RunFolders
from notochord.files.workspace import Workspace
from process_tokens import daemon_token, processes_with

GEM = "hostile"
_HANG_S = 10.0

TOOL = """
import os
import sys
import time


async def run(input, ctx):
    mode = input["mode"]
    if mode == "fork":
        seen, tell = os.pipe()
        if os.fork() == 0:
            # the test finds it by the token in its command line: its pid in the run's PID namespace
            # names another process on the machine, and so does its /proc/self there
            os.write(tell, b"started")
            sleeps = "import sys, time; time.sleep(float(sys.argv[1]))"
            os.execv(sys.executable, [sys.executable, "-c", sleeps, str(input["sleep"]), input["token"]])
        os.close(tell)
        return {"child": os.read(seen, 32).decode()}
    if mode == "pipe-journal":
        os.mkfifo(".steps.json")
        raise RuntimeError("failed after leaving a pipe as the journal")
    if mode == "file-for-tmp":
        os.rmdir("tmp")
        with open("tmp", "w") as handle:
            handle.write("not a folder")
        with open("result.md", "w") as handle:
            handle.write("# done")
        return "ok"
    if mode == "plain":
        with open("result.md", "w") as handle:
            handle.write("# done")
        return "ok"
    raise ValueError(mode)
"""


@pytest.fixture
def backend() -> str:
    """These tests are about files and processes, not the store: SQLite files suffice."""
    return "sqlite"


@pytest.fixture
def files_clock() -> FixedClock:
    return FixedClock(datetime(2026, 9, 29, 8, 0, tzinfo=UTC), tz_name="Europe/Amsterdam")


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    folder = tmp_path / "conversation"
    folder.mkdir()
    return folder


@pytest.fixture
def history(tmp_path: Path, files_clock: FixedClock) -> Iterator[FileHistory]:
    opened = FileHistory(tmp_path / "history", clock=files_clock, trash=FolderTrash(tmp_path / "trash"))
    yield opened
    opened.close()


@pytest.fixture
def hostile_space(space: notochord.Space, tmp_path: Path) -> notochord.Space:
    source = tmp_path / "hostile-source"
    source.mkdir()
    (source / "tool.py").write_text(TOOL, encoding="utf-8")
    manifest = {"id": GEM, "name": "Hostile", "version": "1.0.0", "tools": [{"name": "main", "entry": "tool.py"}]}
    (source / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    space.gems.install(source)
    return space


def _within(seconds: float, action: Callable[[], object], *, unblock: Callable[[], None]) -> object:
    """``action()``'s result, or a test failure if it takes longer than ``seconds``.

    ``unblock`` frees a thread still stuck after the failure, so the test run itself goes on.
    """
    result: dict[str, object] = {}

    def work() -> None:
        try:
            result["value"] = action()
        except BaseException as exc:  # reported to the test below
            result["error"] = exc

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        unblock()
        thread.join(5)
        pytest.fail(f"still waiting after {seconds:g} s")
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result.get("value")


def _feed_pipe(pipe: Path) -> Callable[[], None]:
    """Open ``pipe`` for writing and close it: a reader waiting on it gets end of file."""

    def feed() -> None:
        with contextlib.suppress(OSError):
            os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))

    return feed


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return False
    return "State:\tZ" not in status


# ------------------------------------------------------------------------- the end of a run


def test_p_file_10_a_named_pipe_as_the_step_journal_does_not_hang_the_end_of_a_failed_run(
    conversation: Path, files_clock: FixedClock
) -> None:
    """P-FILE-09/10/11: after a failure the journal is looked at (a retry needs it); the tool may
    have left a named pipe under its name, which is no journal and must not be waited on."""
    folder = RunFolders.start(conversation, "tool", clock=files_clock)
    pipe = folder.path / ".steps.json"
    os.mkfifo(pipe)
    assert _within(_HANG_S, lambda: folder.finish("failure", "out"), unblock=_feed_pipe(pipe)) == "out"
    assert not folder.path.exists()  # nothing of the run was left, so its folder went


def test_p_file_10_a_step_refuses_a_journal_that_is_a_named_pipe_without_waiting(
    conversation: Path, files_clock: FixedClock
) -> None:
    folder = RunFolders.start(conversation, "tool", clock=files_clock)
    pipe = folder.path / ".steps.json"
    os.mkfifo(pipe)
    with pytest.raises(FileError, match="the step journal of runs/tool-20260929-100000 is damaged"):
        _within(_HANG_S, lambda: folder.step("download", lambda: 1), unblock=_feed_pipe(pipe))


@pytest.mark.parametrize("left", ["file", "pipe", "link"])
def test_p_file_09_whatever_the_tool_left_where_tmp_was_goes_after_success(
    conversation: Path, files_clock: FixedClock, tmp_path: Path, left: str
) -> None:
    """P-FILE-09: ``tmp/`` is deleted after a successful run, even when the tool replaced the folder
    with a file, a pipe or a link (a link goes itself; what it points to is left alone)."""
    folder: RunFolder = RunFolders.start(conversation, "tool", clock=files_clock)
    os.rmdir(folder.tmp)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("the user's", encoding="utf-8")
    if left == "file":
        folder.tmp.write_text("not a folder", encoding="utf-8")
    elif left == "pipe":
        os.mkfifo(folder.tmp)
    else:
        folder.tmp.symlink_to(elsewhere, target_is_directory=True)
    (folder.path / "result.md").write_text("# done", encoding="utf-8")
    # before, a pipe there was opened to be removed as a folder, and that waited for a writer
    finished = _within(_HANG_S, lambda: folder.finish("success", "out"), unblock=_feed_pipe(folder.tmp))
    assert finished == {"output": "out", "folder": folder.relative}
    assert not os.path.lexists(folder.tmp)
    assert (elsewhere / "keep.txt").read_text(encoding="utf-8") == "the user's"


def test_p_file_10_a_folder_left_as_the_step_journal_goes_after_success(
    conversation: Path, files_clock: FixedClock
) -> None:
    folder = RunFolders.start(conversation, "tool", clock=files_clock)
    (folder.path / ".steps.json").mkdir()
    (folder.path / "result.md").write_text("# done", encoding="utf-8")
    assert folder.finish("success", "out") == {"output": "out", "folder": folder.relative}
    assert not (folder.path / ".steps.json").exists()


def test_p_file_12_a_tool_that_put_a_file_where_tmp_was_still_has_its_run_recorded(
    hostile_space: notochord.Space, conversation: Path
) -> None:
    """P-FILE-09/12: before, tidying the folder raised out of ``run`` and the run stayed ``running``
    until the next listing called it killed."""
    record = hostile_space.gems.runner.run_sync(
        GEM, "main", input={"mode": "file-for-tmp"}, conversation=conversation, timeout=60
    )
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {"output": "ok", "folder": record.folder}
    assert record.folder is not None
    assert (conversation / record.folder / "result.md").is_file()
    assert not os.path.lexists(conversation / record.folder / "tmp")


def test_p_file_10_a_failed_run_that_left_a_pipe_as_its_journal_is_recorded_without_waiting(
    hostile_space: notochord.Space, conversation: Path
) -> None:
    run = hostile_space.gems.runner

    def go() -> object:
        return run.run_sync(GEM, "main", input={"mode": "pipe-journal"}, conversation=conversation, timeout=60)

    def unblock() -> None:
        for pipe in conversation.glob("runs/*/.steps.json"):
            _feed_pipe(pipe)()

    record = _within(60, go, unblock=unblock)
    assert getattr(record, "status", None) == "failed"
    assert getattr(record, "error", {})["message"] == "failed after leaving a pipe as the journal"


def test_p_file_12_a_run_folder_that_cannot_be_tidied_is_kept_and_the_run_still_ends(
    hostile_space: notochord.Space, conversation: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-FILE-12: the tool may leave its folder in a state notochord cannot tidy (a folder it may
    not enter, say). The run's end is recorded all the same, the folder kept and named, and why is
    in the run's log; before, the error escaped and the run was later reported as killed."""

    def refuse(self: RunFolder, outcome: object, output: object, *, agent: bool = False) -> object:
        raise FileError(f"could not tidy the run folder {self.relative}: Permission denied")

    monkeypatch.setattr(RunFolder, "finish", refuse)
    record = hostile_space.gems.runner.run_sync(
        GEM, "main", input={"mode": "plain"}, conversation=conversation, timeout=60
    )
    assert record.status == "succeeded"
    assert record.folder is not None and record.folder.startswith("runs/main-")
    assert record.output == {"output": "ok", "folder": record.folder}
    assert f"could not tidy the run folder {record.folder}, which was kept" in record.log
    assert [r.status for r in hostile_space.gems.runner.list()] == ["succeeded"]


# ------------------------------------------------------------------------- processes


def test_p_file_01_a_process_the_tool_forked_ends_with_the_run_and_does_not_hold_it(
    hostile_space: notochord.Space, conversation: Path
) -> None:
    """A child the tool forks holds the tool's output and log pipes. Before, the run waited until
    that child ended (a minute here, for ever for a daemon), past its own time limit, and the child
    lived on after it."""
    with daemon_token() as token:
        started = time.monotonic()
        record = hostile_space.gems.runner.run_sync(
            GEM, "main", input={"mode": "fork", "sleep": 60, "token": token}, conversation=conversation, timeout=30
        )
        took = time.monotonic() - started
        assert record.status == "succeeded", f"{record.error}\n{record.log}"
        assert record.output["child"] == "started"
        assert took < 20, f"the run took {took:.1f} s: it waited for the forked child"
        deadline = time.monotonic() + 5
        while processes_with(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(token) == [], "the process the tool forked outlived the run"


# ------------------------------------------------------------------------- the file history


def test_p_file_24_a_named_pipe_cannot_be_moved_into_the_conversation(
    conversation: Path, history: FileHistory, files_clock: FixedClock
) -> None:
    """P-FILE-21/24: the tool may make a named pipe in its run folder; moving it into the
    conversation would leave a trap for the user and the AI, and recording the move hashed the
    pipe, waiting for ever for a writer."""
    folder = RunFolders.start(conversation, "tool", clock=files_clock)
    pipe = folder.path / "p"
    os.mkfifo(pipe)
    ws = Workspace(conversation, history=history, actor=f"gem:{GEM}", run_id="run-1", run_root=folder.path)

    def move() -> None:
        ws.move("run:p", "workspace:p")

    with pytest.raises(FileError, match="run:p is a pipe, socket or device, not a file or folder; it cannot be moved"):
        _within(_HANG_S, move, unblock=_feed_pipe(conversation / "p"))
    assert pipe.is_fifo() and not os.path.lexists(conversation / "p")
    assert history.changes() == []


def test_p_file_25_the_state_of_a_named_pipe_is_unknown_and_read_without_waiting(conversation: Path) -> None:
    """P-FILE-25: a rollback compares each path with its recorded state; a pipe put there since has
    no state to compare (so the change is not undone), and reading it must not wait."""
    pipe = conversation / "p"
    os.mkfifo(pipe)
    assert _within(_HANG_S, lambda: path_state(conversation, "p"), unblock=_feed_pipe(pipe)) is None


@pytest.mark.parametrize("mode", [0o600, 0o755, 0o640])
def test_p_file_22_an_overwrite_keeps_the_permissions_of_the_file(
    conversation: Path, history: FileHistory, mode: int
) -> None:
    """P-FILE-22: before, every overwrite made the file ``0644``: a private file became readable by
    everyone on the machine, and a script lost its execute bit."""
    target = conversation / "notes.txt"
    target.write_text("old", encoding="utf-8")
    target.chmod(mode)
    ws = Workspace(conversation, history=history, actor=f"gem:{GEM}", run_id="run-1")
    ws.write("workspace:notes.txt", "new")
    assert target.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_p_file_22_an_overwrite_never_passes_set_user_id_to_what_the_gem_wrote(
    conversation: Path, history: FileHistory
) -> None:
    target = conversation / "tool"
    target.write_text("#!/bin/sh\n", encoding="utf-8")
    target.chmod(0o4755)
    ws = Workspace(conversation, history=history, actor=f"gem:{GEM}", run_id="run-1")
    ws.write("workspace:tool", "#!/bin/sh\necho gem\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


@pytest.mark.parametrize("op", ["overwrite", "delete"])
def test_p_file_25_a_rollback_restores_the_permissions_the_file_had(
    conversation: Path, history: FileHistory, op: str
) -> None:
    """P-FILE-25: "restored to their state before the change" includes who may read the file."""
    target = conversation / "secret.txt"
    target.write_text("mine", encoding="utf-8")
    target.chmod(0o600)
    ws = Workspace(conversation, history=history, actor=f"gem:{GEM}", run_id="run-1")
    if op == "overwrite":
        ws.write("workspace:secret.txt", "the gem's")
    else:
        ws.delete("workspace:secret.txt")
    report = history.rollback_run("run-1")
    assert report.restored == ("workspace:secret.txt",)
    assert target.read_text(encoding="utf-8") == "mine"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_p_file_25_a_history_recorded_before_modes_were_kept_still_rolls_back(
    conversation: Path, tmp_path: Path, files_clock: FixedClock
) -> None:
    """An existing history database gains the column for modes; its older rows roll back as before."""
    store = tmp_path / "old-history"
    first = FileHistory(store, clock=files_clock, trash=None)
    first._db.execute("ALTER TABLE changes DROP COLUMN old_mode")
    first.close()
    reopened = FileHistory(store, clock=files_clock, trash=None)
    try:
        (conversation / "a.txt").write_text("before", encoding="utf-8")
        Workspace(conversation, history=reopened, actor="gem:x", run_id="run-1").write("workspace:a.txt", "after")
        assert reopened.rollback_run("run-1").restored == ("workspace:a.txt",)
        assert (conversation / "a.txt").read_text(encoding="utf-8") == "before"
    finally:
        reopened.close()


def _swap_folder_a_for_a_link_before_trashing(history: FileHistory, conversation: Path, outside: Path) -> None:
    """Make the trash, when next asked to take a file, first find ``a/`` of the conversation moved
    to ``b/`` and replaced by a link to ``outside``: the tool process racing the host."""
    trash = history.trash
    assert isinstance(trash, FolderTrash)
    put = trash.put

    def swap_then_put(path: Path) -> str:
        os.rename(conversation / "a", conversation / "b")
        os.symlink(outside, conversation / "a", target_is_directory=True)
        return put(path)

    trash.put = swap_then_put  # type: ignore[method-assign]


def test_od_p06_a_delete_whose_folder_is_swapped_for_a_link_never_trashes_a_file_outside(
    tmp_path: Path, conversation: Path, history: FileHistory
) -> None:
    """P-FILE-01, P-FILE-23, OD-P06: the tool process can rename folders of its run folder at any
    moment. Between the checks of ``delete`` and the move to the trash it swaps the checked folder
    for a link to a folder of the user's; before, the trash took the user's file from there."""
    (conversation / "a").mkdir()
    (conversation / "a" / "f.txt").write_text("the gem's", encoding="utf-8")
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "f.txt").write_text("the user's", encoding="utf-8")
    _swap_folder_a_for_a_link_before_trashing(history, conversation, outside)
    Workspace(conversation, history=history, actor=f"gem:{GEM}", run_id="run-1").delete("workspace:a/f.txt")
    assert (outside / "f.txt").read_text(encoding="utf-8") == "the user's"
    assert not (conversation / "b" / "f.txt").exists()
    [trashed] = (tmp_path / "trash").iterdir()
    assert trashed.read_text(encoding="utf-8") == "the gem's"


def test_od_p06_an_overwrite_too_large_for_the_history_never_trashes_a_file_outside(
    tmp_path: Path, conversation: Path, files_clock: FixedClock
) -> None:
    """P-FILE-22, OD-P06: an old version past the history's limit goes to the trash by the same
    route as a delete, and is raced the same way."""
    history = FileHistory(
        tmp_path / "history-small", clock=files_clock, trash=FolderTrash(tmp_path / "trash"), version_limit=4
    )
    try:
        (conversation / "a").mkdir()
        (conversation / "a" / "big.bin").write_bytes(b"the gem's large file")
        outside = tmp_path / "home"
        outside.mkdir()
        (outside / "big.bin").write_bytes(b"the user's")
        _swap_folder_a_for_a_link_before_trashing(history, conversation, outside)
        with contextlib.suppress(FileError):
            Workspace(conversation, history=history, actor="gem:x", run_id="run-1").write("workspace:a/big.bin", "x")
        assert (outside / "big.bin").read_bytes() == b"the user's"
    finally:
        history.close()
