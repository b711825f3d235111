"""Every route declares the permission check it asks, and the table below pins them all (STYLE 12).

Adding a route without an entry here fails; so does changing a route's check, and so does a route
that answers an unauthenticated caller with anything but 401.
"""

from __future__ import annotations

import uuid

import pytest
from fastapi.routing import APIRoute
from kb_harness import LiveServer

from notochord.server.app import PREFIX, ROUTERS

EXPECTED: dict[tuple[str, str], str] = {
    ("POST", "/kb"): "org:create",
    ("GET", "/kb"): "org:list",
    ("GET", "/kb/{kb_id}"): "kb:view",
    ("PATCH", "/kb/{kb_id}"): "kb:edit",
    ("PUT", "/kb/{kb_id}"): "kb:edit",
    ("DELETE", "/kb/{kb_id}"): "kb:delete",
    ("POST", "/kb/{kb_id}/agents/{agent_id}"): "kb:edit+agent:edit",
    ("DELETE", "/kb/{kb_id}/agents/{agent_id}"): "kb:edit+agent:edit",
    ("GET", "/kb/{kb_id}/agents"): "kb:view",
    ("POST", "/kb/{kb_id}/documents"): "kb:edit",
    ("POST", "/kb/{kb_id}/documents/batch"): "kb:edit",
    ("GET", "/kb/{kb_id}/documents"): "kb:view",
    ("GET", "/kb/{kb_id}/documents/{document_id}"): "kb:view",
    ("DELETE", "/kb/{kb_id}/documents/{document_id}"): "kb:edit",
    ("POST", "/kb/{kb_id}/search"): "kb:view",
    ("GET", "/kb/{kb_id}/graph"): "kb:view",
    ("POST", "/agents/{agent_id}/retrieve"): "agent:view",
    ("GET", "/kb/{kb_id}/grants"): "kb:grants",
    ("PUT", "/kb/{kb_id}/grants/{user_id}"): "kb:grants",
    ("DELETE", "/kb/{kb_id}/grants/{user_id}"): "kb:grants",
    ("POST", "/agents"): "org:create",
    ("GET", "/agents"): "org:list",
    ("GET", "/agents/{agent_id}"): "agent:view",
    ("PATCH", "/agents/{agent_id}"): "agent:edit",
    ("DELETE", "/agents/{agent_id}"): "agent:delete",
    ("GET", "/agents/{agent_id}/kb"): "agent:view",
    ("GET", "/agents/{agent_id}/grants"): "agent:grants",
    ("PUT", "/agents/{agent_id}/grants/{user_id}"): "agent:grants",
    ("DELETE", "/agents/{agent_id}/grants/{user_id}"): "agent:grants",
    ("GET", "/audit"): "org:audit",
    ("GET", "/usage"): "org:audit",
}


def _routes() -> dict[tuple[str, str], str | None]:
    found: dict[tuple[str, str], str | None] = {}
    for router in ROUTERS:
        for route in router.routes:
            assert isinstance(route, APIRoute), route
            for method in route.methods or ():
                found[(method, route.path)] = (route.openapi_extra or {}).get("x-permission")
    return found


def test_every_route_is_in_the_table_with_the_check_it_declares() -> None:
    assert _routes() == EXPECTED


@pytest.mark.parametrize(("method", "path"), sorted(EXPECTED), ids=lambda v: str(v))
def test_every_route_refuses_an_unauthenticated_caller_with_401(live: LiveServer, method: str, path: str) -> None:
    concrete = path.format(kb_id=uuid.uuid4(), agent_id=uuid.uuid4(), user_id="someone", document_id=uuid.uuid4())
    response = live.client.request(method, PREFIX + concrete, json={"name": "x"})
    assert response.status_code == 401
    assert response.json()["error"] == "Unauthorized"


def test_the_openapi_document_is_served_at_docs_and_lists_every_route(live: LiveServer) -> None:
    assert live.client.get("/docs").status_code == 200
    document = live.client.get("/openapi.json").json()
    listed = {(m.upper(), p.removeprefix(PREFIX)) for p, ops in document["paths"].items() for m in ops}
    assert listed == set(EXPECTED)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert operation["x-permission"] == EXPECTED[(method.upper(), path.removeprefix(PREFIX))]
            assert "401" in operation["responses"]


READ_ONLY_POSTS = {("POST", "/kb/{kb_id}/search"), ("POST", "/agents/{agent_id}/retrieve")}


def test_every_route_that_writes_documents_507_for_a_full_disk(live: LiveServer) -> None:
    """KB-ERR: a full disk answers 507 on any write, and the API description says so where it can happen."""
    document = live.client.get("/openapi.json").json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            key = (method.upper(), path.removeprefix(PREFIX))
            writes = method != "get" and key not in READ_ONLY_POSTS
            assert ("507" in operation["responses"]) == writes, key
