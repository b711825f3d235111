"""Ctrl-C during the maintenance commands that write: ``check --repair`` and ``migrate-store``.

Each exits 130 with a word on what was interrupted, what stays done, what was not changed, and that
running the same command again is safe; and running it again does finish the work (data spaces are
separate stores, OD-K47: each is repaired, or copied, whole or not at all).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from cli_harness import Cli

import notochord
from notochord.db import postgres
from notochord.knowledge import check as check_module
from notochord.knowledge import store_copy
from notochord.knowledge.check import Problem
from notochord.knowledge.core import KnowledgeCore
from notochord.settings import Settings


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A personal space with three documents and an organization with one."""
    path = tmp_path / "vault"
    with notochord.open(path, Settings(data_dir=path, embedder="none", index_in_background=False)) as nc:
        for key in ("stew", "bread", "rice"):
            nc.personal.user.documents.upsert(collection="keep", key=key, title=key.title(), body=f"All about {key}.")
        nc.org("acme", create=True).user.documents.upsert(collection="keep", key="faq", title="FAQ", body="Refunds.")
    return path


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*.db")}


def _plain(text: str) -> str:
    return " ".join(text.split())


def _drop_full_text(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM chunks_fts")
    conn.close()


# --- check --repair --------------------------------------------------------------------------------------


def test_ctrl_c_during_check_repair_says_what_was_repaired_and_running_it_again_finishes(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OD-K47: both spaces lost their full-text rows; Ctrl-C comes while the second space is being
    repaired. The command exits 130 naming the space repaired (it stays repaired), the space whose
    repair was undone, that documents, facts and the change log were not touched, and that running
    ``notochord check --repair`` again is safe; running it again repairs the rest."""
    _drop_full_text(vault / "spaces" / "org-acme.db")
    _drop_full_text(vault / "spaces" / "personal.db")
    real_repair = check_module.repair

    def ctrl_c_on_the_personal_space(core: KnowledgeCore, problems: Sequence[Problem] | None = None) -> list[Problem]:
        if str(core.store.engine.url.database).endswith("personal.db"):
            raise KeyboardInterrupt
        return real_repair(core, problems)

    monkeypatch.setattr(check_module, "repair", ctrl_c_on_the_personal_space)
    cli = Cli(vault)
    out = cli.run("check", "--repair", code=130)
    said = _plain(out.stderr)
    assert "Traceback" not in out.output
    assert "check --repair was interrupted while repairing personal" in said
    assert "org:acme stays repaired" in said
    assert "documents, facts and the change log were not changed" in said
    assert "run notochord check --repair again" in said

    error = json.loads(cli.run("check", "--repair", "--json", code=130).stderr)["error"]
    assert (error["code"], error["exitCode"]) == ("E_INTERRUPTED", 130)
    assert "while repairing personal" in error["message"]

    monkeypatch.setattr(check_module, "repair", real_repair)
    report = json.loads(cli.run("check", "--repair", "--json", code=0).stdout)
    repaired = {s["space"]: len(s["repaired"]) for s in report["spaces"]}
    assert repaired == {"org:acme": 0, "personal": 3}  # org:acme was repaired by the interrupted run
    assert "personal: consistent" in cli.run("check", code=0).stdout


def test_ctrl_c_during_a_check_without_repair_says_nothing_was_changed(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ctrl_c(core: KnowledgeCore) -> list[Problem]:
        raise KeyboardInterrupt

    monkeypatch.setattr(check_module, "check", ctrl_c)
    before = _digest(vault)
    out = Cli(vault).run("check", code=130)
    said = _plain(out.stderr)
    assert "check was interrupted while checking" in said and "nothing was changed" in said
    assert _digest(vault) == before


# --- migrate-store -----------------------------------------------------------------------------------------


@pytest.mark.postgresql
def test_ctrl_c_during_migrate_store_leaves_nothing_on_the_server_and_running_it_again_copies(
    vault: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OD-K47: Ctrl-C after some tables were sent but before the copy committed. The command exits
    130 saying the copy was not kept, the SQLite file is unchanged and still the one in use, and
    running the same command again is safe; the next run copies every row."""
    real_copy_table = store_copy._copy_table
    copied: list[str] = []

    def ctrl_c_after_three_tables(src: sa.Connection, dst: sa.Connection, table: sa.Table) -> None:
        if len(copied) == 3:
            raise KeyboardInterrupt
        real_copy_table(src, dst, table)
        copied.append(table.name)

    monkeypatch.setattr(store_copy, "_copy_table", ctrl_c_after_three_tables)
    before = _digest(vault)
    cli = Cli(vault)
    out = cli.run("migrate-store", "--to", database_url, code=130)
    said = _plain(out.stderr)
    assert "Traceback" not in out.output
    assert "migrate-store was interrupted while copying personal" in said
    assert "nothing of it was kept on the server" in said
    assert "the SQLite file is unchanged" in said
    assert "run the same command again" in said
    assert _digest(vault) == before

    monkeypatch.setattr(store_copy, "_copy_table", real_copy_table)
    report = json.loads(cli.run("migrate-store", "--to", database_url, "--json", code=0).stdout)
    assert report["rows"]["documents"] == 3
    settings = Settings(data_dir=vault, embedder="none", index_in_background=False, database_url=database_url)
    with notochord.open(vault, settings, create=False) as nc:
        assert nc.spaces() == ["personal"]
        assert nc.personal.core.counts()["documents"] == 3


@pytest.mark.postgresql
def test_a_database_left_unlabelled_by_an_interrupted_creation_is_labelled_by_the_next_run(
    vault: Path, database_url: str
) -> None:
    """Ctrl-C between creating the space's database and labelling it (the label is how the spaces on
    a server are listed): the next run labels it, so the copy is found by every command that lists
    spaces (``status``, ``check``), not only by its name."""
    with psycopg.connect(str(postgres.server_url(database_url).set(drivername="postgresql")), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{postgres.database_name(database_url, "personal")}"')
    Cli(vault).run("migrate-store", "--to", database_url, code=0)
    settings = Settings(data_dir=vault, embedder="none", index_in_background=False, database_url=database_url)
    with notochord.open(vault, settings, create=False) as nc:
        assert nc.spaces() == ["personal"]
