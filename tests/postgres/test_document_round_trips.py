"""A batch of new documents on PostgreSQL costs a fixed number of round trips, whatever its
documents and chunks.

Counted from libpq's own trace (:class:`round_trips.RoundTrips`): the documents' rows, their change
records and the objects those touched, the chunks, their full-text rows and postings, and the
mentions of a whole batch reach the server in one exchange each (``COPY`` or one statement), after
one statement that draws the ids of the documents and changes from their sequences. So a batch of
long documents takes as many round trips as one of short documents, and one of 40 documents as
many as one of 20. One upsert after another took about ten per document; a batch used to take two
per document (its row and its change record, each with ``RETURNING``).
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


def _recorded(change_id: int | None) -> int:
    """The id of the change a write recorded (every write here records one)."""
    assert change_id is not None
    return change_id


def test_a_batch_of_long_documents_takes_the_round_trips_of_one_of_short_documents(
    vault: notochord.Notochord, trips: RoundTrips
) -> None:
    """20 documents of one chunk and 20 of about 8 chunks, every paragraph naming
    three people, take the same number of round trips (give or take psycopg preparing a statement), a
    constant for the batch; everything they wrote is searchable and their vectors are queued once the
    batch committed."""
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
    assert max(long, short) <= 20, trips.statements
    copied = sorted(s.split()[1] for s in trips.statements if s.startswith("COPY"))
    assert copied == sorted(
        ["documents", "changes", "change_objects", "chunks", "chunks_fts", "chunks_fts_terms", "mentions"]
    ), trips.statements
    assert space.core.vectors.wait() >= 20 * 8, "every new chunk waits for its vector"
    hits = space.user.search("long 19 quarterly", group_by="document")
    assert hits and hits[0].title.startswith("long")


def test_a_batch_of_forty_documents_takes_the_round_trips_of_one_of_twenty(
    vault: notochord.Notochord, trips: RoundTrips
) -> None:
    """K-DOC, K-CHG: the round trips of a batch do not grow with its documents,
    and each document still has its own change record naming it."""
    space = vault.personal
    space.user.entities.resolve(name="Anna Bakker", create=True)
    space.user.documents.upsert_many(_items(20, 1, "warm-up"))
    space.user.documents.upsert_many(_items(20, 1, "warm-up again"))

    twenty = trips.of(lambda: space.user.documents.upsert_many(_items(20, 2, "twenty")))
    outcome = None

    def forty_documents() -> None:
        nonlocal outcome
        outcome = space.user.documents.upsert_many(_items(40, 2, "forty"))

    forty = trips.of(forty_documents)

    assert abs(forty - twenty) <= 2, (forty, twenty)
    assert outcome is not None
    listed = {c.id: c for c in space.changes.list(limit=40)}
    assert sorted(listed) == sorted(_recorded(r.change_id) for r in outcome.results)
    assert all(listed[_recorded(r.change_id)].target_id == r.id for r in outcome.results)
