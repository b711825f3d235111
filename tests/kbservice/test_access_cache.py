"""What a request needs for its permission question is remembered, and never once it may be stale.

The knowledge base's row,
an agent's row and links, and the caller's grants are remembered per space under the space's access
version, so a repeated search does not read them again; every change of them (a grant given, changed
or taken away, a knowledge base renamed or deleted, an agent unlinked or deleted) is seen on the very
next request, also when another service on the same store made it (as another replica would). The
permission question is still asked per request: a token's role and expiry count on every request.
Over real HTTP, on both backends (statements are counted, never timed). KB-GEN-10, OD-B10, OD-B13.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kb_harness import World, bearer, caller, expired_token, transactions

from notochord.kbservice import JsonBody, KbService
from notochord.kbservice.actors import actor_from_claims
from notochord.kbservice.policy import ResourceType
from sent_sql import statements_sent


def statements(world: World, table: str) -> contextlib.AbstractContextManager[list[str]]:
    """The statements naming ``table`` sent on organization A's engine inside the ``with`` block."""
    return statements_sent(world.live.nc.org(world.a).core.store.engine, containing=table)


def _kb_with_document(world: World, text: str = "Parcels leave the depot on Mondays.") -> dict[str, Any]:
    kb = world.create_kb()
    added = world.request("POST", f"/kb/{kb['id']}/documents", world["owner"], json={"content": text})
    assert added.status_code == 201, added.text
    return kb


def _search(world: World, kb_id: str, who: str = "viewer", query: str = "parcels") -> int:
    return world.request("POST", f"/kb/{kb_id}/search", world[who], json={"query": query}).status_code


def _other_service(world: World) -> KbService:
    """A second service on the same store, with caches of its own: what another replica is."""
    return KbService(world.live.nc)


def _owner_actor(world: World) -> Any:
    owner = world["owner"]
    return actor_from_claims({"sub": owner.user, "org": world.a, "org_role": "owner"})


def test_a_repeated_search_does_not_read_the_knowledge_base_again(world: World) -> None:
    """The second search of a caller reads neither the knowledge base nor the grant."""
    kb = _kb_with_document(world)
    assert _search(world, kb["id"]) == 200
    with statements(world, "kb_knowledge_bases") as kb_reads, statements(world, "kb_grants") as grant_reads:
        response = world.request("POST", f"/kb/{kb['id']}/search", world["viewer"], json={"query": "parcels"})
    assert response.status_code == 200, response.text
    assert response.json()["count"] == 1
    assert kb_reads == []
    assert grant_reads == []


def test_a_repeated_retrieval_does_not_read_the_agent_or_its_links_again(world: World) -> None:
    """The agent, its links and the grants on the linked knowledge bases are
    remembered too."""
    kb = _kb_with_document(world)
    agent = world.create_agent()
    linked = world.request("POST", f"/kb/{kb['id']}/agents/{agent['id']}", world["owner"], json={})
    assert linked.status_code == 200, linked.text
    path = f"/agents/{agent['id']}/retrieve"
    assert world.request("POST", path, world["viewer"], json={"query": "parcels"}).status_code == 200
    with statements(world, "kb_agent") as agent_reads, statements(world, "kb_grants") as grant_reads:
        response = world.request("POST", path, world["viewer"], json={"query": "parcels"})
    assert response.status_code == 200, response.text
    assert response.json()["count"] == 1
    assert agent_reads == []
    assert grant_reads == []


def test_a_grant_taken_away_refuses_the_very_next_search(world: World) -> None:
    """A remembered grant is not used once it was removed."""
    kb = _kb_with_document(world)
    who = world["roleless"]
    world.grant("kb", kb["id"], who.user, "view")
    assert _search(world, kb["id"], "roleless") == 200
    assert _search(world, kb["id"], "roleless") == 200
    removed = world.request("DELETE", f"/kb/{kb['id']}/grants/{who.user}", world["owner"])
    assert removed.status_code in {200, 204}, removed.text
    assert _search(world, kb["id"], "roleless") == 403


