"""Run folders: P-FILE-03…15, OD-P08."""

from __future__ import annotations

from pathlib import Path

import pytest

from notochord.clock import FixedClock
from notochord.errors import ClosedError, FileError, FileNotFoundInWorkspaceError, FilePermissionError
from notochord.files.runs import JOURNAL_NAME, RunFolders, safe_run_name


def test_run_folder_is_named_after_the_tool_and_local_time(conversation: Path, clock: FixedClock) -> None:
    """P-FILE-03, OD-P08: ``runs/<name>-<YYYYMMDD-HHMMSS>/`` in local time (08:15 UTC = 10:15 CEST)."""
    run = RunFolders.start(conversation, "summarise", clock=clock)
    assert run.relative == "runs/summarise-20260929-101500"
    assert run.path.is_dir()
    assert run.tmp.is_dir()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("weekly report", "weekly-report"),
        ('a/b\\c:d*e?f"g<h>i|j', "a-b-c-d-e-f-g-h-i-j"),
        ("../../etc", "etc"),
        (".hidden", "hidden"),
        ("", "run"),
        ("周报", "周报"),
    ],
)
def test_unsafe_characters_in_the_name_become_dashes(name: str, expected: str) -> None:
    """OD-P08: path-unsafe characters → ``-``; the result is never hidden, empty or escaping."""
    assert safe_run_name(name) == expected


def test_name_collisions_get_a_number(conversation: Path, clock: FixedClock) -> None:
    """OD-P08: the same name in the same second → ``-2``, ``-3``."""
    folders = [RunFolders.start(conversation, "tool", clock=clock).relative for _ in range(3)]
    assert folders == [
        "runs/tool-20260929-101500",
        "runs/tool-20260929-101500-2",
        "runs/tool-20260929-101500-3",
    ]


def test_success_removes_tmp_and_returns_output_with_folder(conversation: Path, clock: FixedClock) -> None:
    """P-FILE-08, P-FILE-09, P-FILE-12: tmp/ deleted after success; files left → ``{output, folder}``."""
    run = RunFolders.start(conversation, "tool", clock=clock)
    (run.tmp / "scratch.json").write_text("{}")
    (run.path / "output").mkdir()
    (run.path / "output" / "report.md").write_text("# done")
    result = run.finish("success", {"count": 3})
    assert result == {"output": {"count": 3}, "folder": "runs/tool-20260929-101500"}
    assert not run.tmp.exists()
    assert (run.path / "output" / "report.md").exists()


@pytest.mark.parametrize("outcome", ["failure", "cancelled"])
def test_failure_or_cancellation_keeps_tmp(conversation: Path, clock: FixedClock, outcome: str) -> None:
    """P-FILE-09: tmp/ is kept after a failure or cancellation."""
    run = RunFolders.start(conversation, "tool", clock=clock)
    (run.tmp / "partial.csv").write_text("a,b")
    result = run.finish(outcome, None)  # type: ignore[arg-type]
    assert (run.tmp / "partial.csv").read_text() == "a,b"
    assert result == {"output": None, "folder": run.relative}


def test_run_that_leaves_no_files_is_removed_and_output_passes_through(conversation: Path, clock: FixedClock) -> None:
    """P-FILE-11, P-FILE-13: an empty run folder is deleted; the return value is unchanged."""
    run = RunFolders.start(conversation, "tool", clock=clock)
    (run.tmp / "scratch").write_text("x")
    (run.path / "output").mkdir()
    output = {"answer": 42}
    assert run.finish("success", output) is output
    assert not run.path.exists()
    assert not (conversation / "runs").exists()


def test_failed_run_with_only_empty_folders_is_removed(conversation: Path, clock: FixedClock) -> None:
    run = RunFolders.start(conversation, "tool", clock=clock)
    assert run.finish("failure", "boom") == "boom"
    assert not run.path.exists()


