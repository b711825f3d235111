"""A gem's ``ctx.http`` against a local server the user allowed, answering in hostile ways (P-NET-10,
P-NET-11, P-NET-16, P-NET-17).

The gem only ever sees a :class:`~notochord.errors.NetworkError` in words, or a response it can read;
memory stays within the response bound, and nothing the gem or the server wrote as a password comes
back in an error message.
"""

from __future__ import annotations

import tracemalloc
import zlib

import pytest
from gemnet_servers import RouteServer
from gemnet_support import InstallGem

import notochord
from notochord.errors import NetworkRequestError
from notochord.gems.api.http import HttpApi
from notochord.net.transport import RequestLimits
from notochord.net.user_rules import NetworkRulesStore

pytestmark = pytest.mark.anyio

LIMIT = 1_000_000


@pytest.fixture
def ctx_http(
    net_space: notochord.Space, install_gem: InstallGem, rules: NetworkRulesStore, server: RouteServer
) -> HttpApi:
    """``ctx.http`` of a gem with the local-network flag, the user having listed the server."""
    net_space.gems.services.http_limits = RequestLimits(max_response_bytes=LIMIT)
    rules.add_local(f"127.0.0.1:{server.port}")
    http = net_space.gems.context(install_gem("local-reader", hosts=[], allow_local=True)).http
    assert isinstance(http, HttpApi)
    return http


def _gzip_of_zeros(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    return b"".join(packer.compress(block) for _ in range(size // len(block))) + packer.flush()


async def test_a_gzip_bomb_reaches_the_gem_as_too_large_without_filling_memory(
    ctx_http: HttpApi, server: RouteServer
) -> None:
    """64 KB of gzip that expand to 64 MB: refused at the 1 MB bound, decoded no further than it."""
    server.route("/bomb", _gzip_of_zeros(64 << 20), headers=(("Content-Encoding", "gzip"),))
    tracemalloc.start()
    try:
        with pytest.raises(NetworkRequestError, match=f"larger than the limit of {LIMIT} bytes"):
            await ctx_http.fetch(server.url("/bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * LIMIT


async def test_a_charset_naming_a_codec_that_is_no_character_set_reads_as_utf8(
    ctx_http: HttpApi, server: RouteServer
) -> None:
    server.route("/odd", '{"city": "Zürich"}'.encode(), content_type="application/json; charset=base64")
    response = await ctx_http.fetch(server.url("/odd"))
    assert response.text() == '{"city": "Zürich"}'
    assert response.json() == {"city": "Zürich"}


async def test_a_redirect_to_a_url_with_a_password_is_refused_without_repeating_it(
    ctx_http: HttpApi, server: RouteServer
) -> None:
    """P-NET-11: the hop is not followed, the words name the host that redirected, not the secret."""
    server.redirect("/login", f"http://admin:hunter2-secret@127.0.0.1:{server.port}/inside")
    with pytest.raises(NetworkRequestError) as caught:
        await ctx_http.fetch(server.url("/login"))
    assert str(caught.value) == (
        f"127.0.0.1 redirected to a malformed URL 'http://***@127.0.0.1:{server.port}/inside': user names "
        "and passwords in URLs (user@host) are not allowed; the redirect was not followed"
    )
    assert [seen.path for seen in server.seen] == ["/login"]


async def test_a_gem_url_with_a_password_is_refused_without_repeating_it(
    ctx_http: HttpApi, server: RouteServer
) -> None:
    with pytest.raises(NetworkRequestError) as caught:
        await ctx_http.fetch(f"http://me:hunter2-secret@127.0.0.1:{server.port}/")
    assert "hunter2-secret" not in str(caught.value)
    assert server.seen == []
