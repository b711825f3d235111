"""Authentication: who is calling, from a verified JWT or, when configured, a trusted gateway.

Rules (KB-GEN-03/04, OD-B11 as overridden by DESIGN §7):

- By default the service verifies ``Authorization: Bearer <jwt>`` itself with PyJWT. The accepted
  algorithms are pinned by the configured keys: ``HS256`` with ``jwt_secret``; ``RS256`` or ``ES256``
  with ``jwt_public_key`` (chosen by the key's type). A token's ``alg`` header must be one of them and
  is verified only with the key of its own kind, so ``alg: none`` and algorithm confusion (an HMAC
  token "signed" with the public key) are refused.
- ``exp`` and ``sub`` are required; ``iss`` and ``aud`` are checked when configured.
- Gateway headers (``user-id``, ``organization-id``, ``user-email``, ``x-platform-role``,
  ``x-org-role``) are honoured only when ``trust_gateway_headers`` is set AND the peer address is in
  ``trusted_proxies`` (addresses or networks); such a peer must send them. From anyone else they are
  ignored and a token is required.
- With ``jwt_max_ttl`` set (seconds, 0 for none), a token meant to live longer is refused: its
  lifetime is ``exp − iat``, or ``exp − now`` when it has no ``iat``.
- Every refusal is :class:`KbAuthenticationError` (401); one for a token that was sent is marked
  ``invalid_token`` so that the challenge says so (RFC 6750). PyJWT's exceptions are mapped by
  :data:`TOKEN_REFUSALS` to the service's own messages; PyJWT's text never reaches a client.
- With no secret configured, ``notochord serve`` creates ``<data_dir>/jwt.secret`` (mode 0600) on
  first start and ``notochord token`` signs with it.
- A client sends the same token with every request until it expires, so the claims of a token
  that passed every check are remembered (the last :data:`_REMEMBERED` tokens, keyed by the token
  itself): the same bytes under the same keys verify the same way. Its expiry is checked again on
  every use, and an expired token goes through the full verification (which refuses it). Refused
  tokens are never remembered.
"""

from __future__ import annotations

import ipaddress
import math
import os
import secrets
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt import exceptions as jwt_errors

from notochord.errors import ConfigurationError, StorageError
from notochord.kbservice.actors import Actor, actor_from_claims
from notochord.kbservice.errors import KbAuthenticationError
from notochord.settings import Settings

__all__ = [
    "GATEWAY_HEADERS",
    "SECRET_FILE",
    "TOKEN_REFUSALS",
    "Authenticator",
    "load_or_create_secret",
    "mint_token",
    "read_secret_file",
    "token_refusal",
]

SECRET_FILE = "jwt.secret"
GATEWAY_HEADERS = {
    "user-id": "sub",
    "organization-id": "org",
    "user-email": "email",
    "x-platform-role": "platform_role",
    "x-org-role": "org_role",
}
_MIN_SECRET = 32
_REMEMBERED = 1024
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def read_secret_file(data_dir: Path) -> str | None:
    """The development secret of ``data_dir``, if one was created."""
    path = data_dir / SECRET_FILE
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read the token secret {path}: {exc}") from exc


def load_or_create_secret(data_dir: Path) -> str:
    """The development secret of ``data_dir``, created (random, mode 0600) if missing."""
    existing = read_secret_file(data_dir)
    if existing is not None:
        return existing
    path = data_dir / SECRET_FILE
    secret = secrets.token_urlsafe(48)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(secret + "\n")
    except FileExistsError:
        # another process created it first: use theirs
        return load_or_create_secret(data_dir)
    except OSError as exc:
        raise StorageError(f"cannot create the token secret {path}: {exc}") from exc
    return secret


def mint_token(
    *,
    secret: str,
    user: str,
    org: str,
    role: str | None,
    superadmin: bool = False,
    ttl: int = 3600,
    email: str | None = None,
    issuer: str | None = None,
    audience: str | None = None,
) -> str:
    """An HS256 token with the claims this service reads (for development and tests)."""
    if ttl <= 0:
        raise ConfigurationError("a token's lifetime (ttl) must be a positive number of seconds")
    now = int(time.time())
    claims: dict[str, Any] = {"sub": user, "org": org, "iat": now, "exp": now + ttl}
    if role is not None:
        claims["org_role"] = role
    if superadmin:
        claims["platform_role"] = "superadmin"
    if email is not None:
        claims["email"] = email
    if issuer is not None:
        claims["iss"] = issuer
    if audience is not None:
        claims["aud"] = audience
    return jwt.encode(claims, secret, algorithm="HS256")