def test_exposed_agent_gets_reply_and_folder(conversation: Path, clock: FixedClock) -> None:
    """P-FILE-04, P-FILE-14: an agent's result is ``{reply, folder}``."""
    run = RunFolders.start(conversation, "researcher", clock=clock)
    (run.path / "notes.md").write_text("n")
    assert run.finish("success", "Here you go", agent=True) == {
        "reply": "Here you go",
        "folder": "runs/researcher-20260929-101500",
    }


def test_finish_twice_is_refused(conversation: Path, clock: FixedClock) -> None:
    run = RunFolders.start(conversation, "tool", clock=clock)
    run.finish("success", None)
    with pytest.raises(ClosedError, match="finished"):
        run.finish("success", None)


def test_unknown_outcome_is_refused(conversation: Path, clock: FixedClock) -> None:
    run = RunFolders.start(conversation, "tool", clock=clock)
    with pytest.raises(FileError, match="unknown run outcome"):
        run.finish("maybe", None)  # type: ignore[arg-type]


def test_retry_skips_steps_that_already_succeeded(conversation: Path, clock: FixedClock) -> None:
    """P-FILE-10: a retry reruns from the start; completed steps do not run (or write) again."""
    calls: list[str] = []

    def download() -> list[str]:
        calls.append("download")
        return ["page-1", "page-2"]

    def summarise() -> str:
        calls.append("summarise")
        raise RuntimeError("model unavailable")

    first = RunFolders.start(conversation, "digest", clock=clock)
    assert first.step("download", download) == ["page-1", "page-2"]
    with pytest.raises(RuntimeError):
        first.step("summarise", summarise)
    assert first.finish("failure", None) is None
    assert first.path.is_dir(), "the journal of a failed run is kept for its retry"

    retry = RunFolders.resume(conversation, first.relative)
    assert retry.is_done("download")
    assert not retry.is_done("summarise")
    assert retry.step("download", download) == ["page-1", "page-2"]
    assert retry.step("summarise", lambda: "summary") == "summary"
    assert calls == ["download", "summarise"]
    assert retry.finish("success", "summary") == "summary"
    assert not retry.path.exists()


def test_step_journal_is_hidden_from_gems_and_removed_after_success(conversation: Path, clock: FixedClock) -> None:
    run = RunFolders.start(conversation, "tool", clock=clock)
    run.step("one", lambda: 1)
    assert (run.path / JOURNAL_NAME).name.startswith(".")
    (run.path / "result.txt").write_text("r")
    run.finish("success", None)
    assert not (run.path / JOURNAL_NAME).exists()


def test_step_result_must_be_json(conversation: Path, clock: FixedClock) -> None:
    run = RunFolders.start(conversation, "tool", clock=clock)
    with pytest.raises(FileError, match="not JSON-serialisable"):
        run.step("bad", lambda: {1, 2})
    assert not run.is_done("bad")


@pytest.mark.parametrize("folder", ["../x", "runs/../../etc", "runs/.hidden", "elsewhere/x", "runs"])
def test_resume_accepts_only_run_folders(conversation: Path, folder: str) -> None:
    with pytest.raises(FilePermissionError):
        RunFolders.resume(conversation, folder)


def test_resume_of_a_missing_run_is_not_found(conversation: Path) -> None:
    with pytest.raises(FileNotFoundInWorkspaceError):
        RunFolders.resume(conversation, "runs/tool-20260101-000000")


def test_start_needs_an_existing_base(tmp_path: Path, clock: FixedClock) -> None:
    with pytest.raises(FileNotFoundInWorkspaceError):
        RunFolders.start(tmp_path / "missing", "tool", clock=clock)


def test_a_step_result_with_a_lone_surrogate_is_refused_and_not_recorded(conversation: Path, clock: FixedClock) -> None:
    """P-FILE-10: the journal is UTF-8, which cannot hold half of a UTF-16 pair: a clear error, no record."""
    run = RunFolders.start(conversation, "digest", clock=clock)
    with pytest.raises(FileError, match="lone surrogate"):
        run.step("title", lambda: "x\ud800")
    assert run.step("title", lambda: "fixed") == "fixed"
