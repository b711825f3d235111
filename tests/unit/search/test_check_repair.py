"""The checker finds every kind of derived data that lies, and repair rebuilds it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.db.schema import changes, chunk_vectors, chunks, quota_usage
from notochord.knowledge.check import check, repair
from notochord.settings import Settings

from .fakes import HashedNgramEmbedder

BODY = "# Stew\n\nSimmer the beef two hours.\n\n## Serving\n\nWith rice and pickles."


@pytest.fixture
def space(tmp_path: Path, clock: FixedClock, new_database_url: Callable[[], str | None]) -> Iterator[notochord.Space]:
    settings = Settings(data_dir=tmp_path / "d", index_in_background=False, database_url=new_database_url())
    with notochord.open(tmp_path / "d", settings, clock=clock, embedder=HashedNgramEmbedder()) as nc:
        space = nc.personal
        space.user.documents.upsert(collection="keep", key="stew", title="Stew", body=BODY)
        space.as_assistant.documents.upsert(collection="keep", key="rice", title="Rice", body="Rinse the rice.")
        space.as_assistant.facts.put(predicate="location.home.city", value="Delft")
        space.index.wait()
        yield space


def _kinds(space: notochord.Space) -> list[str]:
    return sorted(p.kind for p in check(space.core))


def _first_chunk(space: notochord.Space) -> int:
    with space.core.store.read() as conn:
        return int(conn.execute(sa.select(sa.func.min(chunks.c.id))).scalar_one())


def test_a_space_written_through_the_product_is_clean(space: notochord.Space) -> None:
    """Documents, vectors, facts and quota counters of normal writes all agree."""
    assert check(space.core) == []


def _stale_vector(space: notochord.Space) -> None:
    with space.core.store.engine.begin() as conn:
        conn.execute(
            sa.update(chunk_vectors).where(chunk_vectors.c.chunk_id == _first_chunk(space)).values(text_hash="0" * 64)
        )


def _fulltext_stale(space: notochord.Space) -> None:
    with space.core.store.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE chunks_fts SET body = 'nothing like it' WHERE rowid = :id"), {"id": _first_chunk(space)}
        )


def _fulltext_missing(space: notochord.Space) -> None:
    with space.core.store.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM chunks_fts WHERE rowid = :id"), {"id": _first_chunk(space)})


def _fulltext_orphan(space: notochord.Space) -> None:
    with space.core.store.engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO chunks_fts (rowid, body) VALUES (99999, 'ghost')"))


def _chunk_edited(space: notochord.Space) -> None:
    with space.core.store.engine.begin() as conn:
        conn.execute(sa.update(chunks).where(chunks.c.id == _first_chunk(space)).values(text="tampered"))


def _quota_lost(space: notochord.Space) -> None:
    with space.core.store.engine.begin() as conn:
        conn.execute(sa.update(quota_usage).values(writes=0))


@pytest.mark.parametrize(
    ("damage", "kinds"),
    [
        (_stale_vector, ["vector_stale"]),
        (_fulltext_stale, ["fulltext_stale"]),
        (_fulltext_missing, ["fulltext_missing"]),
        (_fulltext_orphan, ["fulltext_orphan"]),
        (_chunk_edited, ["chunk_hash_wrong", "chunks_differ_from_body", "fulltext_stale"]),
        (_quota_lost, ["quota_undercount"]),
    ],
    ids=lambda v: v.__name__.strip("_") if callable(v) else "",
)
def test_damage_to_derived_data_is_found_and_repaired(space: notochord.Space, damage: object, kinds: list[str]) -> None:
    """Check names the problem; repair rebuilds it; vectors dropped are re-embedded."""
    damage(space)  # type: ignore[operator]
    assert _kinds(space) == kinds
    repaired = repair(space.core)
    assert sorted(p.kind for p in repaired) == kinds
    space.index.wait()
    assert check(space.core) == []
    hits = space.search("simmer beef", limit=1)
    assert hits and hits[0].title == "Stew"


def test_a_broken_change_log_is_reported_and_never_rewritten(space: notochord.Space) -> None:
    """The change log is the record itself, so repair leaves it as it is."""
    with space.core.store.engine.begin() as conn:
        conn.execute(sa.update(changes).where(changes.c.id == 1).values(status="reverted", reverted_by=424242))
    problems = check(space.core)
    assert [(p.kind, p.target, p.repairable) for p in problems] == [("change_revert_link", "change:1", False)]
    assert repair(space.core) == []
    assert check(space.core) == problems
