"""One vault per user, found from any folder; backup and restore; clear answers to mistakes.

Commands run in-process through typer's ``CliRunner`` against real data directories (the per-user
default points into a temporary folder, see ``tests/conftest.py``); the backup test writes from a
separate process while the backup runs.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import tarfile
import textwrap
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import notochord
from notochord.errors import SpaceNotFoundError
from notochord.settings import Settings

REPO = Path(__file__).resolve().parents[2]
FULL_TEXT_ONLY = {"NOTOCHORD_EMBEDDER": "none"}


def notochord_cli(*args: str, code: int = 0, env: Mapping[str, str] | None = None) -> Result:
    """Run ``notochord *args`` in-process and require exit code ``code``."""
    from notochord.cli import app

    result = CliRunner().invoke(app, list(args), env={**FULL_TEXT_ONLY, **(env or {})})
    if result.exit_code != code:
        raised = ""
        if result.exc_info is not None and not isinstance(result.exception, SystemExit):
            raised = "".join(traceback.format_exception(result.exc_info[1]))
        pytest.fail(
            f"notochord {' '.join(args)} exited {result.exit_code}, expected {code}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}\n{raised}"
        )
    return result


def one_line(result: Result) -> str:
    return " ".join(result.stderr.split())


@pytest.fixture
def user_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The per-user data folder (``$XDG_DATA_HOME``); the vault lives in ``notochord`` inside it."""
    folder = tmp_path / "user-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(folder))
    return folder


# ---------------------------------------------------------------- one vault, found from anywhere


