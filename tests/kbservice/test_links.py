"""Links and lookups over real HTTP: KB-LNK, KB-ULK, KB-LAG, KB-AKB, AS-17, AS-18, AS-19, AS-21."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from kb_harness import World

from notochord.db.engine import write_tx
from notochord.db.schema import kb_agent_links

LINKED = {"message": "Agent linked to knowledge base successfully"}
UNLINKED = {"message": "Agent unlinked successfully"}
NOT_FOUND = b'{"error":"Not found"}'


def link(world: World, kb: str, agent: str, who: str = "member", **body: Any) -> tuple[int, dict[str, Any]]:
    response = world.request("POST", f"/kb/{kb}/agents/{agent}", world[who], json=body)
    return response.status_code, response.json()


def test_member_links_then_relinks_one_entry_with_new_priority_AS17(world: World) -> None:
    """AS-17, KB-LNK-01/05/06/07, EX-19: exact body, one audit entry per link request."""
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    status, body = link(world, kb, agent, priority=1)
    assert status == 200
    assert body == {**LINKED, "knowledgeBaseId": kb, "agentId": agent}
    assert len(world.audit("knowledge_base.agent_link")) == 1
    world.live.tick()
    status, body = link(world, kb, agent, priority=5)
    assert status == 200
    agents = world.request("GET", f"/kb/{kb}/agents", world["viewer"]).json()["agents"]
    assert agents == [{"id": agent, "name": "Support bot", "status": "draft", "priority": 5}]
    entries = world.audit("knowledge_base.agent_link")
    assert len(entries) == 2
    assert entries[0]["details"] == {"agent_id": agent, "priority": 5, "permissions": {}}
    assert entries[0]["organization_id"] == world.a
    assert entries[0]["actor_email"] == f"{world['member'].user}@example.org"


def test_relinking_keeps_linked_at_and_resets_omitted_fields_to_defaults_OD_B17(world: World) -> None:
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    link(world, kb, agent, priority=3, permissions={"read": True})
    first = world.request("GET", f"/agents/{agent}/kb", world["member"]).json()["knowledgeBases"][0]
    world.live.tick()
    link(world, kb, agent)
    again = world.request("GET", f"/agents/{agent}/kb", world["member"]).json()["knowledgeBases"][0]
    assert (again["priority"], again["permissions"]) == (0, {})
    assert again["linked_at"] == first["linked_at"]


def test_an_empty_body_links_with_priority_0(world: World) -> None:
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    response = world.request("POST", f"/kb/{kb}/agents/{agent}", world["member"])
    assert response.status_code == 200
    assert world.request("GET", f"/kb/{kb}/agents", world["member"]).json()["agents"][0]["priority"] == 0


def test_superadmin_cross_org_is_409_member_gets_404_viewer_gets_403_AS18(world: World) -> None:
    """AS-18, KB-LNK-08/09/10/11."""
    kb = world.create_kb()["id"]
    own_agent = world.create_agent()["id"]
    other_agent = world.create_agent("b_owner")["id"]

    conflict = world.request("POST", f"/kb/{kb}/agents/{other_agent}", world["superadmin"], json={})
    assert conflict.status_code == 409
    assert conflict.json()["error"] == "Conflict"
    assert set(conflict.json()) == {"error", "message"}

    hidden = world.request("POST", f"/kb/{kb}/agents/{other_agent}", world["member"], json={})
    assert (hidden.status_code, hidden.content) == (404, NOT_FOUND)

    refused = world.request("POST", f"/kb/{kb}/agents/{own_agent}", world["viewer"], json={"priority": 1})
    assert refused.status_code == 403
    assert refused.json()["error"] == "Forbidden"

    assert world.audit("knowledge_base.agent_link") == []
    assert world.request("GET", f"/kb/{kb}/agents", world["owner"]).json() == {"agents": []}


def test_viewer_needs_edit_grants_on_both_sides_KB_LNK_03(world: World) -> None:
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    viewer = world["viewer"].user
    world.grant("kb", kb, viewer, "edit")
    status, body = link(world, kb, agent, who="viewer")
    assert (status, body) == (403, {"error": "Forbidden", "message": "Requires edit permission on this agent"})
    world.grant("agent", agent, viewer, "edit")
    assert link(world, kb, agent, who="viewer")[0] == 200


def test_the_kb_is_checked_before_the_agent_OD_B16(world: World) -> None:
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    missing = str(uuid.uuid4())
    # both missing: 404; kb forbidden and agent missing: still 404 (existence before permission)
    assert world.request("POST", f"/kb/{missing}/agents/{missing}", world["viewer"]).status_code == 404
    assert world.request("POST", f"/kb/{kb}/agents/{missing}", world["viewer"]).status_code == 404
    response = world.request("POST", f"/kb/{kb}/agents/{agent}", world["viewer"])
    assert response.json()["message"] == "Requires edit permission on this knowledge base"


def test_a_soft_deleted_agent_is_not_found_for_link_unlink_and_its_lookup_OD_B18(world: World) -> None:
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    link(world, kb, agent)
    assert world.request("DELETE", f"/agents/{agent}", world["owner"]).status_code == 204
    for method, path in (
        ("POST", f"/kb/{kb}/agents/{agent}"),
        ("DELETE", f"/kb/{kb}/agents/{agent}"),
        ("GET", f"/agents/{agent}/kb"),
        ("GET", f"/agents/{agent}"),
    ):
        response = world.request(method, path, world["owner"])
        assert (response.status_code, response.content) == (404, NOT_FOUND), (method, path)


@pytest.mark.parametrize(
    "body",
    [
        {"priority": 1.5},
        {"priority": True},
        {"priority": "1"},
        {"priority": 2**40},
        {"permissions": []},
        {"permissions": "all"},
    ],
    ids=repr,
)
def test_priority_must_be_an_integer_and_permissions_an_object_OD_B22(world: World, body: dict[str, Any]) -> None:
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    status, response = link(world, kb, agent, **body)
    assert status == 400
    assert response["error"] == "Bad Request"
    assert world.audit("knowledge_base.agent_link") == []


def test_unlinking_twice_is_200_both_times_with_one_audit_entry_AS19(world: World) -> None:
    """AS-19, KB-ULK-01/03/04/07, EX-20."""
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    link(world, kb, agent, priority=1)
    for _ in range(2):
        response = world.request("DELETE", f"/kb/{kb}/agents/{agent}", world["member"])
        assert (response.status_code, response.json()) == (200, UNLINKED)
    [entry] = world.audit("knowledge_base.agent_unlink")
    assert entry["details"] == {"agent_id": agent}
    assert entry["resource_id"] == kb
    assert world.request("GET", f"/kb/{kb}/agents", world["member"]).json() == {"agents": []}


def test_unlink_needs_edit_on_both_and_hides_other_orgs_KB_ULK_02_06_08_09(world: World) -> None:
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    other_agent = world.create_agent("b_owner")["id"]
    link(world, kb, agent)
    refused = world.request("DELETE", f"/kb/{kb}/agents/{agent}", world["viewer"])
    assert refused.status_code == 403
    hidden = world.request("DELETE", f"/kb/{kb}/agents/{other_agent}", world["member"])
    assert (hidden.status_code, hidden.content) == (404, NOT_FOUND)
    assert world.audit("knowledge_base.agent_unlink") == []


def test_a_superadmin_removes_a_legacy_cross_org_link_KB_ULK_05(world: World) -> None:
    kb = world.create_kb()["id"]
    other_agent = world.create_agent("b_owner")
    space = world.live.nc.org(world.a)
    with write_tx(space.core.store.engine) as conn:
        conn.execute(
            sa.insert(kb_agent_links).values(
                kb_id=kb,
                agent_id=other_agent["id"],
                agent_organization_id=world.b,
                permissions_json=json.dumps({}),
                priority=2,
                linked_at="2020-01-01T00:00:00.000Z",
                updated_at="2020-01-01T00:00:00.000Z",
            )
        )
    # members of either organization do not see the other side; the superadmin does
    assert world.request("GET", f"/kb/{kb}/agents", world["owner"]).json() == {"agents": []}
    assert world.request("GET", f"/agents/{other_agent['id']}/kb", world["b_owner"]).json()["count"] == 0
    seen = world.request("GET", f"/kb/{kb}/agents", world["superadmin"]).json()["agents"]
    assert [a["id"] for a in seen] == [other_agent["id"]]
    assert world.request("GET", f"/agents/{other_agent['id']}/kb", world["superadmin"]).json()["count"] == 1
    assert world.request("DELETE", f"/kb/{kb}/agents/{other_agent['id']}", world["member"]).status_code == 404
    response = world.request("DELETE", f"/kb/{kb}/agents/{other_agent['id']}", world["superadmin"])
    assert (response.status_code, response.json()) == (200, UNLINKED)
    [entry] = world.audit("knowledge_base.agent_unlink")
    assert entry["organization_id"] == world.a
    assert world.request("GET", f"/kb/{kb}/agents", world["superadmin"]).json() == {"agents": []}


def test_linked_agents_order_by_priority_then_link_time_without_soft_deleted_AS21(world: World) -> None:
    """AS-21, KB-LAG-01…04, EX-21."""
    kb = world.create_kb()["id"]
    low = world.create_agent(name="low")["id"]
    first5 = world.create_agent(name="first five", status="published")["id"]
    second5 = world.create_agent(name="second five", status="archived")["id"]
    gone = world.create_agent(name="gone")["id"]
    for agent, priority in ((low, 1), (first5, 5), (gone, 9), (second5, 5)):
        world.live.tick()
        assert link(world, kb, agent, priority=priority)[0] == 200
    world.request("DELETE", f"/agents/{gone}", world["owner"])
    response = world.request("GET", f"/kb/{kb}/agents", world["viewer"])
    assert response.status_code == 200
    assert response.json() == {
        "agents": [
            {"id": first5, "name": "first five", "status": "published", "priority": 5},
            {"id": second5, "name": "second five", "status": "archived", "priority": 5},
            {"id": low, "name": "low", "status": "draft", "priority": 1},
        ]
    }


def test_agents_linked_kbs_carry_link_metadata_and_count_KB_AKB(world: World) -> None:
    """KB-AKB-01/02, OD-B02, OD-B21."""
    agent = world.create_agent()["id"]
    kb1 = world.create_kb(name="one")
    world.live.tick()
    kb2 = world.create_kb(name="two")
    link(world, kb1["id"], agent, priority=1, permissions={"search": True})
    world.live.tick()
    link(world, kb2["id"], agent, priority=7)
    response = world.request("GET", f"/agents/{agent}/kb", world["viewer"])
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert [k["id"] for k in body["knowledgeBases"]] == [kb2["id"], kb1["id"]]
    first = body["knowledgeBases"][1]
    assert {k: first[k] for k in ("permissions", "priority")} == {"permissions": {"search": True}, "priority": 1}
    assert first["linked_at"].endswith("Z")
    assert {k: first[k] for k in kb1} == kb1


def test_lookups_of_another_orgs_resources_are_404_KB_GEN_11(world: World) -> None:
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    for path in (f"/kb/{kb}/agents", f"/agents/{agent}/kb"):
        response = world.request("GET", path, world["b_member"])
        assert (response.status_code, response.content) == (404, NOT_FOUND)