def _load_public_key(text: str) -> tuple[Any, str]:
    pem = text
    if not text.lstrip().startswith("-----BEGIN"):
        try:
            pem = Path(text).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"jwt_public_key: cannot read {text}: {exc}") from exc
    try:
        key = serialization.load_pem_public_key(pem.encode())
    except ValueError as exc:
        raise ConfigurationError(f"jwt_public_key is not a PEM public key: {exc}") from exc
    if isinstance(key, rsa.RSAPublicKey):
        return key, "RS256"
    if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        return key, "ES256"
    raise ConfigurationError("jwt_public_key must be an RSA key (RS256) or a P-256 key (ES256)")


def _networks(entries: tuple[str, ...]) -> tuple[_Network, ...]:
    found = []
    for entry in entries:
        try:
            found.append(ipaddress.ip_network(entry, strict=False))
        except ValueError as exc:
            raise ConfigurationError(f"trusted_proxies: {entry!r} is not an address or network") from exc
    return tuple(found)


_MALFORMED = (
    "Malformed token: it is not a JSON Web Token with numeric exp, iat and nbf claims; "
    "send the token exactly as it was issued (three base64url parts separated by dots)"
)
_ASK_AGAIN = "ask for a new token"
TOKEN_REFUSALS: tuple[tuple[type[jwt_errors.PyJWTError], str], ...] = (
    # subclasses before their bases: the first row whose class matches wins
    (jwt_errors.ExpiredSignatureError, "The token has expired; ask for a new one"),
    (
        jwt_errors.InvalidSignatureError,
        f"The token's signature is invalid: it was not signed with this service's key; {_ASK_AGAIN}",
    ),
    (jwt_errors.DecodeError, _MALFORMED),
    (
        jwt_errors.ImmatureSignatureError,
        "The token is not valid yet (its iat or nbf time is in the future); wait, or check "
        "the clocks of the issuer and this server",
    ),
    (jwt_errors.InvalidIssuedAtError, f"The token's iat claim must be a number of seconds since 1970; {_ASK_AGAIN}"),
    (
        jwt_errors.InvalidIssuerError,
        f"The token was issued by an issuer this service does not accept; {_ASK_AGAIN} "
        "from the issuer this service is configured with",
    ),
    (jwt_errors.InvalidAudienceError, f"The token is meant for another audience; {_ASK_AGAIN} for this service"),
    (jwt_errors.InvalidSubjectError, f"The token's sub claim must be a string (the user id); {_ASK_AGAIN}"),
    (jwt_errors.InvalidJTIError, f"The token's jti claim must be a string; {_ASK_AGAIN}"),
    (jwt_errors.InvalidAlgorithmError, f"The token's algorithm is not accepted; {_ASK_AGAIN}"),
    (jwt_errors.MissingRequiredClaimError, "The token has no {claim} claim{meaning}; ask for a token that carries one"),
    (jwt_errors.InvalidTokenError, f"The token was refused; {_ASK_AGAIN}"),
    (jwt_errors.PyJWTError, f"The token was refused; {_ASK_AGAIN}"),
)
"""How each PyJWT refusal reads to a client: PyJWT's own text never does. A test walks
PyJWT's ``InvalidTokenError`` tree, so a class a PyJWT upgrade adds must be given a row here."""
_CLAIM_MEANINGS = {"exp": "its expiry time", "sub": "the user id", "iss": "its issuer", "aud": "its audience"}


def token_refusal(exc: jwt_errors.PyJWTError) -> KbAuthenticationError:
    """The service's 401 for a token PyJWT refused, in the service's words (see :data:`TOKEN_REFUSALS`)."""
    for cls, message in TOKEN_REFUSALS:
        if isinstance(exc, cls):
            if isinstance(exc, jwt_errors.MissingRequiredClaimError):
                # only the claims this service requires can be missing, so the name is one of ours
                meaning = _CLAIM_MEANINGS.get(exc.claim)
                if meaning is None:
                    message = message.format(claim="required", meaning="")
                else:
                    message = message.format(claim=exc.claim, meaning=f" ({meaning})")
            return KbAuthenticationError(message, invalid_token=True)
    raise AssertionError("the table ends with PyJWTError")  # pragma: no cover


