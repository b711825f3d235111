"""Hostile clients and careful new users: ids spelled in other ways than a UUID is
written, bodies declared as another media type or compressed, JSON objects naming a key twice, and
query parameters given twice."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

from kb_harness import API, World

NOT_FOUND = b'{"error":"Not found"}'


def _arabic_digits(uuid: str) -> str:
    return "".join(chr(0x660 + int(c)) if c.isdigit() else c for c in uuid)


def _fullwidth_digits(uuid: str) -> str:
    return "".join(chr(0xFF10 + int(c)) if c.isdigit() else c for c in uuid)


def _hyphens_moved_to_the_end(uuid: str) -> str:
    return uuid.replace("-", "") + "----"


def _urn_prefix(uuid: str) -> str:
    return "urn:" + uuid.replace("-", "")


SPELLINGS: dict[str, Callable[[str], str]] = {
    "arabic-indic digits": _arabic_digits,
    "fullwidth digits": _fullwidth_digits,
    "hyphens moved": _hyphens_moved_to_the_end,
    "urn prefix": _urn_prefix,
}


# ---------------------------------------------------------------------- ids


def test_an_id_spelled_otherwise_than_as_a_uuid_is_not_found_on_every_route_OD_B23_KB_GET_02(world: World) -> None:
    """OD-B23, KB-GET-02, KB-LNK-09: an id that is not written as a UUID (8-4-4-4-12 ASCII hex digits)
    is malformed, and a malformed id reads exactly like a missing one. Before, 36 characters that
    Python's UUID parser happened to read (hyphens anywhere, a ``urn:`` prefix, digits of other
    scripts) reached the resource, so one resource answered under many paths, around any rule a
    gateway keeps per path."""
    owner = world["owner"]
    kb = world.create_kb()["id"]
    agent = world.create_agent()["id"]
    added = world.request("POST", f"/kb/{kb}/documents", owner, json={"content": "Turbine manual"})
    assert added.status_code == 201, added.text
    document = added.json()["document"]["id"]
    for spell in SPELLINGS.values():
        for canonical in (kb, agent, document):
            assert len(spell(canonical)) == 36 and spell(canonical) != canonical
        requests: list[tuple[str, str, dict[str, Any]]] = [
            ("GET", f"/kb/{spell(kb)}", {}),
            ("PATCH", f"/kb/{spell(kb)}", {"json": {"name": "Renamed"}}),
            ("POST", f"/kb/{spell(kb)}/search", {"json": {"query": "turbine"}}),
            ("GET", f"/kb/{spell(kb)}/documents", {}),
            ("GET", f"/kb/{kb}/documents/{spell(document)}", {}),
            ("GET", f"/agents/{spell(agent)}", {}),
            ("POST", f"/agents/{spell(agent)}/retrieve", {"json": {"query": "turbine"}}),
            ("POST", f"/kb/{kb}/agents/{spell(agent)}", {"json": {}}),
            ("DELETE", f"/kb/{spell(kb)}", {}),
        ]
        for method, path, kwargs in requests:
            response = world.request(method, path, owner, **kwargs)
            assert (response.status_code, response.content) == (404, NOT_FOUND), (method, path, response.text)

    assert world.request("GET", f"/kb/{kb}/agents", owner).json() == {"agents": []}
    # UUIDs are read without regard to case (RFC 9562), and answered in lower case
    upper = world.request("GET", f"/kb/{kb.upper()}", world["viewer"])
    assert upper.status_code == 200, upper.text
    assert upper.json()["knowledgeBase"] == world.request("GET", f"/kb/{kb}", owner).json()["knowledgeBase"]
    assert upper.json()["knowledgeBase"]["name"] == "Help Center Articles"


# ---------------------------------------------------------------------- media types


def _json_routes(world: World) -> list[tuple[str, str, dict[str, Any]]]:
    """Every route that reads a JSON body, with a body it would accept."""
    kb = world.create_kb()["id"]
    agent = world.create_agent()["id"]
    viewer = world["viewer"].user
    return [
        ("POST", "/kb", {"name": "Declared"}),
        ("PATCH", f"/kb/{kb}", {"name": "Declared"}),
        ("PUT", f"/kb/{kb}", {"name": "Declared"}),
        ("POST", f"/kb/{kb}/agents/{agent}", {"priority": 3}),
        ("POST", f"/kb/{kb}/search", {"query": "anything"}),
        ("POST", f"/agents/{agent}/retrieve", {"query": "anything"}),
        ("POST", "/agents", {"name": "Declared"}),
        ("PATCH", f"/agents/{agent}", {"name": "Declared"}),
        ("PUT", f"/kb/{kb}/grants/{viewer}", {"permission": "edit"}),
        ("PUT", f"/agents/{agent}/grants/{viewer}", {"permission": "edit"}),
    ]


def test_a_json_body_declared_as_another_media_type_is_415_and_changes_nothing_OD_B12(world: World) -> None:
    """OD-B12, KB-CRT-01, KB-LNK-11: a route that reads JSON refuses a body its sender declared to be
    something else with 415, saying to send application/json, and changes nothing. Before, the
    declaration was ignored and the body read as JSON all the same (what an HTML form can send
    without a preflight, and what ``curl -d`` without a Content-Type header sends). The role check
    still comes first (KB-CRT-04)."""
    viewer = world.request(
        "POST",
        "/kb",
        world["viewer"],
        content=b"name=Typed",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert viewer.status_code == 403
    assert viewer.json() == {"error": "Forbidden", "message": "Requires member role or higher"}
    routes = _json_routes(world)
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        for method, path, body in routes:
            raw = json.dumps(body).encode()
            response = world.request(method, path, world["owner"], content=raw, headers={"Content-Type": content_type})
            assert response.status_code == 415, (method, path, response.text)
            refusal = response.json()
            assert refusal["error"] == "Unsupported Media Type"
            assert content_type.split(";")[0] in refusal["message"] and "application/json" in refusal["message"]

    listed = world.request("GET", "/kb", world["owner"]).json()["knowledgeBases"]
    assert [kb["name"] for kb in listed] == ["Help Center Articles"]
    assert world.request("GET", "/agents", world["owner"]).json()["agents"][0]["name"] == "Support bot"
    assert world.audit() == []


def test_json_with_or_without_its_media_type_is_read_KB_CRT_01(world: World) -> None:
    """KB-CRT-01, KB-CRT-05: JSON is accepted when declared as application/json (any case, with a
    charset), as a ``+json`` type, or when no type is declared at all."""
    declared = [None, "application/json", "application/json; charset=utf-8", "Application/JSON", "application/x+json"]
    for content_type in declared:
        headers = {} if content_type is None else {"Content-Type": content_type}
        response = world.request("POST", "/kb", world["member"], content=b'{"name": "Typed"}', headers=headers)
        assert response.status_code == 201, (content_type, response.text)
        assert response.json()["knowledgeBase"]["name"] == "Typed"


# ---------------------------------------------------------------------- content codings


def test_a_compressed_json_body_is_415_naming_the_coding_and_changes_nothing_OD_B12(world: World) -> None:
    """OD-B12, KB-LNK-11: the service does not decode request bodies, so a body sent with a
    Content-Encoding is refused with 415, naming the coding, and ``Accept-Encoding: identity`` says
    what it takes (RFC 9110 §12.5.3). Before, a gzip body was called "not valid JSON", which sends a
    client looking for a syntax error that is not there."""
    routes = _json_routes(world)
    for coding in ("gzip", "br", "identity, gzip"):
        for method, path, body in routes:
            raw = gzip.compress(json.dumps(body).encode())
            headers = {"Content-Type": "application/json", "Content-Encoding": coding}
            response = world.request(method, path, world["owner"], content=raw, headers=headers)
            assert response.status_code == 415, (method, path, response.text)
            assert response.headers["accept-encoding"] == "identity"
            refusal = response.json()
            assert refusal["error"] == "Unsupported Media Type" and coding.split(", ")[-1] in refusal["message"]
    assert world.audit() == []


def test_a_compressed_document_upload_is_415_and_stores_nothing_OD_B07(world: World) -> None:
    """OD-B07: adding a document with a Content-Encoding is refused with 415 whatever the body's
    type, and nothing is stored. Before, a body labelled brotli was stored as it came, and a gzip
    one was called malformed."""
    kb = world.create_kb()["id"]
    owner = world["owner"]
    file = {"file": ("notes.md", b"# Notes\nplain words", "text/markdown")}
    for coding in ("gzip", "br"):
        as_json = world.request(
            "POST",
            f"/kb/{kb}/documents",
            owner,
            content=b'{"content": "plain words"}',
            headers={"Content-Type": "application/json", "Content-Encoding": coding},
        )
        as_upload = world.request(
            "POST", f"/kb/{kb}/documents", owner, files=file, headers={"Content-Encoding": coding}
        )
        as_batch = world.request(
            "POST", f"/kb/{kb}/documents/batch", owner, files=file, headers={"Content-Encoding": coding}
        )
        for response in (as_json, as_upload, as_batch):
            assert response.status_code == 415, response.text
            assert response.headers["accept-encoding"] == "identity"
            assert coding in response.json()["message"]
    assert world.request("GET", f"/kb/{kb}/documents", owner).json()["total"] == 0
    # identity is no coding at all: an uncompressed body declared so is read
    identity = world.request(
        "POST",
        f"/kb/{kb}/documents",
        owner,
        content=b'{"content": "plain words"}',
        headers={"Content-Type": "application/json", "Content-Encoding": "identity"},
    )
    assert identity.status_code == 201, identity.text


# ---------------------------------------------------------------------- duplicate keys


def test_a_key_named_twice_in_one_object_is_400_naming_it_and_creates_nothing_OD_B12(world: World) -> None:
    """OD-B12, KB-CRT-02: JSON leaves the meaning of a key named twice in one object open (RFC 8259
    §4), and readers differ: one takes the first, another the last. A gateway checking one value
    while the service stores the other is the start of many bypasses, so such a body is refused,
    naming the key, and nothing is created. Before, the last value silently won."""
    bodies = {
        "name": b'{"name": "Shown", "name": "Stored"}',
        "chunkSize": b'{"name": "Kept", "settings": {"chunkSize": 500, "chunkSize": 20000}}',
    }
    owner = world["owner"]
    for key, raw in bodies.items():
        headers = {"Content-Type": "application/json"}
        response = world.request("POST", "/kb", owner, content=raw, headers=headers)
        assert response.status_code == 400, response.text
        refusal = response.json()
        assert refusal["error"] == "Bad Request"
        assert f"'{key}'" in refusal["message"] and "once" in refusal["message"]
    assert world.request("GET", "/kb", owner).json()["total"] == 0

    # the same holds for a search body and a document body
    kb = world.create_kb()["id"]
    headers = {"Content-Type": "application/json"}
    search = world.request("POST", f"/kb/{kb}/search", owner, content=b'{"query": "a", "query": "b"}', headers=headers)
    assert search.status_code == 400 and "'query'" in search.json()["message"], search.text
    raw = b'{"content": "a", "content": "b"}'
    document = world.request("POST", f"/kb/{kb}/documents", owner, content=raw, headers=headers)
    assert document.status_code == 400 and "'content'" in document.json()["message"], document.text
    assert world.request("GET", f"/kb/{kb}/documents", owner).json()["total"] == 0

    # a key may appear in several objects of one body, once in each
    settings = {"name": "inner", "labels": [{"name": "a"}, {"name": "b"}]}
    response = world.request("POST", "/kb", owner, json={"name": "Outer", "settings": settings})
    assert response.status_code == 201, response.text
    assert response.json()["knowledgeBase"]["settings"] == settings


# ---------------------------------------------------------------------- repeated query parameters


def test_a_query_parameter_given_twice_is_400_naming_it_OD_B15_OD_B19(world: World) -> None:
    """OD-B15, OD-B19, KB-LST-02: a query parameter the route reads, given more than once, is refused
    with 400 naming it, whichever values were sent. Before, the last value silently won, while a proxy
    or gateway in front may read the first (HTTP parameter pollution), and a client asking for two
    audit actions at once got the entries of one as if they were all."""
    owner = world["owner"]
    kb = world.create_kb()["id"]
    a, b = "knowledge_base.agent_link", "knowledge_base.delete"
    requests = [
        (owner, "/kb?limit=1&limit=2", "limit"),
        (owner, "/kb?offset=0&offset=0", "offset"),
        (owner, "/agents?limit=5&offset=0&limit=5", "limit"),
        (owner, f"/kb/{kb}/documents?offset=1&offset=2", "offset"),
        (owner, f"/kb/{kb}/graph?limit=3&limit=4", "limit"),
        (owner, f"/audit?action={a}&action={b}", "action"),
        (world["superadmin"], f"/audit?organizationId={world.a}&organizationId={world.b}", "organizationId"),
        (owner, "/usage?limit=1&limit=100", "limit"),
    ]
    for who, path, name in requests:
        response = world.request("GET", path, who)
        assert response.status_code == 400, (path, response.text)
        refusal = response.json()
        assert refusal["error"] == "Bad Request"
        assert refusal["message"].startswith(f"{name} is given 2 times"), refusal
        assert "once" in refusal["message"]

    # parameters the route does not read are ignored, repeated or not, and each read one may be sent once
    listed = world.request("GET", "/kb?limit=1&offset=0&tag=a&tag=b", owner)
    assert listed.status_code == 200, listed.text
    assert (listed.json()["limit"], listed.json()["total"]) == (1, 1)


def test_a_member_repeating_an_audit_filter_is_refused_for_the_role_first_OD_B19(world: World) -> None:
    """OD-B19: the audit log's filters are checked after the role, repeated or not: a member gets 403."""
    a, b = "knowledge_base.agent_link", "knowledge_base.delete"
    response = world.request("GET", f"/audit?action={a}&action={b}", world["member"])
    assert response.status_code == 403, response.text


