"""A data directory that cannot be written is still read; what needs writing says so and changes nothing.

Each test makes the vault read-only with a bind mount inside a private mount namespace of the child
process (root ignores file modes, so ``chmod`` would prove nothing).
"""

from __future__ import annotations

import hashlib
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from fault_sandbox import CHILD_TIMEOUT, child_env, cli_read_only
from notochord.db.migrate import head_revision
from notochord.settings import Settings

pytestmark = pytest.mark.slow


def _settings(data: Path) -> Settings:
    return Settings(data_dir=data, index_in_background=False, embedder="none")


def _vault(tmp_path: Path) -> Path:
    """A vault closed cleanly (no ``-wal`` or ``-shm`` left) holding one fact."""
    data = tmp_path / "data"
    with notochord.open(data, _settings(data), embedder=None) as nc:
        nc.personal.user.facts.put(predicate="work.title", value="baker")
    assert sorted(p.name for p in (data / "spaces").iterdir()) == ["personal.db"]
    return data


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


HOLDER = textwrap.dedent(
    """
    import sys, notochord
    from notochord.settings import Settings
    data = sys.argv[1]
    with notochord.open(data, Settings(data_dir=data, index_in_background=False, embedder="none"), embedder=None) as nc:
        nc.personal.user.facts.put(predicate="work.title", value="cook")
        print("committed", flush=True)
        sys.stdin.readline()
    """
)


@pytest.fixture
def live_writer(tmp_path: Path) -> Iterator[Path]:
    """A vault whose writer is still running: its last commit lives only in the ``-wal`` file."""
    data = _vault(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "committed"
        yield data
    finally:
        holder.stdin.close()
        holder.wait(timeout=CHILD_TIMEOUT)
        holder.stdout.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _at(data: Path, *args: str) -> list[str]:
    return ["--data-dir", str(data), *args]


def test_a_read_only_vault_answers_reads_and_refuses_writes_with_a_clear_error(tmp_path: Path) -> None:
    """Reads work on a read-only vault; a write or a new space is refused and changes nothing."""
    data = _vault(tmp_path)
    before = _digest(data)

    lookup, put, new_space = cli_read_only(
        data,
        _at(data, "facts", "lookup", "--json"),
        _at(data, "facts", "put", "work.title", "cook"),
        _at(data, "init", "--org", "acme"),
    )
    assert (lookup.code, lookup.escaped) == (0, None), lookup.stderr
    assert "baker" in lookup.stdout
    assert (put.code, put.escaped) == (2, None), put.stderr
    assert "the store is read-only; make the data directory writable" in put.stderr
    assert (new_space.code, new_space.escaped) == (2, None), new_space.stderr
    assert f"cannot create the store {data / 'spaces' / 'org-acme.db'}: its folder is read-only" in new_space.stderr
    assert _digest(data) == before


def test_a_read_only_vault_with_a_live_writer_is_read_through_its_index_or_refused_without_it(
    live_writer: Path, tmp_path: Path
) -> None:
    """A WAL database is read through its ``-shm`` index, the log's commits included;
    a ``-wal`` left without its ``-shm`` cannot be read honestly, and the error says what to do."""
    assert (live_writer / "spaces" / "personal.db-shm").exists()
    copy = tmp_path / "copy"
    (copy / "spaces").mkdir(parents=True)
    shutil.copy2(live_writer / "master.key", copy / "master.key")
    for name in ("personal.db", "personal.db-wal"):
        shutil.copy2(live_writer / "spaces" / name, copy / "spaces" / name)

    (with_index,) = cli_read_only(live_writer, _at(live_writer, "facts", "lookup", "--json"))
    (without_index,) = cli_read_only(copy, _at(copy, "facts", "lookup"))

    assert (with_index.code, with_index.escaped) == (0, None), with_index.stderr
    assert "cook" in with_index.stdout
    assert (without_index.code, without_index.escaped) == (2, None), without_index.stderr
    assert "not closed cleanly" in without_index.stderr
    assert "make the folder writable" in without_index.stderr


def test_a_read_only_vault_that_needs_an_upgrade_says_so_and_serve_refuses_to_start(tmp_path: Path) -> None:
    """A needed migration cannot run read-only: one clear error, and ``serve`` does not start."""
    data = _vault(tmp_path)
    engine = sa.create_engine(f"sqlite:///{data / 'spaces' / 'personal.db'}")
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0001'"))
    engine.dispose()

    lookup, serve = cli_read_only(data, _at(data, "facts", "lookup"), _at(data, "serve", "--port", str(_free_port())))
    for outcome in (lookup, serve):
        assert (outcome.code, outcome.escaped) == (2, None), outcome.stderr
        assert f"needs an upgrade to schema {head_revision()} (schema 0001) but it is read-only" in outcome.stderr
    assert "knowledge-base service on" not in serve.stdout


def test_serve_refuses_a_read_only_vault_instead_of_answering_500_to_everything(tmp_path: Path) -> None:
    """The service writes, so a read-only data directory stops it at start-up with the reason."""
    data = _vault(tmp_path)
    (serve,) = cli_read_only(
        data, _at(data, "serve", "--port", str(_free_port())), env=child_env(NOTOCHORD_JWT_SECRET="s" * 32)
    )
    assert (serve.code, serve.escaped) == (2, None), serve.stderr
    assert f"the data directory {data} is read-only" in serve.stderr
    assert "knowledge-base service on" not in serve.stdout
