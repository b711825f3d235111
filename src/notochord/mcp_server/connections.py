"""Assistant connections: each MCP client is an installed gem of kind ``assistant``.

A connection is registered with a manifest the product writes: the knowledge permissions it may
ask for, every one off until the person switches it on (K-PERM-03), with a name, a description
and a reason. Its switches are any gem's (``notochord gem grant/revoke``, the console's gem page),
so permission checks, refs, quotas, the change log and undo are exactly a gem's.

Secrets: ``connect`` makes a bearer secret of 32 random bytes, hands it out once and keeps only its
SHA-256 with the installation (``gem_settings``); a presented secret is compared in constant time.
``revoke`` forgets the hash, so that client can no longer connect over HTTP (and the running server
ends the HTTP sessions it opened, on its next request); the connection, its switches and what it
wrote stay unless the person also asks to uninstall it.

A connection's name is not its identity: removed and made again under the same name, it is another
installation, with switches of its own that start off. A session holds the installation it began
with (:meth:`Connections.installation`), and its ``ctx.knowledge`` checks, wherever it reads the
switches, that this installation is still the one installed: a client still running for a removed
connection can do nothing from then on, whatever a connection of its name may do later.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import re
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from notochord.access.permissions import Permission
from notochord.errors import GemError, GemNotFoundError, KnowledgeValidationError
from notochord.gems.manifest import ASSISTANT_KIND, PACKAGED_FILE

if TYPE_CHECKING:
    import sqlalchemy as sa

    from notochord.access.permissions import PermissionSet
    from notochord.app import Space
    from notochord.gems.api.knowledge import KnowledgeApi
    from notochord.gems.registry import PermissionSwitch, UninstallReport

__all__ = [
    "DEFAULT_PERMISSIONS",
    "SECRET_PREFIX",
    "Connection",
    "Connections",
    "load_permissions_file",
    "removed",
]

SECRET_SETTING: Final = "mcp_secret_sha256"
"""``gem_settings`` key of the connection's secret hash (it goes when the connection is uninstalled)."""
SECRET_PREFIX: Final = "ncmcp_"
_NAME_RE: Final = re.compile(r"[a-z0-9][a-z0-9-]{0,63}", re.ASCII)

DEFAULT_PERMISSIONS: Final[tuple[str, ...]] = (
    "facts.read:self:pref.food.*",
    "facts.write:self:pref.food.*",
    "facts.read:self:location.home.*",
    "facts.read:person:contact.email.*",
    "entities.resolve:person",
    "entities.read:person",
    "entities.write:person",
    "collections.read:diary",
    "collections.read:keep",
    "collections.write:keep",
    "collections.read:user-selected",
)
"""What a connection may ask for when ``--permissions-from`` names nothing else; all start off."""

_DEFAULT_REASON: Final = "An AI assistant connected over MCP reads and writes your knowledge only as you allow."


@dataclass(frozen=True)
class Connection:
    """One connection as ``mcp list|show`` print it."""

    name: str
    description: str | None
    installed_at: str
    has_secret: bool
    permissions: tuple[PermissionSwitch, ...]

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "installedAt": self.installed_at,
            "secret": "active" if self.has_secret else "revoked",
            "permissions": [
                {"permission": p.permission, "on": p.on, "sentence": p.sentence_en} for p in self.permissions
            ],
        }


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise KnowledgeValidationError(
            f"connection name {name!r} must be 1-64 of a-z, 0-9 and '-', starting with a letter or digit "
            "(for example: claude-desktop)"
        )
    return name


def removed(name: str, *, made_again: bool) -> str:
    """The refusal of every call of a session whose connection ``name`` was removed; ``made_again``
    when a connection of that name exists again (another one, which the session is not)."""
    if not made_again:
        return (
            f"refused: connection {name} no longer exists, so it may do nothing; to connect again, "
            f"make it anew: notochord mcp connect {name}, then switch on what it may do with "
            f"notochord gem grant {name} PERMISSION"
        )
    return (
        f"refused: connection {name} was removed, so this session may do nothing; the connection {name} "
        "made since is another one, with its own switches: to use it, start a new session (restart the "
        f"assistant's app, which runs notochord mcp serve --connection {name} again; over HTTP, connect "
        "with the new connection's secret)"
    )


