"""The passages a search shows are read once per data version, and never once a write changed them.

A search keeps the rows of the passages it returned with the candidates of the data version it read
them at (:mod:`notochord.knowledge.hybrid_search`), so the next search showing the same passages
reads no passage rows; any write moves the data version, so the next search shows what the store
holds now: an edited text and title, a deleted document gone, a new one found. Over real HTTP on
both backends for the service, and on the host API for an edit in place (statements are counted,
never timed). K-SRCH-01, K-SRCH-03, KB-GEN-02.
"""

from __future__ import annotations

import contextlib
from typing import Any

import sqlalchemy as sa
from kb_harness import World

from notochord import Space
from sent_sql import statements_sent

_PASSAGE_ROWS = "FROM chunks AS c JOIN documents AS d"


def passage_reads(engine: sa.Engine) -> contextlib.AbstractContextManager[list[str]]:
    """The statements reading passage rows sent on ``engine`` inside the ``with`` block."""
    return statements_sent(engine, containing=_PASSAGE_ROWS)


def _search(world: World, kb_id: str, query: str) -> list[dict[str, Any]]:
    found = world.request("POST", f"/kb/{kb_id}/search", world["viewer"], json={"query": query})
    assert found.status_code == 200, found.text
    results: list[dict[str, Any]] = found.json()["results"]
    return results


def _add(world: World, kb_id: str, title: str, content: str) -> str:
    added = world.request("POST", f"/kb/{kb_id}/documents", world["owner"], json={"title": title, "content": content})
    assert added.status_code == 201, added.text
    document_id: str = added.json()["document"]["id"]
    return document_id


def test_a_repeated_search_reads_no_passage_rows_and_a_write_is_shown_at_once(world: World) -> None:
    """K-SRCH-01, KB-GEN-02: the second search showing the same passages reads none of their rows;
    after a document is deleted and another added, the very next search shows the store as it is."""
    kb = world.create_kb()
    first = _add(world, kb["id"], "Depot", "Parcels leave the depot on Mondays.")
    engine = world.live.nc.org(world.a).core.store.engine
    assert [r["text"] for r in _search(world, kb["id"], "parcels")] == ["Parcels leave the depot on Mondays."]
    with passage_reads(engine) as sent:
        again = _search(world, kb["id"], "depot parcels")
    assert [r["document_id"] for r in again] == [first]
    assert sent == []

    deleted = world.request("DELETE", f"/kb/{kb['id']}/documents/{first}", world["owner"])
    assert deleted.status_code == 204, deleted.text
    assert _search(world, kb["id"], "parcels") == []
    second = _add(world, kb["id"], "Depot, new hours", "Parcels leave the depot on Fridays.")
    with passage_reads(engine) as sent:
        shown = _search(world, kb["id"], "parcels")
    assert [(r["document_id"], r["title"], r["text"]) for r in shown] == [
        (second, "Depot, new hours", "Parcels leave the depot on Fridays.")
    ]
    assert len(sent) == 1


def test_an_edit_in_place_is_shown_by_the_next_search(space: Space) -> None:
    """K-SRCH-01: a document edited under the same key (its chunk rows rewritten) shows its new text
    and title in the next search, though the search before it kept the old passage."""
    space.user.documents.upsert(collection="keep", key="k", title="Granite", body="granite river stone")
    space.index.wait()
    assert [(h.title, h.text) for h in space.user.search("granite")] == [("Granite", "granite river stone")]
    assert [(h.title, h.text) for h in space.user.search("river granite")] == [("Granite", "granite river stone")]

    space.user.documents.upsert(collection="keep", key="k", title="Basalt", body="granite basalt pebble")
    space.index.wait()
    assert [(h.title, h.text) for h in space.user.search("granite")] == [("Basalt", "granite basalt pebble")]


def test_each_hit_gets_metadata_of_its_own(space: Space) -> None:
    """K-SRCH-01: a caller changing a hit's ``meta`` changes nothing another search returns."""
    space.user.documents.upsert(
        collection="keep", key="m", title="Marble", body="marble quarry", meta={"source": "field notes"}
    )
    space.index.wait()
    (hit,) = space.user.search("marble")
    hit.meta["source"] = "changed by a caller"
    (again,) = space.user.search("marble quarry")
    assert again.meta == {"source": "field notes"}
