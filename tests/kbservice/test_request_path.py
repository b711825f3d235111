"""The request path of a knowledge-base search reads the store in as few transactions as it needs.

Finding the knowledge base and the caller's grant on it is one read
transaction, not two; the permission question is still asked on every request, with the grant read
in the same snapshot as the resource. Counted on the organization space's real engine, over real
HTTP, on both backends (transactions are counted, never timed).
"""

from __future__ import annotations

from kb_harness import World, transactions


def test_a_search_finds_its_knowledge_base_and_grant_in_one_read(world: World) -> None:
    """One read for the knowledge base and the grant, and the search in the same read
    (its passages carry their documents' keys)."""
    kb = world.create_kb()
    body = {"content": "Parcels leave on Mondays."}
    added = world.request("POST", f"/kb/{kb['id']}/documents", world["owner"], json=body)
    assert added.status_code == 201, added.text
    with transactions(world) as begun:
        response = world.request("POST", f"/kb/{kb['id']}/search", world["viewer"], json={"query": "parcels"})
    assert response.status_code == 200, response.text
    assert response.json()["count"] == 1
    assert begun[0] == 1


def test_the_grant_read_with_the_resource_still_decides(world: World) -> None:
    """A grant given after the first search counts on the very next request, and one
    taken away stops counting: what is remembered between requests is used only under the access
    version it was read under, which every grant replaces."""
    kb = world.create_kb()
    path = f"/kb/{kb['id']}/search"
    who = world["roleless"]
    assert world.request("POST", path, who, json={"query": "x"}).status_code in {403, 404}
    world.grant("kb", kb["id"], who.user, "view")
    assert world.request("POST", path, who, json={"query": "x"}).status_code == 200
    deleted = world.request("DELETE", f"/kb/{kb['id']}/grants/{who.user}", world["owner"])
    assert deleted.status_code in {200, 204}, deleted.text
    assert world.request("POST", path, who, json={"query": "x"}).status_code in {403, 404}
