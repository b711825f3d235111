"""A change's summary is one line, whatever the names and values it quotes hold (K-CHG-01, OD-K43).

A title, a name or a text value may hold line breaks of any kind (``\\n``, ``\\r``, a vertical tab,
U+2028); quoted raw into a summary they would break a change list into pieces a reader takes for
other changes. Each break is written as a space; the rest of the summary is as before.
"""

from __future__ import annotations

from notochord import Space

BREAKS = "one\ntwo\r\nthree\x0bfour\u2028five\x85six"


def _one_line(text: str) -> bool:
    return len(text.splitlines()) == 1


def test_every_change_summary_is_one_line_whatever_it_quotes(space: Space) -> None:
    """K-CHG-01, OD-K43: documents, collections, entities and facts whose names or values hold line
    breaks each record a one-line summary that still shows every word."""
    space.user.documents.upsert(collection="keep", title=BREAKS, body="soup")
    space.user.collections.create(BREAKS.replace("\x85", " "))
    space.user.entities.resolve(name=BREAKS, create=True)
    space.user.facts.put(predicate="pref.food.like", value=BREAKS)
    space.user.facts.put_many([{"predicate": "pref.food.dislike", "value": BREAKS}])

    summaries = [c.summary for c in space.changes.list()]

    assert len(summaries) >= 5
    for summary in summaries:
        assert _one_line(summary), repr(summary)
    titled = next(s for s in summaries if "documents" in s or "one two" in s)
    for word in ("one", "two", "three", "four", "five"):
        assert word in titled