def _seconds(value: Any) -> float:
    """A time claim PyJWT accepted (a number, or digits as text) as seconds; a whole number too large
    for a float is beyond every date rather than an error."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


class Authenticator:
    """Turns a request's credentials into an :class:`Actor`."""

    def __init__(self, settings: Settings, *, data_dir: Path | None = None) -> None:
        self._keys: dict[str, Any] = {}
        secret = settings.jwt_secret or (read_secret_file(data_dir) if data_dir is not None else None)
        if secret is not None:
            if len(secret.encode()) < _MIN_SECRET:
                raise ConfigurationError(f"jwt_secret must be at least {_MIN_SECRET} bytes long")
            self._keys["HS256"] = secret
        if settings.jwt_public_key:
            key, algorithm = _load_public_key(settings.jwt_public_key)
            self._keys[algorithm] = key
        if settings.jwt_max_ttl < 0:
            raise ConfigurationError("jwt_max_ttl must be a number of seconds (0 for no maximum)")
        self._max_ttl = settings.jwt_max_ttl
        self._issuer = settings.jwt_issuer
        self._audience = settings.jwt_audience
        self._gateway = settings.trust_gateway_headers
        self._proxies = _networks(settings.trusted_proxies)
        self._verified: dict[str, dict[str, Any]] = {}
        self._verified_lock = threading.Lock()
        if not self._keys and not self._gateway:
            raise ConfigurationError(
                "no way to authenticate: set NOTOCHORD_JWT_SECRET or NOTOCHORD_JWT_PUBLIC_KEY "
                "(or start with notochord serve, which creates a development secret)"
            )

    @property
    def algorithms(self) -> tuple[str, ...]:
        """The accepted token algorithms, pinned by the configured keys."""
        return tuple(sorted(self._keys))

    def _trusted_peer(self, peer: str | None) -> bool:
        if not self._gateway or peer is None:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self._proxies)

    def authenticate(self, *, authorization: str | None, headers: Mapping[str, str], peer: str | None) -> Actor:
        """The caller of one request.

        Args:
            authorization: the ``Authorization`` header, if any.
            headers: every request header (lowercase names), for the gateway case.
            peer: the address of the directly connected client.

        Raises:
            KbAuthenticationError: no acceptable identity.
        """
        if self._trusted_peer(peer):
            claims = {claim: headers[name] for name, claim in GATEWAY_HEADERS.items() if name in headers}
            if "sub" not in claims or "org" not in claims:
                raise KbAuthenticationError("the gateway sent no user-id or organization-id header")
            return actor_from_claims(claims)
        return actor_from_claims(self.verify(authorization))

    def verify(self, authorization: str | None) -> dict[str, Any]:
        """The verified claims of a ``Bearer`` token."""
        if not authorization:
            raise KbAuthenticationError("Missing bearer token: send Authorization: Bearer <token>")
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise KbAuthenticationError("Malformed Authorization header: expected Bearer <token>")
        with self._verified_lock:
            known = self._verified.get(token)
        # PyJWT refuses a token once now >= exp; the same rule, so a remembered token expires alike
        if known is not None and time.time() < _seconds(known["exp"]):
            return dict(known)
        claims = self._decode(token)
        with self._verified_lock:
            self._verified.pop(token, None)
            while len(self._verified) >= _REMEMBERED:
                del self._verified[next(iter(self._verified))]  # the oldest first
            self._verified[token] = dict(claims)
        return claims

    def _decode(self, token: str) -> dict[str, Any]:
        """Every check of a token: algorithm, signature, required claims, issuer, audience, lifetime."""
        try:
            header = jwt.get_unverified_header(token)
        except (jwt.PyJWTError, UnicodeError) as exc:  # a str token holding a lone surrogate cannot be encoded
            raise KbAuthenticationError(_MALFORMED, invalid_token=True) from exc
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self._keys:
            shown = repr(algorithm) if isinstance(algorithm, str) and len(algorithm) <= 20 else "of this token"
            raise KbAuthenticationError(
                f"Token algorithm {shown} is not accepted; this service takes {', '.join(self.algorithms)} tokens, "
                "ask for one signed that way",
                invalid_token=True,
            )
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._keys[algorithm],
                algorithms=[algorithm],
                issuer=self._issuer,
                audience=self._audience,
                options={"require": ["exp", "sub"], "verify_aud": self._audience is not None},
            )
        except jwt.PyJWTError as exc:
            raise token_refusal(exc) from exc
        self._check_lifetime(claims)
        return claims

    def _check_lifetime(self, claims: Mapping[str, Any]) -> None:
        if not self._max_ttl:
            return
        # PyJWT has checked that exp (and iat, when present) are numbers
        issued = claims.get("iat")
        start = issued if isinstance(issued, int | float) and not isinstance(issued, bool) else time.time()
        lifetime = _seconds(claims["exp"]) - _seconds(start)
        if lifetime > self._max_ttl:
            valid_for = f"{int(lifetime)} seconds" if math.isfinite(lifetime) else "longer than any date"
            raise KbAuthenticationError(
                f"The token is valid for {valid_for}, longer than this service accepts "
                f"({self._max_ttl} seconds); ask for a token with a shorter lifetime",
                invalid_token=True,
            )
