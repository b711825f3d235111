"""A PostgreSQL server that drops the connection in the middle of a search or of the embedding queue.

Every statement of a search, the full-text index's version and postings and the vector leg
included, answers a lost server with the error every other call gives for it: the store cannot be
reached (:class:`~notochord.errors.StoreUnreachableError`, which the console shows as its "store
unavailable" page and the command line as its own exit code), in the project's words rather than
the driver's statement dump. The next call connects anew and finds what it found before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

import notochord
from notochord.errors import StoreUnreachableError

pytestmark = pytest.mark.postgresql

RECIPES = ["soup with leeks", "soup with barley", "bread with seeds"]


@contextmanager
def _server_drops(engine: sa.Engine, server_url: str, marker: str) -> Iterator[list[int]]:
    """While open, the server ends the session of the first statement holding ``marker``, as it is
    sent (an administrator's termination, as a restart or failover does); yields the pids it ended."""
    ended: list[int] = []

    def drop(conn: sa.Connection, _cursor: Any, statement: str, *_args: Any) -> None:
        if ended or marker not in statement:
            return
        pid = conn.connection.driver_connection.info.backend_pid  # type: ignore[union-attr]
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        ended.append(pid)

    sa.event.listen(engine, "before_cursor_execute", drop)
    try:
        yield ended
    finally:
        sa.event.remove(engine, "before_cursor_execute", drop)


def _titles(space: notochord.Space, query: str) -> list[str]:
    return [hit.title for hit in space.user.search(query)]


@pytest.mark.parametrize(
    "marker",
    [
        pytest.param("SELECT value FROM space_meta WHERE key =", id="the full-text index's version"),
        pytest.param("string_agg(CAST(chunk_id AS TEXT)", id="the full-text postings"),
        pytest.param("FROM chunk_vectors", id="the vector leg"),
    ],
)
def test_a_server_lost_mid_search_is_an_unreachable_store_and_the_next_search_finds_the_same(
    vault: notochord.Notochord, postgres_server_url: str, marker: str
) -> None:
    """K-SRCH-01, K-SRCH-02: a search either returns its hits or fails as the store being out of
    reach; a lost server is never a failure of the store's own, and it leaves nothing to reopen."""
    space = vault.personal
    for i, body in enumerate(RECIPES):
        space.user.documents.upsert(collection="keep", key=f"r{i}", title=f"Recipe {i}", body=body)
    engine = space.core.store.engine

    with _server_drops(engine, postgres_server_url, marker) as ended, pytest.raises(StoreUnreachableError) as caught:
        _titles(space, "soup")
    assert ended, f"no statement of the search holds {marker!r}"
    said = str(caught.value)
    assert "[SQL:" not in said and "psycopg" not in said
    assert said.startswith("cannot connect to the PostgreSQL server")

    assert sorted(_titles(space, "soup")) == ["Recipe 0", "Recipe 1"]


def test_a_server_lost_while_taking_passages_to_embed_is_an_unreachable_store(
    vault: notochord.Notochord, postgres_server_url: str
) -> None:
    """K-CON-20: the embedding queue of a lost server fails as the store being out of reach, and
    its passages are taken once the server answers again."""
    space = vault.personal
    space.user.documents.upsert(collection="keep", key="r", title="Recipe", body="soup with leeks")
    engine = space.core.store.engine
    with engine.begin() as conn:  # nothing embedded: the passage waits in the queue
        conn.execute(sa.text("DELETE FROM chunk_vectors"))
    assert space.core.vectors.pending() == 1

    with (
        _server_drops(engine, postgres_server_url, "chunk_vector_claims") as ended,
        pytest.raises(StoreUnreachableError) as caught,
    ):
        space.core.vectors.process_batch()
    assert ended
    assert "[SQL:" not in str(caught.value)
    assert space.core.vectors.process_batch() == 1
    assert space.core.vectors.pending() == 0


@pytest.mark.parametrize(
    "marker",
    [
        pytest.param("WHERE chunk_id = ANY(", id="the new chunks' postings"),
        pytest.param("SELECT coalesce(sum(tf), 0) FROM", id="the full-text index's size"),
    ],
)
def test_a_server_lost_while_a_held_index_takes_in_new_writes_is_an_unreachable_store(
    vault: notochord.Notochord, postgres_server_url: str, marker: str
) -> None:
    """K-SRCH-01: the search after a write brings the held full-text index forward with reads of
    their own; a server lost during one of them is out of reach, like any other read, and the next
    search finds the new document."""
    space = vault.personal
    for i, body in enumerate(RECIPES):
        space.user.documents.upsert(collection="keep", key=f"r{i}", title=f"Recipe {i}", body=body)
    assert sorted(_titles(space, "soup")) == ["Recipe 0", "Recipe 1"]
    space.user.documents.upsert(collection="keep", key="r3", title="Recipe 3", body="soup with carrots")
    engine = space.core.store.engine

    with _server_drops(engine, postgres_server_url, marker) as ended, pytest.raises(StoreUnreachableError) as caught:
        _titles(space, "soup")
    assert ended, f"no statement of the search holds {marker!r}"
    said = str(caught.value)
    assert "[SQL:" not in said and "psycopg" not in said

    assert sorted(_titles(space, "soup")) == ["Recipe 0", "Recipe 1", "Recipe 3"]
