"""Acceptance of files and storage: no plaintext on disk, rollback byte for byte, ``space.files``.

- A known marker written through ``ctx.storage.sql``, ``ctx.storage.kv`` and a blob appears nowhere
  in the bytes of any file on disk, while the gem's databases are open and after they are closed
  (P-STOR-09).
- A run overwrites, deletes, moves and creates files; another actor changes one of them later; the
  rollback restores every other file exactly, byte for byte, and leaves the later change alone
  (P-FILE-21…25), through :class:`~notochord.gems.files_service.FilesService`, the host's
  ``space.files``.
- P-FILE-16, P-FILE-18, P-FILE-34 and P-STOR-04, which no other test names.
"""

from __future__ import annotations

import dataclasses
import json
import os
from ipaddress import IPv4Address, IPv6Address
from pathlib import Path

import httpx
import pytest
from gemfiles_fixtures import GemSpace

from notochord.errors import FileError, FileNotFoundInWorkspaceError
from notochord.gems.files_service import FilesService
from notochord.gems.manifest import Manifest, ToolSpec

pytestmark = pytest.mark.anyio

MARKER = "NOTOCHORD-MARKER-7f3a9c1e-do-not-leak"


def _files_holding(base: Path, needles: list[bytes]) -> list[str]:
    """Every regular file under ``base`` whose bytes contain one of ``needles``."""
    found: list[str] = []
    for folder, _dirs, files in os.walk(base):
        for name in files:
            path = Path(folder) / name
            if path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            if any(needle in data for needle in needles):
                found.append(str(path.relative_to(base)))
    return found


async def test_a_marker_written_through_sql_kv_and_a_blob_is_nowhere_on_disk(gem_space: GemSpace, gem: str) -> None:
    """P-STOR-09: the gem's database, key-value store and blobs hold no plaintext, WAL files included."""
    ctx = gem_space.ctx(gem)
    await ctx.storage.sql.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    await ctx.storage.sql.execute("INSERT INTO notes (body) VALUES (?)", [MARKER])
    await ctx.storage.sql.execute("INSERT INTO notes (body) VALUES (?)", [MARKER * 50])
    await ctx.storage.kv.set("note", MARKER)
    await ctx.storage.kv.set("nested", {"body": MARKER, "list": [MARKER]})
    await ctx.data.blobs.put("notes/marker.bin", MARKER.encode("utf-8"))
    await ctx.data.blobs.put("notes/large.bin", MARKER.encode("utf-8") * 1000)

    assert await ctx.storage.sql.query("SELECT body FROM notes WHERE id = 1") == [{"body": MARKER}]
    assert await ctx.storage.kv.get("note") == MARKER
    assert await ctx.data.blobs.get("notes/marker.bin") == MARKER.encode("utf-8")

    needles = [MARKER.encode("utf-8"), MARKER.encode("utf-16-le"), MARKER[:16].encode("utf-8")]
    folder = gem_space.folders.folder(gem)
    written = [p for p in folder.rglob("*") if p.is_file()]
    assert any(p.name.startswith("sql.db") for p in written)
    assert any(p.name.startswith("kv.db") for p in written)
    assert any(p.parent.name == "notes" for p in written), "the blobs are on disk"
    assert _files_holding(gem_space.data_dir, needles) == [], "while the databases are open"

    gem_space.folders.close()
    assert _files_holding(gem_space.data_dir, needles) == [], "after closing"


# -- rollback, byte for byte ----------------------------------------------------------------------

ORIGINAL: dict[str, bytes] = {
    "keep.bin": bytes(range(256)) * 4,
    "gone.bin": b"\x00\xff deleted by the run \r\n\x1a",
    "moved.bin": "moved by the run: Zoë 中文 \U0001f600".encode(),
    "later.bin": b"changed by the run, then by someone else",
    "untouched.txt": b"never touched",
    "docs/inner.bin": bytes(reversed(range(256))),
}


