"""Authentication (KB-GEN-03/04, OD-B11 as overridden): JWT verification with pinned algorithms,
claims to actor, and gateway headers only from trusted proxies."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from kb_harness import SECRET, WRONG_SECRET, World, bearer, expired_token, token_for, unsigned_token

from notochord.errors import ConfigurationError
from notochord.kbservice import Actor, OrgRole
from notochord.kbservice.errors import KbAuthenticationError
from notochord.server.auth import Authenticator, load_or_create_secret
from notochord.settings import Settings


def _claims(**extra: Any) -> dict[str, Any]:
    return {"sub": "u1", "org": "acme", "org_role": "member", "exp": int(time.time()) + 600, **extra}


def _auth(**settings: Any) -> Authenticator:
    return Authenticator(Settings(**settings))


def _verify(authenticator: Authenticator, token: str, *, peer: str | None = "127.0.0.1") -> Actor:
    return authenticator.authenticate(authorization=f"Bearer {token}", headers={}, peer=peer)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _rsa_pair() -> tuple[rsa.RSAPrivateKey, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return key, pem.decode()


def test_a_valid_hs256_token_maps_its_claims_to_the_actor() -> None:
    token = jwt.encode(_claims(email="u1@example.org", org_role="admin"), SECRET, algorithm="HS256")
    actor = _verify(_auth(jwt_secret=SECRET), token)
    assert actor == Actor(
        user_id="u1", organization_id="acme", email="u1@example.org", is_superadmin=False, org_role=OrgRole.ADMIN
    )


def test_platform_role_superadmin_marks_a_superadmin_and_the_gateway_claim_name_is_accepted() -> None:
    claims = _claims(platform_role="superadmin")
    claims["organization_id"] = claims.pop("org")
    actor = _verify(_auth(jwt_secret=SECRET), jwt.encode(claims, SECRET, algorithm="HS256"))
    assert actor.is_superadmin and actor.organization_id == "acme"


@pytest.mark.parametrize(
    ("claims", "fragment"),
    [
        ({"exp": None}, "exp"),
        ({"sub": None}, "sub"),
        ({"org": None}, "organization"),
        ({"org": "Not An Org!"}, "organization id is malformed"),
        ({"exp": int(time.time()) - 10}, "expired"),
    ],
    ids=["no-exp", "no-sub", "no-org", "bad-org", "expired"],
)
def test_tokens_missing_required_claims_or_expired_are_refused(claims: dict[str, Any], fragment: str) -> None:
    payload = {k: v for k, v in _claims(**claims).items() if v is not None}
    with pytest.raises(KbAuthenticationError, match=fragment):
        _verify(_auth(jwt_secret=SECRET), jwt.encode(payload, SECRET, algorithm="HS256"))


def test_unknown_org_role_means_no_role() -> None:
    actor = _verify(_auth(jwt_secret=SECRET), jwt.encode(_claims(org_role="god"), SECRET, algorithm="HS256"))
    assert actor.org_role is None


def test_alg_none_is_refused() -> None:
    with pytest.raises(KbAuthenticationError, match="not accepted"):
        _verify(_auth(jwt_secret=SECRET), unsigned_token("u1", "acme"))


def test_a_token_signed_with_another_secret_is_refused() -> None:
    with pytest.raises(KbAuthenticationError, match="signature"):
        _verify(_auth(jwt_secret=SECRET), jwt.encode(_claims(), WRONG_SECRET, algorithm="HS256"))


def test_rs256_with_a_public_key_and_hs256_tokens_are_then_refused() -> None:
    private, public_pem = _rsa_pair()
    authenticator = _auth(jwt_public_key=public_pem)
    assert authenticator.algorithms == ("RS256",)
    assert _verify(authenticator, jwt.encode(_claims(), private, algorithm="RS256")).user_id == "u1"
    with pytest.raises(KbAuthenticationError, match="not accepted"):
        _verify(authenticator, jwt.encode(_claims(), SECRET, algorithm="HS256"))


def test_algorithm_confusion_hmac_signed_with_the_public_key_is_refused() -> None:
    """An attacker signs an HS256 token with the (public) RSA key as the HMAC secret."""
    _, public_pem = _rsa_pair()
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64(json.dumps(_claims(org_role="owner")).encode())
    signature = hmac.new(public_pem.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    forged = f"{header}.{payload}.{_b64(signature)}"
    for authenticator in (_auth(jwt_public_key=public_pem), _auth(jwt_public_key=public_pem, jwt_secret=SECRET)):
        with pytest.raises(KbAuthenticationError):
            _verify(authenticator, forged)


def test_es256_with_a_p256_public_key_read_from_a_file(tmp_path: Path) -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "key.pem").write_bytes(pem)
    authenticator = _auth(jwt_public_key=str(tmp_path / "key.pem"))
    assert authenticator.algorithms == ("ES256",)
    assert _verify(authenticator, jwt.encode(_claims(), private, algorithm="ES256")).organization_id == "acme"
    with pytest.raises(KbAuthenticationError):
        _verify(authenticator, jwt.encode(_claims(), ec.generate_private_key(ec.SECP256R1()), algorithm="ES256"))


def test_issuer_and_audience_are_checked_when_configured() -> None:
    authenticator = _auth(jwt_secret=SECRET, jwt_issuer="https://id.example", jwt_audience="notochord")
    good = jwt.encode(_claims(iss="https://id.example", aud="notochord"), SECRET, algorithm="HS256")
    assert _verify(authenticator, good).user_id == "u1"
    for bad in (
        _claims(iss="https://evil.example", aud="notochord"),
        _claims(iss="https://id.example", aud="x"),
        _claims(),
    ):
        with pytest.raises(KbAuthenticationError):
            _verify(authenticator, jwt.encode(bad, SECRET, algorithm="HS256"))


@pytest.mark.parametrize("header", [None, "", "Basic abc", "Bearer", "Bearer not.a.jwt", "Token abc"])
def test_missing_or_malformed_authorization_is_refused(header: str | None) -> None:
    with pytest.raises(KbAuthenticationError):
        _auth(jwt_secret=SECRET).authenticate(authorization=header, headers={}, peer="127.0.0.1")


def test_configuration_without_any_key_short_secrets_and_bad_proxies_fail_early() -> None:
    with pytest.raises(ConfigurationError, match="no way to authenticate"):
        _auth()
    with pytest.raises(ConfigurationError, match="at least 32"):
        _auth(jwt_secret="short")
    with pytest.raises(ConfigurationError, match="trusted_proxies"):
        _auth(jwt_secret=SECRET, trust_gateway_headers=True, trusted_proxies=("not-an-address",))
    with pytest.raises(ConfigurationError, match="PEM"):
        _auth(jwt_public_key="-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----")


GATEWAY = {"user-id": "gw-user", "organization-id": "acme", "user-email": "g@example.org", "x-org-role": "viewer"}


def test_gateway_headers_are_honoured_only_from_a_trusted_proxy_when_enabled() -> None:
    trusting = _auth(jwt_secret=SECRET, trust_gateway_headers=True, trusted_proxies=("10.0.0.0/8",))
    actor = trusting.authenticate(authorization=None, headers=GATEWAY, peer="10.1.2.3")
    assert (actor.user_id, actor.organization_id, actor.email, actor.org_role) == (
        "gw-user",
        "acme",
        "g@example.org",
        OrgRole.VIEWER,
    )
    superadmin = trusting.authenticate(
        authorization=None, headers={**GATEWAY, "x-platform-role": "superadmin"}, peer="10.1.2.3"
    )
    assert superadmin.is_superadmin
    with pytest.raises(KbAuthenticationError, match="Missing bearer token"):
        trusting.authenticate(authorization=None, headers=GATEWAY, peer="192.168.1.1")
    disabled = _auth(jwt_secret=SECRET, trust_gateway_headers=False, trusted_proxies=("10.0.0.0/8",))
    with pytest.raises(KbAuthenticationError, match="Missing bearer token"):
        disabled.authenticate(authorization=None, headers=GATEWAY, peer="10.1.2.3")


def test_a_trusted_gateway_must_send_user_and_organization_OD_B11() -> None:
    trusting = _auth(trust_gateway_headers=True, trusted_proxies=("127.0.0.1",))
    with pytest.raises(KbAuthenticationError, match="user-id or organization-id"):
        trusting.authenticate(authorization=None, headers={"user-id": "u"}, peer="127.0.0.1")


def test_the_development_secret_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    first = load_or_create_secret(tmp_path / "data")
    assert (tmp_path / "data" / "jwt.secret").stat().st_mode & 0o777 == 0o600
    assert load_or_create_secret(tmp_path / "data") == first
    assert len(first) >= 32
    assert Authenticator(Settings(), data_dir=tmp_path / "data").algorithms == ("HS256",)


# ---------------------------------------------------------------------- over HTTP


def test_401_bodies_have_the_error_shape_over_http_KB_GEN_03(world: World) -> None:
    cases = {
        "none": {},
        "expired": bearer(expired_token("u", world.a)),
        "alg-none": bearer(unsigned_token("u", world.a)),
        "wrong-key": bearer(token_for("u", world.a, "owner", secret=WRONG_SECRET)),
        "garbage": {"Authorization": "Bearer abc.def"},
    }
    for name, headers in cases.items():
        response = world.live.client.get("/api/knowledge/kb", headers=headers)
        assert response.status_code == 401, name
        body = response.json()
        assert set(body) == {"error", "message"} and body["error"] == "Unauthorized", name
        assert "Traceback" not in response.text
