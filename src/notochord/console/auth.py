"""Who may drive the console: the login secret, one-time login links, sessions and CSRF tokens.

Rules:

- The secret is 32 random bytes in ``<data_dir>/console.secret`` (mode 0600), created on first use.
  Deleting the file signs everybody out and voids every link not yet used.
- A login link carries a one-time token ``<nonce>.<expiry>.<mac>``: the MAC (HMAC-SHA256 under the
  secret) lets any process that can read the data directory mint one (``notochord console-url``)
  and the server check it without shared state. Each nonce is accepted once; the used nonces are
  kept in ``console-logins.used`` beside the secret until they expire, so a restart does not make a
  used link work again.
- A session is a signed cookie value ``<session id>.<expiry>.<mac>``; its CSRF token is derived
  from the session id under the secret, so it cannot be guessed from the cookie name or the page of
  another session. Signing out ends the session on the server too: its id is kept with the used
  login nonces until it would have expired, so a copy of the cookie taken before is worth nothing.
  Signing in again ends the session the browser held before in the same way.
- Every comparison of secrets is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from notochord.errors import ConfigurationError, StorageError

__all__ = ["LINK_LIFETIME", "SESSION_LIFETIME", "ConsoleKeys", "Session", "load_or_create_console_secret"]

SECRET_FILE: Final = "console.secret"
USED_FILE: Final = "console-logins.used"
LINK_LIFETIME: Final = 24 * 3600
"""Seconds a login link stays usable (the link printed at start is often opened much later)."""
SESSION_LIFETIME: Final = 12 * 3600
_SECRET_BYTES: Final = 32
# Session ids share the file of used login nonces; neither can hold a ":" (URL-safe base64).
_ENDED: Final = "ended:"


def load_or_create_console_secret(data_dir: Path) -> bytes:
    """The console's login secret, created (mode 0600) the first time.

    Raises:
        StorageError: the file cannot be read or created.
        ConfigurationError: the file exists but is not a secret this console wrote.
    """
    path = data_dir / SECRET_FILE
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            secret = path.read_bytes()
        else:
            secret = secrets.token_bytes(_SECRET_BYTES)
            with os.fdopen(fd, "wb") as handle:
                handle.write(secret)
    except OSError as exc:
        raise StorageError(f"cannot read or create the console secret {path}: {exc}") from exc
    if len(secret) != _SECRET_BYTES:
        raise ConfigurationError(f"the console secret {path} is damaged; delete it and start the console again")
    return secret


@dataclass(frozen=True)
class Session:
    id: str
    expires: int


class ConsoleKeys:
    """Mints and checks login tokens, session cookies and CSRF tokens under one data directory's secret."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._secret = load_or_create_console_secret(data_dir)
        self._lock = threading.Lock()
        self._used: dict[str, int] | None = None

    # ------------------------------------------------------------ signing
    def _mac(self, purpose: str, *parts: str) -> str:
        message = "|".join((purpose, *parts)).encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def _signed(self, purpose: str, value: str, *, now: float | None) -> tuple[str, int] | None:
        """``(nonce, expiry)`` of a well-formed, correctly signed, unexpired ``value``; else ``None``."""
        # a value this module signed is ASCII; hmac.compare_digest raises on any other str
        if len(value) > 200 or not value.isascii():
            return None
        pieces = value.split(".")
        if len(pieces) != 3 or not all(pieces) or not pieces[1].isdigit():
            return None
        nonce, expiry_text, mac = pieces
        if not hmac.compare_digest(mac, self._mac(purpose, nonce, expiry_text)):
            return None
        expiry = int(expiry_text)
        if expiry < (time.time() if now is None else now):
            return None
        return nonce, expiry

    def _mint(self, purpose: str, lifetime: int, *, now: float | None) -> str:
        nonce = secrets.token_urlsafe(24)
        expiry = str(int((time.time() if now is None else now) + lifetime))
        return f"{nonce}.{expiry}.{self._mac(purpose, nonce, expiry)}"

    # ------------------------------------------------------------ login links
    def mint_login_token(self, *, now: float | None = None) -> str:
        """A fresh one-time login token, usable for :data:`LINK_LIFETIME` seconds."""
        return self._mint("login", LINK_LIFETIME, now=now)

    def redeem_login_token(self, token: str, *, now: float | None = None) -> bool:
        """Accept ``token`` once: True the first time a valid, unexpired token is shown."""
        checked = self._signed("login", token, now=now)
        if checked is None:
            return False
        nonce, expiry = checked
        moment = int(time.time() if now is None else now)
        with self._lock:
            used = self._load_used(moment)
            if nonce in used:
                return False
            used[nonce] = expiry
            self._save_used(used)
        return True

    def login_token_usable(self, token: str, *, now: float | None = None) -> bool:
        """Whether :meth:`redeem_login_token` would accept ``token`` now; the token stays unused."""
        checked = self._signed("login", token, now=now)
        if checked is None:
            return False
        with self._lock:
            return checked[0] not in self._load_used(int(time.time() if now is None else now))

    def _load_used(self, moment: int) -> dict[str, int]:
        if self._used is None:
            self._used = {}
            try:
                lines = (self._data_dir / USED_FILE).read_text(encoding="ascii").splitlines()
            except FileNotFoundError:
                lines = []
            except (OSError, UnicodeDecodeError) as exc:
                raise StorageError(f"cannot read the used console logins in {self._data_dir}: {exc}") from exc
            for line in lines:
                nonce, _, expiry = line.partition(" ")
                if expiry.isdigit():
                    self._used[nonce] = int(expiry)
        self._used = {n: e for n, e in self._used.items() if e >= moment}
        return self._used

    def _save_used(self, used: dict[str, int]) -> None:
        path = self._data_dir / USED_FILE
        staging = path.with_name(path.name + ".new")
        try:
            fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.writelines(f"{n} {e}\n" for n, e in used.items())
            staging.replace(path)
        except OSError as exc:
            raise StorageError(f"cannot record a used console login in {self._data_dir}: {exc}") from exc

    # ------------------------------------------------------------ sessions
    def new_session(self, *, now: float | None = None) -> str:
        """The cookie value of a new session."""
        return self._mint("session", SESSION_LIFETIME, now=now)

    def session(self, cookie: str | None, *, now: float | None = None) -> Session | None:
        """The session a cookie value stands for, or ``None`` when it is missing, forged, expired or
        signed out."""
        if not cookie:
            return None
        checked = self._signed("session", cookie, now=now)
        if checked is None:
            return None
        with self._lock:
            if _ENDED + checked[0] in self._load_used(int(time.time() if now is None else now)):
                return None
        return Session(id=checked[0], expires=checked[1])

    def end_session(self, cookie: str | None, *, now: float | None = None) -> None:
        """Sign the session of ``cookie`` out for good, whoever else holds a copy of the cookie."""
        session = self.session(cookie, now=now)
        if session is None:
            return
        moment = int(time.time() if now is None else now)
        with self._lock:
            used = self._load_used(moment)
            used[_ENDED + session.id] = session.expires
            self._save_used(used)

    def csrf_token(self, session: Session) -> str:
        return self._mac("csrf", session.id)

    def csrf_ok(self, session: Session, token: str | None) -> bool:
        # a token with a letter outside ASCII is none this module minted, and compare_digest raises on it
        return bool(token) and str(token).isascii() and hmac.compare_digest(str(token), self.csrf_token(session))
