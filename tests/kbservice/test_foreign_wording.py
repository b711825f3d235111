"""No foreign library's wording reaches a REST client (STYLE 5, 6).

PyJWT, pydantic and Starlette's multipart parser each explain a refusal in their own words ("Token is
missing the "exp" claim", "Input should be a valid integer", "Missing boundary in multipart."). The
service answers every such refusal in its own words instead: what is wrong and what to do, in the one
error body ``{ "error", "message" }``, with a 4xx status (401 for credentials, 400, or 413 for a size
limit), never a 5xx. One test per family sends real requests; the JWT map is also walked class by class
so that a new PyJWT exception cannot slip through unmapped.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Protocol

import jwt
import pytest
from fastapi import FastAPI, Query
from fastapi.testclient import TestClient
from kb_harness import SECRET, WRONG_SECRET, World, bearer
from pydantic import BaseModel

from notochord.kbservice.errors import KbAuthenticationError
from notochord.server import errors
from notochord.server.auth import Authenticator
from notochord.settings import Settings

JWT_PHRASES = (
    "Token is missing",
    "Signature has expired",
    "Not enough segments",
    "Signature verification failed",
    "must be an integer",
    "not yet valid",
    "Subject must be",
    "Invalid payload",
    "Invalid header",
    "Invalid crypto padding",
    "Invalid issuer",
    "Invalid audience",
    "Audience doesn't match",
    "The token was refused:",
)
PYDANTIC_PHRASES = (
    "Input should be",
    "valid integer",
    "Field required",
    "String should have",
    "JSON decode error",
    "'loc'",
    '"loc"',
    "'type'",
    '"type"',
    "int_parsing",
    "string_too_long",
)
MULTIPART_PHRASES = (
    "Missing boundary in multipart",
    "Invalid multipart data",
    'The Content-Disposition header field "name"',
    "Too many files. Maximum number",
    "Too many fields. Maximum number",
    "Part exceeded maximum size",
    "Field exceeded maximum size",
    "KB.",
    "Bad Request: ",
)


class _Answer(Protocol):
    """A response of the live server (httpx) or of FastAPI's test client."""

    @property
    def status_code(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    def json(self) -> Any: ...


def _assert_own_words(response: _Answer, status: int, phrases: tuple[str, ...]) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message"}, body
    message: str = body["message"]
    for phrase in phrases:
        assert phrase not in message, (phrase, message)
        assert phrase not in response.headers.get("www-authenticate", ""), phrase
    return message


# ---------------------------------------------------------------------- PyJWT


def _signed(claims: dict[str, Any], secret: str = SECRET) -> str:
    return jwt.encode(claims, secret, algorithm="HS256")


def _token_cases(org: str) -> dict[str, tuple[str, str]]:
    now = int(time.time())
    good = {"sub": "u", "org": org, "org_role": "owner", "exp": now + 600}
    return {
        "no-exp": (_signed({k: v for k, v in good.items() if k != "exp"}), "has no exp claim"),
        "no-sub": (_signed({k: v for k, v in good.items() if k != "sub"}), "has no sub claim"),
        "expired": (_signed({**good, "exp": now - 60}), "The token has expired; ask for a new one"),
        "exp-not-a-number": (_signed({**good, "exp": "tomorrow"}), "Malformed token"),
        "iat-in-the-future": (_signed({**good, "iat": now + 3600}), "not valid yet"),
        "nbf-in-the-future": (_signed({**good, "nbf": now + 3600}), "not valid yet"),
        "iat-not-a-number": (_signed({**good, "iat": "today"}), "iat claim must be a number"),
        "sub-not-a-string": (_signed({**good, "sub": 42}), "sub claim must be a string"),
        "wrong-key": (_signed(good, WRONG_SECRET), "signature is invalid"),
        "one-segment": ("abc", "Malformed token"),
        "two-segments": ("abc.def", "Malformed token"),
        "bad-base64": ("a$.b$.c$", "Malformed token"),
    }


def test_refused_tokens_are_explained_in_the_services_words_KB_GEN_03(world: World) -> None:
    """KB-GEN-03, OD-B11 as overridden: every refused token is a 401 whose message (and
    ``WWW-Authenticate`` description) is the service's own, saying what to do."""
    for name, (token, expected) in _token_cases(world.a).items():
        response = world.live.client.get("/api/knowledge/kb", headers=bearer(token))
        message = _assert_own_words(response, 401, JWT_PHRASES)
        assert expected in message, (name, message)
        assert "; " in message, (name, message)  # the problem, then what to do


def test_issuer_and_audience_refusals_are_the_services_words() -> None:
    authenticator = Authenticator(Settings(jwt_secret=SECRET, jwt_issuer="https://id.example", jwt_audience="kb"))
    now = int(time.time())
    good = {"sub": "u", "org": "acme", "exp": now + 600, "iss": "https://id.example", "aud": "kb"}
    cases = {
        "other-issuer": ({**good, "iss": "https://evil.example"}, "issued by an issuer"),
        "no-issuer": ({k: v for k, v in good.items() if k != "iss"}, "has no iss claim"),
        "other-audience": ({**good, "aud": "else"}, "meant for another audience"),
        "no-audience": ({k: v for k, v in good.items() if k != "aud"}, "has no aud claim"),
    }
    for name, (claims, expected) in cases.items():
        with pytest.raises(KbAuthenticationError) as refused:
            authenticator.verify(f"Bearer {_signed(claims)}")
        assert refused.value.invalid_token, name
        assert expected in refused.value.message, (name, refused.value.message)
        assert not any(phrase in refused.value.message for phrase in JWT_PHRASES), name


def _pyjwt_classes() -> Iterator[type[jwt.PyJWTError]]:
    stack: list[type[jwt.PyJWTError]] = [jwt.InvalidTokenError]
    while stack:
        cls = stack.pop()
        yield cls
        stack.extend(cls.__subclasses__())


def test_every_pyjwt_token_error_has_its_own_row_in_the_map() -> None:
    """Walks PyJWT's ``InvalidTokenError`` tree: each class, including ones a PyJWT upgrade adds,
    maps to the service's message, and the foreign text never shows."""
    from notochord.server.auth import TOKEN_REFUSALS, token_refusal

    mapped = {row[0] for row in TOKEN_REFUSALS}
    for cls in _pyjwt_classes():
        assert cls in mapped, f"{cls.__name__} has no row in TOKEN_REFUSALS"
        foreign = cls("exp") if cls is jwt.MissingRequiredClaimError else cls("FOREIGN WORDING")
        refusal = token_refusal(foreign)
        assert isinstance(refusal, KbAuthenticationError) and refusal.invalid_token, cls
        assert "FOREIGN" not in refusal.message and str(foreign) not in refusal.message, cls


# ---------------------------------------------------------------------- pydantic and type validation


class _Probe(BaseModel):
    count: int
    name: str


def _probe_app() -> FastAPI:
    """A route that lets pydantic validate its query and body, behind the service's error table."""
    app = FastAPI()

    @app.post("/probe")
    def probe(
        body: _Probe, n: Annotated[int, Query()], tag: Annotated[str, Query(max_length=5)] = "x"
    ) -> dict[str, int]:
        return {"n": n}

    errors.install(app)
    return app


def test_pydantic_refusals_name_the_field_in_the_services_words() -> None:
    """OD-B12: a value pydantic refuses is a 400 naming the field and what it must be, never
    pydantic's message, ``loc`` or ``type``."""
    good = {"count": 1, "name": "a"}
    cases: dict[str, tuple[str, dict[str, Any], str]] = {
        "query-not-an-integer": ("/probe?n=ten", {"json": good}, "n must be a whole number"),
        "query-missing": ("/probe", {"json": good}, "query parameter n is required"),
        "query-too-long": ("/probe?n=1&tag=abcdefgh", {"json": good}, "tag must be at most 5 characters"),
        "body-field-wrong-type": (
            "/probe?n=1",
            {"json": {"count": "many", "name": "a"}},
            "count must be a whole number",
        ),
        "body-field-missing": ("/probe?n=1", {"json": {"count": 1}}, "name is required"),
        "body-not-json": (
            "/probe?n=1",
            {"content": b"{", "headers": {"content-type": "application/json"}},
            "the request body is not valid JSON",
        ),
        "body-not-an-object": ("/probe?n=1", {"json": [1, 2]}, "the request body must be a JSON object"),
    }
    with TestClient(_probe_app()) as client:
        for name, (path, kwargs, expected) in cases.items():
            message = _assert_own_words(client.post(path, **kwargs), 400, PYDANTIC_PHRASES)
            assert expected in message, (name, message)


def test_wrong_types_in_the_services_own_bodies_and_queries_are_refused_in_its_words(world: World) -> None:
    """OD-B12, OD-B15, OD-B22 over the real service: a wrong type anywhere is a 400 naming the field."""
    kb = world.create_kb()["id"]
    agent = world.create_agent()["id"]
    owner = world["owner"]
    cases: dict[str, tuple[str, str, dict[str, Any], str]] = {
        "query-limit-text": ("GET", "/kb", {"params": {"limit": "ten"}}, "limit must be a whole number"),
        "query-offset-fraction": ("GET", "/agents", {"params": {"offset": "1.5"}}, "offset must be a whole number"),
        "query-org-too-long": (
            "GET",
            "/audit",
            {"params": {"organizationId": "o" * 64}},
            "organizationId must be at most 63 characters",
        ),
        "body-limit-text": ("POST", f"/kb/{kb}/search", {"json": {"query": "x", "limit": "ten"}}, "limit must be"),
        "body-name-number": ("POST", "/kb", {"json": {"name": 5}}, "name must be a"),
        "body-priority-text": (
            "POST",
            f"/kb/{kb}/agents/{agent}",
            {"json": {"priority": "high"}},
            "priority must be an integer",
        ),
    }
    for name, (method, path, kwargs, expected) in cases.items():
        message = _assert_own_words(world.request(method, path, owner, **kwargs), 400, PYDANTIC_PHRASES)
        assert expected in message, (name, message)


# ---------------------------------------------------------------------- Starlette's multipart parser


def _multipart(boundary: bytes, *parts: bytes) -> bytes:
    return b"".join(b"--" + boundary + b"\r\n" + part + b"\r\n" for part in parts) + b"--" + boundary + b"--\r\n"


_FILE = b'Content-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello'


def test_malformed_multipart_bodies_are_explained_in_the_services_words(world: World) -> None:
    """OD-B07 as overridden: a malformed or over-limit multipart upload is a 400 (413 for a part over
    the size limit) saying what is wrong and how to send it, never Starlette's parser text."""
    kb = world.create_kb()["id"]
    single, batch = f"/kb/{kb}/documents", f"/kb/{kb}/documents/batch"
    form = "multipart/form-data"
    with_b = f"{form}; boundary=b"
    files = [("file", (f"a{i}.txt", b"hello", "text/plain")) for i in range(2)]
    cases: dict[str, tuple[str, dict[str, Any], int, str]] = {
        "no-boundary": (single, {"content": b"--x--", "headers": {"content-type": form}}, 400, "no boundary"),
        "no-boundary-batch": (batch, {"content": b"--x--", "headers": {"content-type": form}}, 400, "no boundary"),
        "garbage": (single, {"content": b"garbage", "headers": {"content-type": with_b}}, 400, "malformed"),
        "garbage-batch": (
            batch,
            {"content": b"--b\r\nbad header\r\n\r\nx\r\n--b--\r\n", "headers": {"content-type": with_b}},
            400,
            "malformed",
        ),
        "part-without-name": (
            single,
            {
                "content": _multipart(b"b", b"Content-Disposition: form-data\r\n\r\nx"),
                "headers": {"content-type": with_b},
            },
            400,
            "needs a name",
        ),
        "two-files": (single, {"files": files}, 400, "at most 1 file"),
        "101-files": (
            batch,
            {"files": [("file", (f"a{i}.txt", b"hi", "text/plain")) for i in range(101)]},
            400,
            "at most 100 files",
        ),
        "too-many-fields": (
            single,
            {"files": files[:1], "data": {f"field{i}": "x" for i in range(12)}},
            400,
            "at most 8 form fields",
        ),
        "field-over-1-mib": (
            single,
            {"files": files[:1], "data": {"title": "x" * (1024 * 1024 + 1)}},
            413,
            "over 1 MiB",
        ),
    }
    for name, (path, kwargs, status, expected) in cases.items():
        message = _assert_own_words(world.request("POST", path, world["owner"], **kwargs), status, MULTIPART_PHRASES)
        assert expected in message, (name, message)
        assert "; " in message, (name, message)  # the problem, then what to do


# ---------------------------------------------------------------------- Starlette's routing


def test_a_wrong_method_is_explained_without_starlettes_detail(world: World) -> None:
    """The 405 names the method and the methods the path takes, once."""
    response = world.request("DELETE", "/kb", world["owner"])
    message = _assert_own_words(response, 405, ("Method Not Allowed: Method Not Allowed",))
    assert "DELETE" in message and "GET" in message and "POST" in message, message
