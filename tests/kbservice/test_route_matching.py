"""A request is matched against few routes, the busiest first.

With every
router nested in one router for the ``/api/knowledge`` prefix, FastAPI matched a search against
every route before it twice per nesting level (31 route matches for one search). The routers now
sit straight under the application with the prefix, the search, retrieval and documents routers
first. Counted by the route matches FastAPI asks for, never by time.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.routing import APIRoute
from kb_harness import World


@pytest.fixture
def matched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of every API route a request was matched against, in order."""
    seen: list[str] = []
    original = APIRoute.matches

    def matches(self: APIRoute, scope: Any) -> Any:
        seen.append(self.path)
        return original(self, scope)

    monkeypatch.setattr(APIRoute, "matches", matches)
    return seen


def _kb_with_a_document(world: World) -> str:
    kb = world.create_kb(name="Shipping")
    body = {"title": "Parcels", "content": "Parcels leave on Mondays."}
    assert world.request("POST", f"/kb/{kb['id']}/documents", world["owner"], json=body).status_code == 201
    return str(kb["id"])


def test_a_search_is_matched_against_its_own_route_only(world: World, matched: list[str]) -> None:
    """The search route is the first one tried, once to find it and once to run it."""
    kb = _kb_with_a_document(world)
    matched.clear()
    response = world.request("POST", f"/kb/{kb}/search", world["viewer"], json={"query": "parcels"})
    assert response.status_code == 200, response.text
    assert response.json()["count"] == 1
    assert set(matched) == {"/kb/{kb_id}/search"}
    assert len(matched) <= 2, matched


def test_listing_documents_tries_the_retrieval_routes_only_before_its_own(world: World, matched: list[str]) -> None:
    """Listing a knowledge base's documents tries the three retrieval routes, then
    the documents routes up to its own; no route of the other routers."""
    kb = _kb_with_a_document(world)
    matched.clear()
    response = world.request("GET", f"/kb/{kb}/documents?limit=20", world["viewer"])
    assert response.status_code == 200, response.text
    assert {path.split("/")[-1] for path in matched} <= {
        "search",
        "retrieve",
        "graph",
        "batch",
        "documents",
    }
    assert len(matched) <= 10, matched
