"""The IDOR matrix: every endpoint × every kind of caller, with the expected status and exact body.

Callers: each organization role of org A, a viewer holding ``delete`` grants on the resources, a
caller with no organization role, a member of another organization, a platform superadmin living in
another organization, and four unauthenticated callers (no token, expired token, ``alg: none``,
wrong signing key). Every case runs on a fresh knowledge base and agent of org A.
(KB-GEN-03/09/10/11, KB-CRT-03/04, KB-UPD-05, KB-DEL-02, KB-LNK-08/09, KB-ULK-08/09, OD-B07…B10, OD-B13.)
Documents, search and the graph follow the knowledge base's rules (writes need ``edit``, reads
``view``); retrieval follows the agent's ``view``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kb_harness import (
    WRONG_SECRET,
    Caller,
    LiveServer,
    World,
    bearer,
    caller,
    expired_token,
    new_world,
    token_for,
    unsigned_token,
)

NOT_FOUND = b'{"error":"Not found"}'

CALLERS = (
    "owner",
    "admin",
    "member",
    "viewer",
    "viewer+grant",
    "roleless",
    "other-org",
    "superadmin",
    "no-token",
    "expired",
    "alg-none",
    "wrong-key",
)
UNAUTHENTICATED = {"no-token", "expired", "alg-none", "wrong-key"}

ROLE = "Requires an organization role (viewer or higher)"
MEMBER = "Requires member role or higher"
ADMIN = "Requires admin role or higher"


def _row(ok: int, **overrides: int | str) -> dict[str, int | str]:
    """Expected outcome per caller: a status, or a 403 message; unauthenticated callers always get 401."""
    row: dict[str, int | str] = dict.fromkeys(CALLERS, ok)
    row.update(dict.fromkeys(UNAUTHENTICATED, 401))
    row.update({k.replace("_", "-").replace("-grant", "+grant"): v for k, v in overrides.items()})
    return row


def _resource(noun: str, ok: int, level: str) -> dict[str, int | str]:
    need = f"Requires {level} permission on this {noun}"
    viewer: int | str = ok if level == "view" else need
    return _row(ok, viewer=viewer, viewer_grant=ok, roleless=need, other_org=404)


def _grants(ok: int) -> dict[str, int | str]:
    return _row(ok, member=ADMIN, viewer=ADMIN, viewer_grant=ADMIN, roleless=ADMIN, other_org=404)


# (method, path, json body, permission label, expected per caller)
ENDPOINTS: list[tuple[str, str, dict[str, Any] | None, dict[str, int | str]]] = [
    ("POST", "/kb", {"name": "n"}, _row(201, viewer=MEMBER, viewer_grant=MEMBER, roleless=MEMBER)),
    ("GET", "/kb", None, _row(200, roleless=ROLE)),
    ("GET", "/kb/{kb}", None, _resource("knowledge base", 200, "view")),
    ("PATCH", "/kb/{kb}", {"name": "n"}, _resource("knowledge base", 200, "edit")),
    ("PUT", "/kb/{kb}", {"name": "n"}, _resource("knowledge base", 200, "edit")),
    ("DELETE", "/kb/{kb}", None, _resource("knowledge base", 204, "delete")),
    ("POST", "/kb/{kb}/agents/{agent}", {"priority": 1}, _resource("knowledge base", 200, "edit")),
    ("DELETE", "/kb/{kb}/agents/{agent}", None, _resource("knowledge base", 200, "edit")),
    ("GET", "/kb/{kb}/agents", None, _resource("knowledge base", 200, "view")),
    (
        "POST",
        "/kb/{kb}/documents",
        {"content": "# Refunds\n\nWithin 30 days."},
        _resource("knowledge base", 201, "edit"),
    ),
    ("GET", "/kb/{kb}/documents", None, _resource("knowledge base", 200, "view")),
    ("GET", "/kb/{kb}/documents/{doc}", None, _resource("knowledge base", 200, "view")),
    ("DELETE", "/kb/{kb}/documents/{doc}", None, _resource("knowledge base", 204, "edit")),
    ("POST", "/kb/{kb}/search", {"query": "refunds"}, _resource("knowledge base", 200, "view")),
    ("GET", "/kb/{kb}/graph", None, _resource("knowledge base", 200, "view")),
    ("POST", "/agents/{agent}/retrieve", {"query": "refunds"}, _resource("agent", 200, "view")),
    ("GET", "/kb/{kb}/grants", None, _grants(200)),
    ("PUT", "/kb/{kb}/grants/someone", {"permission": "view"}, _grants(200)),
    ("DELETE", "/kb/{kb}/grants/someone", None, _grants(204)),
    ("POST", "/agents", {"name": "n"}, _row(201, viewer=MEMBER, viewer_grant=MEMBER, roleless=MEMBER)),
    ("GET", "/agents", None, _row(200, roleless=ROLE)),
    ("GET", "/agents/{agent}", None, _resource("agent", 200, "view")),
    ("PATCH", "/agents/{agent}", {"status": "published"}, _resource("agent", 200, "edit")),
    ("DELETE", "/agents/{agent}", None, _resource("agent", 204, "delete")),
    ("GET", "/agents/{agent}/kb", None, _resource("agent", 200, "view")),
    ("GET", "/agents/{agent}/grants", None, _grants(200)),
    ("PUT", "/agents/{agent}/grants/someone", {"permission": "edit"}, _grants(200)),
    ("DELETE", "/agents/{agent}/grants/someone", None, _grants(204)),
    (
        "GET",
        "/audit",
        None,
        _row(200, member=ADMIN, viewer=ADMIN, viewer_grant=ADMIN, roleless=ADMIN, other_org=ADMIN),
    ),
    (
        "GET",
        "/usage",
        None,
        _row(200, member=ADMIN, viewer=ADMIN, viewer_grant=ADMIN, roleless=ADMIN, other_org=ADMIN),
    ),
]


@pytest.fixture(scope="module")
def matrix_world(live: LiveServer) -> World:
    world = new_world(live)
    n = world.a
    world.callers["viewer+grant"] = caller(f"granted-viewer-{n}", world.a, "viewer")
    world.callers["other-org"] = world.callers["b_member"]
    world.callers["no-token"] = Caller("anonymous", world.a, {})
    world.callers["expired"] = Caller("late", world.a, bearer(expired_token("late", world.a)))
    world.callers["alg-none"] = Caller("forger", world.a, bearer(unsigned_token("forger", world.a)))
    world.callers["wrong-key"] = Caller(
        "forger", world.a, bearer(token_for("forger", world.a, "owner", secret=WRONG_SECRET))
    )
    return world


def _fresh(world: World) -> dict[str, str]:
    kb = world.create_kb()["id"]
    agent = world.create_agent()["id"]
    granted = world["viewer+grant"].user
    world.grant("kb", kb, granted, "delete")
    world.grant("agent", agent, granted, "delete")
    added = world.request("POST", f"/kb/{kb}/documents", world["owner"], json={"content": "Refunds within 30 days."})
    assert added.status_code == 201, added.text
    linked = world.request("POST", f"/kb/{kb}/agents/{agent}", world["owner"], json={})
    assert linked.status_code == 200, linked.text
    return {"kb": kb, "agent": agent, "doc": added.json()["document"]["id"]}


def _cases() -> list[Any]:
    return [
        pytest.param(method, path, body, who, expected[who], id=f"{method} {path} as {who}")
        for method, path, body, expected in ENDPOINTS
        for who in CALLERS
    ]


@pytest.mark.parametrize(("method", "path", "body", "who", "expected"), _cases())
def test_endpoint_answers_each_caller_as_the_matrix_says(
    matrix_world: World, method: str, path: str, body: dict[str, Any] | None, who: str, expected: int | str
) -> None:
    ids = _fresh(matrix_world)
    response = matrix_world.request(method, path.format(**ids), matrix_world[who], json=body)
    status = 403 if isinstance(expected, str) else expected
    assert response.status_code == status, response.text
    if isinstance(expected, str):
        assert response.json() == {"error": "Forbidden", "message": expected}
    elif status == 404:
        assert response.content == NOT_FOUND
    elif status == 401:
        payload = response.json()
        assert set(payload) == {"error", "message"} and payload["error"] == "Unauthorized"
    elif status == 204:
        assert response.content == b""
    else:
        assert "error" not in response.json()
    if who == "other-org" and status == 200 and path in {"/kb", "/agents"}:
        listed = response.json()["knowledgeBases" if path == "/kb" else "agents"]
        assert ids["kb"] not in {i["id"] for i in listed} and ids["agent"] not in {i["id"] for i in listed}


RESOURCE_ENDPOINTS = [(m, p, b) for m, p, b, _ in ENDPOINTS if "{" in p]


@pytest.mark.parametrize(
    ("method", "path", "body"), RESOURCE_ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in RESOURCE_ENDPOINTS]
)
def test_another_orgs_resource_is_byte_identical_to_a_never_existing_one(
    matrix_world: World, method: str, path: str, body: dict[str, Any] | None
) -> None:
    """KB-LNK-09, OD-B13, OD-B23: same status, same headers that matter, same bytes."""
    ids = _fresh(matrix_world)
    never = {"kb": str(uuid.uuid4()), "agent": str(uuid.uuid4()), "doc": str(uuid.uuid4())}
    malformed = {"kb": "x' OR 1=1 --", "agent": "not-a-uuid", "doc": "1"}
    outsider = matrix_world["other-org"]
    responses = [matrix_world.request(method, path.format(**i), outsider, json=body) for i in (ids, never, malformed)]
    for response in responses:
        assert response.status_code == 404
        assert response.content == NOT_FOUND
        assert response.headers["content-type"] == "application/json"
        assert response.headers["content-length"] == str(len(NOT_FOUND))
