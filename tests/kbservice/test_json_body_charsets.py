"""JSON bodies are UTF-8 on the wire (RFC 8259 §8.1), whatever else a sender declares.

A body declared ``application/json; charset=latin-1`` (or UTF-16, or any other character set) was
read as if the declaration were not there: Latin-1 bytes were then called "not valid JSON", and
bytes that happen to be valid UTF-8 too were stored as other characters than the sender meant.
Such a body is now refused with 415, saying to send UTF-8, and changes nothing; ``charset=utf-8``
in any case, quoted or not, is read as before. A body that is not UTF-8 at all is refused with 400
naming the encoding rather than the JSON syntax, and UTF-8 bytes spelling half of a UTF-16 pair
(which no store can hold) are refused like their ``\\ud800`` escape, never answered 500.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kb_harness import World

_FOREIGN_CHARSETS = ["latin-1", "ISO-8859-1", "utf-16", "UTF-16LE", "windows-1252", '"utf-32"', "gibberish"]
_UTF8_SPELLINGS = ["utf-8", "UTF-8", "Utf-8", '"utf-8"', '"UTF-8"', "utf8"]


def _json_routes(world: World) -> list[tuple[str, str, dict[str, Any]]]:
    """Every route that reads a JSON body, with a body it would accept."""
    kb = world.create_kb()["id"]
    agent = world.create_agent()["id"]
    viewer = world["viewer"].user
    return [
        ("POST", "/kb", {"name": "Café"}),
        ("PATCH", f"/kb/{kb}", {"name": "Café"}),
        ("PUT", f"/kb/{kb}", {"name": "Café"}),
        ("POST", f"/kb/{kb}/agents/{agent}", {"priority": 3}),
        ("POST", f"/kb/{kb}/search", {"query": "café"}),
        ("POST", f"/agents/{agent}/retrieve", {"query": "café"}),
        ("POST", "/agents", {"name": "Café"}),
        ("PATCH", f"/agents/{agent}", {"name": "Café"}),
        ("PUT", f"/kb/{kb}/grants/{viewer}", {"permission": "edit"}),
        ("PUT", f"/agents/{agent}/grants/{viewer}", {"permission": "edit"}),
        ("POST", f"/kb/{kb}/documents", {"title": "Café", "content": "crème brûlée"}),
    ]


def _names(world: World) -> tuple[list[str], list[str]]:
    kbs = world.request("GET", "/kb", world["owner"]).json()["knowledgeBases"]
    agents = world.request("GET", "/agents", world["owner"]).json()["agents"]
    return [kb["name"] for kb in kbs], [agent["name"] for agent in agents]


@pytest.mark.parametrize("charset", _FOREIGN_CHARSETS)
def test_a_json_body_declared_in_another_charset_is_415_saying_to_send_utf8_and_changes_nothing_OD_B12(
    world: World, charset: str
) -> None:
    """OD-B12, KB-CRT-01: every route reading JSON refuses a body declared in a character set other
    than UTF-8 with 415, naming the declared charset and saying to send UTF-8; nothing is stored."""
    routes = _json_routes(world)
    before = _names(world)
    for method, path, body in routes:
        codec = charset.strip('"').lower()
        raw = json.dumps(body, ensure_ascii=False).encode(codec if codec != "gibberish" else "utf-8")
        headers = {"Content-Type": f"application/json; charset={charset}"}
        answer = world.request(method, path, world["owner"], content=raw, headers=headers)
        assert answer.status_code == 415, (method, path, answer.text)
        refusal = answer.json()
        assert refusal["error"] == "Unsupported Media Type"
        assert charset.strip('"') in refusal["message"] and "UTF-8" in refusal["message"], refusal
    assert _names(world) == before
    kb = routes[1][1]
    assert world.request("GET", f"{kb}/documents", world["owner"]).json()["total"] == 0
    assert world.audit() == []


def test_a_refused_charset_still_comes_after_the_role_check_KB_CRT_04(world: World) -> None:
    """KB-CRT-04, OD-B12: a viewer is told 403 in the fixed words, whatever the body's charset."""
    answer = world.request(
        "POST",
        "/kb",
        world["viewer"],
        content='{"name": "Café"}'.encode("latin-1"),
        headers={"Content-Type": "application/json; charset=latin-1"},
    )
    assert answer.status_code == 403
    assert answer.json() == {"error": "Forbidden", "message": "Requires member role or higher"}


