"""A gem's "Settings › Working folder" over HTTP against a real server
(P-FILE-29, P-FILE-30, P-FILE-31), and the manifest's ``sops`` it depends on."""

from __future__ import annotations

import html
from pathlib import Path

import httpx
import pytest
from console_harness import ConsoleServer, csrf_of
from runs_gem import GEM, write_gem

from notochord.errors import ManifestError
from notochord.gems.folders import GemFolders
from notochord.gems.manifest import parse_manifest


def _chosen(console: ConsoleServer) -> Path | None:
    folders = console.space.gems.services.gem_folders
    assert isinstance(folders, GemFolders)
    return folders.working_folder(GEM, core=console.space.core)


def _choose(client: httpx.Client, path: str) -> httpx.Response:
    token = csrf_of(client.get(f"/gems/{GEM}").text)
    return client.post(f"/gems/{GEM}/working-folder", data={"csrf": token, "path": path})


@pytest.fixture
def scheduled(console: ConsoleServer, tmp_path: Path) -> ConsoleServer:
    console.space.gems.install(write_gem(tmp_path / "src", sops=[{"name": "digest", "trigger": "schedule"}]))
    return console


def test_the_working_folder_is_offered_only_to_gems_with_a_background_sop(
    console: ConsoleServer, tmp_path: Path
) -> None:
    """P-FILE-30: a gem whose SOPs all run from a chat (or that has none) shows no such setting."""
    console.space.gems.install(write_gem(tmp_path / "a", sops=[{"name": "reply", "trigger": "chat"}]))
    client = console.client()
    assert 'id="working-folder"' not in client.get(f"/gems/{GEM}").text
    token = csrf_of(client.get(f"/gems/{GEM}").text)
    refused = client.post(f"/gems/{GEM}/working-folder", data={"csrf": token, "path": str(tmp_path)})
    assert refused.status_code == 404
    console.space.gems.install(write_gem(tmp_path / "b", sops=[{"name": "watch", "trigger": "event"}], gem_id="w"))
    text = client.get("/gems/w").text
    assert "Settings › Working folder" in text and "event-triggered" in text
    assert "None chosen: those SOPs have no working folder." in text


def test_a_folder_is_chosen_and_cleared(scheduled: ConsoleServer, tmp_path: Path) -> None:
    """P-FILE-29: the chosen folder is the ``workspace:`` of its scheduled SOPs."""
    reports = tmp_path / "reports"
    reports.mkdir()
    client = scheduled.client()
    assert _choose(client, str(reports)).status_code == 303
    assert _chosen(scheduled) == reports.resolve()
    assert f"<code>{reports.resolve()}</code>" in client.get(f"/gems/{GEM}").text
    token = csrf_of(client.get(f"/gems/{GEM}").text)
    assert client.post(f"/gems/{GEM}/working-folder/clear", data={"csrf": token}).status_code == 303
    assert _chosen(scheduled) is None


@pytest.mark.parametrize(
    ("make", "rule"),
    [
        (lambda tmp: "/", "filesystem root"),
        (lambda tmp: str(Path.home()), "home folder"),
        (lambda tmp: str(tmp), "data directory"),
        (lambda tmp: "/etc", "system folder"),
        (lambda tmp: str(tmp / ".hidden"), "hidden folder"),
        (lambda tmp: str(tmp / "missing"), "does not exist"),
    ],
)
def test_a_refused_folder_is_named_with_its_rule_next_to_the_field(
    scheduled: ConsoleServer, tmp_path: Path, make: object, rule: str
) -> None:
    """P-FILE-31: the rule the folder breaks is said beside the field; nothing is chosen."""
    (tmp_path / ".hidden").mkdir()
    assert callable(make)
    typed = make(tmp_path)
    answer = _choose(scheduled.client(), typed)
    assert answer.status_code == 422
    assert 'id="err-working-folder"' in answer.text and rule in answer.text
    assert f'value="{typed}"' in answer.text, "the typed path stays in the field"
    assert _chosen(scheduled) is None


def test_a_relative_or_empty_path_says_what_to_type(scheduled: ConsoleServer) -> None:
    client = scheduled.client()
    relative = _choose(client, "reports")
    assert relative.status_code == 422 and "reports is not a full path; start it with /." in relative.text
    empty = _choose(client, "  ")
    assert empty.status_code == 422 and "Type the folder's full path first." in html.unescape(empty.text)


def test_choosing_without_the_csrf_token_is_refused(scheduled: ConsoleServer, tmp_path: Path) -> None:
    """No change without the session's token."""
    answer = scheduled.client().post(f"/gems/{GEM}/working-folder", data={"path": str(tmp_path)})
    assert answer.status_code == 403
    assert _chosen(scheduled) is None


def _manifest(sops: object) -> dict[str, object]:
    return {"id": "g", "name": "g", "version": "1.0.0", "tools": [], "sops": sops}


def test_a_manifest_s_sops_say_how_each_starts() -> None:
    """P-FILE-30: ``trigger`` is chat (the default), schedule or event."""
    manifest = parse_manifest(_manifest([{"name": "a"}, {"name": "b", "trigger": "schedule", "cron": "0 8 * * *"}]))
    assert [(s.name, s.trigger, s.background) for s in manifest.sops] == [
        ("a", "chat", False),
        ("b", "schedule", True),
    ]


def test_malformed_sops_are_manifest_problems() -> None:
    """OD-P10: each mistake is listed with its path, as install and Gem Studio show them."""
    with pytest.raises(ManifestError) as caught:
        parse_manifest(_manifest([{"trigger": "schedule"}, {"name": "x", "trigger": "hourly"}, "y"]))
    assert list(caught.value.problems) == [
        "sops[0].name: is required: a non-blank string",
        "sops[1].trigger: 'hourly' is not one of chat, schedule, event",
        'sops[2]: must be an object such as {"name": "daily-digest", "trigger": "schedule"}',
    ]
    with pytest.raises(ManifestError, match="sops: must be a list of SOPs"):
        parse_manifest(_manifest({"name": "x"}))
