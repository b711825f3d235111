"""A batch of documents on PostgreSQL costs round trips per document, never per chunk (Issue 17, item 3;
Issue 16, item 3).

Counted from libpq's own trace (:class:`round_trips.RoundTrips`): the chunks, their full-text
rows and postings, and the mentions of a whole batch reach the server in one exchange each
(``COPY`` or one statement), so a batch of long documents takes as many round trips as one of
short documents: two per document (its row and its change record) and a constant for the batch.
One upsert after another took about ten per document.
"""

from __future__ import annotations

from typing import Any

import pytest
from round_trips import RoundTrips

import notochord

pytestmark = pytest.mark.postgresql

PARAGRAPH = "Anna Bakker and Bram de Vries met Chen Wei about the quarterly report; Anna Bakker paid. " * 4


def _items(count: int, paragraphs: int, tag: str) -> list[dict[str, Any]]:
    body = "\n\n".join(f"{tag} {n}: {PARAGRAPH}" for n in range(paragraphs))
    return [{"collection": "keep", "title": f"{tag} {n}", "body": body} for n in range(count)]


def test_a_batch_of_long_documents_takes_the_round_trips_of_one_of_short_documents(
    vault: notochord.Notochord, trips: RoundTrips
) -> None:
    """Issue 17, item 3: 20 documents of one chunk and 20 of about 8 chunks, every paragraph naming
    three people, take the same number of round trips (give or take psycopg preparing a statement), at most two
    per document plus a constant;
    everything they wrote is searchable and their vectors are queued once the batch committed."""
    space = vault.personal
    for name in ("Anna Bakker", "Bram de Vries", "Chen Wei"):
        space.user.entities.resolve(name=name, create=True)
    # warms the caches of the space, and has psycopg prepare the statements a batch repeats
    space.user.documents.upsert_many(_items(20, 1, "warm-up"))
    space.user.documents.upsert_many(_items(20, 1, "warm-up again"))
    space.core.vectors.wait()

    short = trips.of(lambda: space.user.documents.upsert_many(_items(20, 1, "short")))
    long = trips.of(lambda: space.user.documents.upsert_many(_items(20, 24, "long")))

    # psycopg prepares a statement on its fifth use, which moves a round trip or two either way
    assert abs(long - short) <= 2, (long, short)
    assert max(long, short) <= 2 * 20 + 16, trips.statements
    assert sum(s.startswith("COPY") for s in trips.statements) == 4, "chunks, full-text rows, postings, mentions"
    assert space.core.vectors.wait() >= 20 * 8, "every new chunk waits for its vector"
    hits = space.user.search("long 19 quarterly", group_by="document")
    assert hits and hits[0].title.startswith("long")
