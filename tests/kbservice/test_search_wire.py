"""Search and retrieval answer, byte for byte, what their response models write.

The two routes write
their bodies straight from the service's passages instead of building and re-validating a response
model per passage, and read the knowledge base, the caller's grant and the passages in one snapshot.
For a table of searches — limits clamped, filters, the empty query, text in every script and with
control characters, unknown keys ignored — the body over real HTTP is compared with what
``SearchResults`` / ``RetrieveResults`` (the routes' declared ``response_model``) write for the
passages the service returns; refused requests keep the project's error bodies exactly (OD-B05,
OD-B06, OD-B07, OD-B12, OD-B16, OD-B23). Both backends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kb_harness import Caller, World

from notochord.kbservice import Actor
from notochord.kbservice.validation import JsonBody
from notochord.server.routes.models import RetrieveResults, SearchResults, passage_out, retrieved_passage_out

_DOCUMENTS = [
    ("Heat pump manual", "The heat pump defrost cycle runs in winter. Reset the firmware with the blue button."),
    ("Notes", "Café crème, naïve façade — “quotes”, 'single', a \\ backslash and a\ttab. 中文的热泵说明书。 🚀 pump"),
    ("Shipping", "Parcels leave on Mondays. A refund for a parcel takes five days; contact support at weekends."),
    ("Control", "Line one\nLine two\r\nwith a bell \x07, a form feed \x0c and DEL \x7f, about the pump"),
    ("Long", " ".join(["pump filter warranty install outdoor noise fan lamp"] * 60)),
]

SEARCHES: list[dict[str, Any]] = [
    {"query": "pump"},
    {"query": "pump", "limit": 1},
    {"query": "pump", "limit": 2},
    {"query": "pump", "limit": 1000},
    {"query": ""},
    {"query": "   ", "limit": 3},
    {"query": "热泵"},
    {"query": "café façade"},
    {"query": "🚀"},
    {"query": "nothing matches this"},
    {"query": "pump", "filters": {"timeRange": {"from": "2026-01-01"}}},
    {"query": "pump", "filters": {"timeRange": {"to": "2000-01-01"}}},
    {"query": "pump", "filters": None},
    {"query": "pump", "group_by": "document", "limit": 2},
    {"query": "parcel refund weekends", "other": "ignored"},
]

ERRORS: list[tuple[bytes, int, bytes]] = [
    (
        b'{"query": "pump", "limit": "5"}',
        400,
        b'{"error":"Bad Request","message":"limit must be a whole number of 1 or more, not the string \'5\'; '
        b'send a number such as 10 (at most 100 items are returned)"}',
    ),
    (
        b'{"query": "pump", "limit": true}',
        400,
        b'{"error":"Bad Request","message":"limit must be a whole number of 1 or more, not true; '
        b'send a number such as 10 (at most 100 items are returned)"}',
    ),
    (b'{"query": 5}', 400, b'{"error":"Bad Request","message":"query is required and must be a string"}'),
    (b"", 400, b'{"error":"Bad Request","message":"query is required and must be a string"}'),
    (b"{", 400, b'{"error":"Bad Request","message":"the request body is not valid JSON"}'),
    (b"[]", 400, b'{"error":"Bad Request","message":"the request body must be a JSON object"}'),
    (
        b'{"query": "pump", "limit": NaN}',
        400,
        b'{"error":"Bad Request","message":"the request body holds NaN, which is not a JSON number; '
        b'send a number or null"}',
    ),
    (
        b'{"query": "pump", "limit": -Infinity}',
        400,
        b'{"error":"Bad Request","message":"the request body holds -Infinity, which is not a JSON number; '
        b'send a number or null"}',
    ),
    (
        b'{"query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        400,
        b'{"error":"Bad Request","message":"the request body nests arrays or objects more than 64 levels deep; '
        b'flatten it"}',
    ),
    (
        b'{"query": "pump", "filters": {"other": 1}}',
        400,
        b'{"error":"Bad Request","message":"unknown filter other; the filter offered is timeRange"}',
    ),
    (b'{"query": "pump", "filters": []}', 400, b'{"error":"Bad Request","message":"filters must be a JSON object"}'),
]


def _actor(world: World, who: Caller) -> Actor:
    authenticator = world.live.app.state.authenticator
    actor: Actor = authenticator.authenticate(authorization=who.headers["Authorization"], headers={}, peer=None)
    return actor


def _seed(world: World) -> tuple[str, str, str]:
    """Two knowledge bases of organization A, both linked to one agent (priorities 1 and 3)."""
    first, second = world.create_kb(name="First"), world.create_kb(name="Second")
    for n, (title, content) in enumerate(_DOCUMENTS):
        target = first if n % 2 == 0 else second
        body = {"title": title, "content": content}
        added = world.request("POST", f"/kb/{target['id']}/documents", world["owner"], json=body)
        assert added.status_code == 201, added.text
        world.live.tick()
    agent = world.create_agent()
    for kb, priority in ((first, 1), (second, 3)):
        linked = world.request(
            "POST", f"/kb/{kb['id']}/agents/{agent['id']}", world["owner"], json={"priority": priority}
        )
        assert linked.status_code == 200, linked.text
    return first["id"], second["id"], agent["id"]


def test_every_search_answers_the_bytes_of_its_response_model(world: World) -> None:
    """For each search of the table, the HTTP body equals ``SearchResults`` of the passages
    the service finds for the same caller and body, and is served as ``application/json``."""
    first, _, _ = _seed(world)
    viewer = world["viewer"]
    service = world.live.service
    found_any = False
    for body in SEARCHES:
        response = world.request("POST", f"/kb/{first}/search", viewer, json=body)
        assert response.status_code == 200, (body, response.text)
        assert response.headers["content-type"] == "application/json"
        passages = service.retrieval.search(actor=_actor(world, viewer), kb_id=first, body=JsonBody.of(body))
        expected = SearchResults(results=[passage_out(p) for p in passages], count=len(passages))
        assert response.content == expected.model_dump_json(by_alias=True).encode(), body
        found_any = found_any or bool(passages)
    assert found_any


def test_every_retrieval_answers_the_bytes_of_its_response_model(world: World) -> None:
    """Retrieval through an agent linked to two knowledge bases answers ``RetrieveResults``
    of the fused passages, each tagged with its knowledge base and link priority."""
    _, _, agent = _seed(world)
    member = world["member"]
    service = world.live.service
    for body in SEARCHES:
        fields = {k: v for k, v in body.items() if k != "filters"}
        response = world.request("POST", f"/agents/{agent}/retrieve", member, json=fields)
        assert response.status_code == 200, (fields, response.text)
        passages = service.retrieval.retrieve(actor=_actor(world, member), agent_id=agent, body=JsonBody.of(fields))
        expected = RetrieveResults(passages=[retrieved_passage_out(p) for p in passages], count=len(passages))
        assert response.content == expected.model_dump_json(by_alias=True).encode(), fields
    both = world.request("POST", f"/agents/{agent}/retrieve", member, json={"query": "pump", "limit": 100}).json()
    assert {p["knowledgeBase"]["name"] for p in both["passages"]} == {"First", "Second"}


@pytest.mark.parametrize(("raw", "status", "body"), ERRORS)
def test_a_malformed_search_keeps_its_error_body(world: World, raw: bytes, status: int, body: bytes) -> None:
    """Bad input is still a 400 in the project's error shape, never a 5xx, on both routes."""
    kb = world.create_kb()
    agent = world.create_agent()
    headers = {"content-type": "application/json"}
    for path in (f"/kb/{kb['id']}/search", f"/agents/{agent['id']}/retrieve"):
        response = world.request("POST", path, world["owner"], content=raw, headers=headers)
        assert (response.status_code, response.content) == (status, body), path


def test_refusals_keep_their_order_and_bodies(world: World) -> None:
    """401 before anything, 404 (hidden or missing, one body) before 403, 403 before the
    body is read (OD-B12, OD-B16, OD-B23)."""
    kb = world.create_kb()
    path = f"/kb/{kb['id']}/search"
    bad = b"{"
    headers = {"content-type": "application/json"}
    anonymous = world.request("POST", path, None, content=bad, headers=headers)
    assert anonymous.status_code == 401
    assert anonymous.content == (
        b'{"error":"Unauthorized","message":"Missing bearer token: send Authorization: Bearer <token>"}'
    )
    not_found = b'{"error":"Not found"}'
    for who, target in (("b_owner", path), ("owner", "/kb/00000000-0000-4000-8000-000000000000/search")):
        response = world.request("POST", target, world[who], content=bad, headers=headers)
        assert (response.status_code, response.content) == (404, not_found), who
    refused = world.request("POST", path, world["roleless"], content=bad, headers=headers)
    assert refused.status_code == 403
    assert json.loads(refused.content) == {
        "error": "Forbidden",
        "message": "Requires view permission on this knowledge base",
    }
