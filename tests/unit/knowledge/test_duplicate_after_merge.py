"""A value said again about an entity whose merge left it twice is a duplicate of the older fact.

Merging two people who both hold the same ``many`` value leaves both facts current (each keeps its
own history and undo). Saying that value once more writes nothing and names the fact first
written, whether the put is single or in a batch, and whichever of the two people held it.
Found by the undo property test; K-FACT-05, K-ENT-08, OD-K44.
"""

from __future__ import annotations

from notochord import Space


def test_a_put_after_a_merge_names_the_oldest_equal_fact_alone_and_in_a_batch(space: Space) -> None:
    """K-FACT-05, K-ENT-08."""
    ann = space.user.entities.resolve(create=True, name="Ann Lee")
    annie = space.user.entities.resolve(create=True, name="Annie")
    assert ann is not None and annie is not None and ann.id < annie.id
    # the older fact belongs to the entity with the larger id: an index on (subject, …) lists it last
    older = space.user.facts.put(predicate="pref.food.like", subject=annie.id, value="Utrecht")
    newer = space.user.facts.put(predicate="pref.food.like", subject=ann.id, value="Utrecht")
    assert older.status == newer.status == "applied" and older.id < newer.id
    space.user.entities.merge(keep=ann.id, merge=annie.id)

    again = space.user.facts.put(predicate="pref.food.like", subject=ann.id, value="Utrecht")
    item = {"predicate": "pref.food.like", "subject": ann.id, "value": "Utrecht"}
    [batched] = space.user.facts.put_many([item]).results

    assert (again.status, again.id) == ("duplicate", older.id)
    assert (batched.status, batched.id) == ("duplicate", older.id)
