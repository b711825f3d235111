"""Arguments a careless or hostile tool may send to ``ctx.http.fetch`` and ``ctx.files.read_text``
that Python's own codecs and number conversions refuse: each is refused in the project's words,
before anything is sent or read, never as ``UnicodeEncodeError``, ``ValueError`` or
``OverflowError`` (P-NET-07, P-FILE-01, P-GEN-02).

Over the channel every one of these is valid JSON of the type the method takes: a string holding
a lone surrogate (JavaScript's JSON writes it), a whole number of hundreds of digits, a name of a
codec that turns bytes into bytes.
"""

from __future__ import annotations

import math
from ipaddress import IPv4Address, IPv6Address
from pathlib import Path

import httpx
import pytest
from gem_fixtures import install_gem

import notochord
from notochord.errors import FileError, NetworkRequestError
from notochord.gems.api.http import HttpApi
from notochord.net.hosts import NetworkPermission, parse_host_entry
from notochord.net.policy import UserNetworkRules

pytestmark = pytest.mark.anyio

HOST = "api.example.com"
URL = f"https://{HOST}/forecast"


class Recorder:
    """An external host that answers 200 and keeps what it was sent."""

    def __init__(self) -> None:
        self.sent: list[httpx.Request] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        return httpx.Response(200, text="ok")


async def _public(host: str, port: int) -> list[IPv4Address | IPv6Address]:
    return [IPv4Address("93.184.215.14")]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def http(recorder: Recorder) -> HttpApi:
    """``ctx.http`` of a gem that lists ``api.example.com``, with the user's rules open."""
    entry, problem = parse_host_entry(HOST, allow_local_network=False)
    assert entry is not None, problem
    return HttpApi(
        gem_id="weather",
        permission=NetworkPermission(hosts=(entry,), allow_local_network=False, reason="forecasts"),
        rules=UserNetworkRules,
        resolver=_public,
        transport=httpx.MockTransport(recorder.handle),
    )


async def test_a_text_body_holding_a_lone_surrogate_is_refused_before_it_is_sent(
    http: HttpApi, recorder: Recorder
) -> None:
    """P-NET-07: the refusal names the half pair and where it is, and says to send bytes instead."""
    with pytest.raises(NetworkRequestError, match=r"lone surrogate \(U\+D800.*at character 5.*send the body as bytes"):
        await http.fetch(URL, {"method": "POST", "body": "city=\ud800"})
    assert recorder.sent == []


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (math.nan, "a finite number"),
        (math.inf, "a finite number"),
        (10**400, "more than 64 bits"),
        (-(10**5000), "more than 64 bits"),
    ],
    ids=["nan", "infinity", "400 digits", "5000 digits"],
)
async def test_a_header_given_as_a_number_no_header_can_spell_is_refused(
    http: HttpApi, recorder: Recorder, value: float, words: str
) -> None:
    """P-NET-07: a number that is no finite value, or too long for Python to write as text, is refused
    in words naming the header."""
    with pytest.raises(NetworkRequestError, match=f"fetch header 'X-Count'.*{words}"):
        await http.fetch(URL, {"headers": {"X-Count": value}})
    assert recorder.sent == []


async def test_a_header_given_as_an_ordinary_number_is_sent_as_its_digits(http: HttpApi, recorder: Recorder) -> None:
    """P-NET-07: the bound leaves the numbers a header holds alone."""
    await http.fetch(URL, {"headers": {"X-Count": 2**63 - 1, "X-Ratio": 0.5}})
    [sent] = recorder.sent
    assert (sent.headers["x-count"], sent.headers["x-ratio"]) == (str(2**63 - 1), "0.5")


async def test_a_timeout_larger_than_any_float_leaves_the_bound_in_force(http: HttpApi, recorder: Recorder) -> None:
    """P-NET-07: a timeout may only shorten the bound; one past what a float holds is the bound."""
    response = await http.fetch(URL, timeout=10**400)
    assert response.status == 200
    assert len(recorder.sent) == 1


async def test_a_negative_timeout_too_long_to_write_is_refused_in_words(http: HttpApi, recorder: Recorder) -> None:
    """P-NET-07: the refusal quotes the value as far as it can be written, instead of failing to."""
    with pytest.raises(NetworkRequestError, match="fetch timeout must be a positive number of seconds"):
        await http.fetch(URL, timeout=-(10**5000))
    assert recorder.sent == []


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    folder = tmp_path / "chat"
    folder.mkdir()
    (folder / "notes.txt").write_bytes(b"abc\\")  # no punycode: a backslash is no digit of it
    return folder


@pytest.mark.parametrize(
    "encoding",
    ["hex", "rot13", "undefined", "no-such-encoding", "utf\x00-8", "utf-\ud8008"],
    ids=["bytes to bytes", "text to text", "decodes nothing", "unknown", "nul", "lone surrogate"],
)
async def test_read_text_refuses_a_name_that_is_no_text_encoding(
    space: notochord.Space, gems_root: Path, chat: Path, encoding: str
) -> None:
    """P-FILE-01, P-GEN-02: ``read_text`` takes the name of a text encoding; anything else is refused
    as ``E_FILE`` saying what to give, before the file is read."""
    install_gem(space, gems_root, "reader", [])
    ctx = space.gems.context("reader", conversation=chat)
    with pytest.raises(FileError, match="read_text needs the name of a text encoding such as 'utf-8'"):
        await ctx.files.read_text("workspace:notes.txt", encoding)


async def test_read_text_refuses_bytes_its_encoding_cannot_decode_in_words(
    space: notochord.Space, gems_root: Path, chat: Path
) -> None:
    """P-FILE-01: every codec's refusal is the same ``E_FILE``, also those that raise ``UnicodeError``
    itself rather than ``UnicodeDecodeError``."""
    install_gem(space, gems_root, "reader", [])
    ctx = space.gems.context("reader", conversation=chat)
    with pytest.raises(FileError, match=r"workspace:notes\.txt is not punycode text"):
        await ctx.files.read_text("workspace:notes.txt", "punycode")
    assert await ctx.files.read_text("workspace:notes.txt", "latin-1") == "abc\\"
