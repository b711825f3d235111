"""The Runs pages over HTTP against a real server, with a real gem run in its own process:
the list, a run's changes and file changes, "Undo this run" and "Roll
back its files", and each refusal as a sentence."""

from __future__ import annotations

from pathlib import Path

import pytest
from console_harness import ConsoleServer, csrf_of
from runs_gem import GEM, installed, run_once

import notochord.console.views.runs as runs_view


@pytest.fixture
def ran(console: ConsoleServer, tmp_path: Path) -> tuple[str, Path]:
    """The gem installed and run once from a conversation: ``(run id, conversation folder)``."""
    installed(console.space, tmp_path)
    conversation = tmp_path / "conversation"
    return run_once(console.space, conversation), conversation


def test_a_run_s_page_lists_its_changes_and_its_file_changes(console: ConsoleServer, ran: tuple[str, Path]) -> None:
    """K-UI-11, P-FILE-21: what the run wrote to the knowledge and to the conversation's folder."""
    run_id, conversation = ran
    answer = console.client().get(f"/runs/{run_id}")
    assert answer.status_code == 200
    assert "pref.food.like = soup" in answer.text
    assert "workspace:notes/food.md" in answer.text
    assert str(conversation) in answer.text
    assert "Undo this run" in answer.text and "Roll back its files" in answer.text


def test_the_runs_page_and_the_gem_s_page_list_its_runs(console: ConsoleServer, ran: tuple[str, Path]) -> None:
    """The global Runs page and the gem's page both link to the run."""
    run_id, _ = ran
    client = console.client()
    for path in ("/runs", f"/runs?gem={GEM}", f"/gems/{GEM}"):
        text = client.get(path).text
        assert f'href="/runs/{run_id}"' in text, path
    assert f'href="/runs/{run_id}"' not in client.get("/runs", params={"gem": "someone-else"}).text


