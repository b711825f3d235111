"""A full disk: the write is undone, reported as such (exit 8, HTTP 507), and writing resumes once space is freed.

The disk is a small tmpfs mounted in a private mount namespace of one child process, which fills it
with a ballast file, writes until the store refuses, checks the store, frees the ballast and writes
again. The child reports what it saw as JSON; this test judges it.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

from fault_sandbox import FILL, run_on_small_disk

pytestmark = pytest.mark.slow

# Prepended to every child script: fills the small disk to its last byte, partial blocks too.

CHILD = FILL + textwrap.dedent(
    """
    import json, os, sys, threading, time
    from pathlib import Path
    import httpx, sqlalchemy as sa, uvicorn
    from typer.testing import CliRunner
    import notochord
    from notochord.cli import app as cli_app
    from notochord.errors import NotochordError
    from notochord.server.app import PREFIX, create_app
    from notochord.server.auth import mint_token
    from notochord.settings import Settings

    disk = Path(sys.argv[1])
    data = disk / "data"
    secret = "s" * 48
    settings = Settings(data_dir=data, index_in_background=False, embedder="none", jwt_secret=secret)
    report = {}

    with notochord.open(data, settings, embedder=None) as nc:
        space = nc.personal
        server = uvicorn.Server(uvicorn.Config(create_app(nc, settings), host="127.0.0.1", port=0,
                                               lifespan="off", ws="none", log_level="critical"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        token = mint_token(secret=secret, user="u1", org="acme", role="owner")
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}{PREFIX}", timeout=60, trust_env=False,
                              headers={"Authorization": f"Bearer {token}"})
        kb = client.post("/kb", json={"name": "Notes"}).json()["knowledgeBase"]["id"]

        written = []
        fill(disk / "ballast")
        error = None
        for i in range(5000):
            try:
                written.append(space.user.facts.put(predicate=f"x.n{i}", value="v" * 900).id)
            except NotochordError as exc:
                error = exc
                break
        report["api"] = {"class": type(error).__name__, "code": getattr(error, "code", None),
                         "message": str(error), "written": len(written)}

        statuses = []
        for i in range(500):
            r = client.post(f"/kb/{kb}/documents", json={"title": f"T{i}", "content": "word " * 2000})
            statuses.append(r.status_code)
            if r.status_code != 201:
                report["http"] = {"status": r.status_code, "body": r.json()}
                break

        result = CliRunner().invoke(cli_app, ["--data-dir", str(data), "facts", "put", "work.title", "cook"])
        report["cli"] = {"code": result.exit_code, "stderr": result.stderr}

        with space.core.store.read() as conn:
            report["integrity"] = conn.exec_driver_sql("PRAGMA integrity_check").scalar()
            ids = set(conn.execute(sa.text("select id from facts where predicate like 'x.n%'")).scalars())
            report["facts_match"] = ids == set(written)
            report["unrecorded"] = conn.execute(sa.text(
                "select count(*) from facts f where not exists (select 1 from change_objects o "
                "where o.object_type = 'fact' and o.object_id = f.id)")).scalar_one()

        (disk / "ballast").unlink()
        after = space.user.facts.put(predicate="x.after", value="space again")
        with space.core.store.read() as conn:
            report["after_api"] = conn.execute(sa.text("select count(*) from facts where id = :id"),
                                               {"id": after.id}).scalar_one()
        again = client.post(f"/kb/{kb}/documents", json={"title": "After", "content": "back"})
        report["after_http"] = again.status_code
        client.close()
        server.should_exit = True
        thread.join(timeout=30)
    sys.stdout.write(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def full_disk_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    disk = tmp_path_factory.mktemp("disk")
    done = run_on_small_disk(disk, "6m", CHILD, args=[str(disk)])
    assert done.returncode == 0, done.stderr[-4000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_a_write_on_a_full_disk_raises_storage_full_and_tears_nothing(full_disk_report: dict[str, Any]) -> None:
    """The Python API raises StorageFullError naming the full disk; the store stays whole."""
    api = full_disk_report["api"]
    assert (api["class"], api["code"]) == ("StorageFullError", "E_STORAGE_FULL")
    assert "the disk is full; nothing was written" in api["message"]
    assert full_disk_report["integrity"] == "ok"
    assert full_disk_report["facts_match"] is True, "exactly the facts reported written are in the store"
    assert full_disk_report["unrecorded"] == 0


def test_the_service_answers_507_and_the_cli_exits_8_on_a_full_disk(full_disk_report: dict[str, Any]) -> None:
    """507 Insufficient Storage with the message, and the CLI's own exit code 8."""
    http = full_disk_report["http"]
    assert http["status"] == 507
    assert http["body"]["error"] == "Insufficient Storage"
    assert "the disk is full" in http["body"]["message"]
    cli = full_disk_report["cli"]
    assert cli["code"] == 8, cli["stderr"]
    assert "the disk is full" in cli["stderr"]


def test_writing_resumes_as_soon_as_space_is_freed(full_disk_report: dict[str, Any]) -> None:
    """Nothing needs repairing after a full disk: freeing space is enough."""
    assert full_disk_report["after_api"] == 1
    assert full_disk_report["after_http"] == 201


FILES_CHILD = FILL + textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from notochord.clock import SystemClock
    from notochord.errors import NotochordError
    from notochord.files.history import FileHistory
    from notochord.files.private import GemStore
    from notochord.files.workspace import Workspace

    disk = Path(sys.argv[1])
    (disk / "conversation").mkdir()
    history = FileHistory(disk / "history", clock=SystemClock("UTC"), trash=None)
    workspace = Workspace(disk / "conversation", history=history, actor="gem:notes", run_id="run-1")
    store = GemStore(disk / "gem", key=b"k" * 32)
    workspace.write("workspace:kept.txt", "kept")

    fill(disk / "ballast")

    attempts = {
        "workspace": lambda: workspace.write("workspace:big.txt", b"y" * 200_000),
        "overwrite": lambda: workspace.write("workspace:kept.txt", b"z" * 200_000),
        "blob": lambda: store.blobs.put("big.bin", b"y" * 200_000),
        "document": lambda: store.documents.write("big.md", "y" * 200_000),
    }
    report = {}
    for name, attempt in attempts.items():
        try:
            attempt()
            report[name] = {"class": None}
        except NotochordError as exc:
            report[name] = {"class": type(exc).__name__, "message": str(exc)}
    report["kept"] = workspace.read_text("workspace:kept.txt")

    (disk / "ballast").unlink()
    for attempt in attempts.values():
        attempt()
    report["after"] = [len(workspace.read("workspace:big.txt")), len(store.blobs.get("big.bin"))]
    store.close()
    history.close()
    sys.stdout.write(json.dumps(report))
    """
)


def test_file_writes_on_a_full_disk_raise_storage_full_keep_the_old_file_and_resume(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Workspace files and a gem's private storage report a full disk as StorageFullError."""
    disk = tmp_path_factory.mktemp("files-disk")
    done = run_on_small_disk(disk, "2m", FILES_CHILD, args=[str(disk)])
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout)
    for name in ("workspace", "overwrite", "blob", "document"):
        assert report[name]["class"] == "StorageFullError", (name, report[name])
        assert "the disk is full" in report[name]["message"]
    assert report["kept"] == "kept", "a write that did not fit leaves the old content in place"
    assert report["after"] == [200_000, 200_000]


INIT_CHILD = FILL + textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from typer.testing import CliRunner
    from notochord.cli import app as cli_app

    disk = Path(sys.argv[1])
    fill(disk / "ballast")
    full = CliRunner().invoke(cli_app, ["--data-dir", str(disk / "data"), "init"])
    left = sorted(p.name for p in (disk / "data").rglob("*")) if (disk / "data").exists() else []
    (disk / "ballast").unlink()
    again = CliRunner().invoke(cli_app, ["--data-dir", str(disk / "data"), "init"])
    sys.stdout.write(json.dumps({"code": full.exit_code, "stderr": full.stderr, "left": left,
                                 "again": again.exit_code}))
    """
)


def test_init_on_a_full_disk_says_the_disk_is_full_and_works_once_space_is_freed(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Creating the vault's master key on a full disk is reported as a full disk (exit 8)."""
    disk = tmp_path_factory.mktemp("init-disk")
    done = run_on_small_disk(disk, "1m", INIT_CHILD, args=[str(disk)])
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout)
    assert report["code"] == 8, report
    assert "the disk is full" in report["stderr"]
    assert "master.key" not in report["left"], "no key file half-written"
    assert report["again"] == 0