def test_the_default_vault_is_the_per_user_one_whatever_the_working_directory(
    user_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fact put from one folder is found from another; no ./.notochord appears."""
    first, second = tmp_path / "projects", tmp_path / "elsewhere"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    notochord_cli("init")
    notochord_cli("facts", "put", "location.home.city", "Utrecht")
    monkeypatch.chdir(second)
    listed = json.loads(notochord_cli("facts", "lookup", "self", "location", "--json").stdout)
    assert [f["value"] for f in listed] == ["Utrecht"]
    assert (user_data / "notochord" / "master.key").is_file()
    assert not (first / ".notochord").exists()
    assert not (second / ".notochord").exists()
    assert Settings.load(environ={}).data_dir == user_data / "notochord"


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("facts", "lookup"), id="facts-lookup"),
        pytest.param(("status",), id="status"),
        pytest.param(("changes", "list"), id="changes-list"),
        pytest.param(("gem", "list"), id="gem-list"),
        pytest.param(("search", "stew"), id="search"),
        pytest.param(("facts", "put", "location.home.city", "Delft"), id="a-write"),
        pytest.param(("network", "allow", "api.example.com"), id="a-rule-change"),
    ],
)
def test_a_command_on_a_folder_without_a_vault_points_at_init_exits_3_and_creates_nothing(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """Reads never create a vault, and neither do writes other than ``init``."""
    missing = tmp_path / "no-vault-here"
    refused = notochord_cli("--data-dir", str(missing), *args, code=3)
    assert f"no vault at {missing}; create it with `notochord --data-dir {missing} init`" in one_line(refused)
    assert "Traceback" not in refused.output
    assert not missing.exists()


@pytest.mark.parametrize(
    "args",
    [("status",), ("check",), ("reindex",), ("search", "stew"), ("facts", "put", "location.home.city", "Delft")],
    ids=["status", "check", "reindex", "search", "a-write"],
)
@pytest.mark.parametrize("where", ["the file itself", "a folder under it"])
def test_a_data_directory_that_is_a_file_is_bad_input_exit_2_not_a_missing_vault(
    tmp_path: Path, args: tuple[str, ...], where: str
) -> None:
    """A file named as the data directory is a mistake in what was typed (exit 2, as ``init`` says
    it), not a vault still to be made: "run notochord init" would fail the same way."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("my notes")
    named = a_file if where == "the file itself" else a_file / "vault"
    refused = notochord_cli("--data-dir", str(named), *args, code=2)
    said = one_line(refused)
    assert f"cannot use {named} as the data directory" in said
    assert "choose a folder with --data-dir or NOTOCHORD_DATA_DIR" in said
    assert "init`" not in said
    assert a_file.read_text() == "my notes"


def test_the_environment_variable_names_the_vault_and_a_typed_data_dir_wins_over_it(tmp_path: Path) -> None:
    """NOTOCHORD_DATA_DIR overrides the default; --data-dir before the command wins over it."""
    from_env, typed = tmp_path / "env", tmp_path / "typed"
    env = {"NOTOCHORD_DATA_DIR": str(from_env)}
    notochord_cli("init", env=env)
    notochord_cli("--data-dir", str(typed), "init", env=env)
    notochord_cli("--data-dir", str(typed), "facts", "put", "work.company", "Typed Co", env=env)
    assert notochord_cli("facts", "lookup", "--json", env=env).stdout.strip() == "[]"
    typed_facts = json.loads(notochord_cli("--data-dir", str(typed), "facts", "lookup", "--json", env=env).stdout)
    assert [f["value"] for f in typed_facts] == ["Typed Co"]


def test_an_unknown_organization_is_refused_for_reads_and_writes_and_no_space_appears(tmp_path: Path) -> None:
    """A typo in --org no longer creates ``org:nosuchorg``."""
    vault = tmp_path / "vault"
    notochord_cli("--data-dir", str(vault), "init", "--org", "acme")
    for args in (("facts", "lookup"), ("facts", "put", "work.company", "Typo Inc"), ("status",)):
        refused = notochord_cli("--data-dir", str(vault), *args, "--org", "nosuchorg", code=3)
        message = one_line(refused)
        assert "no organization 'nosuchorg'" in message
        assert "(known: acme)" in message
        assert "notochord init --org nosuchorg" in message
    assert sorted(p.name for p in (vault / "spaces").iterdir() if p.suffix == ".db") == ["org-acme.db", "personal.db"]


def test_init_with_org_creates_that_space_and_status_with_org_shows_only_it(tmp_path: Path) -> None:
    """``--org`` is accepted by ``status`` as the README says."""
    vault = tmp_path / "vault"
    notochord_cli("--data-dir", str(vault), "init", "--org", "acme")
    notochord_cli("--data-dir", str(vault), "facts", "put", "work.company", "Acme", "--org", "acme")
    shown = json.loads(notochord_cli("--data-dir", str(vault), "status", "--org", "acme", "--json").stdout)
    assert [(s["space"], s["facts"]) for s in shown["spaces"]] == [("org:acme", 1)]
    everything = json.loads(notochord_cli("--data-dir", str(vault), "status", "--json").stdout)
    assert [s["space"] for s in everything["spaces"]] == ["org:acme", "personal"]


def test_the_python_api_opens_an_organization_only_when_asked_to_create_it(tmp_path: Path) -> None:
    """``nc.org(id)`` refuses an unknown organization; ``create=True`` makes it."""
    with notochord.open(tmp_path / "vault", embedder=None) as nc:
        with pytest.raises(SpaceNotFoundError, match="no organization 'acme'"):
            nc.org("acme")
        assert nc.spaces() == []
        nc.org("acme", create=True).user.facts.put(predicate="work.company", value="Acme")
        assert [f.value for f in nc.org("acme").user.facts.lookup("self", "work")] == ["Acme"]
    with pytest.raises(SpaceNotFoundError, match=r"create it with `notochord --data-dir .*elsewhere init`"):
        notochord.open(tmp_path / "elsewhere", embedder=None, create=False)
    assert not (tmp_path / "elsewhere").exists()


# ---------------------------------------------------------------- clear answers to mistakes


def test_serve_on_a_port_in_use_exits_2_naming_the_port_before_announcing_anything(tmp_path: Path) -> None:
    """No "service on http://…" line is printed first."""
    vault = tmp_path / "vault"
    notochord_cli("--data-dir", str(vault), "init")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = notochord_cli("--data-dir", str(vault), "serve", "--port", str(port), code=2)
    assert f"port {port} is in use" in one_line(refused)
    assert "service on http" not in refused.output
    assert "Traceback" not in refused.output


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        pytest.param(("serve", "--port", "99999"), {}, "--port", id="port-out-of-range"),
        pytest.param(("serve", "--host", "no such host!"), {}, "cannot listen on 'no such host!'", id="bad-host"),
        pytest.param(("status",), {"NOTOCHORD_TIMEZONE": "Mars/Base"}, "'Mars/Base' is not a time zone", id="tz"),
        pytest.param(("serve",), {"NOTOCHORD_TIMEZONE": "Mars/Base"}, "'Mars/Base' is not a time zone", id="tz-serve"),
    ],
)
def test_bad_settings_and_options_give_one_clear_message_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    """One clear message, not a traceback."""
    vault = tmp_path / "vault"
    notochord_cli("--data-dir", str(vault), "init")
    refused = notochord_cli("--data-dir", str(vault), *args, code=2, env=env)
    assert message in one_line(refused)
    assert "Traceback" not in refused.output
    assert "service on http" not in refused.output