def _tree(folder: Path) -> dict[str, bytes | str]:
    """Every file (its bytes) and folder under ``folder``, by relative path."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        found[rel] = "dir" if path.is_dir() else path.read_bytes()
    return found


@pytest.mark.parametrize("later_actor", ["another-gem", "the-user"])
async def test_rollback_restores_a_runs_files_byte_for_byte_and_spares_a_later_change(
    gem_space: GemSpace, gem: str, chat: Path, later_actor: str
) -> None:
    """P-FILE-21…25: overwrite, delete, move and create are undone; a file changed later is not."""
    for rel, data in ORIGINAL.items():
        (chat / rel).parent.mkdir(parents=True, exist_ok=True)
        (chat / rel).write_bytes(data)
    before = _tree(chat)

    run = gem_space.ctx(gem, conversation=chat, run_id="run-A")
    await run.files.write("workspace:keep.bin", b"overwritten once")
    await run.files.write("workspace:keep.bin", b"overwritten twice")
    await run.files.write("workspace:later.bin", b"the run's version")
    await run.files.write("workspace:docs/inner.bin", b"")
    await run.files.delete("workspace:gone.bin")
    await run.files.move("workspace:moved.bin", "workspace:archive/2026/moved.bin")
    await run.files.write("workspace:created/new.bin", b"created by the run")

    later = b"written later by " + later_actor.encode()
    if later_actor == "another-gem":
        gem_space.install("notes")
        other = gem_space.ctx("notes", conversation=chat, run_id="run-B")
        await other.files.write("workspace:later.bin", later)
    else:
        (chat / "later.bin").write_bytes(later)

    files = FilesService(gem_space.data_dir)
    report = files.rollback("run-A", conversation=chat)

    expected = dict(before)
    expected["later.bin"] = later
    assert _tree(chat) == expected
    assert report.run_id == "run-A"
    assert report.skipped == ("workspace:later.bin",)
    assert set(report.restored) >= {
        "workspace:keep.bin",
        "workspace:docs/inner.bin",
        "workspace:gone.bin",
        "workspace:moved.bin",
        "workspace:archive/2026/moved.bin",
        "workspace:created/new.bin",
    }
    assert files.rollback("run-A", conversation=chat).restored == (), "a rollback is not undone twice"
    assert _tree(chat) == expected


async def test_headless_rollback_restores_a_deleted_file_from_the_history(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    """P-FILE-26: a deletion without a trash is permanent, but the history copy is restored."""
    (chat / "report.bin").write_bytes(bytes(range(200)))
    ctx = gem_space.ctx(gem, conversation=chat, run_id="run-headless")
    await ctx.files.delete("workspace:report.bin")
    trash = gem_space.data_dir / "trash"
    for item in trash.iterdir() if trash.exists() else []:
        # Empty the trash, as on a machine without one: only the history copy is left.
        os.remove(item)
    report = FilesService(gem_space.data_dir, headless=True).rollback("run-headless", conversation=chat)
    assert report.restored == ("workspace:report.bin",)
    assert (chat / "report.bin").read_bytes() == bytes(range(200))


# -- space.files.history --------------------------------------------------------------------------


async def test_history_lists_every_change_of_a_folder_and_of_one_run(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-21: the history names the run, the gem, the operation and the path."""
    first = gem_space.ctx(gem, conversation=chat, run_id="run-1")
    await first.files.write("workspace:a.txt", "one")
    await first.files.write("workspace:a.txt", "two")
    second = gem_space.ctx(gem, conversation=chat, run_id="run-2")
    await second.files.move("workspace:a.txt", "workspace:b.txt")
    await second.files.delete("workspace:b.txt")

    files = FilesService(gem_space.data_dir)
    everything = files.history(chat)
    assert [(c.run_id, c.op, c.display, c.dest_display) for c in everything] == [
        ("run-1", "create", "workspace:a.txt", None),
        ("run-1", "overwrite", "workspace:a.txt", None),
        ("run-2", "move", "workspace:a.txt", "workspace:b.txt"),
        ("run-2", "delete", "workspace:b.txt", None),
    ]
    assert {c.actor for c in everything} == {"gem:recipes"}
    assert [c.op for c in files.history(chat, run_id="run-2")] == ["move", "delete"]
    assert files.history(chat, run_id="run-none") == []


async def test_history_finds_a_folder_by_any_spelling_of_its_path(
    gem_space: GemSpace, gem: str, chat: Path, tmp_path: Path
) -> None:
    await gem_space.ctx(gem, conversation=chat, run_id="run-1").files.write("workspace:a.txt", "one")
    alias = tmp_path / "alias"
    alias.symlink_to(chat)
    files = FilesService(gem_space.data_dir)
    assert files.history(alias) == files.history(chat)
    assert files.history(str(chat) + "/") == files.history(chat)
    assert len(files.history(chat)) == 1


def test_history_and_rollback_of_an_untouched_folder_create_nothing(gem_space: GemSpace, chat: Path) -> None:
    files = FilesService(gem_space.data_dir)
    history_root = gem_space.data_dir / "history"
    existed = history_root.exists()
    assert files.history(chat) == []
    report = files.rollback("run-x", conversation=chat)
    assert (report.restored, report.skipped) == ((), ())
    assert history_root.exists() is existed


def test_history_of_a_file_and_rollback_without_a_run_id_are_refused(gem_space: GemSpace, chat: Path) -> None:
    (chat / "a.txt").write_text("a")
    files = FilesService(gem_space.data_dir)
    with pytest.raises(FileError, match="is a file"):
        files.history(chat / "a.txt")
    with pytest.raises(FileError, match="run id"):
        files.rollback("", conversation=chat)
    with pytest.raises(FileError, match="run id"):
        files.rollback("   ", conversation=chat)


