"""``migrate-store`` where there is no SQLite file to copy from: the vault already lives on the server
(``migrate-store`` pointed at the store it would read from), or its file was moved away.

The command reads the space's SQLite file only; without one there is nothing to copy, and it must
say so rather than make a new, empty file and copy that emptiness to the server (OD-K47).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from cli_harness import Cli

import notochord
from notochord.db import postgres
from notochord.settings import Settings
from postgres_server import drop_databases


def _no_sqlite_files(vault: Path) -> None:
    assert list((vault / "spaces").glob("*.db")) == []


@pytest.mark.postgresql
def test_migrate_store_of_a_vault_already_on_the_server_is_refused_and_makes_no_file(
    tmp_path: Path, database_url: str
) -> None:
    """The spaces live on the server ``database_url`` names; ``migrate-store --to`` that same URL, or
    another prefix, finds no SQLite file: exit 3 naming the file looked for and saying the space is
    not in a SQLite file, nothing created on disk or on the server."""
    vault = tmp_path / "vault"
    settings = Settings(data_dir=vault, embedder="none", index_in_background=False, database_url=database_url)
    with notochord.open(vault, settings) as nc:
        nc.personal.user.documents.upsert(collection="keep", key="stew", title="Stew", body="Simmer two hours.")
    _no_sqlite_files(vault)
    cli = Cli(vault, env={"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_DATABASE_URL": database_url})

    out = cli.run("migrate-store", "--to", database_url, code=3)
    said = " ".join(out.stderr.split())
    assert "no SQLite file" in said and str(vault / "spaces" / "personal.db") in said
    assert "nothing to copy" in said
    _no_sqlite_files(vault)

    error = json.loads(cli.run("migrate-store", "--to", database_url, "--json", code=3).stderr)["error"]
    assert error["code"] == "E_NO_SPACE"
    _no_sqlite_files(vault)
    with notochord.open(vault, settings, create=False) as nc:
        assert nc.personal.core.counts()["documents"] == 1


def test_migrate_store_without_the_personal_file_is_refused_before_the_server_is_asked(tmp_path: Path) -> None:
    """A vault whose ``personal.db`` was moved away: exit 3 at once (the URL names no server that
    answers, so asking it would fail differently), and no new file is made."""
    vault = tmp_path / "vault"
    with notochord.open(vault, Settings(data_dir=vault, embedder="none", index_in_background=False)) as nc:
        nc.personal.user.documents.upsert(collection="keep", key="stew", title="Stew", body="Simmer two hours.")
        nc.org("acme", create=True)
    (vault / "spaces" / "personal.db").rename(tmp_path / "moved-away.db")

    out = Cli(vault).run("migrate-store", "--to", "postgresql://ann@127.0.0.1:1/notes", code=3)
    assert "no SQLite file" in " ".join(out.stderr.split())
    assert sorted(p.name for p in (vault / "spaces").glob("*.db")) == ["org-acme.db"]


# --- a target role that may not create or write ---------------------------------------------------------


@pytest.fixture
def login_only(database_url: str, postgres_server_url: str) -> Iterator[str]:
    """``database_url`` as a role that may log in and nothing more (no CREATEDB, no rights in the
    databases it does not own)."""
    role = "ro_" + uuid.uuid4().hex[:10]
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
    yield sa.make_url(database_url).set(username=role).render_as_string(hide_password=False)
    drop_databases(postgres_server_url, database_url)  # what the role owns in them goes with them
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {role}")
        conn.execute(f"DROP ROLE {role}")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    with notochord.open(path, Settings(data_dir=path, embedder="none", index_in_background=False)) as nc:
        nc.personal.user.documents.upsert(collection="keep", key="stew", title="Stew", body="Simmer two hours.")
    return path


@pytest.mark.postgresql
def test_migrate_store_as_a_role_that_may_not_create_databases_says_what_to_grant(
    vault: Path, database_url: str, login_only: str
) -> None:
    """Exit 2 (the server's setup, not an unexpected failure), naming the role and the two ways out:
    give it CREATEDB, or create the database for it."""
    role = sa.make_url(login_only).username
    out = Cli(vault).run("migrate-store", "--to", login_only, code=2)
    said = " ".join(out.stderr.split())
    assert f"the user {role} may not create" in said
    assert f"ALTER ROLE {role} CREATEDB" in said and "CREATE DATABASE" in said
    assert "psycopg" not in said.lower() and "Traceback" not in out.output


@pytest.mark.postgresql
def test_migrate_store_into_a_database_the_role_may_not_write_is_refused_as_read_only(
    vault: Path, database_url: str, login_only: str
) -> None:
    """The database exists (an administrator made it) but the role may not create tables in it:
    exit 2 with ``E_READ_ONLY``, saying the role needs to own it; the next run after that works."""
    postgres.create_database(database_url, "personal")
    role = sa.make_url(login_only).username
    cli = Cli(vault)
    error = json.loads(cli.run("migrate-store", "--to", login_only, "--json", code=2).stderr)["error"]
    assert error["code"] == "E_READ_ONLY"
    assert "may not change" in error["message"] and "OWNER TO" in error["message"]
    assert "psycopg" not in error["message"].lower()

    name = postgres.database_name(database_url, "personal")
    with psycopg.connect(str(postgres.server_url(database_url).set(drivername="postgresql")), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" OWNER TO {role}')
    with psycopg.connect(
        str(postgres.server_url(database_url, name).set(drivername="postgresql")), autocommit=True
    ) as conn:
        conn.execute(f"ALTER SCHEMA public OWNER TO {role}")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # an extension only a superuser may add
    assert json.loads(cli.run("migrate-store", "--to", login_only, "--json", code=0).stdout)["rows"]["documents"] == 1