def test_a_changed_grant_counts_on_the_very_next_request(world: World) -> None:
    """Raising a grant from view to edit lets the next upload in, lowering it again
    refuses the one after."""
    kb = _kb_with_document(world)
    who = world["roleless"]
    path = f"/kb/{kb['id']}/documents"
    world.grant("kb", kb["id"], who.user, "view")
    assert world.request("POST", path, who, json={"content": "Refused."}).status_code == 403
    world.grant("kb", kb["id"], who.user, "edit")
    assert world.request("POST", path, who, json={"content": "Accepted."}).status_code == 201
    world.grant("kb", kb["id"], who.user, "view")
    assert world.request("POST", path, who, json={"content": "Refused again."}).status_code == 403
    assert _search(world, kb["id"], "roleless") == 200


def test_a_grant_taken_away_by_another_replica_refuses_the_very_next_search(world: World) -> None:
    """What this server remembered is checked against the store, not against its
    own writes: a grant removed through another service on the same store counts at once."""
    kb = _kb_with_document(world)
    who = world["roleless"]
    world.grant("kb", kb["id"], who.user, "view")
    assert _search(world, kb["id"], "roleless") == 200
    _other_service(world).grants.delete(
        actor=_owner_actor(world), type=ResourceType.KB, resource_id=kb["id"], user_id=who.user
    )
    assert _search(world, kb["id"], "roleless") == 403


def test_a_knowledge_base_renamed_by_another_replica_shows_its_new_name_at_once(world: World) -> None:
    """A rename is seen by the very next request, here and through an agent."""
    kb = _kb_with_document(world)
    agent = world.create_agent()
    assert world.request("POST", f"/kb/{kb['id']}/agents/{agent['id']}", world["owner"], json={}).status_code == 200
    retrieve = f"/agents/{agent['id']}/retrieve"
    first = world.request("POST", retrieve, world["viewer"], json={"query": "parcels"}).json()
    assert first["passages"][0]["knowledgeBase"]["name"] == "Help Center Articles"
    assert world.request("GET", f"/kb/{kb['id']}", world["viewer"]).json()["knowledgeBase"]["name"] == (
        "Help Center Articles"
    )
    _other_service(world).knowledge_bases.update(
        actor=_owner_actor(world), kb_id=kb["id"], body=JsonBody(b'{"name": "Shipping"}')
    )
    again = world.request("POST", retrieve, world["viewer"], json={"query": "parcels"}).json()
    assert again["passages"][0]["knowledgeBase"]["name"] == "Shipping"
    assert world.request("GET", f"/kb/{kb['id']}", world["viewer"]).json()["knowledgeBase"]["name"] == "Shipping"


def test_a_deleted_knowledge_base_is_not_found_on_the_very_next_request(world: World) -> None:
    """Searching, listing and retrieving through an agent stop at once."""
    kb = _kb_with_document(world)
    agent = world.create_agent()
    assert world.request("POST", f"/kb/{kb['id']}/agents/{agent['id']}", world["owner"], json={}).status_code == 200
    retrieve = f"/agents/{agent['id']}/retrieve"
    assert world.request("POST", retrieve, world["viewer"], json={"query": "parcels"}).json()["count"] == 1
    assert _search(world, kb["id"]) == 200
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["viewer"]).status_code == 200
    _other_service(world).knowledge_bases.delete(actor=_owner_actor(world), kb_id=kb["id"])
    assert _search(world, kb["id"]) == 404
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["viewer"]).status_code == 404
    after = world.request("POST", retrieve, world["viewer"], json={"query": "parcels"})
    assert after.status_code == 200, after.text
    assert after.json()["count"] == 0


def test_an_unlinked_or_deleted_agent_counts_on_the_very_next_retrieval(world: World) -> None:
    """An unlink drops the knowledge base from the next retrieval, a deleted agent
    is not found by it."""
    kb = _kb_with_document(world)
    agent = world.create_agent()
    link = f"/kb/{kb['id']}/agents/{agent['id']}"
    assert world.request("POST", link, world["owner"], json={}).status_code == 200
    retrieve = f"/agents/{agent['id']}/retrieve"
    assert world.request("POST", retrieve, world["viewer"], json={"query": "parcels"}).json()["count"] == 1
    assert world.request("DELETE", link, world["owner"]).status_code == 200
    assert world.request("POST", retrieve, world["viewer"], json={"query": "parcels"}).json()["count"] == 0
    assert world.request("DELETE", f"/agents/{agent['id']}", world["owner"]).status_code in {200, 204}
    assert world.request("POST", retrieve, world["viewer"], json={"query": "parcels"}).status_code == 404


