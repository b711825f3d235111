"""A SQLite write's transaction costs only what SQLite needs, and stays exact (and
the write targets; K-FACT, K-CHG).

The writer connection begins and commits on the driver's connection (no SQLAlchemy transaction
per write), and knows the data versions from its previous write until a connection changes them:
another process, another connection of this one, or a write of its own (rolled back or not).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.db.engine import write_tx
from notochord.db.schema import predicates, space_meta
from notochord.knowledge.writes import VOCABULARY_VERSION_KEY, data_versions
from notochord.settings import Settings
from sent_sql import statements_sent


@pytest.fixture
def space(tmp_path: Path, clock: FixedClock) -> Iterator[notochord.Space]:
    """A SQLite space: the writer connection is SQLite's."""
    settings = Settings(data_dir=tmp_path, index_in_background=False)
    with notochord.open(tmp_path, settings, clock=clock, embedder=None) as opened:
        yield opened.personal


def _versions(space: notochord.Space) -> str:
    with space.core.store.batch() as conn:
        return data_versions(conn).vocabulary


def _likes(space: notochord.Space) -> list[Any]:
    return [f.value for f in space.user.facts.lookup("self", "pref.food")]


def test_a_put_begins_on_the_driver_without_a_sqlalchemy_transaction(space: notochord.Space) -> None:
    """No SQLAlchemy ``begin`` per write; one ``BEGIN IMMEDIATE``, still announced."""
    space.user.facts.put(predicate="pref.food.like", value="tea")
    engine = space.core.store.engine
    begun: list[int] = []

    def on_begin(_conn: Any) -> None:
        begun.append(1)

    sa.event.listen(engine, "begin", on_begin)
    try:
        with statements_sent(engine) as seen:
            assert space.user.facts.put(predicate="pref.food.like", value="coffee").status == "applied"
    finally:
        sa.event.remove(engine, "begin", on_begin)
    assert begun == []
    assert [s for s in seen if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE"]
    assert _likes(space) == ["tea", "coffee"]


def test_a_failed_write_on_the_driver_transaction_leaves_nothing(space: notochord.Space) -> None:
    """All or nothing on the driver's transaction: an error rolls the write back."""
    space.user.facts.put(predicate="pref.food.like", value="tea")
    with pytest.raises(RuntimeError), space.core.store.batch():
        space.user.facts.put(predicate="pref.food.like", value="coffee")
        raise RuntimeError("stop")
    assert _likes(space) == ["tea"]
    assert space.user.facts.put(predicate="pref.food.like", value="coffee").status == "applied"


def test_a_second_put_knows_the_data_versions_without_reading_them(space: notochord.Space) -> None:
    """The versions come from the previous write, checked with ``PRAGMA data_version``."""
    space.user.facts.put(predicate="pref.food.like", value="tea")
    with statements_sent(space.core.store.engine) as seen:
        space.user.facts.put(predicate="pref.food.like", value="coffee")
    assert not [s for s in seen if "space_meta" in s], seen
    assert seen.count("PRAGMA data_version") == 1


def _make_likes_one_elsewhere(database: str) -> None:
    """In another process: ``pref.food.like`` becomes a ``one`` predicate, with a new vocabulary version."""
    script = (
        "import sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('BEGIN IMMEDIATE')\n"
        "db.execute(\"UPDATE predicates SET cardinality = 'one' WHERE name = 'pref.food.like'\")\n"
        f"db.execute(\"UPDATE space_meta SET value = 'elsewhere' WHERE key = '{VOCABULARY_VERSION_KEY}'\")\n"
        "db.execute('COMMIT')\n"
        "db.close()\n"
    )
    subprocess.run([sys.executable, "-c", script, database], check=True, timeout=60)


def test_a_version_changed_by_another_process_is_seen_by_the_next_write(space: notochord.Space) -> None:
    """A commit of another process ends what the writer knew of the versions."""
    space.user.facts.put(predicate="pref.food.like", value="tea")
    before = _versions(space)
    database = space.core.store.engine.url.database
    assert database is not None
    _make_likes_one_elsewhere(database)
    assert _versions(space) == "elsewhere" != before
    assert space.user.facts.put(predicate="pref.food.like", value="coffee").status == "applied"
    assert _likes(space) == ["coffee"], "the other process made the predicate `one`: coffee replaced tea"


def test_a_version_changed_on_another_connection_of_this_process_is_seen(space: notochord.Space) -> None:
    """A pool connection's commit shows in the writer's ``PRAGMA data_version`` too."""
    space.user.facts.put(predicate="pref.food.like", value="tea")
    with write_tx(space.core.store.engine) as conn:
        conn.execute(sa.update(predicates).where(predicates.c.name == "pref.food.like").values(cardinality="one"))
        conn.execute(
            sa.update(space_meta).where(space_meta.c.key == VOCABULARY_VERSION_KEY).values(value="pool connection")
        )
    assert _versions(space) == "pool connection"
    space.user.facts.put(predicate="pref.food.like", value="coffee")
    assert _likes(space) == ["coffee"]


def test_a_version_written_by_the_writer_itself_is_seen_and_a_rolled_back_one_forgotten(
    space: notochord.Space,
) -> None:
    """The writer's own write of a version ends what it knew; a rollback too."""
    space.user.facts.put(predicate="pref.food.like", value="tea")
    before = _versions(space)
    bump = sa.update(space_meta).where(space_meta.c.key == VOCABULARY_VERSION_KEY)
    with pytest.raises(RuntimeError), space.core.store.batch() as conn:
        conn.execute(bump.values(value="rolled back"))
        assert data_versions(conn).vocabulary == "rolled back"
        raise RuntimeError("stop")
    assert _versions(space) == before
    with space.core.store.batch() as conn:
        conn.execute(sa.update(predicates).where(predicates.c.name == "pref.food.like").values(cardinality="one"))
        conn.execute(bump.values(value="own write"))
    assert _versions(space) == "own write"
    space.user.facts.put(predicate="pref.food.like", value="coffee")
    assert _likes(space) == ["coffee"]
