"""The busiest routes ask the permission question on every request, whatever they resolve at once.

Listing documents, searching and retrieving now resolve the service, the caller
and the body as one dependency. A grant taken away must still be refused at the very next request,
on each of them, and a caller without a token still gets 401 before the body is read.
"""

from __future__ import annotations

from kb_harness import World


def _refused(status: int) -> bool:
    return status in {403, 404}


def test_a_revoked_grant_is_refused_at_the_next_list_search_and_retrieval(world: World) -> None:
    """OD-B10: nothing about permissions is remembered between requests."""
    kb = world.create_kb(name="Shipping")
    body = {"title": "Parcels", "content": "Parcels leave on Mondays."}
    assert world.request("POST", f"/kb/{kb['id']}/documents", world["owner"], json=body).status_code == 201
    agent = world.create_agent()
    linked = world.request("POST", f"/kb/{kb['id']}/agents/{agent['id']}", world["owner"], json={"priority": 1})
    assert linked.status_code == 200, linked.text
    who = world["roleless"]
    world.grant("kb", kb["id"], who.user, "view")
    world.grant("agent", agent["id"], who.user, "view")
    calls = [
        ("GET", f"/kb/{kb['id']}/documents?limit=20", None),
        ("POST", f"/kb/{kb['id']}/search", {"query": "parcels"}),
        ("POST", f"/agents/{agent['id']}/retrieve", {"query": "parcels"}),
    ]
    for method, path, json in calls:
        assert world.request(method, path, who, json=json).status_code == 200, path
    for kind, resource in (("kb", kb["id"]), ("agents", agent["id"])):
        deleted = world.request("DELETE", f"/{kind}/{resource}/grants/{who.user}", world["owner"])
        assert deleted.status_code in {200, 204}, deleted.text
    assert _refused(world.request("GET", f"/kb/{kb['id']}/documents?limit=20", who).status_code)
    assert _refused(world.request("POST", f"/kb/{kb['id']}/search", who, json={"query": "parcels"}).status_code)
    retrieved = world.request("POST", f"/agents/{agent['id']}/retrieve", who, json={"query": "parcels"})
    assert _refused(retrieved.status_code)


def test_a_search_without_a_token_is_401_whatever_its_body(world: World) -> None:
    """KB-GEN-03: authentication comes before the body is read or parsed."""
    kb = world.create_kb(name="Shipping")
    for content in (b"{not json", b'{"query": 5}', b"x" * 10):
        response = world.live.client.post(
            f"/api/knowledge/kb/{kb['id']}/search", content=content, headers={"content-type": "application/json"}
        )
        assert response.status_code == 401, response.text
