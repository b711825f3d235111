"""One rule for ``limit`` on every route that takes one, in a query string or a JSON body.

The rule: ``limit`` is a whole number of 1 or more; anything else (0, negative, a fraction, text) is
refused with 400, naming the parameter and the range, and nothing is echoed that the client did not
send. A limit above the route's maximum returns at most that maximum, and listing responses echo the
value actually applied (OD-B15). The routes: the five listings and the graph (query string), search
and retrieval (JSON body).
"""

from __future__ import annotations

from typing import Any

import pytest
from kb_harness import World

QUERY_ROUTES = ["/kb", "/agents", "/audit", "/usage", "/kb/{kb}/documents", "/kb/{kb}/graph"]
BODY_ROUTES = ["/kb/{kb}/search", "/agents/{agent}/retrieve"]
LISTINGS = ["/kb", "/agents", "/audit", "/usage", "/kb/{kb}/documents"]


def _paths(world: World) -> dict[str, str]:
    return {"kb": world.create_kb()["id"], "agent": world.create_agent()["id"]}


def _assert_refused_naming_limit_and_range(response: Any, shown: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error", "message"}
    assert body["error"] == "Bad Request"
    message: str = body["message"]
    assert message.startswith("limit must be a whole number of 1 or more"), message
    assert shown in message, message


@pytest.mark.parametrize(
    ("value", "shown"), [("0", "'0'"), ("-3", "'-3'"), ("-0", "'-0'")], ids=["zero", "minus-3", "minus-0"]
)
@pytest.mark.parametrize("route", QUERY_ROUTES)
def test_a_query_limit_below_1_is_refused_naming_the_parameter_and_range(
    world: World, route: str, value: str, shown: str
) -> None:
    """KB-LST-02, OD-B15 (as tightened): ``?limit=0`` is a 400, not a page of one echoed as ``limit: 1``."""
    path = route.format(**_paths(world))
    response = world.request("GET", path, world["owner"], params={"limit": value})
    _assert_refused_naming_limit_and_range(response, shown)


@pytest.mark.parametrize(
    ("value", "shown"), [(0, "0"), (-3, "-3"), (-1000, "-1000")], ids=["zero", "minus-3", "minus-1000"]
)
@pytest.mark.parametrize("route", BODY_ROUTES)
def test_a_body_limit_below_1_is_refused_like_the_query_one(world: World, route: str, value: int, shown: str) -> None:
    """OD-B07 as overridden: search and retrieval refuse ``"limit": 0`` and negative limits the way
    the listings refuse ``?limit=0``, instead of clamping them silently to 1."""
    path = route.format(**_paths(world))
    response = world.request("POST", path, world["owner"], json={"query": "lamps", "limit": value})
    _assert_refused_naming_limit_and_range(response, shown)


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ({"limit": "5"}, "the string '5'"),
        ({"limit": 2.5}, "2.5"),
        ({"limit": True}, "true"),
        ({"limit": [3]}, "an array"),
    ],
    ids=["string", "fraction", "boolean", "array"],
)
@pytest.mark.parametrize("route", BODY_ROUTES)
def test_a_body_limit_that_is_not_a_whole_number_is_refused_with_the_same_message(
    world: World, route: str, body: dict[str, Any], shown: str
) -> None:
    """The body's limit is read by the same parser as the query's: the message names the range too,
    and shows the value as JSON spells it, never as a Python type name."""
    path = route.format(**_paths(world))
    response = world.request("POST", path, world["owner"], json={"query": "lamps", **body})
    _assert_refused_naming_limit_and_range(response, shown)
    assert "bool" not in response.json()["message"] and "list" not in response.json()["message"]


@pytest.mark.parametrize("route", LISTINGS)
def test_listings_echo_the_limit_they_applied(world: World, route: str) -> None:
    """KB-LST-04, OD-B15: a limit in range is echoed as sent; one over the maximum returns at most
    100 and says so; no limit means the default of 50."""
    path = route.format(**_paths(world))
    for sent, applied in (("1", 1), ("7", 7), ("100", 100), ("1000", 100), (None, 50)):
        params = {} if sent is None else {"limit": sent}
        response = world.request("GET", path, world["owner"], params=params)
        assert response.status_code == 200, (sent, response.text)
        assert response.json()["limit"] == applied, sent


def test_a_body_limit_of_1_or_more_is_honoured_and_capped_at_100(world: World) -> None:
    kb = world.create_kb()
    for n in range(3):
        world.live.tick()
        added = world.request(
            "POST", f"/kb/{kb['id']}/documents", world["owner"], json={"content": f"Note {n} on lamps."}
        )
        assert added.status_code == 201, added.text
    for sent, count in ((1, 1), (2, 2), (1000, 3)):
        response = world.request(
            "POST", f"/kb/{kb['id']}/search", world["viewer"], json={"query": "lamps", "limit": sent}
        )
        assert response.status_code == 200, response.text
        assert response.json()["count"] == count, sent
