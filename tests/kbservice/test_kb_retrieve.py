"""Search within a knowledge base, retrieval for an agent, and the knowledge graph, over real HTTP
(OD-B07 as overridden by DESIGN §9, KB-GEN-01/02, KB-LNK-02 priority, KB-DEL-05/06)."""

from __future__ import annotations

from typing import Any

import pytest
from kb_harness import LiveServer, World


def add(world: World, kb_id: str, content: str, title: str | None = None) -> dict[str, Any]:
    body = {"content": content, **({"title": title} if title else {})}
    response = world.request("POST", f"/kb/{kb_id}/documents", world["owner"], json=body)
    assert response.status_code == 201, response.text
    document: dict[str, Any] = response.json()["document"]
    return document


def search(world: World, kb_id: str, who: str = "viewer", **body: Any) -> Any:
    return world.request("POST", f"/kb/{kb_id}/search", world[who], json=body)


def retrieve(world: World, agent_id: str, who: str = "viewer", **body: Any) -> Any:
    return world.request("POST", f"/agents/{agent_id}/retrieve", world[who], json=body)


def link(world: World, kb_id: str, agent_id: str, priority: int) -> None:
    response = world.request("POST", f"/kb/{kb_id}/agents/{agent_id}", world["owner"], json={"priority": priority})
    assert response.status_code == 200, response.text


# ---------------------------------------------------------------------- search


def test_search_returns_scored_hits_whose_locator_slices_the_document_KB_GEN_02(world: World) -> None:
    kb = world.create_kb()
    content = "# Returns\n\nUnused items may be returned within 30 days.\n\n# Shipping\n\nParcels leave on Mondays."
    document = add(world, kb["id"], content)
    add(world, kb["id"], "Gift cards never expire.")
    response = search(world, kb["id"], query="when do parcels leave")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["count"] == len(body["results"]) >= 1
    hit = body["results"][0]
    assert set(hit) == {"kb_id", "document_id", "title", "text", "score", "locator", "source_type", "source_url"}
    assert hit["document_id"] == document["id"] and hit["kb_id"] == kb["id"]
    assert hit["score"] > 0
    locator = hit["locator"]
    assert set(locator) == {"document_id", "chunk", "from", "to"}
    assert content[locator["from"] : locator["to"]] == hit["text"]
    assert "Mondays" in hit["text"]
    scores = [h["score"] for h in body["results"]]
    assert scores == sorted(scores, reverse=True)


def test_search_sees_only_its_own_knowledge_base(world: World) -> None:
    mine, other = world.create_kb(), world.create_kb()
    add(world, other["id"], "Quokka policy: quokkas ride free.")
    assert search(world, mine["id"], query="quokka").json() == {"results": [], "count": 0}


def test_the_search_limit_is_capped_and_an_empty_query_lists_the_newest(world: World, live: LiveServer) -> None:
    kb = world.create_kb()
    for n in range(3):
        live.tick()
        add(world, kb["id"], f"Note {n} about lamps.")
    assert search(world, kb["id"], query="lamps", limit=1).json()["count"] == 1
    assert search(world, kb["id"], query="lamps", limit=1000).json()["count"] == 3
    newest = search(world, kb["id"], query="", limit=2).json()["results"]
    assert [hit["text"] for hit in newest] == ["Note 2 about lamps.", "Note 1 about lamps."]


def test_the_time_range_filter_runs_inside_the_query(world: World, live: LiveServer) -> None:
    kb = world.create_kb()
    add(world, kb["id"], "Old lamp manual.")
    live.tick()
    later = add(world, kb["id"], "New lamp manual.")
    response = search(world, kb["id"], query="lamp manual", filters={"timeRange": {"from": later["created_at"]}})
    assert [hit["document_id"] for hit in response.json()["results"]] == [later["id"]]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": 5},
        {"query": "x", "limit": "10"},
        {"query": "x", "limit": True},
        {"query": "x", "filters": []},
        {"query": "x", "filters": {"collection": "all"}},
        {"query": "x", "filters": {"timeRange": {"from": "yesterday"}}},
        # epoch milliseconds of no year from 1 to 9999
        {"query": "x", "filters": {"timeRange": {"from": 1_000_000_000_000_000}}},
        {"query": "x", "filters": {"timeRange": {"to": -100_000_000_000_000_000}}},
        {"query": "x", "filters": {"timeRange": {"from": 1e300}}},
    ],
    ids=repr,
)
def test_a_malformed_search_body_is_400(world: World, body: dict[str, Any]) -> None:
    kb = world.create_kb()
    response = search(world, kb["id"], **body)
    assert response.status_code == 400
    assert set(response.json()) == {"error", "message"}


# ---------------------------------------------------------------------- retrieval for an agent


def test_retrieve_fuses_passages_of_every_linked_kb_each_tagged_with_its_kb(world: World) -> None:
    faq, manual, unlinked = world.create_kb(name="FAQ"), world.create_kb(name="Manual"), world.create_kb()
    agent = world.create_agent()
    from_faq = add(world, faq["id"], "The Quietfan warranty lasts two years.")
    from_manual = add(world, manual["id"], "Clean the Quietfan filter monthly.")
    add(world, unlinked["id"], "Quietfan secrets nobody linked.")
    link(world, faq["id"], agent["id"], 0)
    link(world, manual["id"], agent["id"], 0)
    response = retrieve(world, agent["id"], query="quietfan")
    assert response.status_code == 200, response.text
    passages = response.json()["passages"]
    assert response.json()["count"] == len(passages) == 2
    assert {(p["document_id"], p["knowledgeBase"]["name"]) for p in passages} == {
        (from_faq["id"], "FAQ"),
        (from_manual["id"], "Manual"),
    }
    assert all(p["knowledgeBase"]["id"] == p["kb_id"] and p["knowledgeBase"]["priority"] == 0 for p in passages)


