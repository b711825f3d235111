"""A URL httpx cannot parse is refused in the project's words, never in httpx's (P-NET-10, P-NET-11, OD-P05).

A gem's ``ctx.http.fetch``, a document URL sent to the REST service or typed into the console, and a
server's redirect all reach the same check. When httpx refuses to parse the URL, the words name what
is wrong (its port, an IPv6 address left open, its host, its length) in plain words, never as
``Invalid port: ':1'``; httpx's exception is kept as the cause, for the log.
"""

from __future__ import annotations

import re

import httpx
import pytest

from notochord.errors import NetworkRequestError
from notochord.net.urls import check_redirect, check_url

HTTPX_WORDING = re.compile(r"Invalid (port|IPv4|IPv6|IDNA|URL|non-printable)|URL too long|Relative URLs|For absolute")
UNREAD = "it cannot be read as a URL"
OPEN_BRACKET = f"{UNREAD}: an IPv6 address in its host is not closed with ']' (write it as http://[::1]:8080/)"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        pytest.param("http://[::1", OPEN_BRACKET, id="ipv6-left-open"),
        pytest.param("http://[::1/items", OPEN_BRACKET, id="ipv6-left-open-with-path"),
        pytest.param("http://[::1]:x/", f"{UNREAD}: its port 'x' is not a number from 1 to 65535", id="port-word"),
        pytest.param("http://a:1:2/", f"{UNREAD}: its port '1:2' is not a number from 1 to 65535", id="two-ports"),
        pytest.param("http://1.2.3.999/", "'1.2.3.999' is not a valid IPv4 address", id="ipv4-out-of-range"),
        pytest.param("http://[1::2::3]/", "'1::2::3' is not a valid IPv6 address", id="ipv6-two-gaps"),
        pytest.param(
            "http://a\u0300.example/", "'a\u0300.example' is not a valid internationalized host name", id="idna"
        ),
    ],
)
def test_a_url_httpx_cannot_parse_is_refused_naming_what_is_wrong(url: str, problem: str) -> None:
    with pytest.raises(NetworkRequestError) as caught:
        check_url(url)
    assert str(caught.value) == f"malformed URL {url!r}: {problem}"
    assert isinstance(caught.value.__cause__, httpx.InvalidURL)


def test_a_url_past_httpxs_length_limit_is_refused_naming_its_length_not_httpxs_words() -> None:
    url = "http://api.example.test/" + "a" * 70_000
    with pytest.raises(NetworkRequestError) as caught:
        check_url(url)
    said = str(caught.value)
    assert said.endswith(f"… ({len(url)} characters): {UNREAD}: it is longer than 65536 characters"), said
    assert HTTPX_WORDING.search(said) is None, said


def test_a_password_before_an_address_left_open_is_not_repeated() -> None:
    with pytest.raises(NetworkRequestError) as caught:
        check_url("http://user:s3cr3t-pw@[::1")
    assert str(caught.value) == f"malformed URL 'http://***@[::1': {OPEN_BRACKET}"


@pytest.mark.parametrize(
    ("location", "problem"),
    [
        pytest.param("http://[::1", OPEN_BRACKET, id="ipv6-left-open"),
        pytest.param("//[::1", OPEN_BRACKET, id="scheme-relative-ipv6-left-open"),
        pytest.param(
            "http://api.example.test:abc/", f"{UNREAD}: its port 'abc' is not a number from 1 to 65535", id="port"
        ),
    ],
)
def test_a_redirect_httpx_cannot_join_is_refused_naming_the_server_and_what_is_wrong(
    location: str, problem: str
) -> None:
    current = check_url("http://api.example.test/start")
    with pytest.raises(NetworkRequestError) as caught:
        check_redirect(current, location)
    assert str(caught.value) == (
        f"api.example.test redirected to a malformed URL {location!r}: {problem}; the redirect was not followed"
    )


class _RefusingURL(httpx.URL):
    """httpx's URL, refusing every URL in words this project has never seen."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise httpx.InvalidURL("Unheard-of wording: 'x'")


def test_httpxs_words_not_known_here_become_the_general_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """Words httpx may use one day are never passed on: the refusal says the URL cannot be read."""
    monkeypatch.setattr(httpx, "URL", _RefusingURL)
    with pytest.raises(NetworkRequestError) as caught:
        check_url("http://api.example.test/")
    assert str(caught.value) == f"malformed URL 'http://api.example.test/': {UNREAD}"