# ---------------------------------------------------------------------- paths and credentials


def test_a_path_with_a_trailing_slash_is_not_found_and_never_redirected_to_the_host_a_client_named_KB_GET_02(
    world: World,
) -> None:
    """KB-GET-02: a route is answered under its one path. A trailing slash used to be redirected
    (307) to ``http://<the Host header>/…``, a Location any client could point at another site,
    for callers without a token too; now it is the service's plain not-found, with no Location."""
    kb = world.create_kb()["id"]
    for method, path, who in [
        ("GET", "/kb/", world["owner"]),
        ("POST", "/kb/", world["owner"]),
        ("GET", f"/kb/{kb}/", world["owner"]),
        ("GET", "/kb/", None),
    ]:
        response = world.request(method, path, who, headers={"Host": "evil.example"}, json={"name": "x"})
        assert response.status_code == 404, (method, path, response.status_code, response.headers)
        assert "location" not in response.headers, (method, path)
        assert "evil.example" not in response.text
    assert [k["id"] for k in world.request("GET", "/kb", world["owner"]).json()["knowledgeBases"]] == [kb]


def test_a_request_with_two_authorization_headers_is_refused_whichever_comes_first_KB_GEN_03(world: World) -> None:
    """KB-GEN-03: ``Authorization`` takes one value. A request naming two (a valid token and
    another) used to be served as whoever came first, so a proxy that checks the last one and the
    service disagreed on who was asking; now it is refused as unauthenticated, in both orders."""
    owner = world["owner"]
    for headers in (
        [("Authorization", owner.headers["Authorization"]), ("Authorization", "Bearer junk")],
        [("Authorization", "Bearer junk"), ("Authorization", owner.headers["Authorization"])],
    ):
        response = world.live.client.request("GET", API + "/kb", headers=headers)
        assert response.status_code == 401, (headers, response.text)
        body = response.json()
        assert body["error"] == "Unauthorized"
        assert body["message"].startswith("Authorization is sent 2 times; send one header")
