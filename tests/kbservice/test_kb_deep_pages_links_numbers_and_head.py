"""Hostile clients and careful new users: deep pages on every backend, what the link
lookups show a caller with grants only, numbers JSON can spell but not hold, HEAD beside GET, and
tokens that name users no store can write down."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import pytest
from kb_harness import API, SECRET, World, bearer

NOT_FOUND = b'{"error":"Not found"}'


# ---------------------------------------------------------------------- pagination


@pytest.mark.parametrize("offset", [2**31, 2**53, 10**40], ids=["past-32-bits", "2**53", "40-digits"])
def test_a_document_page_past_the_last_document_is_empty_whatever_the_offset_OD_B15(world: World, offset: int) -> None:
    """OD-B07, OD-B15: an offset is a whole number of 0 or more, capped at 2**53 and echoed; a page beyond
    the last document is empty, on PostgreSQL as on SQLite (not a server error)."""
    kb = world.create_kb()["id"]
    added = world.request("POST", f"/kb/{kb}/documents", world["owner"], json={"content": "# One\ntext"})
    assert added.status_code == 201, added.text
    response = world.request("GET", f"/kb/{kb}/documents", world["viewer"], params={"offset": str(offset)})
    assert response.status_code == 200, response.text
    assert response.json() == {"documents": [], "total": 1, "limit": 50, "offset": min(offset, 2**53)}


# ---------------------------------------------------------------------- link lookups and grants


def test_an_agents_linked_knowledge_bases_leave_out_those_the_caller_may_not_view_KB_AKB_02_OD_B21(
    world: World,
) -> None:
    """KB-AKB-02, OD-B08, OD-B10, OD-B21: a caller who sees an agent through a grant alone gets only the
    linked knowledge bases it may view, counted as shown; one it would get 403 for is neither listed nor
    counted, so its name, description and settings stay hidden."""
    owner, guest = world["owner"], world["roleless"]
    agent = world.create_agent()["id"]
    shown = world.create_kb(name="Shown")["id"]
    hidden = world.create_kb(name="Payroll", description="salaries", settings={"owner": "hr"})["id"]
    for kb in (shown, hidden):
        assert world.request("POST", f"/kb/{kb}/agents/{agent}", owner, json={"priority": 1}).status_code == 200
    world.grant("agent", agent, guest.user, "view")
    world.grant("kb", shown, guest.user, "view")
    assert world.request("GET", f"/kb/{hidden}", guest).status_code == 403

    response = world.request("GET", f"/agents/{agent}/kb", guest)
    assert response.status_code == 200, response.text
    body = response.json()
    assert [k["id"] for k in body["knowledgeBases"]] == [shown]
    assert body["count"] == 1
    assert "Payroll" not in response.text and "salaries" not in response.text
    # an organization role still sees every linked knowledge base of its organization
    assert world.request("GET", f"/agents/{agent}/kb", world["viewer"]).json()["count"] == 2


def test_a_knowledge_bases_linked_agents_leave_out_those_the_caller_may_not_view_KB_LAG_01_OD_B08(
    world: World,
) -> None:
    """KB-LAG-01/03, OD-B08, OD-B10: a caller who sees a knowledge base through a grant alone gets only
    the linked agents it may view; an agent it would get 403 for is not shown."""
    owner, guest = world["owner"], world["roleless"]
    kb = world.create_kb()["id"]
    granted = world.create_agent(name="Greeter")["id"]
    secret = world.create_agent(name="Internal auditor")["id"]
    for agent in (granted, secret):
        assert world.request("POST", f"/kb/{kb}/agents/{agent}", owner, json={}).status_code == 200
    world.grant("kb", kb, guest.user, "view")
    world.grant("agent", granted, guest.user, "edit")
    assert world.request("GET", f"/agents/{secret}", guest).status_code == 403

    response = world.request("GET", f"/kb/{kb}/agents", guest)
    assert response.status_code == 200, response.text
    assert response.json() == {"agents": [{"id": granted, "name": "Greeter", "status": "draft", "priority": 0}]}
    assert len(world.request("GET", f"/kb/{kb}/agents", world["viewer"]).json()["agents"]) == 2


# ---------------------------------------------------------------------- numbers JSON cannot hold


@pytest.mark.parametrize(
    ("number", "shown"),
    [
        ("1e999", "the number 1e999"),
        ("-1e999", "the number -1e999"),
        ("1E400", "the number 1E400"),
        ("1" + "0" * 300 + "e9", "a number of 303 characters"),
    ],
    ids=["1e999", "-1e999", "1E400", "long-mantissa"],
)
def test_a_number_beyond_a_double_in_settings_is_refused_not_stored_as_null_KB_CRT_02_OD_B12(
    world: World, number: str, shown: str
) -> None:
    """KB-CRT-02, KB-UPD-02, OD-B12: settings are kept as given; a number no JSON reader can hold
    (it overflows to infinity) is refused naming the problem, and nothing is created or changed."""
    owner = world["owner"]
    kb = world.create_kb(settings={"topK": 5})
    raw = f'{{"name": "Huge", "settings": {{"topK": {number}}}}}'.encode()
    headers = {"Content-Type": "application/json"}
    created = world.request("POST", "/kb", owner, content=raw, headers=headers)
    assert created.status_code == 400, created.text
    assert created.json()["error"] == "Bad Request"
    assert created.json()["message"].startswith(f"the request body holds {shown}, which is too large")
    assert "send a finite number" in created.json()["message"]
    updated = world.request("PATCH", f"/kb/{kb['id']}", owner, content=raw, headers=headers)
    assert updated.status_code == 400, updated.text
    listed = world.request("GET", "/kb", owner).json()
    assert listed["total"] == 1
    assert listed["knowledgeBases"][0]["settings"] == {"topK": 5}


def test_a_number_beyond_a_double_in_link_permissions_links_nothing_KB_LNK_02_KB_LNK_11(world: World) -> None:
    """KB-LNK-02, KB-LNK-11, OD-B22: permissions are a JSON object kept as given; one holding a number
    that overflows is refused, with no link and no audit entry."""
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    response = world.request(
        "POST",
        f"/kb/{kb}/agents/{agent}",
        world["owner"],
        content=b'{"permissions": {"maxTokens": 1e999}}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400, response.text
    assert "1e999" in response.json()["message"]
    assert world.request("GET", f"/kb/{kb}/agents", world["owner"]).json() == {"agents": []}
    assert world.audit("knowledge_base.agent_link") == []


def test_large_but_finite_numbers_are_kept_exactly_KB_CRT_02(world: World) -> None:
    """KB-CRT-02: the refusal is for overflow only; a 300-digit whole number and 1e308 are kept."""
    big = int("9" * 300)
    raw = json.dumps({"name": "Big", "settings": {"whole": big, "real": 1e308}}).encode()
    response = world.request("POST", "/kb", world["owner"], content=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 201, response.text
    assert response.json()["knowledgeBase"]["settings"] == {"whole": big, "real": 1e308}


# ---------------------------------------------------------------------- HEAD


@pytest.mark.parametrize("path", ["/kb", "/kb/{kb}", "/kb/{kb}/agents", "/agents", "/kb/{kb}/documents"])
def test_head_is_answered_wherever_get_is_with_the_same_head_and_no_body_KB_LST_01_KB_GET_01(
    world: World, path: str
) -> None:
    """KB-LST-01, KB-GET-01, KB-LAG-01: every GET route answers HEAD (RFC 9110 §9.3.2) with GET's status
    and headers and an empty body, never a 405 naming GET as the method to use."""
    kb = world.create_kb()["id"]
    target = path.format(kb=kb)
    got = world.request("GET", target, world["viewer"])
    head = world.request("HEAD", target, world["viewer"])
    assert head.status_code == got.status_code == 200, head.headers
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == got.headers["content-length"]


def test_head_keeps_every_refusal_of_get_KB_GET_02_KB_GEN_03(world: World) -> None:
    """KB-GET-02, KB-GEN-03, KB-GEN-11: HEAD is refused exactly where GET is: 401 without a token, 404
    for another organization's knowledge base, and 405 on a path that has no GET, whose Allow names HEAD
    only beside a GET."""
    kb = world.create_kb()["id"]
    assert world.request("HEAD", f"/kb/{kb}", None).status_code == 401
    assert world.request("HEAD", f"/kb/{kb}", world["b_owner"]).status_code == 404
    refused = world.request("HEAD", f"/kb/{kb}/search", world["owner"])
    assert refused.status_code == 405
    assert refused.headers["allow"] == "POST"
    allowed = world.request("PUT", "/kb", world["owner"])
    assert allowed.status_code == 405
    assert allowed.headers["allow"] == "GET, HEAD, POST"
    assert allowed.json()["message"].endswith("use GET or POST")


# ---------------------------------------------------------------------- tokens naming unstorable users


def _signed(**claims: Any) -> dict[str, str]:
    return bearer(jwt.encode({"exp": int(time.time()) + 600, **claims}, SECRET, algorithm="HS256"))


@pytest.mark.parametrize(
    ("claims", "named"),
    [
        ({"sub": "ann\x00bob"}, "user id"),
        ({"sub": "ann\nbob"}, "user id"),
        ({"sub": "ann\ud800"}, "user id"),
        ({"sub": "ann", "email": "ann\x00@example.org"}, "email"),
    ],
    ids=["NUL in sub", "newline in sub", "lone surrogate in sub", "NUL in email"],
)
def test_a_token_naming_a_user_the_store_cannot_write_is_401_and_writes_nothing_KB_GEN_03(
    world: World, claims: dict[str, Any], named: str
) -> None:
    """KB-GEN-03, OD-B11, KB-LNK-11: a verified token whose user id or email holds control characters or
    a lone surrogate names no one a grant or an audit entry can record; it is refused with 401 on every
    route (never a 500 half-way through a write), and nothing is linked or audited."""
    kb, agent = world.create_kb()["id"], world.create_agent()["id"]
    headers = _signed(org=world.a, org_role="owner", **claims)
    for method, path in (("GET", "/kb"), ("POST", f"/kb/{kb}/agents/{agent}"), ("DELETE", f"/kb/{kb}")):
        response = world.live.client.request(method, API + path, headers=headers)
        assert response.status_code == 401, (method, path, response.text)
        assert response.json()["error"] == "Unauthorized"
        assert named in response.json()["message"] and "control characters" in response.json()["message"]
    assert world.request("GET", f"/kb/{kb}", world["owner"]).status_code == 200
    assert world.audit() == []


def test_a_token_expiring_beyond_any_date_is_served_alike_on_every_use_KB_GEN_03(world: World) -> None:
    """KB-GEN-03: a correctly signed token whose exp is a whole number too large for a float is answered
    the same on its first use and when it is remembered afterwards, never with a 500."""
    headers = _signed(sub="forever", org=world.a, org_role="viewer", exp=10**400)
    statuses = [world.live.client.get(API + "/kb", headers=headers).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]


@pytest.mark.parametrize(
    "name",
    ["\u200b", "\u200f\u200e", " \u2060\u00a0", "\ufeff\u3000"],
    ids=["zero-width-space", "direction-marks", "word-joiner-and-nbsp", "bom-and-ideographic-space"],
)
def test_a_name_of_invisible_characters_only_is_refused_for_knowledge_bases_and_agents_KB_CRT_02(
    world: World, name: str
) -> None:
    """KB-CRT-02, OD-B12: a name is shown in every list; one made only of zero-width, direction or
    space characters would show as nothing there, so it is refused like an empty one, and nothing
    is created or renamed. A name holding such marks beside letters is kept as given."""
    owner = world["owner"]
    kb = world.create_kb(name="Handbook")
    for method, path in (("POST", "/kb"), ("PATCH", f"/kb/{kb['id']}"), ("POST", "/agents")):
        refused = world.request(method, path, owner, json={"name": name})
        assert refused.status_code == 400, (method, path, refused.text)
        assert refused.json()["message"] == "name must contain a visible character, not only spaces or invisible marks"
    assert [k["name"] for k in world.request("GET", "/kb", owner).json()["knowledgeBases"]] == ["Handbook"]
    assert world.request("GET", "/agents", owner).json()["total"] == 0
    kept = world.request("POST", "/kb", owner, json={"name": "\u200fHandbook 2"})
    assert kept.status_code == 201, kept.text
    assert kept.json()["knowledgeBase"]["name"] == "\u200fHandbook 2"
