"""``ctx.storage`` and ``ctx.data``: P-STOR-01…03, 08…11, K-NS-03, K-UNINST-03, K-UNINST-11."""

from __future__ import annotations

import stat
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from gemfiles_fixtures import GemSpace

from notochord.errors import ClosedError, FileError, FileNotFoundInWorkspaceError, FilePermissionError
from notochord.files.private import GemStore
from notochord.gems.folders import GemFolders, space_folder_name

pytestmark = pytest.mark.anyio


async def test_kv_round_trip_without_any_permission(gem_space: GemSpace, gem: str) -> None:
    """P-STOR-01/02: every tool has storage; nothing was requested or switched on."""
    kv = gem_space.ctx(gem).storage.kv
    await kv.set("cursor", {"page": 3, "seen": ["a", "b"]})
    await kv.set("cache:weather", "sunny")
    await kv.set("cache:news", None)
    assert await kv.get("cursor") == {"page": 3, "seen": ["a", "b"]}
    assert await kv.get("missing", "default") == "default"
    assert await kv.list("cache:") == ["cache:news", "cache:weather"]
    assert await kv.delete("cache:news") is True
    assert await kv.delete("cache:news") is False
    assert await kv.list() == ["cache:weather", "cursor"]


async def test_sql_round_trip_with_a_transaction_spanning_calls(gem_space: GemSpace, gem: str) -> None:
    """P-STOR-02/03: the gem's own SQL database; a BEGIN holds across calls of one run."""
    sql = gem_space.ctx(gem).storage.sql
    await sql.execute("CREATE TABLE recipes (id INTEGER PRIMARY KEY, name TEXT, stars INTEGER)")
    inserted = await sql.execute("INSERT INTO recipes (name, stars) VALUES (?, ?)", ["Stew", 5])
    assert inserted == {"rowcount": 1, "last_row_id": 1}
    many = await sql.executemany(
        "INSERT INTO recipes (name, stars) VALUES (:name, :stars)",
        ({"name": n, "stars": s} for n, s in [("Soup", 3), ("Pie", 4)]),
    )
    assert many["rowcount"] == 2
    await sql.execute("BEGIN")
    await sql.execute("DELETE FROM recipes WHERE stars < 4")
    await sql.execute("ROLLBACK")
    rows = await sql.query("SELECT name, stars FROM recipes WHERE stars >= ? ORDER BY stars DESC", [3])
    assert rows == [{"name": "Stew", "stars": 5}, {"name": "Pie", "stars": 4}, {"name": "Soup", "stars": 3}]

    later = gem_space.ctx(gem).storage.sql
    assert await later.query("SELECT count(*) AS n FROM recipes") == [{"n": 3}]


async def test_sql_cannot_attach_another_file(gem_space: GemSpace, gem: str, tmp_path: Path) -> None:
    """K-NS-03: the gem's SQL reaches its own database only."""
    sql = gem_space.ctx(gem).storage.sql
    with pytest.raises(FileError):
        await sql.execute(f"ATTACH DATABASE '{tmp_path / 'other.db'}' AS other")
    assert not (tmp_path / "other.db").exists()


async def test_documents_are_plain_text_and_blobs_are_encrypted(gem_space: GemSpace, gem: str) -> None:
    """P-STOR-09/10: ``.md`` documents are plain; blobs are sealed with the gem's key."""
    data = gem_space.ctx(gem).data
    await data.documents.write("notes/stew.md", "# Tomato beef stew\n")
    await data.blobs.put("photos/stew.jpg", b"JPEG-BYTES-STEW")
    assert await data.documents.read("notes/stew.md") == "# Tomato beef stew\n"
    assert await data.documents.list() == ["notes/stew.md"]
    assert await data.blobs.get("photos/stew.jpg") == b"JPEG-BYTES-STEW"
    assert await data.blobs.list() == ["photos/stew.jpg"]

    folder = gem_space.folders.folder(gem)
    assert (folder / "documents" / "notes" / "stew.md").read_text() == "# Tomato beef stew\n"
    sealed = (folder / "blobs" / "photos" / "stew.jpg").read_bytes()
    assert b"JPEG-BYTES-STEW" not in sealed

    assert await data.documents.delete("notes/stew.md") is True
    assert await data.blobs.delete("photos/stew.jpg") is True
    with pytest.raises(FileNotFoundInWorkspaceError):
        await data.documents.read("notes/stew.md")
    with pytest.raises(FileNotFoundInWorkspaceError):
        await data.blobs.get("photos/stew.jpg")


