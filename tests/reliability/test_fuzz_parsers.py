"""Every parser of outside input either parses or raises notochord's own error, whatever the input.

Hypothesis feeds each parser text built from the fragments of its own grammar (so that inputs get
past the first check) mixed with arbitrary Unicode, lone surrogates included, and structured values
for the parsers that take JSON. The property is the same everywhere: the call returns, or it raises
a :class:`~notochord.errors.NotochordError`; never a foreign exception, never a crash.
"""

from __future__ import annotations

import base64
import contextlib
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import notochord
from notochord.access.permissions import Permission, PermissionSet
from notochord.clock import SystemClock
from notochord.errors import NotochordError
from notochord.files.history import FileHistory
from notochord.files.workspace import Workspace
from notochord.gems.manifest import parse_manifest
from notochord.kbservice.actors import actor_from_claims
from notochord.kbservice.errors import KbAuthenticationError
from notochord.kbservice.service import KbService
from notochord.kbservice.validation import JsonBody
from notochord.net.hosts import parse_host_entry, parse_network_section
from notochord.net.policy import UserHostEntry
from notochord.net.transport import check_url
from notochord.server.auth import Authenticator
from notochord.settings import Settings

FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW_FUZZ = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)

ANY_CHAR = st.characters(exclude_categories=())
"""Every code point, surrogates and controls included."""


def grammar(*fragments: str, noise: int = 3) -> st.SearchStrategy[str]:
    """Text assembled from ``fragments`` of a grammar and short runs of arbitrary characters."""
    piece = st.sampled_from(fragments) | st.text(ANY_CHAR, max_size=noise)
    return st.lists(piece, max_size=12).map("".join)


def _survives(call: Callable[[], object]) -> None:
    with contextlib.suppress(NotochordError):
        call()


JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(ANY_CHAR, max_size=20)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(ANY_CHAR, max_size=10), inner, max_size=4),
    max_leaves=20,
)

# -- permission strings ------------------------------------------------------------------------

PERMISSIONS = grammar(
    "facts.read", "facts.write", "facts.delete", "entities.read", "entities.write", "collections.read",
    "collections.create", "collections.write", "documents.read", "changes.read", "profile.read",
    ":", "self", "person", "place", "*", ".*", "pref", ".food", "location.home", ":diary", ":keep", "..", " ",
)  # fmt: skip


@FUZZ
@given(text=PERMISSIONS | st.text(ANY_CHAR))
def test_a_permission_string_parses_or_is_refused_by_name(text: str) -> None:
    """Permission strings never raise a foreign error."""
    _survives(lambda: Permission.parse(text))
    _survives(lambda: PermissionSet.of([text]))


@FUZZ
@given(value=JSON_VALUES)
def test_a_permission_of_any_json_type_is_refused_by_name(value: Any) -> None:
    """A manifest may hold any JSON value where a permission belongs."""
    _survives(lambda: Permission.parse(value))


# -- manifests ---------------------------------------------------------------------------------

_EXAMPLE = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "manifests" / "ex01" / "manifest.json").read_text()
)


def _mutations(value: Any) -> st.SearchStrategy[Any]:
    """``value`` with one node somewhere replaced by an arbitrary JSON value."""
    if isinstance(value, dict) and value:
        key = st.sampled_from(sorted(value))
        return key.flatmap(
            lambda k: (_mutations(value[k]) | JSON_VALUES | st.just(None)).map(lambda v: {**value, k: v})
        ) | JSON_VALUES.map(lambda v: {**value, "extra": v})
    if isinstance(value, list) and value:
        index = st.integers(0, len(value) - 1)
        return index.flatmap(
            lambda i: (_mutations(value[i]) | JSON_VALUES).map(lambda v: [*value[:i], v, *value[i + 1 :]])
        )
    return JSON_VALUES


@FUZZ
@given(data=_mutations(_EXAMPLE) | JSON_VALUES, form=st.sampled_from([None, "draft", "packaged"]))
def test_a_manifest_parses_or_lists_its_problems(data: Any, form: Any) -> None:
    """Any JSON document as a manifest gives a Manifest or a ManifestError."""
    _survives(lambda: parse_manifest(data, form=form))


# -- host entries and URLs ---------------------------------------------------------------------

HOSTS = grammar(
    "example.com", "*.", "localhost", "127.0.0.1", "10.0.0.1", "[::1]", "::1", "[", "]", ":", ":443", ":0",
    ":99999", "xn--", "bücher.de", ".", "/", "@", "%", "0x7f", "1e3", "ᴀ", "\u200b",
)  # fmt: skip


@FUZZ
@given(text=HOSTS | st.text(ANY_CHAR), local=st.booleans())
def test_a_host_entry_parses_or_names_its_problem(text: str, local: bool) -> None:
    """Gem host entries and the user's network list never crash."""
    _survives(lambda: parse_host_entry(text, allow_local_network=local))
    _survives(lambda: UserHostEntry.parse(text, allow_wildcard=local))


@FUZZ
@given(raw=JSON_VALUES | st.lists(HOSTS).map(lambda h: {"hosts": h}), draft=st.booleans())
def test_a_network_section_of_any_shape_parses_or_names_its_problems(raw: Any, draft: bool) -> None:
    """A manifest's network section is parsed or reported, never a crash."""
    _survives(lambda: parse_network_section(raw, path="$.network", draft=draft))


URLS = grammar(
    "http://", "https://", "ftp://", "file:", "//", "user:pw@", "@", "example.com", "127.0.0.1", "[::1]", "[",
    "]", ":", ":80", ":99999", "/", "?q=1", "#f", "%", "%zz", "\\", " ", "xn--", "bücher.de", "..", "0x7f",
)  # fmt: skip