def test_a_grant_on_a_linked_knowledge_base_taken_away_counts_on_the_very_next_retrieval(world: World) -> None:
    """Retrieval asks the question per linked knowledge base with the current grant."""
    kb = _kb_with_document(world)
    agent = world.create_agent()
    assert world.request("POST", f"/kb/{kb['id']}/agents/{agent['id']}", world["owner"], json={}).status_code == 200
    who = world["roleless"]
    world.grant("agent", agent["id"], who.user, "view")
    world.grant("kb", kb["id"], who.user, "view")
    retrieve = f"/agents/{agent['id']}/retrieve"
    assert world.request("POST", retrieve, who, json={"query": "parcels"}).json()["count"] == 1
    _other_service(world).grants.delete(
        actor=_owner_actor(world), type=ResourceType.KB, resource_id=kb["id"], user_id=who.user
    )
    assert world.request("POST", retrieve, who, json={"query": "parcels"}).json()["count"] == 0


def test_the_callers_token_decides_on_every_request(world: World) -> None:
    """What is remembered is the rows, never the answer: the same user with a token
    without a role is refused right after a search that passed, and an expired token is refused."""
    kb = _kb_with_document(world)
    viewer = world["viewer"]
    assert _search(world, kb["id"]) == 200
    demoted = caller(viewer.user, world.a, None)
    assert world.request("POST", f"/kb/{kb['id']}/search", demoted, json={"query": "parcels"}).status_code == 403
    expired = bearer(expired_token(viewer.user, world.a))
    refused = world.request("POST", f"/kb/{kb['id']}/search", None, headers=expired, json={"query": "parcels"})
    assert refused.status_code == 401


def test_what_one_caller_read_is_never_another_callers(world: World) -> None:
    """A grant read for one user does not answer for another, nor across spaces."""
    kb = _kb_with_document(world)
    world.grant("kb", kb["id"], world["roleless"].user, "view")
    assert _search(world, kb["id"], "roleless") == 200
    stranger = caller("stranger-" + world["roleless"].user, world.a, None)
    assert world.request("POST", f"/kb/{kb['id']}/search", stranger, json={"query": "parcels"}).status_code == 403
    assert _search(world, kb["id"], "b_owner") == 404


def test_listing_documents_is_one_read_transaction(world: World) -> None:
    """The permission question, the total and the page come from one snapshot."""
    kb = _kb_with_document(world)
    world.request("POST", f"/kb/{kb['id']}/documents", world["owner"], json={"content": "Second note."})
    for fresh in (True, False):  # before anything is remembered, and after
        if fresh:
            world.grant("kb", kb["id"], world["roleless"].user, "view")
        with transactions(world) as begun:
            response = world.request("GET", f"/kb/{kb['id']}/documents", world["viewer"], params={"limit": "1"})
        assert response.status_code == 200, response.text
        listed = response.json()
        assert listed["total"] == 2
        assert [d["chunk_count"] for d in listed["documents"]] == [1]
        assert begun[0] == 1


def test_reading_a_document_is_one_read_transaction(world: World) -> None:
    """The permission question and the document with its text and chunk count are
    answered from one snapshot."""
    kb = world.create_kb()
    added = world.request("POST", f"/kb/{kb['id']}/documents", world["owner"], json={"content": "Parcels."})
    assert added.status_code == 201, added.text
    path = f"/kb/{kb['id']}/documents/{added.json()['document']['id']}"
    with transactions(world) as begun:
        response = world.request("GET", path, world["viewer"])
    assert response.status_code == 200, response.text
    assert response.json()["document"]["content"] == "Parcels."
    assert begun[0] == 1
