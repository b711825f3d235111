"""A text holding U+0000 is the caller's error on PostgreSQL, never a storage failure.

PostgreSQL's ``text`` cannot hold the NUL character, and psycopg refuses such a value before sending
it. The host API answers with a validation error that names the character and says what to do, and
nothing is written (K-API errors: bad input changes nothing; the same behaviour on
both backends wherever the store can tell).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.db.schema import collections, entities
from notochord.errors import KnowledgeValidationError, StorageError
from notochord.settings import Settings

pytestmark = pytest.mark.postgresql


@pytest.fixture
def space(tmp_path: Path, clock: FixedClock, database_url: str) -> Iterator[notochord.Space]:
    settings = Settings(data_dir=tmp_path, index_in_background=False, database_url=database_url)
    with notochord.open(tmp_path, settings, clock=clock, embedder=None) as nc:
        yield nc.personal


def _count(space: notochord.Space, table: sa.Table) -> int:
    with space.core.store.read() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


WRITES: dict[str, tuple[Callable[[notochord.Space], object], sa.Table]] = {
    "a collection name": (lambda s: s.user.collections.create(name="Recipes\x00"), collections),
    "an entity name": (lambda s: s.user.entities.resolve(kind="person", name="Ada\x00", create=True), entities),
}


@pytest.mark.parametrize("what", sorted(WRITES))
def test_a_nul_character_in_text_is_refused_as_bad_input_and_nothing_is_written(
    space: notochord.Space, what: str
) -> None:
    write, table = WRITES[what]
    before = _count(space, table)
    with pytest.raises(KnowledgeValidationError, match=r"NUL character \(U\+0000\).*remove it") as caught:
        write(space)
    assert not isinstance(caught.value, StorageError)
    assert _count(space, table) == before