@FUZZ
@given(text=URLS | st.text(ANY_CHAR))
def test_a_url_is_checked_or_refused_by_name(text: str) -> None:
    """Every URL a gem or the service may fetch is checked without a crash."""
    _survives(lambda: check_url(text))


# -- workspace paths ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workspace() -> Iterator[Workspace]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "conversation"
        root.mkdir()
        (root / "notes").mkdir()
        (root / "notes" / "a.txt").write_text("a")
        (root / ".hidden").write_text("h")
        history = FileHistory(Path(tmp) / "history", clock=SystemClock("UTC"), trash=None)
        try:
            yield Workspace(root, history=history, actor="gem:fuzz", run_id="run-1", run_root=Path(tmp) / "run")
        finally:
            history.close()


PATHS = grammar(
    "workspace:", "run:", "/", "..", ".", "notes", "a.txt", ".hidden", "\\", "~", "\x00", ":", "//", "*",
    "con", "é", "\u202e",
)  # fmt: skip


@SLOW_FUZZ
@given(path=PATHS | st.text(ANY_CHAR))
def test_a_workspace_path_is_resolved_or_refused_by_name(workspace: Workspace, path: str) -> None:
    """Reading, inspecting and writing any path never raises a foreign error."""
    _survives(lambda: workspace.read(path))
    _survives(lambda: workspace.stat(path))
    _survives(lambda: workspace.write(path, b"fuzz"))


# -- JWTs --------------------------------------------------------------------------------------

SECRET = "fuzz-secret-" + "x" * 32
AUTH = Authenticator(Settings(jwt_secret=SECRET))


def _b64(value: Any) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


CLAIMS = st.dictionaries(
    st.sampled_from(["sub", "org", "org_role", "platform_role", "email", "exp", "iss", "aud", "nbf", "iat"]),
    JSON_VALUES,
    max_size=8,
)
HEADERS = st.dictionaries(st.sampled_from(["alg", "typ", "kid", "crit", "b64", "jku", "x5u"]), JSON_VALUES, max_size=5)


@st.composite
def tokens(draw: st.DrawFn) -> str:
    """Forged, damaged and correctly signed tokens with claims of any type."""
    kind = draw(st.sampled_from(["text", "forged", "signed"]))
    if kind == "text":
        return draw(grammar("eyJ", ".", "=", "-", "_", "Bearer ", "bearer", " "))
    if kind == "forged":
        header = draw(HEADERS | st.just({"alg": "HS256", "typ": "JWT"}) | st.just({"alg": "none"}))
        signature = draw(st.binary(max_size=40))
        return ".".join([_b64(header), _b64(draw(CLAIMS)), _b64(signature)])
    claims = {"sub": "u1", "org": "acme", "exp": int(time.time()) + 3600, **draw(CLAIMS)}
    try:
        return jwt.encode(claims, SECRET, algorithm="HS256")
    except (TypeError, ValueError):  # claims PyJWT itself cannot serialise: send them as text
        return "." + json.dumps(claims, default=str)


@FUZZ
@given(token=tokens(), scheme=st.sampled_from(["Bearer ", "bearer ", "Basic ", "", "Bearer  "]))
@example(token="\ud800", scheme="Bearer ")  # found by this test: a lone surrogate escaped as UnicodeEncodeError
def test_a_bearer_token_authenticates_or_is_refused_as_unauthorized(token: str, scheme: str) -> None:
    """Any Authorization header gives an actor or KbAuthenticationError (401)."""
    with contextlib.suppress(KbAuthenticationError):
        AUTH.authenticate(authorization=scheme + token, headers={}, peer="127.0.0.1")


# -- JSON bodies -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[KbService, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        settings_ = Settings(data_dir=data, index_in_background=False, embedder="none")
        with notochord.open(data, settings_, embedder=None) as nc:
            kb = KbService(nc)
            owner = actor_from_claims({"sub": "owner-1", "org": "acme", "org_role": "owner"})
            created = kb.knowledge_bases.create(actor=owner, body=JsonBody.of({"name": "Fuzz"}))
            yield kb, created.id


# Lone surrogates are left out here: the hostile-HTTP table pins that case against the live server.
BODY_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
BODY_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | BODY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(BODY_TEXT, inner, max_size=4),
    max_leaves=20,
)
BODY_FIELDS = st.dictionaries(
    st.sampled_from(["name", "description", "settings", "title", "content", "data", "url", "status", "extra"]),
    BODY_VALUES,
    max_size=5,
)
BODIES = (
    BODY_FIELDS.map(lambda v: json.dumps(v).encode())
    | BODY_VALUES.map(lambda v: json.dumps(v).encode())
    | st.binary(max_size=60)
    | grammar("{", "}", "[", "]", '"', ":", ",", "null", "1e999", "-0", "NaN", '"\\u0000"').map(
        lambda s: s.encode("utf-8", "surrogatepass")
    )
)


@SLOW_FUZZ
@given(raw=BODIES)
def test_a_json_body_is_accepted_or_refused_as_a_bad_request(service: tuple[KbService, str], raw: bytes) -> None:
    """Creating a knowledge base or an agent and adding a document from any body."""
    kb, kb_id = service
    owner = actor_from_claims({"sub": "owner-1", "org": "acme", "org_role": "owner"})
    _survives(lambda: kb.knowledge_bases.create(actor=owner, body=JsonBody(raw)))
    _survives(lambda: kb.agents.create(actor=owner, body=JsonBody(raw)))
    _survives(lambda: kb.documents.add_json(actor=owner, kb_id=kb_id, raw=raw))