@pytest.mark.parametrize("charset", _UTF8_SPELLINGS)
def test_utf8_declared_in_any_spelling_is_read_KB_CRT_01(world: World, charset: str) -> None:
    """KB-CRT-01, KB-CRT-05: ``charset=utf-8`` in any case, quoted or not, or as ``utf8``, is read,
    non-ASCII text included; other parameters beside it change nothing."""
    for content_type in (
        f"application/json; charset={charset}",
        f"application/json;charset={charset};v=1",
        f"application/json ; v=1 ;  CHARSET={charset}",
    ):
        answer = world.request(
            "POST",
            "/kb",
            world["member"],
            content='{"name": "Café ☕"}'.encode(),
            headers={"Content-Type": content_type},
        )
        assert answer.status_code == 201, (content_type, answer.text)
        assert answer.json()["knowledgeBase"]["name"] == "Café ☕"


@pytest.mark.parametrize(
    ("label", "raw"),
    [
        ("latin-1 bytes", '{"name": "Café"}'.encode("latin-1")),
        ("utf-16 with a byte order mark", '{"name": "Café"}'.encode("utf-16")),
        ("utf-16 without a byte order mark", '{"name": "Café"}'.encode("utf-16-le")),
        ("utf-32", '{"name": "Café"}'.encode("utf-32")),
    ],
)
def test_a_body_that_is_not_utf8_is_400_naming_the_encoding_OD_B12(world: World, label: str, raw: bytes) -> None:
    """OD-B12: a body sent without a charset but not in UTF-8 is refused with 400 saying the body
    must be UTF-8 (not that its JSON is malformed), and nothing is created."""
    before = _names(world)
    answer = world.request("POST", "/kb", world["owner"], content=raw, headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, (label, answer.text)
    assert answer.json()["error"] == "Bad Request"
    assert "UTF-8" in answer.json()["message"], (label, answer.json())
    assert _names(world) == before


def test_a_utf8_byte_order_mark_is_ignored_KB_CRT_01(world: World) -> None:
    """KB-CRT-01: a body starting with the UTF-8 byte order mark is read as the JSON after it
    (RFC 8259 §8.1 lets a reader ignore it)."""
    answer = world.request(
        "POST",
        "/kb",
        world["member"],
        content=b"\xef\xbb\xbf" + b'{"name": "Marked"}',
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["knowledgeBase"]["name"] == "Marked"


def test_a_surrogate_spelled_in_utf8_bytes_is_400_never_500_OD_B12(world: World) -> None:
    """OD-B12: the bytes ED A0 80 spell half of a UTF-16 pair, which is no character; in a name
    they were let through to the store and answered 500. They are refused with 400 on every route
    that reads JSON, naming UTF-8, and nothing is stored."""
    routes = _json_routes(world)
    before = _names(world)
    for method, path, body in routes:
        raw = json.dumps(body, ensure_ascii=False).encode().replace("é".encode(), b"\xed\xa0\x80")
        raw = raw.replace(b'"edit"', b'"ed\xed\xa0\x80it"').replace(b"3}", b'3, "note": "\xed\xa0\x80"}')
        answer = world.request(method, path, world["owner"], content=raw, headers={"Content-Type": "application/json"})
        assert answer.status_code == 400, (method, path, answer.text)
        assert "UTF-8" in answer.json()["message"], (method, path, answer.json())
    assert _names(world) == before
