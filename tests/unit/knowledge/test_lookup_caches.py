"""Caches keyed by the data versions see what another process wrote.

Entity look-ups (canonical id after merges, kind, merge closure) and the vocabulary are shared
across transactions under the entity-data and vocabulary versions; a gem's derived read ranges
under the switches read on every call. Each case changes the data in a separate Python process,
through its own store and caches, and the very next call here must act on the change.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import notochord
from knowledge_gem import knowledge_gem
from notochord.errors import KnowledgeNotFoundError
from notochord.knowledge.batches import BatchItemError

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _elsewhere(nc: notochord.Notochord, body: str) -> None:
    """Run ``body`` with ``space`` open on the same data, in another process."""
    script = textwrap.dedent(
        f"""
        import notochord
        from notochord.settings import Settings
        settings = Settings(data_dir={str(nc.data_dir)!r}, index_in_background=False,
                            database_url={nc.settings.database_url!r})
        with notochord.open({str(nc.data_dir)!r}, settings, embedder=None) as other:
            space = other.personal
        """
    ) + textwrap.indent(textwrap.dedent(body), "    ")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def test_a_merge_in_another_process_is_followed_by_the_next_write(nc: notochord.Notochord) -> None:
    """K-ENT-12: the entity cache is keyed by the entity-data version."""
    space = nc.personal
    bob = space.user.entities.resolve(name="Bob", create=True)
    robert = space.user.entities.resolve(name="Robert", create=True)
    assert bob is not None and robert is not None
    space.user.facts.put(predicate="pref.food.like", value="tea", subject=robert.id)  # caches Robert
    _elsewhere(nc, f"space.user.entities.merge(keep={bob.id}, merge={robert.id})\n")
    put = space.user.facts.put(predicate="pref.food.like", value="tea", subject=robert.id)
    assert put.status == "duplicate", "the merged entity's facts are Bob's now"
    assert [f.value for f in space.user.facts.lookup(bob.id)] == ["tea"]


def test_a_deletion_in_another_process_refuses_the_next_write(nc: notochord.Notochord) -> None:
    """K-ENT-13: a deleted entity is "no entity" at once, single put or batch."""
    space = nc.personal
    anna = space.user.entities.resolve(name="Anna", create=True)
    assert anna is not None
    space.user.facts.put(predicate="pref.food.like", value="tea", subject=anna.id)
    _elsewhere(nc, f"space.user.entities.delete({anna.id})\n")
    with pytest.raises(KnowledgeNotFoundError):
        space.user.facts.put(predicate="pref.food.like", value="coffee", subject=anna.id)
    with pytest.raises(BatchItemError, match="no entity"):
        space.user.facts.put_many([{"predicate": "pref.food.like", "value": "coffee", "subject": anna.id}])


def test_a_predicate_declared_in_another_process_is_known_to_the_next_write(nc: notochord.Notochord) -> None:
    """The vocabulary cache is keyed by the vocabulary version."""
    space = nc.personal
    space.user.facts.put(predicate="pref.food.like", value="tea")  # caches the vocabulary
    _elsewhere(
        nc,
        """
        from notochord.knowledge.writes import USER
        with space.core.store.write(actor=USER, run_id=None) as tx:
            space.core.vocabulary.add(
                tx.conn, name="x.shoe.size", cardinality="one", description=None, declared_by="user", now=tx.now
            )
        """,
    )
    space.user.facts.put(predicate="x.shoe.size", value=42)
    space.user.facts.put(predicate="x.shoe.size", value=43)
    assert [f.value for f in space.user.facts.lookup("self", "x.shoe")] == [43], "a `one` predicate replaces"


async def test_a_switch_turned_off_elsewhere_holds_from_the_next_gem_call(
    nc: notochord.Notochord, tmp_path: Path
) -> None:
    """K-PERM-04: switches are read on every call; only their parse is reused."""
    space = nc.personal
    food = ["facts.read:self:pref.food.*"]
    knowledge = knowledge_gem(space, tmp_path, food)
    space.user.facts.put(predicate="pref.food.like", value="stew")
    assert [f.value for f in await knowledge.facts.lookup("self", "pref.food")] == ["stew"]
    _elsewhere(nc, f"space.gems.set_permissions('recipes', {food!r}, False)\n")
    assert await knowledge.facts.lookup("self", "pref.food") == []
    space.gems.set_permissions("recipes", food, True)
    assert [f.value for f in await knowledge.facts.lookup("self", "pref.food")] == ["stew"]