def test_the_runs_list_is_paginated(
    console: ConsoleServer, ran: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lists come a page at a time, newest first."""
    first, conversation = ran
    second = run_once(console.space, conversation, food="bread")
    monkeypatch.setattr(runs_view, "PAGE_SIZE", 1)
    client = console.client()
    page_one = client.get("/runs").text
    assert f"/runs/{second}" in page_one and f"/runs/{first}" not in page_one
    assert "Older" in page_one
    page_two = client.get("/runs", params={"page": "2"}).text
    assert f"/runs/{first}" in page_two and f"/runs/{second}" not in page_two
    assert "Newer" in page_two
    bad = client.get("/runs", params={"page": "zero"})
    assert bad.status_code == 422 and "is not a page number" in bad.text


def test_undo_this_run_reverts_its_changes_once(console: ConsoleServer, ran: tuple[str, Path]) -> None:
    """K-UI-11, K-CHG: every change of the run is reverted as the user; a second undo says so."""
    run_id, conversation = ran
    client, token = console.signed_in(f"/runs/{run_id}")
    answer = client.post(f"/runs/{run_id}/undo", data={"csrf": token})
    assert answer.status_code == 200
    assert "Undone: 1 change." in answer.text
    assert console.space.user.facts.lookup("self", "pref.food") == []
    assert (conversation / "notes" / "food.md").exists(), "undoing the changes leaves the files alone"
    again = client.post(f"/runs/{run_id}/undo", data={"csrf": token})
    assert "That was already undone." in again.text


def test_a_superseded_run_undo_is_refused_with_a_sentence(console: ConsoleServer, ran: tuple[str, Path]) -> None:
    """K-UI-11: a later change by someone else is never overwritten, and the page says why."""
    run_id, _ = ran
    [fact] = console.space.user.facts.lookup("self", "pref.food.like")
    console.space.user.facts.retract(fact.id)
    client, token = console.signed_in(f"/runs/{run_id}")
    answer = client.post(f"/runs/{run_id}/undo", data={"csrf": token})
    assert answer.status_code == 422
    assert "This cannot be undone: superseded by the later change" in answer.text
    assert 'role="alert"' in answer.text


def test_roll_back_its_files_restores_the_folder_once(console: ConsoleServer, ran: tuple[str, Path]) -> None:
    """P-FILE-25: the files the run created are taken back; the knowledge stays."""
    run_id, conversation = ran
    client, token = console.signed_in(f"/runs/{run_id}")
    answer = client.post(f"/runs/{run_id}/rollback", data={"csrf": token})
    assert answer.status_code == 200
    assert "Rolled back" in answer.text
    assert not (conversation / "notes" / "food.md").exists()
    assert [f.value for f in console.space.user.facts.lookup("self", "pref.food.like")] == ["soup"]
    assert "rolled back" in client.get(f"/runs/{run_id}").text
    again = client.post(f"/runs/{run_id}/rollback", data={"csrf": token})
    assert "There was nothing left to roll back." in again.text


def test_a_file_changed_since_is_left_alone_and_named(console: ConsoleServer, ran: tuple[str, Path]) -> None:
    """P-FILE-25: a file the user edited after the run is spared, and the page names it."""
    run_id, conversation = ran
    note = conversation / "notes" / "food.md"
    note.write_text("my own words\n", encoding="utf-8")
    client, token = console.signed_in(f"/runs/{run_id}")
    answer = client.post(f"/runs/{run_id}/rollback", data={"csrf": token})
    assert "Left alone, each for the reason given:" in answer.text
    assert "<code>workspace:notes/food.md</code>: it changed since" in answer.text
    assert note.read_text(encoding="utf-8") == "my own words\n"


def test_an_unknown_run_is_a_not_found_page(console: ConsoleServer) -> None:
    client = console.client()
    assert client.get("/runs/run-nothing").status_code == 404
    token = csrf_of(client.get("/runs").text)
    assert client.post("/runs/run-nothing/undo", data={"csrf": token}).status_code == 404
    assert client.post("/runs/run-nothing/rollback", data={"csrf": token}).status_code == 404


def test_undo_and_roll_back_without_the_csrf_token_are_refused(console: ConsoleServer, ran: tuple[str, Path]) -> None:
    """A post without the session's token changes nothing."""
    run_id, conversation = ran
    client = console.client()
    for action in ("undo", "rollback"):
        answer = client.post(f"/runs/{run_id}/{action}", data={})
        assert answer.status_code == 403
    assert [f.value for f in console.space.user.facts.lookup("self", "pref.food.like")] == ["soup"]
    assert (conversation / "notes" / "food.md").exists()


def test_a_conversation_folder_that_became_a_file_is_said_not_a_crash(
    console: ConsoleServer, ran: tuple[str, Path]
) -> None:
    """The run's page still shows; its file history says why it cannot be read."""
    run_id, conversation = ran
    moved = conversation.with_name("moved")
    conversation.rename(moved)
    conversation.write_text("not a folder any more", encoding="utf-8")
    answer = console.client().get(f"/runs/{run_id}")
    assert answer.status_code == 200
    assert 'id="files-problem"' in answer.text and "is a file" in answer.text
    assert "pref.food.like = soup" in answer.text


def test_the_page_of_a_run_of_an_uninstalled_gem_names_it_without_a_dead_link(
    console: ConsoleServer, ran: tuple[str, Path]
) -> None:
    """K-UI-11, K-UNINST-05: the run and what it wrote stay after "Keep"; the gem's own page does
    not, so the run's page names the gem as uninstalled instead of linking to a missing page."""
    run_id, _ = ran
    assert f'href="/gems/{GEM}"' in console.client().get(f"/runs/{run_id}").text
    console.space.gems.uninstall(GEM, delete_data=False)
    for language, said in (("en", "uninstalled since"), ("zh", "已卸载")):
        answer = console.client().get(f"/runs/{run_id}", headers={"Accept-Language": language})
        assert answer.status_code == 200
        assert f'href="/gems/{GEM}"' not in answer.text
        assert f"{GEM} ({said})" in answer.text
