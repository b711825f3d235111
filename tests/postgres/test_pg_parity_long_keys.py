"""Names, identifiers and document keys as long as the store accepts, in any script, on both backends.

A name or key may be up to 1000 characters, and 1000 characters of Chinese or emoji are 3000 to
4000 bytes of UTF-8. SQLite indexes values of any length; a PostgreSQL B-tree refuses an entry of
more than about 2700 bytes, so the same write that SQLite stores used to fail on the server as a
storage error. Both backends store such values, find them again, and keep a key unique.
"""

from __future__ import annotations

import random

import pytest

import notochord
from postgres_server import BACKENDS


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _incompressible(alphabet_start: int, alphabet_size: int, length: int, seed: int) -> str:
    """Random characters of one script: text no index could shrink below its UTF-8 length."""
    rng = random.Random(seed)
    return "".join(chr(alphabet_start + rng.randrange(alphabet_size)) for _ in range(length))


CHINESE = _incompressible(0x4E00, 20_000, 1000, 1)
EMOJI = _incompressible(0x1F300, 700, 1000, 2)


@pytest.mark.parametrize("name", [CHINESE, EMOJI], ids=["chinese", "emoji"])
def test_an_entity_named_with_a_thousand_characters_of_any_script_is_stored_and_found(
    space: notochord.Space, name: str
) -> None:
    """K-QUOTA-11, K-ENT-01: the longest name the store accepts resolves to one entity, found again
    by the same name and by its email identifier."""
    email = f"{name[:40]}@example.org"
    created = space.user.entities.resolve(name=name, email=email, create=True)
    assert created is not None

    found = space.user.entities.resolve(name=name)
    again = space.user.entities.resolve(email=email)

    assert found is not None and again is not None
    assert found.id == again.id == created.id


@pytest.mark.parametrize("key", [CHINESE, EMOJI], ids=["chinese", "emoji"])
def test_a_document_keyed_with_a_thousand_characters_of_any_script_stays_one_document(
    space: notochord.Space, key: str
) -> None:
    """K-QUOTA-12, K-DOC-03: the longest key the store accepts is stored; upserting it again updates
    the same document rather than adding a second, and a deleted one frees the key."""
    first = space.user.documents.upsert(collection="keep", key=key, title="Menu", body="soup")
    second = space.user.documents.upsert(collection="keep", key=key, title="Menu", body="stew")

    assert second.id == first.id
    assert [(d.title, d.key) for d in space.user.documents.list("keep")] == [("Menu", key)]

    space.user.documents.delete(first.id)
    third = space.user.documents.upsert(collection="keep", key=key, title="Menu", body="bread")
    assert third.id != first.id
    assert [d.id for d in space.user.documents.list("keep")] == [third.id]
