"""Hostile clients and careful new users: bodies nested deeper than an answer can be
written, and search time ranges in the first millennium."""

from __future__ import annotations

from typing import Any

import pytest
from kb_harness import World

from notochord.kbservice.validation import MAX_BODY_DEPTH

TOO_DEEP = {
    "error": "Bad Request",
    "message": f"the request body nests arrays or objects more than {MAX_BODY_DEPTH} levels deep; flatten it",
}


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"level": value}
    return value


# ---------------------------------------------------------------------- nesting


@pytest.mark.parametrize("levels", [MAX_BODY_DEPTH, 300], ids=["just-over-the-limit", "300"])
def test_settings_nested_too_deep_are_refused_and_create_nothing_KB_CRT_02_OD_B12(world: World, levels: int) -> None:
    """KB-CRT-02, KB-LST-04, OD-B12: the body (level 1) holding ``settings`` (level 2) nested
    ``levels`` more is refused with 400. Before, a knowledge base with settings nested 256 levels or
    more was stored, its creation answered 500 (the answer could not be written as JSON), and from then
    on every listing of the organization's knowledge bases failed with 500 too."""
    owner = world["owner"]
    response = world.request("POST", "/kb", owner, json={"name": "Deep", "settings": _nested(levels)})

    assert response.status_code == 400, response.text
    assert response.json() == TOO_DEEP
    listed = world.request("GET", "/kb", world["viewer"])
    assert listed.status_code == 200, listed.text
    assert listed.json()["total"] == 0


def test_settings_nested_to_the_limit_are_kept_and_answered_KB_CRT_02(world: World) -> None:
    """KB-CRT-02, KB-GET-01: a body nested exactly to the limit is accepted and shown back whole."""
    settings = {"chunkSize": 500, "labels": _nested(MAX_BODY_DEPTH - 2)}
    created = world.request("POST", "/kb", world["owner"], json={"name": "Deep", "settings": settings})
    assert created.status_code == 201, created.text
    kb = created.json()["knowledgeBase"]["id"]

    assert world.request("GET", f"/kb/{kb}", world["viewer"]).json()["knowledgeBase"]["settings"] == settings


def test_link_permissions_nested_too_deep_link_nothing_and_leave_the_lookups_working_KB_LNK_02_KB_LNK_11(
    world: World,
) -> None:
    """KB-LNK-02, KB-LNK-11, KB-AKB-02: link ``permissions`` nested 300 levels are refused; nothing
    is linked and no audit entry is written. Before, the link was stored with them, and the agent's
    linked knowledge bases and the audit log answered 500 from then on."""
    owner = world["owner"]
    kb = world.create_kb()["id"]
    agent = world.create_agent()["id"]

    response = world.request("POST", f"/kb/{kb}/agents/{agent}", owner, json={"permissions": _nested(300)})

    assert response.status_code == 400, response.text
    assert response.json() == TOO_DEEP
    linked = world.request("GET", f"/agents/{agent}/kb", owner)
    assert linked.status_code == 200, linked.text
    assert linked.json() == {"knowledgeBases": [], "count": 0}
    assert world.audit() == []


# ---------------------------------------------------------------------- time ranges


@pytest.mark.parametrize(
    "time_range",
    [{"from": "0999-06-01"}, {"from": "0900-01-01", "to": "9999-01-01"}, {"from": -30_628_713_600_000}],
    ids=["from-0999", "from-0900-to-9999", "epoch-ms-of-0999-06-01"],
)
def test_a_search_from_a_date_of_the_first_millennium_finds_todays_documents_KB_GEN_01_OD_B07(
    world: World, time_range: dict[str, Any]
) -> None:
    """OD-B07, K-SRCH-06: documents written today lie after 0999-06-01. Before, such a bound became
    the text ``999-…``, which compares after ``2026-…``: the search found nothing, and a range from
    0900 to 1000 was refused as reversed."""
    kb = world.create_kb()["id"]
    added = world.request("POST", f"/kb/{kb}/documents", world["owner"], json={"content": "# Stew\nTomato beef stew"})
    assert added.status_code == 201, added.text

    response = world.request(
        "POST", f"/kb/{kb}/search", world["viewer"], json={"query": "stew", "filters": {"timeRange": time_range}}
    )

    assert response.status_code == 200, response.text
    assert [hit["title"] for hit in response.json()["results"]] == ["Stew"]


def test_a_search_range_within_the_first_millennium_is_not_refused_as_reversed_KB_GEN_01_OD_B07(
    world: World,
) -> None:
    """OD-B07, K-SRCH-06: 0900-01-01 comes before 1000-01-01; the range is valid and holds nothing
    written today."""
    kb = world.create_kb()["id"]
    body = {"query": "stew", "filters": {"timeRange": {"from": "0900-01-01", "to": "1000-01-01"}}}

    response = world.request("POST", f"/kb/{kb}/search", world["viewer"], json=body)

    assert response.status_code == 200, response.text
    assert response.json() == {"results": [], "count": 0}
