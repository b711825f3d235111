"""The exception subtree, the one status table (STYLE 4, 5, 6), grants (OD-B10 as overridden) and the
agent registry (OD-B18)."""

from __future__ import annotations

import uuid

import pytest
from kb_harness import World

from notochord.errors import NotochordError, StorageError
from notochord.kbservice import errors as kb_errors
from notochord.server.errors import ERROR_TABLE, row_for


def _subtree() -> list[type[kb_errors.KbServiceError]]:
    found: list[type[kb_errors.KbServiceError]] = []
    stack: list[type[kb_errors.KbServiceError]] = [kb_errors.KbServiceError]
    while stack:
        cls = stack.pop()
        found.append(cls)
        stack.extend(cls.__subclasses__())
    return found


def test_every_service_error_is_exported_documented_coded_and_drawn() -> None:
    classes = _subtree()
    assert {c.__name__ for c in classes} == set(kb_errors.__all__)
    assert issubclass(kb_errors.KbServiceError, NotochordError)
    codes = [c.code for c in classes]
    assert len(set(codes)) == len(codes)
    for cls in classes:
        assert cls.__doc__ and cls.code.startswith("E_KB"), cls
        assert cls.__name__ in (kb_errors.__doc__ or ""), cls


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (kb_errors.KbAuthenticationError("x"), 401),
        (kb_errors.KbForbiddenError("x"), 403),
        (kb_errors.KbNotFoundError(), 404),
        (kb_errors.KbConflictError("x"), 409),
        (kb_errors.KbValidationError("x"), 400),
        (kb_errors.KbPayloadTooLargeError("x"), 413),
        (kb_errors.KbUnsupportedMediaTypeError("x"), 415),
        (kb_errors.KbUpstreamError("x"), 502),
        (StorageError("disk"), 500),
        (RuntimeError("bug"), 500),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_the_table_maps_each_exception_to_its_status(error: Exception, status: int) -> None:
    assert row_for(error).status == status


def test_every_concrete_service_error_has_its_own_row() -> None:
    mapped = {row.exception for row in ERROR_TABLE}
    assert set(_subtree()) - {kb_errors.KbServiceError} <= mapped


def test_unknown_routes_and_wrong_methods_use_the_error_shape(world: World) -> None:
    missing = world.request("GET", "/nowhere", world["owner"])
    assert (missing.status_code, missing.content) == (404, b'{"error":"Not found"}')
    wrong = world.request("PATCH", "/kb", world["owner"])
    assert wrong.status_code == 405
    assert wrong.json()["error"] == "Method Not Allowed"


# ---------------------------------------------------------------------- grants


def test_owner_grants_lists_and_removes_and_the_grant_takes_effect(world: World) -> None:
    kb = world.create_kb()["id"]
    viewer = world["viewer"].user
    put = world.request("PUT", f"/kb/{kb}/grants/{viewer}", world["admin"], json={"permission": "edit"})
    assert put.status_code == 200
    grant = put.json()["grant"]
    assert {k: grant[k] for k in ("resource_type", "resource_id", "user_id", "permission", "granted_by")} == {
        "resource_type": "kb",
        "resource_id": kb,
        "user_id": viewer,
        "permission": "edit",
        "granted_by": world["admin"].user,
    }
    assert [g["user_id"] for g in world.request("GET", f"/kb/{kb}/grants", world["owner"]).json()["grants"]] == [viewer]
    assert world.request("PATCH", f"/kb/{kb}", world["viewer"], json={"name": "ok"}).status_code == 200
    for _ in range(2):  # removing is idempotent
        assert world.request("DELETE", f"/kb/{kb}/grants/{viewer}", world["owner"]).status_code == 204
    assert world.request("PATCH", f"/kb/{kb}", world["viewer"], json={"name": "no"}).status_code == 403
    assert world.request("GET", f"/kb/{kb}/grants", world["owner"]).json() == {"grants": []}


@pytest.mark.parametrize(
    "body", [{}, {"permission": "admin"}, {"permission": None}, {"permission": ["view"]}], ids=repr
)
def test_a_grant_needs_view_edit_or_delete(world: World, body: dict[str, object]) -> None:
    kb = world.create_kb()["id"]
    response = world.request("PUT", f"/kb/{kb}/grants/u", world["owner"], json=body)
    assert response.status_code == 400


def test_a_grant_in_another_organization_has_no_effect_OD_B10(world: World) -> None:
    """A member of org B holding a grant on org A's knowledge base still gets 404."""
    kb = world.create_kb()["id"]
    world.grant("kb", kb, world["b_member"].user, "delete")
    response = world.request("DELETE", f"/kb/{kb}", world["b_member"])
    assert (response.status_code, response.content) == (404, b'{"error":"Not found"}')


def test_a_viewer_grant_lets_a_roleless_user_read_but_not_edit(world: World) -> None:
    kb = world.create_kb()["id"]
    assert world.request("GET", f"/kb/{kb}", world["roleless"]).status_code == 403
    world.grant("kb", kb, world["roleless"].user, "view")
    assert world.request("GET", f"/kb/{kb}", world["roleless"]).status_code == 200
    assert world.request("PATCH", f"/kb/{kb}", world["roleless"], json={"name": "x"}).status_code == 403


# ---------------------------------------------------------------------- agents


def test_agent_registry_creates_lists_updates_and_soft_deletes(world: World) -> None:
    agent = world.create_agent(name="Greeter")
    assert (agent["status"], agent["organization_id"]) == ("draft", world.a)
    listed = world.request("GET", "/agents", world["viewer"]).json()
    assert [a["id"] for a in listed["agents"]] == [agent["id"]]
    assert (listed["total"], listed["limit"], listed["offset"]) == (1, 50, 0)
    world.live.tick()
    updated = world.request("PATCH", f"/agents/{agent['id']}", world["member"], json={"status": "published"})
    assert updated.json()["agent"]["status"] == "published"
    assert updated.json()["agent"]["updated_at"] > agent["updated_at"]
    assert world.request("DELETE", f"/agents/{agent['id']}", world["member"]).status_code == 204
    assert world.request("GET", "/agents", world["viewer"]).json()["total"] == 0
    assert world.request("DELETE", f"/agents/{agent['id']}", world["member"]).status_code == 404


@pytest.mark.parametrize(
    "body", [{}, {"name": ""}, {"name": "a", "status": "live"}, {"name": "a", "status": 1}], ids=repr
)
def test_agent_bodies_are_validated(world: World, body: dict[str, object]) -> None:
    assert world.request("POST", "/agents", world["member"], json=body).status_code == 400


def test_an_agent_id_of_another_org_reads_as_missing(world: World) -> None:
    agent = world.create_agent("b_owner")["id"]
    for target in (agent, str(uuid.uuid4())):
        response = world.request("GET", f"/agents/{target}", world["owner"])
        assert (response.status_code, response.content) == (404, b'{"error":"Not found"}')