def load_permissions_file(path: Path) -> tuple[list[str], str | None]:
    """The permissions (and optional reason) of ``--permissions-from``: a JSON list of permission
    strings, or ``{"permissions": [...], "reason": "..."}``.

    Raises:
        KnowledgeValidationError: the file cannot be read, is not such JSON, or a string does not parse.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KnowledgeValidationError(f"cannot read permissions from {path}: {exc}") from exc
    reason = None
    if isinstance(data, dict):
        unknown = set(data) - {"permissions", "reason"}
        if unknown:
            raise KnowledgeValidationError(f"{path}: unknown key {sorted(unknown)[0]!r} (known: permissions, reason)")
        reason = data.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise KnowledgeValidationError(f"{path}: reason must be a string")
        data = data.get("permissions")
    if not isinstance(data, list) or not all(isinstance(p, str) for p in data):
        raise KnowledgeValidationError(
            f'{path}: expected a list of permission strings such as ["facts.read:self:pref.food.*"]'
        )
    return [str(Permission.parse(p)) for p in data], reason


class Connections:
    """Register, list, revoke and authenticate the assistant connections of one space."""

    def __init__(self, space: Space) -> None:
        self._space = space
        self._gems = space.gems

    def connect(
        self, name: str, *, permissions: list[str] | None = None, reason: str | None = None
    ) -> tuple[Connection, str]:
        """Install the connection ``name`` with every permission off; returns it and its secret (shown once).

        Raises:
            KnowledgeValidationError: the name or a permission is malformed.
            GemError: a gem or connection with that name is already installed.
        """
        _check_name(name)
        requested = list(dict.fromkeys(permissions if permissions is not None else DEFAULT_PERMISSIONS))
        for p in requested:
            Permission.parse(p)
        manifest = {
            "id": name,
            "name": name,
            "kind": ASSISTANT_KIND,
            "version": "1",
            "description": f"AI assistant connected over MCP as {name!r}",
            "permissions": {"knowledge": {"permissions": requested, "reason": reason or _DEFAULT_REASON}},
        }
        with tempfile.TemporaryDirectory(prefix="notochord-mcp-") as folder:
            (Path(folder) / PACKAGED_FILE).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
            try:
                self._gems.install(folder)
            except GemError as error:
                if "already installed" in error.message:
                    raise GemError(
                        f"a gem or connection named {name} is already installed; choose another name, "
                        f"or see it with: notochord mcp show {name}"
                    ) from None
                raise
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)
        self._gems.registry.set_setting(name, SECRET_SETTING, _hash(secret))
        return self.get(name), secret

    def list(self) -> list[Connection]:
        return [self.get(g.id) for g in self._gems.list() if g.manifest.kind == ASSISTANT_KIND]

    def get(self, name: str) -> Connection:
        """The connection ``name``.

        Raises:
            GemNotFoundError: no connection of that name (a gem of another kind is no connection).
        """
        _check_name(name)
        try:
            gem = self._gems.get(name)
        except GemNotFoundError:
            gem = None
        if gem is None or gem.manifest.kind != ASSISTANT_KIND:
            raise GemNotFoundError(f"no assistant connection {name!r}; create one with: notochord mcp connect {name}")
        return Connection(
            name=gem.id,
            description=gem.description,
            installed_at=gem.installed_at,
            has_secret=self._gems.registry.setting(name, SECRET_SETTING) is not None,
            permissions=tuple(self._gems.permissions(name)),
        )

    def revoke(self, name: str, *, uninstall: bool = False, delete_data: bool = False) -> UninstallReport | None:
        """Forget the connection's secret; with ``uninstall`` also remove the connection (and with
        ``delete_data`` what it wrote, as one batch the person can undo)."""
        self.get(name)
        self._gems.registry.set_setting(name, SECRET_SETTING, None)
        if uninstall:
            return self._gems.uninstall(name, delete_data=delete_data)
        return None

    def authenticate(self, secret: str) -> str | None:
        """The connection whose secret ``secret`` is, or ``None`` (unknown, malformed or revoked)."""
        if not secret.startswith(SECRET_PREFIX) or len(secret) > 200:
            return None
        presented = _hash(secret)
        found = None
        for gem in self._gems.list():
            if gem.manifest.kind != ASSISTANT_KIND:
                continue
            stored = self._gems.registry.setting(gem.id, SECRET_SETTING)
            # every stored hash is compared, so the time taken does not tell which one matched
            if isinstance(stored, str) and hmac.compare_digest(stored, presented):
                found = gem.id
        return found

    def identify(self, secret: str) -> tuple[str, str] | None:
        """The connection whose secret ``secret`` is and its installation, or ``None``.

        The connection's stored secret is compared again once the installation is read: a secret is
        made for one installation and goes with it, so a secret that matched before and after the
        read belongs to the installation read, even if the connection was made again meanwhile.
        """
        name = self.authenticate(secret)
        if name is None:
            return None
        installation = self.installation(name)
        stored = self._gems.registry.setting(name, SECRET_SETTING)
        if installation is None or not isinstance(stored, str) or not hmac.compare_digest(stored, _hash(secret)):
            return None
        return name, installation

    def installed(self, name: str) -> str:
        """The installation of the connection ``name`` now, for a client beginning with it.

        Raises:
            GemNotFoundError: no connection of that name.
        """
        installation = self.installation(name)
        self.get(name)
        # read on both sides of the check of its kind: an installation never comes back once gone
        if installation is None or self.installation(name) != installation:
            raise GemNotFoundError(f"no assistant connection {name!r}; create one with: notochord mcp connect {name}")
        return installation

    def installation(self, name: str) -> str | None:
        """The installation of the connection ``name`` now, ``None`` when there is none; another one
        each time a connection of that name is made again."""
        return self._gems.registry.installation(name)

    def asks_for(self, name: str, permission: str) -> bool | None:
        """Whether the connection asked, when it was made, for a permission covering ``permission``;
        ``None`` when that cannot be told (no such connection any more, or no permission string)."""
        try:
            self.get(name)
            if self._gems.registry.covering(name, permission) is not None:
                return True
            Permission.parse(permission)
        except (GemNotFoundError, KnowledgeValidationError):
            return None
        return False

    def knowledge(self, name: str, run_id: str, *, installation: str) -> KnowledgeApi:
        """The ``ctx.knowledge`` of one session of the connection, the object a gem tool receives,
        bound to ``installation``: once that is not the one installed, every call raises
        :class:`GemNotFoundError` with the words of :func:`removed`.

        Every call reads the switches, so that is where the installation is checked: on the same
        connection as the switches when the caller gives one (inside a write, before the write is
        allowed), else right after reading them. An installation never comes back once removed, so
        finding it there after the read means the switches read were its own.

        Raises:
            GemNotFoundError: ``installation`` is not installed now.
        """
        registry = self._gems.registry
        api = self._gems.context(name, run_id=run_id).knowledge
        assert api is not None  # a context without a tool always carries knowledge

        def still_installed(conn: sa.Connection | None) -> None:
            now = registry.installation(name, conn)
            if now != installation:
                raise GemNotFoundError(removed(name, made_again=now is not None))

        def grants() -> PermissionSet:
            found = registry.granted(name)
            still_installed(None)
            return found

        def grants_in(conn: sa.Connection) -> PermissionSet:
            still_installed(conn)
            return registry.granted(name, conn)

        still_installed(None)
        api.grants, api.grants_in = grants, grants_in
        return api

    def begin_session(self, name: str, run_id: str, *, transport: str) -> None:
        """Record the session as a run of the connection (``runs list/show/undo``)."""
        self._gems.runner.begin(run_id, name, tool="mcp-session", input={"transport": transport})

    def end_session(self, run_id: str, *, calls: int) -> None:
        with contextlib.suppress(GemNotFoundError):  # the run was never recorded
            self._gems.runner.end(run_id, output={"toolCalls": calls})
