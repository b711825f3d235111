"""A NUL character in a batch of documents is the caller's error on PostgreSQL, and nothing is written
.

The chunks, postings and mentions of a batch reach PostgreSQL through ``COPY``; the driver's refusal
of U+0000 there is answered like everywhere else: a validation error that names the character and
says what to do, and none of the batch's documents, chunks or changes are stored (K-API errors).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.errors import KnowledgeValidationError, StorageError
from notochord.settings import Settings

pytestmark = pytest.mark.postgresql


@pytest.fixture
def space(tmp_path: Path, clock: FixedClock, database_url: str) -> Iterator[notochord.Space]:
    settings = Settings(data_dir=tmp_path, index_in_background=False, database_url=database_url)
    with notochord.open(tmp_path, settings, clock=clock, embedder=None) as nc:
        yield nc.personal


def _counts(space: notochord.Space) -> tuple[int, ...]:
    with space.core.store.read() as conn:
        return tuple(
            int(conn.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one())
            for t in ("documents", "chunks", "chunks_fts", "chunks_fts_terms", "changes")
        )


def test_an_imported_text_with_a_nul_character_refuses_the_whole_batch(space: notochord.Space) -> None:
    space.user.documents.upsert(collection="keep", title="before", body="already here")
    before = _counts(space)
    with pytest.raises(KnowledgeValidationError, match=r"NUL character \(U\+0000\).*remove it") as caught:
        space.user.documents.upsert_many(
            [
                {"collection": "keep", "title": "fine", "body": "a fine note"},
                {"collection": "keep", "title": "bad", "text": "imported\x00text", "source_uri": "https://x.example"},
            ]
        )
    assert not isinstance(caught.value, StorageError)
    assert _counts(space) == before
    assert [d.title for d in space.user.documents.list("keep")] == ["before"]
