"""Collection names are stored in one Unicode form, NFC (K-COL-01, K-COL-06, K-COL-11, OD-K32).

"Café" can be written with a precomposed "é" (U+00E9) or with "e" and a combining acute accent
(U+0065 U+0301). Both look the same and mean the same, so a name is stored composed (NFC), as it
is trimmed: renaming a collection to the other spelling of its own name changes nothing and
records nothing, two collections given either spelling carry equal names, and a name is found by
either spelling. The 1000-character limit counts the name as stored.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from knowledge_gem import knowledge_gem
from notochord.db.schema import collections
from notochord.errors import KnowledgeValidationError

pytestmark = pytest.mark.anyio

COMPOSED = "Caf\u00e9"
DECOMPOSED = "Cafe\u0301"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_two_spellings_differ_only_in_form() -> None:
    """The premise: different code points, one NFC form."""
    assert COMPOSED != DECOMPOSED
    assert unicodedata.normalize("NFC", DECOMPOSED) == COMPOSED


def test_a_name_is_stored_composed(space: notochord.Space) -> None:
    """K-COL-06, OD-K32: a decomposed name is trimmed and composed before it is stored and recorded."""
    made = space.user.collections.create(f"  {DECOMPOSED}  ")
    assert made.name == COMPOSED
    assert space.user.collections.get(made.id).name == COMPOSED
    [change] = space.changes.list()
    assert change.after == {"name": COMPOSED}
    assert change.summary == f"created collection {COMPOSED}"


def test_renaming_to_the_other_spelling_of_the_same_name_changes_nothing(space: notochord.Space) -> None:
    """K-COL-13, K-CHG-06: a rename that a reader cannot see is no rename: nothing is written."""
    made = space.user.collections.create(COMPOSED)
    before = space.changes.list()
    assert space.user.collections.rename(made.id, DECOMPOSED) is None
    assert space.changes.list() == before
    assert space.user.collections.get(made.id).name == COMPOSED


def test_a_real_rename_stores_the_composed_name(space: notochord.Space) -> None:
    """K-COL-13: the new name of a rename is composed too, in the row and in the change."""
    made = space.user.collections.create("Bakery")
    change_id = space.user.collections.rename(made.id, DECOMPOSED)
    assert change_id is not None
    assert space.user.collections.get(made.id).name == COMPOSED
    assert space.changes.get(change_id).after == {"name": COMPOSED}


def test_two_collections_given_either_spelling_carry_equal_names(space: notochord.Space) -> None:
    """OD-K32: names need not be unique, but names that look the same are the same name, so a
    lookup by name finds both (and a caller can tell the user that it is ambiguous)."""
    first = space.user.collections.create(COMPOSED)
    second = space.user.collections.create(DECOMPOSED)
    assert first.name == second.name == COMPOSED
    tree = space.core.collections.read_tree()
    assert {r.id for r in tree.named(DECOMPOSED)} == {first.id, second.id}
    assert {r.id for r in tree.named(f" {COMPOSED} ")} == {first.id, second.id}
    assert tree.named("Cafe") == []


def test_a_name_stored_decomposed_before_is_found_and_not_renamed_to_itself(space: notochord.Space) -> None:
    """A store written before names were composed may hold a decomposed name: it is found by
    either spelling, and renaming it to its composed spelling records nothing."""
    made = space.user.collections.create("placeholder")
    with space.core.store.engine.begin() as conn:
        conn.execute(sa.update(collections).where(collections.c.id == made.id).values(name=DECOMPOSED))
    tree = space.core.collections.read_tree()
    assert [r.id for r in tree.named(COMPOSED)] == [made.id]
    before = space.changes.list()
    assert space.user.collections.rename(made.id, COMPOSED) is None
    assert space.changes.list() == before


def test_the_length_limit_counts_the_name_as_stored(space: notochord.Space) -> None:
    """K-COL-11, OD-K23: 1000 composed characters pass however they were written; 1001 do not."""
    fits = space.user.collections.create("e\u0301" * 1000)
    assert fits.name == "\u00e9" * 1000
    with pytest.raises(KnowledgeValidationError, match="exceeds limit of 1000"):
        space.user.collections.create("e\u0301" * 1001)


async def test_a_gem_creating_a_collection_gets_the_composed_name(space: notochord.Space, tmp_path: Path) -> None:
    """K-COL-06, EX-12: ``collections.create`` answers with the name as stored, and ``list`` shows it."""
    knowledge = knowledge_gem(space, tmp_path / "gems", ["collections.create"])
    made = await knowledge.collections.create(DECOMPOSED)
    assert made.name == COMPOSED
    assert [c.name for c in await knowledge.collections.list() if c.ref == made.ref] == [COMPOSED]