# -- IDs no other test names ----------------------------------------------------------------------


async def test_the_conversation_folder_holds_dragged_files_and_results_of_other_gems(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    """P-FILE-16: what the user dropped in and what another gem left are there for every gem."""
    (chat / "inbox").mkdir()
    (chat / "inbox" / "invoice.pdf").write_bytes(b"%PDF-1.7 dragged in by the user")
    gem_space.install("summarizer")
    producer = gem_space.ctx("summarizer", conversation=chat)
    await producer.files.write("workspace:results/summary.md", "# Summary\n")

    consumer = gem_space.ctx(gem, conversation=chat)
    assert await consumer.files.read("workspace:inbox/invoice.pdf") == b"%PDF-1.7 dragged in by the user"
    assert await consumer.files.read_text("workspace:results/summary.md") == "# Summary\n"
    assert [e["name"] for e in await consumer.files.list("workspace:")] == ["inbox", "results"]


async def test_paths_are_plain_strings_the_gem_prefixes_itself(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-18: the AI passes relative paths; the gem adds ``workspace:``; without it, no conversation."""
    (chat / "inbox").mkdir()
    (chat / "inbox" / "a.txt").write_text("a")
    arguments = json.loads('{"folder": "inbox/", "note": "notes.txt"}')
    ctx = gem_space.ctx(gem, conversation=chat)

    entries = await ctx.files.list("workspace:" + arguments["folder"])
    assert [e["name"] for e in entries] == ["a.txt"]
    await ctx.files.write("workspace:" + arguments["note"], "noted")
    assert (chat / "notes.txt").read_text() == "noted"
    # Unprefixed, the same string is a path in the run folder, of which this call has none.
    with pytest.raises(FileError):
        await ctx.files.read_text(arguments["note"])


async def test_a_gem_with_network_access_can_send_conversation_files_to_its_hosts(
    gem_space: GemSpace, chat: Path
) -> None:
    """P-FILE-34: installing a networked gem trusts it with the conversation's files; nothing more is checked."""
    folder = gem_space.manifests / "uploader"
    folder.mkdir(parents=True)
    manifest = {
        "id": "uploader",
        "name": "Uploader",
        "version": "1.0.0",
        "permissions": {"network": {"hosts": ["upload.example.test"], "reason": "Upload files"}},
        "tools": [{"name": "main", "entry": "tools/main.mjs"}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "tools").mkdir()
    (folder / "tools" / "main.mjs").touch()
    gem_space.space.gems.install(folder)
    received: list[bytes] = []

    def upload(request: httpx.Request) -> httpx.Response:
        received.append(request.read())
        return httpx.Response(201)

    async def resolve(host: str, port: int) -> list[IPv4Address | IPv6Address]:
        return [IPv4Address("93.184.215.14")]

    gem_space.space.gems.services.resolver = resolve
    gem_space.space.gems.services.http_transport = httpx.MockTransport(upload)
    (chat / "contract.txt").write_bytes(b"confidential terms")

    ctx = gem_space.ctx("uploader", conversation=chat)
    body = await ctx.files.read("workspace:contract.txt")
    response = await ctx.http.fetch("https://upload.example.test/files", method="POST", body=body)
    assert response.status == 201
    assert received == [b"confidential terms"]


def test_the_manifest_has_no_storage_or_files_fields(gem_space: GemSpace) -> None:
    """P-STOR-04, P-FILE-02: nothing in the manifest model declares storage or files."""
    for model in (Manifest, ToolSpec):
        names = {f.name for f in dataclasses.fields(model)}
        assert not names & {"storage", "files", "data", "kv", "sql", "blobs", "documents"}, model


async def test_a_gem_that_declares_nothing_has_all_of_its_storage(gem_space: GemSpace, gem: str) -> None:
    """P-STOR-04, P-STOR-02: no storage field was written, and kv, sql, documents and blobs all work."""
    manifest = gem_space.space.gems.registry.manifest(gem)
    assert manifest.network is None
    ctx = gem_space.ctx(gem)
    await ctx.storage.kv.set("k", 1)
    await ctx.storage.sql.execute("CREATE TABLE t (x)")
    await ctx.data.documents.write("a.md", "# A")
    await ctx.data.blobs.put("a.bin", b"a")
    assert await ctx.storage.kv.get("k") == 1
    assert await ctx.data.documents.read("a.md") == "# A"
    with pytest.raises(FileNotFoundInWorkspaceError):
        await ctx.data.blobs.get("missing.bin")
