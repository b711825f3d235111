"""Knowledge bases over real HTTP: KB-CRT, KB-LST, KB-GET, KB-UPD, KB-DEL, AS-16, AS-20."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from kb_harness import World

from notochord.db.schema import (
    change_objects,
    changes,
    chunk_vectors,
    chunks,
    collections,
    documents,
    kb_agent_links,
    kb_agents,
    kb_grants,
    kb_knowledge_bases,
)
from notochord.knowledge.writes import USER

KB_KEYS = {"id", "name", "description", "organization_id", "settings", "created_at", "updated_at"}


# ---------------------------------------------------------------------- create


def test_create_returns_201_with_the_wrapped_kb_object_of_the_callers_org_EX17(world: World) -> None:
    """KB-CRT-01/02/05/06: the EX-17 request; `const { knowledgeBase } = await response.json()`."""
    response = world.request(
        "POST",
        "/kb",
        world["member"],
        json={"name": "Help Center Articles", "description": "Customer support documentation"},
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"knowledgeBase"}
    kb = body["knowledgeBase"]
    assert set(kb) == KB_KEYS
    assert kb["name"] == "Help Center Articles"
    assert kb["description"] == "Customer support documentation"
    assert kb["organization_id"] == world.a
    assert kb["settings"] == {}
    assert str(uuid.UUID(kb["id"])) == kb["id"]
    assert kb["created_at"] == kb["updated_at"]
    assert kb["created_at"].endswith("Z")


def test_create_without_description_or_settings_gives_null_and_empty_object_OD_B06(world: World) -> None:
    kb = world.create_kb(name="Bare")
    assert kb["description"] is None
    assert kb["settings"] == {}


def test_create_keeps_settings_as_given_KB_CRT_02(world: World) -> None:
    settings = {"embedding": {"model": "e5"}, "chunking": {"size": 300}}
    assert world.create_kb(settings=settings)["settings"] == settings


def test_viewer_gets_the_exact_403_and_nothing_is_created_AS16(world: World) -> None:
    """AS-16, KB-CRT-03/04: verbatim body; the list total is unchanged."""
    before = world.request("GET", "/kb", world["owner"]).json()["total"]
    response = world.request("POST", "/kb", world["viewer"], json={"name": "Nope"})
    assert response.status_code == 403
    assert response.content == b'{"error":"Forbidden","message":"Requires member role or higher"}'
    assert world.request("GET", "/kb", world["owner"]).json()["total"] == before


def test_visibility_key_is_ignored_on_create_AS16_KB_GEN_07(world: World) -> None:
    response = world.request("POST", "/kb", world["member"], json={"name": "Public?", "visibility": "public"})
    assert response.status_code == 201
    kb = response.json()["knowledgeBase"]
    assert "visibility" not in kb
    again = world.request("GET", f"/kb/{kb['id']}", world["member"]).json()["knowledgeBase"]
    assert "visibility" not in again


@pytest.mark.parametrize("role", ["owner", "admin", "member", "superadmin"])
def test_member_or_higher_and_superadmins_may_create_KB_CRT_03_KB_GEN_09(world: World, role: str) -> None:
    response = world.request("POST", "/kb", world[role], json={"name": "Allowed"})
    assert response.status_code == 201
    assert response.json()["knowledgeBase"]["organization_id"] == world[role].org


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "   "},
        {"name": 7},
        {"name": None},
        {"name": "ok", "description": 3},
        {"name": "ok", "description": None},
        {"name": "ok", "settings": []},
        {"name": "ok", "settings": "x"},
    ],
    ids=repr,
)
def test_invalid_create_bodies_are_400_with_the_error_shape_OD_B12(world: World, body: dict[str, object]) -> None:
    response = world.request("POST", "/kb", world["member"], json=body)
    assert response.status_code == 400
    assert set(response.json()) == {"error", "message"}
    assert response.json()["error"] == "Bad Request"


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b'"name"'])
def test_a_body_that_is_not_a_json_object_is_400_OD_B12(world: World, raw: bytes) -> None:
    response = world.request("POST", "/kb", world["member"], content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"] == "Bad Request"


def test_the_role_check_comes_before_body_validation_OD_B12(world: World) -> None:
    response = world.request("POST", "/kb", world["viewer"], content=b"{not json")
    assert response.status_code == 403
    assert response.json()["message"] == "Requires member role or higher"


# ---------------------------------------------------------------------- list


def test_list_shows_the_callers_org_newest_first_with_total_limit_offset_KB_LST(world: World) -> None:
    """KB-LST-01…04, OD-B05, OD-B15; EX-18 asks for limit=20."""
    made = []
    for i in range(3):
        made.append(world.create_kb(name=f"kb {i}")["id"])
        world.live.tick()
    world.request("POST", "/kb", world["b_owner"], json={"name": "other org"})
    response = world.request("GET", "/kb?limit=20", world["viewer"])
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"knowledgeBases", "total", "limit", "offset"}
    assert [kb["id"] for kb in body["knowledgeBases"]] == list(reversed(made))
    assert (body["total"], body["limit"], body["offset"]) == (3, 20, 0)


def test_list_pages_with_limit_and_offset(world: World) -> None:
    made = []
    for i in range(3):
        made.append(world.create_kb(name=f"kb {i}")["id"])
        world.live.tick()
    body = world.request("GET", "/kb?limit=1&offset=1", world["member"]).json()
    assert [kb["id"] for kb in body["knowledgeBases"]] == [made[1]]
    assert (body["total"], body["limit"], body["offset"]) == (3, 1, 1)


@pytest.mark.parametrize(
    ("query", "limit", "offset"),
    [
        ("", 50, 0),
        ("?limit=1000", 100, 0),
        ("?limit=7&offset=3", 7, 3),
    ],
)
def test_pagination_is_clamped_and_echoed_OD_B15(world: World, query: str, limit: int, offset: int) -> None:
    body = world.request("GET", "/kb" + query, world["member"]).json()
    assert (body["limit"], body["offset"]) == (limit, offset)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?limit=abc", "limit"),
        ("?limit=-3", "limit"),
        ("?limit=2.5", "limit"),
        ("?offset=-5", "offset"),
        ("?offset=xyz", "offset"),
        ("?limit=10&offset=%C2%B2", "offset"),
    ],
)
@pytest.mark.parametrize("path", ["/kb", "/agents", "/audit", "/usage"])
def test_pagination_that_is_not_a_whole_number_is_refused_naming_the_field(
    world: World, path: str, query: str, field: str
) -> None:
    """``limit=abc`` and negative ``limit``/``offset`` are 400, naming the field."""
    response = world.request("GET", path + query, world["owner"])
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "Bad Request"
    assert body["message"].startswith(f"{field} must be a whole number")


def test_list_is_always_the_callers_own_org_even_for_a_superadmin_OD_B14(world: World) -> None:
    world.create_kb(name="in A")
    body = world.request("GET", "/kb", world["superadmin"]).json()
    assert all(kb["organization_id"] == world.b for kb in body["knowledgeBases"])


def test_a_caller_without_an_org_role_cannot_list_OD_B08(world: World) -> None:
    response = world.request("GET", "/kb", world["roleless"])
    assert response.status_code == 403
    assert response.json()["error"] == "Forbidden"


# ---------------------------------------------------------------------- get


@pytest.mark.parametrize("role", ["owner", "admin", "member", "viewer", "superadmin"])
def test_every_member_and_a_superadmin_can_get_a_kb_KB_GET_01_OD_B08(world: World, role: str) -> None:
    kb = world.create_kb()
    response = world.request("GET", f"/kb/{kb['id']}", world[role])
    assert response.status_code == 200
    assert response.json() == {"knowledgeBase": kb}


def test_get_of_another_orgs_kb_is_byte_identical_to_a_missing_one_KB_GET_02(world: World) -> None:
    kb = world.create_kb()
    foreign = world.request("GET", f"/kb/{kb['id']}", world["b_member"])
    missing = world.request("GET", f"/kb/{uuid.uuid4()}", world["b_member"])
    malformed = world.request("GET", "/kb/not-a-uuid", world["b_member"])
    for response in (foreign, missing, malformed):
        assert response.status_code == 404
        assert response.content == b'{"error":"Not found"}'
    assert foreign.headers["content-length"] == missing.headers["content-length"]


# ---------------------------------------------------------------------- update


@pytest.mark.parametrize("method", ["PATCH", "PUT"])
def test_update_changes_only_given_fields_and_advances_updated_at_KB_UPD(world: World, method: str) -> None:
    """KB-UPD-01…04, OD-B01 (PUT is an alias of PATCH)."""
    kb = world.create_kb(description="Customer support documentation", settings={"a": 1})
    world.live.tick()
    response = world.request(
        method, f"/kb/{kb['id']}", world["member"], json={"name": "Renamed", "visibility": "private"}
    )
    assert response.status_code == 200
    updated = response.json()["knowledgeBase"]
    assert updated["name"] == "Renamed"
    assert updated["description"] == "Customer support documentation"
    assert updated["settings"] == {"a": 1}
    assert "visibility" not in updated
    assert updated["created_at"] == kb["created_at"]
    assert updated["updated_at"] > kb["updated_at"]
    again = world.request("PATCH", f"/kb/{kb['id']}", world["member"], json={"settings": {"b": 2}, "description": "d"})
    assert again.json()["knowledgeBase"]["settings"] == {"b": 2}
    assert again.json()["knowledgeBase"]["description"] == "d"


def test_viewer_needs_an_edit_grant_to_update_KB_UPD_05_OD_B09(world: World) -> None:
    kb = world.create_kb()
    refused = world.request("PATCH", f"/kb/{kb['id']}", world["viewer"], json={"name": "x"})
    assert refused.status_code == 403
    assert refused.json() == {"error": "Forbidden", "message": "Requires edit permission on this knowledge base"}
    world.grant("kb", kb["id"], world["viewer"].user, "view")
    assert world.request("PATCH", f"/kb/{kb['id']}", world["viewer"], json={"name": "x"}).status_code == 403
    world.grant("kb", kb["id"], world["viewer"].user, "edit")
    assert world.request("PATCH", f"/kb/{kb['id']}", world["viewer"], json={"name": "x"}).status_code == 200


def test_update_checks_404_before_403_before_400_OD_B16(world: World) -> None:
    kb = world.create_kb()
    assert world.request("PATCH", f"/kb/{uuid.uuid4()}", world["viewer"], json={"name": 1}).status_code == 404
    assert world.request("PATCH", f"/kb/{kb['id']}", world["viewer"], json={"name": 1}).status_code == 403
    assert world.request("PATCH", f"/kb/{kb['id']}", world["member"], json={"name": 1}).status_code == 400
    assert world.request("GET", f"/kb/{kb['id']}", world["member"]).json()["knowledgeBase"]["name"] == kb["name"]


# ---------------------------------------------------------------------- delete


def _space_counts(world: World, org: str, kb_collection: int) -> dict[str, int]:
    with world.live.nc.org(org).core.store.read() as conn:

        def count(table: sa.Table, *where: sa.ColumnElement[bool]) -> int:
            return int(conn.execute(sa.select(sa.func.count()).select_from(table).where(*where)).scalar_one())

        return {
            "collections": count(collections, collections.c.id == kb_collection),
            "documents": count(documents, documents.c.collection_id == kb_collection),
            "chunks": count(chunks),
            "vectors": count(chunk_vectors),
            "changes": count(changes),
            "change_objects": count(change_objects),
        }


def _kb_collection(world: World, org: str, kb_id: str) -> int:
    with world.live.nc.org(org).core.store.read() as conn:
        return int(
            conn.execute(
                sa.select(kb_knowledge_bases.c.collection_id).where(kb_knowledge_bases.c.id == kb_id)
            ).scalar_one()
        )


def test_a_kb_owns_one_kb_collection_in_its_orgs_space_out_of_gems_reach(world: World) -> None:
    kb = world.create_kb()
    collection_id = _kb_collection(world, world.a, kb["id"])
    tree = world.live.nc.org(world.a).core.collections.read_tree()
    assert tree.get(collection_id).builtin == "kb"
    assert tree.class_of(collection_id) == "kb"


def test_delete_removes_everything_stored_for_the_kb_and_records_audit_and_cost_AS20(world: World) -> None:
    """AS-20, KB-DEL-01…10: documents, chunks, vectors and change records go; links go; the agent stays."""
    kb = world.create_kb()
    agent = world.create_agent()
    assert (
        world.request("POST", f"/kb/{kb['id']}/agents/{agent['id']}", world["member"], json={"priority": 1}).status_code
        == 200
    )
    world.grant("kb", kb["id"], world["viewer"].user, "edit")
    space = world.live.nc.org(world.a)
    collection_id = _kb_collection(world, world.a, kb["id"])
    outcome = space.core.documents.upsert(
        actor=USER, collection_id=collection_id, title="Refunds", body="Refunds take five working days."
    )
    with space.core.store.read() as conn:
        chunk_ids = list(conn.execute(sa.select(chunks.c.id).where(chunks.c.document_id == outcome.id)).scalars())
    with world.live.nc.org(world.a).core.store.write(actor=USER, run_id=None) as tx:
        for chunk_id in chunk_ids:
            tx.conn.execute(
                sa.insert(chunk_vectors).values(chunk_id=chunk_id, model_id="m", vector=b"\x00" * 1536, text_hash="h")
            )
    before = _space_counts(world, world.a, collection_id)
    assert before["documents"] == 1 and before["vectors"] == len(chunk_ids) >= 1

    response = world.request("DELETE", f"/kb/{kb['id']}", world["member"])

    assert response.status_code == 204
    assert response.content == b""
    after = _space_counts(world, world.a, collection_id)
    assert after["collections"] == after["documents"] == 0
    assert after["chunks"] == before["chunks"] - len(chunk_ids)
    assert after["vectors"] == 0
    assert after["changes"] < before["changes"]
    with space.core.store.read() as conn:
        assert conn.execute(sa.select(kb_agent_links).where(kb_agent_links.c.kb_id == kb["id"])).first() is None
        assert conn.execute(sa.select(kb_grants).where(kb_grants.c.resource_id == kb["id"])).first() is None
        assert conn.execute(sa.select(kb_agents).where(kb_agents.c.id == agent["id"])).one().deleted_at is None
    assert world.request("GET", f"/kb/{kb['id']}", world["member"]).status_code == 404
    assert world.request("GET", f"/agents/{agent['id']}", world["member"]).status_code == 200
    assert world.request("GET", f"/agents/{agent['id']}/kb", world["member"]).json() == {
        "knowledgeBases": [],
        "count": 0,
    }
    deletes = world.audit("knowledge_base.delete")
    assert len(deletes) == 1
    assert deletes[0]["organization_id"] == world.a
    assert deletes[0]["resource_id"] == kb["id"]
    assert deletes[0]["actor_user_id"] == world["member"].user
    assert deletes[0]["details"] == {"kb_name": kb["name"]}
    [cost] = world.usage()
    assert cost["organization_id"] == world.a
    assert (cost["kind"], cost["kb_id"]) == ("vector_store", kb["id"])
    assert cost["vectors_deleted"] == len(chunk_ids)
    assert cost["bytes_deleted"] == 1536 * len(chunk_ids)


def test_a_superadmin_of_another_org_deletes_and_audit_and_cost_go_to_the_owner_KB_DEL_09(world: World) -> None:
    kb = world.create_kb()
    response = world.request("DELETE", f"/kb/{kb['id']}", world["superadmin"])
    assert response.status_code == 204
    [entry] = world.audit("knowledge_base.delete")
    assert (entry["organization_id"], entry["actor_user_id"]) == (world.a, world["superadmin"].user)
    assert [r["kb_id"] for r in world.usage()] == [kb["id"]]
    assert world.audit(org="b") == []
    assert world.usage(org="b") == []


def test_delete_is_irreversible_a_second_delete_is_404_KB_DEL_04(world: World) -> None:
    kb = world.create_kb()
    assert world.request("DELETE", f"/kb/{kb['id']}", world["owner"]).status_code == 204
    second = world.request("DELETE", f"/kb/{kb['id']}", world["owner"])
    assert second.status_code == 404
    assert second.content == b'{"error":"Not found"}'
    assert len(world.audit("knowledge_base.delete")) == 1


def test_viewer_needs_a_delete_grant_to_delete_KB_DEL_02_OD_B09(world: World) -> None:
    kb = world.create_kb()
    world.grant("kb", kb["id"], world["viewer"].user, "edit")
    refused = world.request("DELETE", f"/kb/{kb['id']}", world["viewer"])
    assert refused.json() == {"error": "Forbidden", "message": "Requires delete permission on this knowledge base"}
    world.grant("kb", kb["id"], world["viewer"].user, "delete")
    assert world.request("DELETE", f"/kb/{kb['id']}", world["viewer"]).status_code == 204


def test_create_update_and_reads_write_no_audit_entries_OD_B19(world: World) -> None:
    kb = world.create_kb()
    world.request("PATCH", f"/kb/{kb['id']}", world["owner"], json={"name": "n"})
    world.request("GET", f"/kb/{kb['id']}", world["owner"])
    world.request("GET", "/kb", world["owner"])
    assert world.audit() == []
