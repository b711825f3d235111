"""The store cannot be used as it is: the database server is down or refuses the login, or the space
was written by a newer notochord, or ``migrate-store --to`` names no usable server.

Each is an expected outcome with its own exit code from the README's table and a message that names
the problem and what to do, never the password and never the database library's own wording of it
(data spaces are separate stores, OD-K47, so each can fail on its own).
"""

from __future__ import annotations

import hashlib
import json
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from cli_harness import Cli

import notochord
from notochord import errors
from notochord.db import postgres
from notochord.db.engine import read_tx
from notochord.settings import Settings

PASSWORD = "hunter2-not-for-print"
CLOSED_PORT = f"postgresql://ann:{PASSWORD}@127.0.0.1:1/notes"
"""A server nobody listens on: connecting is refused at once."""
UNREACHABLE = 11


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    with notochord.open(path, Settings(data_dir=path, embedder="none", index_in_background=False)) as nc:
        nc.personal.user.documents.upsert(collection="keep", key="stew", title="Stew", body="Simmer two hours.")
    return path


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*.db")}


def _plain(text: str) -> str:
    return " ".join(text.split())


def _no_foreign_text(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and "sqlalchemy" not in text.lower() and "psycopg" not in text.lower()
        assert PASSWORD not in text


# --- a server that cannot be reached ----------------------------------------------------------------


def test_a_database_server_that_cannot_be_reached_exits_11_saying_to_check_it_and_retry(vault: Path) -> None:
    """OD-K47: ``database_url`` names a server that is down (here: nobody listens on the port). The
    command exits 11, names the server (without the password) and says to check that it runs and
    that ``database_url`` is right, then retry; ``--json`` gives the code ``E_UNREACHABLE``."""
    cli = Cli(vault, env={"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_DATABASE_URL": CLOSED_PORT})

    out = cli.run("status", code=UNREACHABLE)
    said = _plain(out.stderr)
    _no_foreign_text(out.stdout, out.stderr)
    assert "cannot connect to the PostgreSQL server at 127.0.0.1:1" in said
    assert "database_url" in said and "retry" in said

    error = json.loads(cli.run("status", "--json", code=UNREACHABLE).stderr)["error"]
    assert (error["code"], error["exitCode"]) == ("E_UNREACHABLE", UNREACHABLE)
    assert PASSWORD not in error["message"]


def test_a_space_whose_server_goes_away_fails_with_the_unreachable_error_not_a_generic_one() -> None:
    """OD-K47: a connection of a space's own engine that cannot be made (the server stopped after
    the vault was opened) is the same expected failure as the server being down at the start."""
    engine = postgres.create_postgresql_engine(CLOSED_PORT, "personal")
    try:
        with pytest.raises(errors.StoreUnreachableError) as raised, read_tx(engine):
            pass
    finally:
        engine.dispose()
    assert "127.0.0.1:1" in raised.value.message and PASSWORD not in raised.value.message


def test_migrate_store_to_a_server_that_cannot_be_reached_names_the_to_option(vault: Path) -> None:
    """The server is the one typed in ``--to``: the message says so (not ``database_url``, which the
    user did not set), exit 11, and the SQLite file is left as it was."""
    before = _digest(vault)
    cli = Cli(vault)
    out = cli.run("migrate-store", "--to", CLOSED_PORT, code=UNREACHABLE)
    said = _plain(out.stderr)
    _no_foreign_text(out.stdout, out.stderr)
    assert "cannot connect to the PostgreSQL server at 127.0.0.1:1" in said
    assert "--to" in said and "database_url" not in said
    assert _digest(vault) == before


@pytest.mark.postgresql
def test_a_server_that_refuses_the_login_exits_11_naming_the_user_without_the_password(
    vault: Path, database_url: str
) -> None:
    """OD-K47: the server answers but refuses the user (no such role here; a wrong password reads
    the same): exit 11, the message says the login was refused and to check the user and password."""
    url = sa.make_url(database_url).set(username="nobody_here", password=PASSWORD)
    wrong_login = url.render_as_string(hide_password=False)
    cli = Cli(vault, env={"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_DATABASE_URL": wrong_login})

    out = cli.run("status", code=UNREACHABLE)
    said = _plain(out.stderr)
    _no_foreign_text(out.stdout, out.stderr)
    assert "refused the login of nobody_here" in said
    assert "user and password" in said

    moved = Cli(vault).run("migrate-store", "--to", wrong_login, code=UNREACHABLE)
    assert "refused the login of nobody_here" in _plain(moved.stderr) and "--to" in moved.stderr
    _no_foreign_text(moved.stdout, moved.stderr)


# --- a store written by a newer notochord --------------------------------------------------------------


def _written_by_a_newer_version(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    conn.close()


def test_a_space_written_by_a_newer_notochord_exits_2_saying_to_upgrade_and_is_left_unchanged(vault: Path) -> None:
    """OD-K47: a space whose schema is newer than this program knows is no unexpected failure: exit 2
    (like any other setup that does not fit), ``E_STORE_VERSION``, the message says to upgrade, and
    the file is not touched."""
    _written_by_a_newer_version(vault / "spaces" / "personal.db")
    before = _digest(vault)
    cli = Cli(vault)

    out = cli.run("status", code=2)
    _no_foreign_text(out.stdout, out.stderr)
    assert "newer version of notochord" in _plain(out.stderr) and "upgrade notochord" in _plain(out.stderr)
    error = json.loads(cli.run("status", "--json", code=2).stderr)["error"]
    assert (error["code"], error["exitCode"]) == ("E_STORE_VERSION", 2)
    assert _digest(vault) == before


def test_check_names_a_space_written_by_a_newer_notochord_and_still_checks_the_others(vault: Path) -> None:
    """One space from a newer version is a problem of that space: the others are checked (exit 9)."""
    with notochord.open(vault, Settings(data_dir=vault, embedder="none", index_in_background=False)) as nc:
        nc.org("acme", create=True)
    _written_by_a_newer_version(vault / "spaces" / "org-acme.db")
    out = Cli(vault).run("check", code=9).stdout
    assert "personal: consistent" in out
    assert "org:acme: 1 problem" in out and "upgrade notochord" in out


# --- a --to that is not a usable URL --------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://ann:{PASSWORD}@localhost/Notes-Prefix",  # the prefix must be lowercase letters, digits, _
        f"postgresql://ann:{PASSWORD}@localhost/{'p' * 41}",  # longer than a database name allows for its suffix
    ],
)
def test_migrate_store_words_a_bad_prefix_as_a_problem_of_the_to_option(vault: Path, url: str) -> None:
    """The user typed ``--to``, not the setting ``database_url``: the refusal (exit 2, nothing
    opened or written) names the option and says what a prefix may hold."""
    before = _digest(vault)
    out = Cli(vault).run("migrate-store", "--to", url, code=2)
    said = _plain(out.stderr)
    _no_foreign_text(out.stdout, out.stderr)
    assert "--to" in said and "database_url" not in said
    assert "lowercase letters, digits and _" in said
    assert _digest(vault) == before


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never says a word: a server hung, or a firewall that
    lets the handshake through and drops the rest."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def test_a_server_that_never_answers_is_given_up_on_after_the_connect_timeout(silent_server: int) -> None:
    """OD-K47: without a timeout of its own a connection waits as long as the operating system lets
    it (minutes); a space's engine gives up after :data:`postgres.CONNECT_TIMEOUT_S` and says the
    server cannot be reached, never the password. A ``connect_timeout`` in the URL is the user's and
    is kept (the server's maintenance connection, here given one second)."""
    silent = f"postgresql://ann:{PASSWORD}@127.0.0.1:{silent_server}/notes"
    engine = postgres.create_postgresql_engine(silent, "personal")
    try:
        with pytest.raises(errors.StoreUnreachableError) as raised, read_tx(engine):
            pass
    finally:
        engine.dispose()
    assert "timeout" in raised.value.message and PASSWORD not in raised.value.message
    given = f"{silent}?connect_timeout=1"
    with pytest.raises(errors.StoreUnreachableError):
        postgres.database_exists(given, "personal")


def test_a_connection_option_postgresql_does_not_know_is_bad_input_naming_it(vault: Path) -> None:
    """OD-K47: a typo in the URL's options (``?sslmod=require``) is the user's to fix: exit 2 naming
    the option, before any connection is tried (before: the driver's "invalid connection option",
    exit 1 as if something unexpected had happened). Options libpq knows pass."""
    url = f"{CLOSED_PORT}?sslmod=require"
    cli = Cli(vault, env={"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_DATABASE_URL": url})

    out = cli.run("status", code=2)
    said = _plain(out.stderr)
    _no_foreign_text(out.stdout, out.stderr)
    assert "'sslmod'" in said and "not a PostgreSQL connection option" in said
    assert PASSWORD not in said

    known = Cli(vault, env={"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_DATABASE_URL": f"{CLOSED_PORT}?sslmode=disable"})
    known.run("status", code=UNREACHABLE)
