"""Undoing a run that changed no knowledge says there was nothing to undo (K-UI-11, K-CHG-03)."""

from __future__ import annotations

from pathlib import Path

from console_harness import ConsoleServer
from runs_gem import GEM, LIKES, installed

NOTHING = "This run changed no knowledge: there was nothing to undo."


def test_k_ui_11_undoing_a_run_that_wrote_nothing_says_so_and_changes_nothing(
    console: ConsoleServer, tmp_path: Path
) -> None:
    """K-UI-11: a run refused its write (its permission switched off) recorded no change; its undo
    is neither "already undone" (nobody undid it) nor a count of none, and the change log is as it was."""
    installed(console.space, tmp_path)
    console.space.gems.set_permission(GEM, LIKES, False)
    conversation = tmp_path / "conversation"
    conversation.mkdir()
    record = console.space.gems.runner.run_sync(GEM, "note", input={"food": "soup"}, conversation=conversation)
    assert record.status != "succeeded"
    before = console.space.changes.list()
    client, token = console.signed_in(f"/runs/{record.id}")

    answer = client.post(f"/runs/{record.id}/undo", data={"csrf": token})

    assert answer.status_code == 200
    assert NOTHING in answer.text
    assert "already undone" not in answer.text
    assert console.space.changes.list() == before
