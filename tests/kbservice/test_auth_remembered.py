"""A token that passed every check is not verified again on each request, yet still expires on time.

A client sends the same bearer token with every request, and
verifying its signature each time is work the answer does not depend on. The claims of a token that
was accepted are remembered; its expiry is checked on every use; a refused token is refused again
in full every time (KB-GEN-03).
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import jwt
import pytest
from kb_harness import SECRET, WRONG_SECRET

from notochord.kbservice.errors import KbAuthenticationError
from notochord.server import auth
from notochord.server.auth import Authenticator
from notochord.settings import Settings


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tokens PyJWT is asked to verify (the real verification still runs)."""
    seen: list[str] = []
    real = jwt.decode

    def counting(token: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(token)
        return real(token, *args, **kwargs)

    monkeypatch.setattr(jwt, "decode", counting)
    return seen


def _token(*, ttl: int = 600, secret: str = SECRET) -> tuple[str, int]:
    exp = int(time.time()) + ttl
    claims = {"sub": "u1", "org": "acme", "org_role": "member", "exp": exp}
    return jwt.encode(claims, secret, algorithm="HS256"), exp


def _verify(authenticator: Authenticator, token: str) -> str:
    return authenticator.authenticate(authorization=f"Bearer {token}", headers={}, peer="127.0.0.1").user_id


def test_an_accepted_token_is_verified_once_for_many_requests(decodes: list[str]) -> None:
    authenticator = Authenticator(Settings(jwt_secret=SECRET))
    token, _ = _token()
    assert [_verify(authenticator, token) for _ in range(5)] == ["u1"] * 5
    assert decodes == [token]


def test_a_refused_token_is_refused_in_full_every_time(decodes: list[str]) -> None:
    authenticator = Authenticator(Settings(jwt_secret=SECRET))
    forged, _ = _token(secret=WRONG_SECRET)
    for _ in range(3):
        with pytest.raises(KbAuthenticationError, match="signature is invalid"):
            _verify(authenticator, forged)
    assert decodes == [forged] * 3


def test_a_remembered_token_is_verified_again_once_its_expiry_has_passed(
    decodes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At ``exp`` the remembered claims no longer count: the full verification runs again."""
    authenticator = Authenticator(Settings(jwt_secret=SECRET))
    token, exp = _token()
    _verify(authenticator, token)
    monkeypatch.setattr(auth, "time", SimpleNamespace(time=lambda: float(exp)))
    _verify(authenticator, token)  # PyJWT's own clock still says valid; the service asked it again
    assert decodes == [token, token]


def test_what_one_service_accepted_another_with_other_keys_refuses() -> None:
    """Remembered claims belong to one authenticator and its keys."""
    token, _ = _token()
    _verify(Authenticator(Settings(jwt_secret=SECRET)), token)
    with pytest.raises(KbAuthenticationError, match="signature is invalid"):
        _verify(Authenticator(Settings(jwt_secret=WRONG_SECRET)), token)


def test_only_the_most_recent_tokens_are_remembered(decodes: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(auth, "_REMEMBERED", 2)
    authenticator = Authenticator(Settings(jwt_secret=SECRET))
    tokens = [_token(ttl=600 + n)[0] for n in range(3)]
    for token in tokens:
        _verify(authenticator, token)
    _verify(authenticator, tokens[0])  # pushed out by the third
    _verify(authenticator, tokens[2])  # still remembered
    assert decodes == [*tokens, tokens[0]]


def test_a_remembered_token_is_refused_once_it_has_expired() -> None:
    """KB-GEN-03: remembering never extends a token's life."""
    authenticator = Authenticator(Settings(jwt_secret=SECRET))
    token, exp = _token(ttl=1)
    assert _verify(authenticator, token) == "u1"
    while time.time() < exp + 0.05:
        time.sleep(0.05)
    with pytest.raises(KbAuthenticationError, match="expired"):
        _verify(authenticator, token)
