"""The composition root: ``notochord.open(data_dir)`` wires settings, clock and spaces.

Layout of a data directory::

    <data_dir>/
      master.key            32 random bytes, mode 0600; seeds every per-gem key (HKDF)
      spaces/personal.db    the personal space
      spaces/org-<id>.db    one file per organization's space

Each space is a separate SQLite file (K-CON-08, OD-K47): nothing is shared between spaces, and no
API takes a space argument once a space is chosen.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
from pathlib import Path
from types import TracebackType

import sqlalchemy as sa

from notochord.clock import Clock, SystemClock
from notochord.db.engine import create_sqlite_engine, is_read_only
from notochord.db.migrate import migrate
from notochord.errors import ClosedError, ConfigurationError, StorageError
from notochord.gems.api.data import make_data
from notochord.gems.api.extract import make_extract
from notochord.gems.api.files import make_files
from notochord.gems.api.http import make_http
from notochord.gems.api.storage import make_storage
from notochord.gems.files_service import FilesService
from notochord.gems.folders import SERVICE as GEM_FOLDERS
from notochord.gems.folders import GemFolders
from notochord.gems.network_rules import NetworkRulesStore
from notochord.gems.service import Gems
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.user import HostChanges, HostKnowledge
from notochord.knowledge.writes import ASSISTANT, USER
from notochord.search.embeddings import Embedder, load_embedder
from notochord.settings import Settings

__all__ = ["Notochord", "Space", "open"]


class _Default:
    """Marks "use the embedder the settings name" (``None`` means no embedder at all)."""


_DEFAULT = _Default()

_ORG_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_KEY_BYTES = 32


class Space:
    """One physically separate store: the personal space or one organization's space."""

    def __init__(
        self,
        *,
        name: str,
        path: Path,
        data_dir: Path,
        settings: Settings,
        clock: Clock,
        master_key: bytes,
        embedder: Embedder | None,
    ) -> None:
        self.name = name
        self.path = path
        self._master_key = master_key
        self._engine: sa.Engine | None = create_sqlite_engine(path, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
        migrate(self._engine)
        self.read_only = is_read_only(self._engine)
        """Whether the store cannot be written (a read-only mount): it is read as it is, writes are refused."""
        self.core = KnowledgeCore(
            self._engine,
            clock,
            embedder=embedder,
            # A read-only store cannot take the vectors a background worker would write.
            background=settings.index_in_background and not self.read_only,
        )
        self.core.initialise()
        self.user = HostKnowledge(self.core, USER)
        self.as_assistant = HostKnowledge(self.core, ASSISTANT)
        self.changes = HostChanges(self.core)
        self.index = self.core.vectors
        """The vector index: ``space.index.wait()`` embeds everything pending now."""
        self.search = self.user.search
        """Search every collection as the user: ``space.search("stew", collections=["diary"])``."""
        self.gems = Gems(self.core, master_key=master_key, data_dir=data_dir, space_name=name, clock=clock)
        self._folders = GemFolders(data_dir, name, headless=settings.headless)
        self.gems.services[GEM_FOLDERS] = self._folders
        self.gems.factories.update(files=make_files, storage=make_storage, data=make_data)
        self.gems.registry.on_uninstalled.append(self._folders.on_uninstalled)
        self.network_rules = NetworkRulesStore(self.core)
        """The user's network rules for this space ("Settings › System › Network access")."""
        self.gems.services["network_rules"] = self.network_rules
        self.network = self.network_rules
        """``space.network.rules``: the user's rules, and the methods that change them."""
        self.files = FilesService(data_dir, headless=settings.headless, clock=clock)
        """``space.files.history(folder)`` and ``space.files.rollback(run_id, conversation=…)``."""
        self.gems.factories.update(http=make_http, extract=make_extract)

    def status(self) -> dict[str, object]:
        """Counts of current facts, live entities and changes."""
        return {"space": self.name, "path": str(self.path), **self.core.counts()}

    def close(self) -> None:
        self._folders.close()
        self.core.close()
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __repr__(self) -> str:
        return f"<Space {self.name} at {self.path}>"


class Notochord:
    """An open data directory. Use as a context manager or call :meth:`close`."""

    def __init__(
        self,
        data_dir: Path,
        *,
        settings: Settings,
        clock: Clock | None = None,
        embedder: Embedder | _Default | None = _DEFAULT,
    ) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.clock: Clock = clock or SystemClock(settings.timezone)
        self._embedder = _shared_embedder(settings.embedder) if isinstance(embedder, _Default) else embedder
        try:
            (data_dir / "spaces").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the data directory {data_dir}: {exc}") from exc
        self._master_key = _load_or_create_key(data_dir / "master.key")
        self._spaces: dict[str, Space] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def personal(self) -> Space:
        """The user's personal space."""
        return self._space("personal", self.data_dir / "spaces" / "personal.db")

    def org(self, org_id: str) -> Space:
        """The space of organization ``org_id`` (created on first use)."""
        if not isinstance(org_id, str) or not _ORG_ID.match(org_id):
            raise ConfigurationError(
                f"organization id {org_id!r} is malformed: use 1-63 lowercase letters, digits, - or _"
            )
        return self._space(f"org:{org_id}", self.data_dir / "spaces" / f"org-{org_id}.db")

    def spaces(self) -> list[str]:
        """Names of the spaces that exist on disk."""
        names = []
        for path in sorted((self.data_dir / "spaces").glob("*.db")):
            stem = path.stem
            names.append("personal" if stem == "personal" else "org:" + stem.removeprefix("org-"))
        return names

    def _space(self, name: str, path: Path) -> Space:
        with self._lock:
            if self._closed:
                raise ClosedError(f"this notochord at {self.data_dir} was closed; open it again with notochord.open()")
            space = self._spaces.get(name)
            if space is None:
                space = Space(
                    name=name,
                    path=path,
                    data_dir=self.data_dir,
                    settings=self.settings,
                    clock=self.clock,
                    master_key=self._master_key,
                    embedder=self._embedder,
                )
                self._spaces[name] = space
            return space

    def close(self) -> None:
        with self._lock:
            for space in self._spaces.values():
                space.close()
            self._spaces.clear()
            self._closed = True

    def __enter__(self) -> Notochord:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open(
    data_dir: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    embedder: Embedder | _Default | None = _DEFAULT,
) -> Notochord:
    """Open (creating if needed) a notochord data directory.

    Args:
        data_dir: the directory; defaults to ``settings.data_dir`` (``./.notochord``).
        settings: defaults to :meth:`Settings.load` (environment and optional file).
        clock: an injected clock, for tests.
        embedder: an injected embedder (or ``None`` for full text only), instead of the one
            ``settings.embedder`` names.
    """
    settings = settings or Settings.load()
    path = Path(data_dir) if data_dir is not None else settings.data_dir
    return Notochord(path, settings=settings, clock=clock, embedder=embedder)


_EMBEDDERS: dict[str, Embedder | None] = {}
_EMBEDDERS_LOCK = threading.Lock()


def _shared_embedder(name: str) -> Embedder | None:
    """One embedder per model in the process: the weights load once, whatever the number of spaces."""
    with _EMBEDDERS_LOCK:
        if name not in _EMBEDDERS:
            _EMBEDDERS[name] = load_embedder(name)
        return _EMBEDDERS[name]


def _load_or_create_key(path: Path) -> bytes:
    try:
        if path.exists():
            key = path.read_bytes()
            if len(key) != _KEY_BYTES:
                raise StorageError(f"master key {path} is damaged (expected {_KEY_BYTES} bytes)")
            return key
        key = secrets.token_bytes(_KEY_BYTES)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(key)
        return key
    except FileExistsError:
        return _load_or_create_key(path)
    except OSError as exc:
        raise StorageError(f"cannot read or create the master key {path}: {exc}") from exc
