"""What a hostile or careless client can type into the console's addresses and forms is its own
mistake: a page that names the field and what to do, never a server error, and nothing changed.

K-SRCH-01/06 (the search filters, a date alone is the whole day), K-CHG-02 (``since`` of the
changes list), K-CHG-08 (undo from "View changes").
"""

from __future__ import annotations

import html

import pytest
from console_harness import ConsoleServer

# an offset that takes the first moment of the year 1 before it once read as UTC
BEFORE_YEAR_ONE = "0001-01-01T00:00:00+01:00"


@pytest.mark.parametrize("chosen", ["²", "١", "①"], ids=["superscript-two", "arabic-indic-one", "circled-one"])
def test_a_collection_that_is_a_digit_of_another_script_is_refused_beside_its_field(
    console: ConsoleServer, chosen: str
) -> None:
    """K-SRCH-01: ``str.isdigit`` holds for these, but they name no collection id; "١" must not be
    read as collection 1 and "²" must not reach ``int()``."""
    answer = console.client().get("/search", params={"q": "x", "collection": chosen})
    assert answer.status_code == 422, answer.text
    assert "Tick collections from the list." in html.unescape(answer.text)


def test_the_last_day_of_the_calendar_is_a_date_like_any_other(console: ConsoleServer) -> None:
    """K-SRCH-06: a date alone is the whole local day, 9999-12-31 included; it has no next day to
    count back from. Where the local zone puts that day past the year 9999 in UTC, the page says so."""
    answer = console.client().get("/search", params={"to": "9999-12-31"})
    assert answer.status_code in (200, 422), answer.text
    if answer.status_code == 422:
        assert "outside the years 1 to 9999" in html.unescape(answer.text)


def test_a_since_before_the_year_one_in_utc_is_refused_on_the_changes_page(console: ConsoleServer) -> None:
    """K-CHG-02: the page names the moment and the years it must lie in."""
    answer = console.client().get("/changes", params={"since": BEFORE_YEAR_ONE})
    assert answer.status_code == 422, answer.text
    page = html.unescape(answer.text)
    assert f"since '{BEFORE_YEAR_ONE}' falls outside the years 1 to 9999" in page


def test_undo_still_undoes_when_the_kept_since_filter_is_out_of_range(console: ConsoleServer) -> None:
    """K-CHG-08: the filters a form carries back only shape the list shown afterwards; the page says
    the change was undone and names the filter it could not apply."""
    console.space.user.facts.put(predicate="pref.food.like", value="soup")
    change = console.space.changes.list()[0]
    client, token = console.signed_in("/changes")
    answer = client.post(f"/changes/{change.id}/undo", data={"csrf": token, "f_since": BEFORE_YEAR_ONE})
    assert answer.status_code < 500, answer.text
    page = html.unescape(answer.text)
    assert "Undone: 1 change." in page
    assert "falls outside the years 1 to 9999" in page
    assert next(c for c in console.space.changes.list() if c.id == change.id).status == "reverted"