@pytest.mark.parametrize("name", ["../escape.md", "/etc/passwd.md", "notes/../../x.md", ".hidden.md"])
async def test_document_and_blob_names_cannot_leave_the_gems_folder(gem_space: GemSpace, gem: str, name: str) -> None:
    data = gem_space.ctx(gem).data
    with pytest.raises(FilePermissionError):
        await data.documents.write(name, "x")
    with pytest.raises(FilePermissionError):
        await data.blobs.put(name, b"x")


async def test_the_gem_folder_is_private_and_per_space(gem_space: GemSpace, gem: str) -> None:
    """P-STOR-08: ``<data_dir>/gems/<space>/<gem>/``, readable by its owner only."""
    await gem_space.ctx(gem).storage.kv.set("k", 1)
    folder = gem_space.data_dir.resolve() / "gems" / "personal" / gem
    assert gem_space.folders.folder(gem) == folder
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {"kv.db", "sql.db", "blobs", "documents"} <= {p.name for p in folder.iterdir()}
    assert space_folder_name("org:acme") == "org-acme"
    assert GemFolders(gem_space.data_dir, "org:acme").folder(gem).parent.name == "org-acme"
    with pytest.raises(FileError):
        space_folder_name("org:../personal")


async def test_the_databases_hold_no_plaintext(gem_space: GemSpace, gem: str) -> None:
    """P-STOR-09: the database files are encrypted with the gem's own key."""
    storage = gem_space.ctx(gem).storage
    await storage.kv.set("favourite", "PLAINTEXT-KV-MARKER")
    await storage.sql.execute("CREATE TABLE notes (body TEXT)")
    await storage.sql.execute("INSERT INTO notes VALUES ('PLAINTEXT-SQL-MARKER')")
    gem_space.folders.close()
    folder = gem_space.folders.folder(gem)
    databases = [p for p in folder.iterdir() if p.name.startswith(("kv.db", "sql.db"))]
    assert {p.name for p in databases} >= {"kv.db", "sql.db"}
    for path in databases:
        raw = path.read_bytes()
        assert b"PLAINTEXT" not in raw, path.name
        assert b"SQLite format 3" not in raw[:16]


async def test_two_gems_cannot_see_each_others_storage(gem_space: GemSpace, gem: str) -> None:
    """K-NS-03, P-STOR-08: separate folders, separate keys; nothing crosses."""
    gem_space.install("weather")
    mine, theirs = gem_space.ctx(gem), gem_space.ctx("weather")
    await mine.storage.kv.set("secret", "recipes only")
    await mine.storage.sql.execute("CREATE TABLE private (x)")
    await mine.data.documents.write("diary.md", "recipes diary")
    await mine.data.blobs.put("key.bin", b"recipes blob")

    assert await theirs.storage.kv.get("secret") is None
    assert await theirs.storage.kv.list() == []
    assert await theirs.storage.sql.query("SELECT name FROM sqlite_master") == []
    assert await theirs.data.documents.list() == []
    assert await theirs.data.blobs.list() == []
    with pytest.raises(FileNotFoundInWorkspaceError):
        await theirs.data.documents.read("diary.md")

    mine_folder, theirs_folder = gem_space.folders.folder(gem), gem_space.folders.folder("weather")
    assert mine_folder != theirs_folder
    other_key = gem_space.space.gems.registry.key("weather", "storage")
    with pytest.raises(FileError, match="wrong key"):
        GemStore(mine_folder, key=other_key)


