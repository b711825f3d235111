"""The HTTP edge under careless and hostile clients: the Bearer challenge, the token lifetime bound,
an offline /docs page, bounded bodies, text that is not text, and URLs that are not URLs."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jwt
import pytest
from kb_harness import API, SECRET, WRONG_SECRET, LiveServer, World, bearer, expired_token, token_for

from notochord.errors import ConfigurationError
from notochord.kbservice.errors import KbAuthenticationError
from notochord.server.auth import Authenticator
from notochord.settings import Settings

STATIC = Path(__file__).parents[2] / "src" / "notochord" / "server" / "static"


def _raw_exchange(live: LiveServer, head: bytes, body: bytes = b"") -> bytes:
    """Send ``head`` (and ``body``) on a fresh connection and read until the server closes or answers."""
    host, port = urlsplit(live.url).hostname, urlsplit(live.url).port
    assert host is not None and port is not None
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(head + body)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        return received


# ---------------------------------------------------------------------- 401 challenge


def test_401_without_credentials_carries_a_plain_bearer_challenge(world: World) -> None:
    """``WWW-Authenticate: Bearer`` on a 401 without a token (RFC 6750 §3)."""
    for headers in ({}, {"Authorization": "Basic dTpw"}):
        response = world.live.client.get(API + "/kb", headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == 'Bearer realm="notochord"'


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        pytest.param(lambda org: expired_token("u", org), "The token has expired", id="expired"),
        pytest.param(
            lambda org: token_for("u", org, "owner", secret=WRONG_SECRET), "signature is invalid", id="wrong-key"
        ),
        pytest.param(lambda org: "abc.def", "Malformed token", id="garbage"),
    ],
)
def test_401_for_a_refused_token_says_invalid_token(world: World, token: Any, reason: str) -> None:
    """A token that was sent but refused gets ``error="invalid_token"`` (RFC 6750 §3.1)."""
    response = world.live.client.get(API + "/kb", headers=bearer(token(world.a)))
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="notochord", error="invalid_token", error_description="')
    assert reason in challenge
    # a quoted-string of printable ASCII: nothing in the reason can break the header's syntax
    assert re.fullmatch(r'Bearer realm="notochord", error="invalid_token", error_description="[^"\\]*"', challenge)


# ---------------------------------------------------------------------- token lifetime


def _token(lifetime: int, *, with_iat: bool = True) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {"sub": "u", "org": "acme", "org_role": "member", "exp": now + lifetime}
    if with_iat:
        claims["iat"] = now
    return jwt.encode(claims, SECRET, algorithm="HS256")


@pytest.mark.parametrize("with_iat", [True, False], ids=["exp-iat", "exp-now"])
def test_jwt_max_ttl_refuses_tokens_meant_to_live_longer(with_iat: bool) -> None:
    """With ``jwt_max_ttl`` a token whose exp−iat (exp−now without iat) is over the
    bound is refused with a message that says what to do; one within it passes."""
    authenticator = Authenticator(Settings(jwt_secret=SECRET, jwt_max_ttl=600))
    assert authenticator.verify(f"Bearer {_token(590, with_iat=with_iat)}")["sub"] == "u"
    with pytest.raises(KbAuthenticationError, match="longer than this service accepts") as refused:
        authenticator.verify(f"Bearer {_token(30 * 86400, with_iat=with_iat)}")
    assert refused.value.invalid_token
    assert "600 seconds" in refused.value.message and "shorter lifetime" in refused.value.message


def test_jwt_max_ttl_counts_from_iat_so_an_old_long_lived_token_is_refused() -> None:
    """Exp−iat, not the time left, is the lifetime when iat is present."""
    now = int(time.time())
    claims = {"sub": "u", "org": "acme", "iat": now - 86_000, "exp": now + 400}
    token = jwt.encode(claims, SECRET, algorithm="HS256")
    with pytest.raises(KbAuthenticationError, match="86400 seconds"):
        Authenticator(Settings(jwt_secret=SECRET, jwt_max_ttl=600)).verify(f"Bearer {token}")
    assert Authenticator(Settings(jwt_secret=SECRET)).verify(f"Bearer {token}")["sub"] == "u"


def test_jwt_max_ttl_is_a_setting_read_from_the_environment_and_checked() -> None:
    """``NOTOCHORD_JWT_MAX_TTL`` is seconds; 0 (the default) means no maximum."""
    assert Settings.load(environ={}).jwt_max_ttl == 0
    assert Settings.load(environ={"NOTOCHORD_JWT_MAX_TTL": "3600"}).jwt_max_ttl == 3600
    with pytest.raises(ConfigurationError, match="jwt_max_ttl"):
        Authenticator(Settings(jwt_secret=SECRET, jwt_max_ttl=-1))


# ---------------------------------------------------------------------- /docs offline


def _referenced_urls(html: str) -> list[str]:
    found = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
    found += re.findall(r"""\burl\s*:\s*["']([^"']+)["']""", html)
    return found


def test_docs_page_references_only_local_assets_that_the_service_serves(live: LiveServer) -> None:
    """/docs works offline: every script, style sheet and document it names is
    served by the service itself, and the vendored Swagger UI ships with its licence."""
    page = live.client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    urls = _referenced_urls(page.text)
    assert {"/docs/static/swagger-ui-bundle.js", "/docs/static/swagger-ui.css", "/openapi.json"} <= set(urls)
    for url in urls:
        assert url.startswith(("/", "data:")) and not url.startswith("//"), url
    assert "http://" not in page.text and "https://" not in page.text
    assert '"validatorUrl": null' in page.text  # the validator badge would call an outside service
    for name, media in (("swagger-ui-bundle.js", "text/javascript"), ("swagger-ui.css", "text/css")):
        asset = live.client.get(f"/docs/static/{name}")
        assert asset.status_code == 200
        assert asset.headers["content-type"].startswith(media)
        assert asset.content == (STATIC / name).read_bytes()
    assert "Apache License" in (STATIC / "LICENSE").read_text()
    assert live.client.get("/docs/static/missing.js").status_code == 404


# ---------------------------------------------------------------------- bounded bodies


def test_a_json_body_declared_over_1_mib_is_refused_before_it_is_sent(world: World) -> None:
    """Content-Length is checked first; nothing of the 200 MB body is read."""
    head = (
        f"POST {API}/kb HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token_for('u', world.a, 'owner')}\r\n"
        "Content-Type: application/json\r\nContent-Length: 209715200\r\n\r\n"
    ).encode()
    answer = _raw_exchange(world.live, head)
    assert answer.startswith(b"HTTP/1.1 413 ")


def test_a_chunked_json_body_growing_past_1_mib_is_refused_while_streaming(world: World) -> None:
    """A body without Content-Length is read in a bounded stream: 413 at the limit,
    answered while the client is still sending."""
    head = (
        f"POST {API}/kb HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token_for('u', world.a, 'owner')}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    chunk = b"x" * 65536
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(20))  # 1.25 MiB, never terminated
    answer = _raw_exchange(world.live, head, body)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert world.request("GET", "/kb", world["owner"]).json()["total"] == 0


@pytest.mark.parametrize("path", ["/kb", "/agents"])
def test_a_json_body_just_over_1_mib_is_413_with_the_error_shape(world: World, path: str) -> None:
    """Every JSON route, not only uploads, refuses an oversized body with 413."""
    body = json.dumps({"name": "x", "description": "d" * (1024 * 1024)}).encode()
    response = world.request("POST", path, world["owner"], content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"] == "Payload Too Large"


# ---------------------------------------------------------------------- lone surrogates


def _post_raw(world: World, path: str, payload: str) -> Any:
    return world.request(
        "POST", path, world["owner"], content=payload.encode(), headers={"Content-Type": "application/json"}
    )


@pytest.mark.parametrize(
    ("target", "payload", "field"),
    [
        ("kb", r'{"name": "x\ud800y"}', "name"),
        ("kb", r'{"name": "ok", "description": "a\udfffb"}', "description"),
        ("kb", r'{"name": "ok", "settings": {"notes": ["fine", "x\udc00"]}}', "settings.notes[1]"),
        ("agent", r'{"name": "bot\ud800"}', "name"),
        ("document", r'{"content": "half \ud83d of a pair"}', "content"),
        ("document", r'{"title": "t\ud800", "content": "text"}', "title"),
        ("document", r'{"title": "rec", "data": {"city": "Delft\udbff"}}', "data.city"),
        ("document", r'{"title": "rec", "data": {"k\ud800": 1}}', "a key in data"),
        ("search", r'{"query": "lamp\ud800"}', "query"),
        ("retrieve", r'{"query": "\udfff"}', "query"),
    ],
)
def test_a_lone_surrogate_in_any_text_field_is_400_naming_the_field(
    world: World, target: str, payload: str, field: str
) -> None:
    """Valid JSON holding a lone surrogate is refused at the edge, naming the field,
    for every route; nothing is created."""
    kb = world.create_kb()
    agent = world.create_agent()
    path = {
        "kb": "/kb",
        "agent": "/agents",
        "document": f"/kb/{kb['id']}/documents",
        "search": f"/kb/{kb['id']}/search",
        "retrieve": f"/agents/{agent['id']}/retrieve",
    }[target]
    response = _post_raw(world, path, payload)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "Bad Request"
    assert response.json()["message"].startswith(f"{field} is not valid text")
    assert world.request("GET", "/kb", world["owner"]).json()["total"] == 1
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["owner"]).json()["total"] == 0


def test_a_valid_surrogate_pair_is_ordinary_text(world: World) -> None:
    """An escaped pair is one character (here U+1F600) and is kept."""
    response = _post_raw(world, "/kb", r'{"name": "smile \ud83d\ude00"}')
    assert response.status_code == 201
    assert response.json()["knowledgeBase"]["name"] == "smile \U0001f600"


# ---------------------------------------------------------------------- malformed URLs


@pytest.mark.parametrize(
    "url",
    [
        "user@host",
        "http://user@example.org/page",
        "http://example.org/a page",
        "http://example.org\\@evil.example/",
        "http://:80/",
        "http://example.org:99999/",
        "not a url at all",
        "https://[::1",
        "ftp://example.org/file.txt",
    ],
)
def test_a_malformed_ingestion_url_is_400_not_502(world: World, url: str) -> None:
    """A URL that cannot be requested is the caller's mistake (400); only a real
    upstream failure is 502. Nothing is stored."""
    kb = world.create_kb()
    response = world.request("POST", f"/kb/{kb['id']}/documents", world["member"], json={"url": url})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "Bad Request"
    assert response.json()["message"].startswith("url ")
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["owner"]).json()["total"] == 0
