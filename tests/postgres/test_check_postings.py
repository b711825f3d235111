"""``check`` on PostgreSQL compares the postings table with what the tokenizer gives, and repair rebuilds it.

K-SRCH: on SQLite FTS5 keeps its own postings; on PostgreSQL they are the rows of
``chunks_fts_terms``, which nothing else verifies. A missing, extra or wrong posting changes BM25
silently, so ``notochord check`` names it and ``check --repair`` rebuilds it. Every test runs on a
real PostgreSQL server; the damage is done with plain SQL, as a bad restore or a hand edit would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner, Result

import notochord
from notochord.cli import app
from notochord.clock import FixedClock
from notochord.db.schema import chunks
from notochord.knowledge.check import check, repair
from notochord.settings import Settings

pytestmark = pytest.mark.postgresql

BODY = "# Stew\n\nSimmer the beef two hours with tomato.\n\n## Serving\n\nWith rice and pickles."


@pytest.fixture
def vault(tmp_path: Path, clock: FixedClock, database_url: str) -> Iterator[notochord.Notochord]:
    settings = Settings(data_dir=tmp_path / "d", index_in_background=False, database_url=database_url)
    with notochord.open(tmp_path / "d", settings, clock=clock, embedder=None) as nc:
        nc.personal.user.documents.upsert(collection="keep", key="stew", title="Stew", body=BODY)
        nc.personal.user.documents.upsert(collection="keep", key="rice", title="Rice", body="Rinse the rice twice.")
        yield nc


def _sql(space: notochord.Space, statement: str, **params: object) -> None:
    with space.core.store.engine.begin() as conn:
        conn.execute(sa.text(statement), params)


def _first_chunk(space: notochord.Space) -> int:
    with space.core.store.read() as conn:
        return int(conn.execute(sa.select(sa.func.min(chunks.c.id))).scalar_one())


def _drop_a_posting(space: notochord.Space) -> None:
    _sql(space, "DELETE FROM chunks_fts_terms WHERE chunk_id = :id AND term = 'simmer'", id=_first_chunk(space))


def _add_a_posting(space: notochord.Space) -> None:
    _sql(space, "INSERT INTO chunks_fts_terms (term, chunk_id, tf) VALUES ('zebra', :id, 1)", id=_first_chunk(space))


def _change_a_frequency(space: notochord.Space) -> None:
    _sql(
        space, "UPDATE chunks_fts_terms SET tf = tf + 5 WHERE chunk_id = :id AND term = 'beef'", id=_first_chunk(space)
    )


def _postings_of_no_chunk(space: notochord.Space) -> None:
    _sql(space, "INSERT INTO chunks_fts_terms (term, chunk_id, tf) VALUES ('ghost', 999999, 2)")


def _kinds(space: notochord.Space) -> list[tuple[str, str]]:
    return sorted((p.kind, p.target) for p in check(space.core))


def test_postings_written_through_the_product_check_clean(vault: notochord.Notochord) -> None:
    """The postings of normal writes, edits and deletes are exactly the tokenizer's."""
    space = vault.personal
    space.user.documents.upsert(collection="keep", key="rice", title="Rice", body="Rinse the rice three times.")
    space.user.documents.upsert(collection="keep", key="soup", title="Soup", body="Blend the soup.")
    assert check(space.core) == []


@pytest.mark.parametrize(
    ("damage", "kind", "says"),
    [
        (_drop_a_posting, "postings_differ", "1 missing (simmer)"),
        (_add_a_posting, "postings_differ", "1 extra (zebra)"),
        (_change_a_frequency, "postings_differ", "1 with a wrong frequency (beef)"),
        (_postings_of_no_chunk, "postings_orphan", "a chunk that does not exist"),
    ],
    ids=["missing", "extra", "wrong-frequency", "orphan"],
)
def test_a_damaged_posting_is_found_and_repair_rebuilds_it(
    vault: notochord.Notochord, damage: Callable[[notochord.Space], None], kind: str, says: str
) -> None:
    """Each kind of damage is one problem naming the chunk; after repair the space
    checks clean and search ranks as it did before the damage."""
    space = vault.personal
    before = [(h.title, round(h.score, 6)) for h in space.search("simmer beef rice", limit=5)]
    damage(space)
    problems = check(space.core)
    assert [p.kind for p in problems] == [kind]
    assert says in problems[0].detail
    target = "chunk:999999" if kind == "postings_orphan" else f"chunk:{_first_chunk(space)}"
    assert problems[0].target == target
    assert problems[0].repairable

    assert [p.kind for p in repair(space.core)] == [kind]
    assert check(space.core) == []
    assert [(h.title, round(h.score, 6)) for h in space.search("simmer beef rice", limit=5)] == before


def _run(data_dir: Path, url: str, *args: str, code: int) -> Result:
    env = {"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_DATABASE_URL": url}
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), *args], env=env)
    assert result.exit_code == code, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result


def test_the_check_command_reports_damaged_postings_and_repairs_them(
    vault: notochord.Notochord, database_url: str
) -> None:
    """``notochord check`` on PostgreSQL exits 9 naming the posting problems;
    ``check --repair`` rebuilds them and the next check exits 0."""
    space = vault.personal
    _drop_a_posting(space)
    _postings_of_no_chunk(space)
    report = json.loads(_run(vault.data_dir, database_url, "check", "--json", code=9).stdout)
    personal = next(s for s in report["spaces"] if s["space"] == "personal")
    assert sorted(p["kind"] for p in personal["problems"]) == ["postings_differ", "postings_orphan"]
    assert "personal: repaired 2 problems" in _run(vault.data_dir, database_url, "check", "--repair", code=0).stdout
    assert "personal: consistent" in _run(vault.data_dir, database_url, "check", code=0).stdout