async def test_uninstall_deletes_the_folder_and_a_reinstall_starts_empty(gem_space: GemSpace, gem: str) -> None:
    """P-STOR-11, K-UNINST-03, K-UNINST-11."""
    ctx = gem_space.ctx(gem)
    await ctx.storage.kv.set("remember", "me")
    await ctx.storage.sql.execute("CREATE TABLE t (x)")
    await ctx.data.documents.write("a.md", "text")
    folder = gem_space.folders.folder(gem)
    old_key = gem_space.space.gems.registry.key(gem, "storage")
    assert folder.exists()

    gem_space.uninstall(gem)
    assert not folder.exists()

    gem_space.install(gem)
    fresh = gem_space.ctx(gem)
    assert await fresh.storage.kv.get("remember") is None
    assert await fresh.storage.sql.query("SELECT name FROM sqlite_master") == []
    assert await fresh.data.documents.list() == []
    assert gem_space.space.gems.registry.key(gem, "storage") != old_key


async def test_a_ctx_held_past_uninstall_cannot_bring_the_storage_back(gem_space: GemSpace, gem: str) -> None:
    ctx = gem_space.ctx(gem)
    await ctx.storage.kv.set("k", 1)
    gem_space.uninstall(gem)
    with pytest.raises(ClosedError, match="uninstalled"):
        await ctx.storage.kv.get("k")
    with pytest.raises(ClosedError):
        await ctx.data.documents.list()
    assert not gem_space.folders.folder(gem).exists()

    gem_space.install(gem)
    with pytest.raises(ClosedError, match="reinstalled"):
        await ctx.storage.kv.set("k", 2)
    assert await gem_space.ctx(gem).storage.kv.get("k") is None


async def test_a_folder_left_by_an_earlier_installation_is_never_reused(gem_space: GemSpace, gem: str) -> None:
    """K-UNINST-11 even when the uninstall hook did not run: the folder's key fingerprint differs."""
    await gem_space.ctx(gem).storage.kv.set("old", "data")
    await gem_space.ctx(gem).data.documents.write("old.md", "old")
    gem_space.space.gems.registry.on_uninstalled.remove(gem_space.folders.on_uninstalled)
    gem_space.uninstall(gem)
    assert gem_space.folders.folder(gem).exists(), "the hook was removed, so the folder stayed"

    gem_space.install(gem)
    fresh = gem_space.ctx(gem)
    assert await fresh.data.documents.list() == []
    assert await fresh.storage.kv.get("old") is None


async def test_storage_after_close_is_refused(gem_space: GemSpace, gem: str) -> None:
    ctx = gem_space.ctx(gem)
    gem_space.folders.close()
    with pytest.raises(ClosedError, match="closed"):
        await ctx.storage.kv.get("k")


async def test_an_uninstall_during_a_gems_endless_query_stops_it_instead_of_waiting(
    gem_space: GemSpace, gem: str
) -> None:
    """K-UNINST-03, P-STOR-11: the gem's SQL runs in notochord's process; an uninstall (and the
    other gems' storage, which shares the folders' lock) must not wait for a statement that never
    ends. The statement is interrupted and the folder deleted."""
    sql = gem_space.ctx(gem).storage.sql
    failures: list[BaseException] = []

    async def run_forever() -> None:
        try:
            await sql.query("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n")
        except BaseException as exc:  # the test reads what the gem's call raised
            failures.append(exc)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run_forever)
        await anyio.sleep(0.3)  # the statement is running in a worker thread
        with anyio.fail_after(10):
            await anyio.to_thread.run_sync(gem_space.uninstall, gem)
    assert len(failures) == 1 and isinstance(failures[0], ClosedError)
    assert not gem_space.folders.folder(gem).exists()