def test_errors_after_json_are_printed_as_json_on_stderr(tmp_path: Path) -> None:
    """``{"error": {"code": …, "message": …}}`` with the exit code."""
    vault = tmp_path / "vault"
    notochord_cli("--data-dir", str(vault), "init")
    refused = notochord_cli("--data-dir", str(vault), "facts", "retract", "999", "--json", code=3)
    assert refused.stdout == ""
    body = json.loads(refused.stderr)
    said = "not found: no fact 999; see them with: notochord facts lookup"
    assert body == {"error": {"code": "E_NOT_FOUND", "message": said, "exitCode": 3}}
    missing = notochord_cli("--data-dir", str(tmp_path / "none"), "facts", "lookup", "--json", code=3)
    assert json.loads(missing.stderr)["error"]["code"] == "E_NO_SPACE"
    unparsed = notochord_cli("--data-dir", str(vault), "facts", "put", "--json", code=2)
    assert json.loads(unparsed.stderr) == {
        "error": {"code": "E_USAGE", "message": "Missing argument 'predicate'.", "exitCode": 2}
    }


# ---------------------------------------------------------------- backup and restore


WRITER = textwrap.dedent(
    """
    import sys
    import notochord
    from notochord.settings import Settings

    data = sys.argv[1]
    settings = Settings(data_dir=data, index_in_background=False)
    with notochord.open(data, settings, embedder=None, create=False) as nc:
        space = nc.personal
        n = 0
        while True:
            space.user.documents.upsert(collection="keep", key=f"note-{n}", title=f"note {n}", body=f"body {n}")
            n += 1
            if n == 20:
                print("writing", flush=True)
    """
)


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[Any]:
    """Starts a process that keeps writing one keyed document after another into a vault."""
    started: list[subprocess.Popen[str]] = []

    def start(vault: Path) -> subprocess.Popen[str]:
        script = tmp_path / "writer.py"
        script.write_text(WRITER, encoding="utf-8")
        process = subprocess.Popen(
            [sys.executable, str(script), str(vault)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        started.append(process)
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "writing", process.stderr.read() if process.stderr else ""
        return process

    yield start
    for process in started:
        process.kill()
        process.communicate(timeout=30)


def _vault_contents(vault: Path) -> dict[str, Any]:
    settings = Settings(data_dir=vault, index_in_background=False)
    with notochord.open(vault, settings, embedder=None, create=False) as nc:
        space = nc.personal
        gem = space.gems.get("diary")
        folders = space.gems.services.gem_folders
        assert folders is not None
        store = folders.store(gem.id, key=space.gems.registry.key(gem.id, "storage"))
        return {
            "facts": [(f.predicate, f.value) for f in space.user.facts.lookup("self")],
            "diary": [(d.key, d.title) for d in space.user.documents.list("diary")],
            "gems": [(g.id, g.version) for g in space.gems.list()],
            "permissions": [(p.permission, p.on) for p in space.gems.permissions(gem.id)],
            "storage": store.kv.get("last-entry"),
            "notes": sorted(d.key for d in space.user.documents.list("keep")),
            "changes": len(space.changes.list(limit=100_000)),
        }


def test_a_backup_taken_while_another_process_writes_restores_an_identical_consistent_vault(
    tmp_path: Path, writer: Any
) -> None:
    """Facts, documents, gems, permissions and private storage come back as they were;
    the notes written during the backup come back as a consistent prefix of what was written."""
    vault, restored, archive = tmp_path / "vault", tmp_path / "restored", tmp_path / "vault.tar.gz"
    notochord_cli("--data-dir", str(vault), "init")
    notochord_cli("--data-dir", str(vault), "facts", "put", "location.home.city", "Utrecht")
    notochord_cli("--data-dir", str(vault), "gem", "install", str(REPO / "examples" / "diary"))
    notochord_cli("--data-dir", str(vault), "gem", "grant", "diary", "collections.write:diary")
    with notochord.open(vault, Settings(data_dir=vault, index_in_background=False), embedder=None) as nc:
        space = nc.personal
        space.user.documents.upsert(collection="diary", key="2026-09-29", title="Tuesday", body="# Stew\n\nGood.")
        folders = space.gems.services.gem_folders
        assert folders is not None
        store = folders.store("diary", key=space.gems.registry.key("diary", "storage"))
        store.kv.set("last-entry", {"date": "2026-09-29"})

    running = writer(vault)
    summary = json.loads(notochord_cli("--data-dir", str(vault), "backup", str(archive), "--json").stdout)
    running.kill()
    running.communicate(timeout=30)
    before = _vault_contents(vault)

    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    assert summary["spaces"] == ["personal"]
    notochord_cli("--data-dir", str(restored), "restore", str(archive))
    after = _vault_contents(restored)

    assert (restored / "master.key").read_bytes() == (vault / "master.key").read_bytes()
    assert stat.S_IMODE((restored / "master.key").stat().st_mode) == 0o600
    for unchanged in ("facts", "diary", "gems", "permissions", "storage"):
        assert after[unchanged] == before[unchanged], unchanged
    assert after["facts"] == [("location.home.city", "Utrecht")]
    assert after["storage"] == {"date": "2026-09-29"}
    written = len(after["notes"])
    assert written >= 20
    assert after["notes"] == sorted(f"note-{n}" for n in range(written))
    assert set(after["notes"]) <= set(before["notes"])
    # Every note in the copy came with its change record: the snapshot holds whole transactions.
    assert after["changes"] == before["changes"] - (len(before["notes"]) - written)


def test_restore_refuses_a_data_directory_that_is_not_empty_and_changes_nothing(tmp_path: Path) -> None:
    vault, archive = tmp_path / "vault", tmp_path / "vault.tar.gz"
    notochord_cli("--data-dir", str(vault), "init")
    notochord_cli("--data-dir", str(vault), "backup", str(archive))
    notochord_cli("--data-dir", str(vault), "facts", "put", "work.company", "After the backup")
    refused = notochord_cli("--data-dir", str(vault), "restore", str(archive), code=2)
    assert "is not empty" in one_line(refused)
    values = json.loads(notochord_cli("--data-dir", str(vault), "facts", "lookup", "--json").stdout)
    assert [f["value"] for f in values] == ["After the backup"]


def test_a_backup_never_overwrites_a_file_and_is_written_beside_the_vault_not_inside(tmp_path: Path) -> None:
    vault, archive = tmp_path / "vault", tmp_path / "vault.tar.gz"
    notochord_cli("--data-dir", str(vault), "init")
    archive.write_text("precious")
    assert "already exists" in one_line(notochord_cli("--data-dir", str(vault), "backup", str(archive), code=2))
    assert archive.read_text() == "precious"
    inside = notochord_cli("--data-dir", str(vault), "backup", str(vault / "b.tar.gz"), code=2)
    assert "inside the data directory" in one_line(inside)
    into_folder = json.loads(notochord_cli("--data-dir", str(vault), "backup", str(tmp_path), "--json").stdout)
    assert Path(into_folder["path"]).parent == tmp_path
    assert Path(into_folder["path"]).name.startswith("notochord-backup-")


def _tampered(archive: Path, out: Path) -> Path:
    """A copy of ``archive`` whose master key was replaced by other bytes."""
    with tarfile.open(archive, "r:gz") as source, tarfile.open(out, "w:gz") as target:
        for member in source.getmembers():
            data = source.extractfile(member)
            if member.name == "vault/master.key":
                member.size = 32
                target.addfile(member, _Reader(b"\x00" * 32))
            else:
                target.addfile(member, data)
    return out


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, size: int = -1) -> bytes:
        chunk, self.data = (self.data, b"") if size < 0 else (self.data[:size], self.data[size:])
        return chunk


def _with_manifest(out: Path, manifest: bytes) -> Path:
    """An archive holding only a record of ``manifest``'s bytes, as a hostile backup could."""
    with tarfile.open(out, "w:gz") as target:
        member = tarfile.TarInfo("notochord-backup.json")
        member.size = len(manifest)
        target.addfile(member, _Reader(manifest))
    return out


@pytest.mark.parametrize("kind", ["not-a-backup", "tampered", "missing", "record-nested-deep", "record-huge"])
def test_restore_refuses_what_is_not_an_intact_backup_and_creates_nothing(tmp_path: Path, kind: str) -> None:
    """Every file is checked against the backup's record before the vault appears; a record nested
    100,000 deep (a RecursionError's traceback before) or of 17 MB (read whole before, at any size) is no record."""
    vault, archive = tmp_path / "vault", tmp_path / "vault.tar.gz"
    notochord_cli("--data-dir", str(vault), "init")
    notochord_cli("--data-dir", str(vault), "backup", str(archive))
    candidate = {
        "not-a-backup": tmp_path / "notes.txt",
        "tampered": _tampered(archive, tmp_path / "tampered.tar.gz"),
        "missing": tmp_path / "nowhere.tar.gz",
        "record-nested-deep": _with_manifest(tmp_path / "deep.tar.gz", b"[" * 100_000 + b"]" * 100_000),
        "record-huge": _with_manifest(tmp_path / "huge.tar.gz", b'{"files": [' + b" " * (17 * 1024 * 1024) + b"]}"),
    }[kind]
    if kind == "not-a-backup":
        candidate.write_text("just notes")
    target = tmp_path / "restored"
    refused = notochord_cli("--data-dir", str(target), "restore", str(candidate), code=2)
    expected = {
        "not-a-backup": "is not a notochord backup",
        "tampered": "is damaged",
        "missing": "no backup file",
        "record-nested-deep": "is not a notochord backup",
        "record-huge": "is not a notochord backup",
    }
    assert expected[kind] in one_line(refused)
    assert not target.exists() or list(target.iterdir()) == []
    assert [n for n in os.listdir(tmp_path) if n.startswith(".notochord-restore-")] == []


# ---------------------------------------------------------------- the REST service reads without creating


def test_the_rest_service_reads_an_organization_without_a_space_as_empty_and_creates_it_on_first_write(
    tmp_path: Path,
) -> None:
    """A GET with an organization that has no space creates no database file."""
    import threading
    import time

    import httpx

    from notochord.cli.serve_cmd import build_server
    from notochord.server.auth import mint_token

    data, secret = tmp_path / "data", "a-development-secret-of-enough-length-000"
    settings = Settings(data_dir=data, index_in_background=False, jwt_secret=secret)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with notochord.open(data, settings, embedder=None) as nc:
        server = build_server(nc, settings, host="127.0.0.1", port=port)
        server.config.log_level = "critical"
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            auth = {"Authorization": "Bearer " + mint_token(secret=secret, user="u1", org="ghost", role="owner")}
            url = f"http://127.0.0.1:{port}/api/knowledge"
            for path in ("/kb", "/agents"):
                listed = httpx.get(url + path, headers=auth, timeout=30)
                assert listed.status_code == 200, listed.text
                assert listed.json()["total"] == 0
            assert not (data / "spaces" / "org-ghost.db").exists()
            created = httpx.post(url + "/kb", json={"name": "First"}, headers=auth, timeout=30)
            assert created.status_code == 201, created.text
            assert (data / "spaces" / "org-ghost.db").is_file()
            assert httpx.get(url + "/kb", headers=auth, timeout=30).json()["total"] == 1
        finally:
            server.should_exit = True
            thread.join(timeout=20)