def test_on_equal_scores_the_higher_priority_kb_ranks_first_KB_LNK_02(world: World) -> None:
    low, high = world.create_kb(name="Low"), world.create_kb(name="High")
    agent = world.create_agent()
    for kb in (low, high):
        add(world, kb["id"], "Opening hours: nine to five.")
    # linked low first, so link order alone would put it first
    link(world, low["id"], agent["id"], 1)
    link(world, high["id"], agent["id"], 5)
    passages = retrieve(world, agent["id"], query="opening hours").json()["passages"]
    assert [p["knowledgeBase"]["name"] for p in passages] == ["High", "Low"]
    assert passages[0]["score"] == passages[1]["score"]
    assert [p["knowledgeBase"]["priority"] for p in passages] == [5, 1]


def test_retrieve_limit_counts_passages_across_kbs(world: World) -> None:
    agent = world.create_agent()
    for name in ("A", "B", "C"):
        kb = world.create_kb(name=name)
        add(world, kb["id"], f"Lamp fact from {name}.")
        link(world, kb["id"], agent["id"], 0)
    assert retrieve(world, agent["id"], query="lamp fact", limit=2).json()["count"] == 2


def test_retrieve_leaves_out_kbs_the_caller_may_not_view_OD_B08(world: World) -> None:
    visible, hidden = world.create_kb(name="Visible"), world.create_kb(name="Hidden")
    agent = world.create_agent()
    for kb in (visible, hidden):
        add(world, kb["id"], "Lamp warranty details.")
        link(world, kb["id"], agent["id"], 0)
    world.grant("agent", agent["id"], world["roleless"].user, "view")
    assert retrieve(world, agent["id"], who="roleless", query="lamp").json() == {"passages": [], "count": 0}
    world.grant("kb", visible["id"], world["roleless"].user, "view")
    passages = retrieve(world, agent["id"], who="roleless", query="lamp").json()["passages"]
    assert [p["knowledgeBase"]["name"] for p in passages] == ["Visible"]


def test_an_unlinked_or_deleted_kb_gives_no_passages_KB_DEL_05_06(world: World) -> None:
    agent = world.create_agent()
    assert retrieve(world, agent["id"], query="anything").json() == {"passages": [], "count": 0}
    kb = world.create_kb()
    add(world, kb["id"], "Lamp guide.")
    link(world, kb["id"], agent["id"], 0)
    assert retrieve(world, agent["id"], query="lamp").json()["count"] == 1
    assert world.request("DELETE", f"/kb/{kb['id']}", world["owner"]).status_code == 204
    response = retrieve(world, agent["id"], query="lamp")
    assert response.status_code == 200
    assert response.json() == {"passages": [], "count": 0}


def test_retrieve_for_another_orgs_agent_is_404_KB_GEN_11(world: World) -> None:
    agent = world.create_agent()
    response = retrieve(world, agent["id"], who="b_member", query="lamp")
    assert response.status_code == 404
    assert response.content == b'{"error":"Not found"}'


# ---------------------------------------------------------------------- the knowledge graph


def test_the_graph_lists_entities_and_their_co_occurrence_KB_GEN_02(world: World) -> None:
    kb = world.create_kb()
    add(world, kb["id"], "Ada Lovelace wrote to Charles Babbage about the Analytical Engine.")
    add(world, kb["id"], "Later, Ada Lovelace met staff of NASA. Write to press@nasa.example for copies.")
    add(world, kb["id"], "```\nNot Parsed Here\n```\n\n# Heading Words\n\nnothing capitalised here.")
    response = world.request("GET", f"/kb/{kb['id']}/graph", world["viewer"])
    assert response.status_code == 200, response.text
    graph = response.json()
    entities = {e["name"]: e for e in graph["entities"]}
    assert set(entities) == {"Ada Lovelace", "Charles Babbage", "Analytical Engine", "NASA", "press@nasa.example"}
    assert (entities["Ada Lovelace"]["documents"], entities["Ada Lovelace"]["mentions"]) == (2, 2)
    assert entities["NASA"]["kind"] == "acronym" and entities["press@nasa.example"]["kind"] == "email"
    assert graph["entities"][0]["name"] == "Ada Lovelace"
    edges = {frozenset((e["source"], e["target"])): e["weight"] for e in graph["edges"]}
    ada, babbage, nasa = (entities[n]["id"] for n in ("Ada Lovelace", "Charles Babbage", "NASA"))
    assert edges[frozenset((ada, babbage))] == 1
    assert edges[frozenset((ada, nasa))] == 1
    assert frozenset((babbage, nasa)) not in edges
    assert graph["truncated"] is False


def test_the_graph_limit_keeps_the_entities_in_most_documents(world: World) -> None:
    kb = world.create_kb()
    add(world, kb["id"], "We visit Utrecht and Leiden.")
    add(world, kb["id"], "Visit Utrecht, then visit it again.")
    graph = world.request("GET", f"/kb/{kb['id']}/graph", world["viewer"], params={"limit": "1"}).json()
    assert [e["name"] for e in graph["entities"]] == ["Utrecht"]
    assert graph["edges"] == []


def test_an_empty_kb_has_an_empty_graph(world: World) -> None:
    kb = world.create_kb()
    graph = world.request("GET", f"/kb/{kb['id']}/graph", world["viewer"]).json()
    assert graph == {"entities": [], "edges": [], "truncated": False}
