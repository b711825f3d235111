"""The composition root: ``notochord.open(data_dir)`` wires settings, clock and spaces.

Layout of a data directory (one per user by default, see :func:`notochord.settings.default_data_dir`)::

    <data_dir>/
      master.key            32 random bytes, mode 0600; seeds every per-gem key (HKDF)
      spaces/personal.db    the personal space
      spaces/org-<id>.db    one file per organization's space
      gem-code/<space>/     the code of every installed gem
      gems/<space>/         each gem's folders: private storage (encrypted), run folders
      history/<digest>/     the file history of each conversation or working folder
      jwt.secret            the development secret of the REST service, once it has run

``notochord backup`` copies all of it (see :mod:`notochord.backup`).

Each space is a separate SQLite file (K-CON-08, OD-K47): nothing is shared between spaces, and no
API takes a space argument once a space is chosen. With ``database_url`` set to a PostgreSQL server,
each space is instead a separate database on it (:mod:`notochord.db.postgres`), created where a space
file would be; the master key, gem code and folders, private gem storage and file history stay in
the data directory.
"""

from __future__ import annotations

import errno
import math
import os
import re
import secrets
import threading
import zoneinfo
from pathlib import Path
from types import TracebackType

import sqlalchemy as sa

from notochord.clock import Clock, SystemClock
from notochord.db.creation import open_sqlite_store
from notochord.db.engine import is_read_only
from notochord.db.migrate import migrate
from notochord.errors import ClosedError, ConfigurationError, SpaceNotFoundError, StorageError
from notochord.files.full import disk_full
from notochord.gems.api.data import make_data
from notochord.gems.api.extract import make_extract
from notochord.gems.api.files import make_files
from notochord.gems.api.http import make_http
from notochord.gems.api.storage import make_storage
from notochord.gems.files_service import FilesService
from notochord.gems.folders import GemFolders
from notochord.gems.service import Gems
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.user import HostChanges, HostKnowledge
from notochord.knowledge.writes import ASSISTANT, USER
from notochord.net.user_rules import NetworkRulesStore
from notochord.search.embeddings import Embedder, load_embedder
from notochord.search.vault_indexer import SpaceStore, VaultIndexer
from notochord.settings import Settings

__all__ = ["Notochord", "Space", "check_org_id", "is_vault", "open"]


class _Default:
    """Marks "use the embedder the settings name" (``None`` means no embedder at all)."""


_DEFAULT = _Default()

_ORG_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_KEY_BYTES = 32
# a file where a folder of the path must be, or a name too long for the system
_NOT_A_FOLDER_PATH = frozenset({errno.ENOTDIR, errno.EEXIST, errno.ENAMETOOLONG})


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
        self.location = str(path)
        """Where the store is: its file, or its database on the PostgreSQL server (password hidden)."""
        self._engine: sa.Engine | None
        if settings.database_url:
            from notochord.db import postgres

            self._engine = postgres.create_postgresql_engine(
                settings.database_url, name, lock_wait_ms=settings.sqlite_busy_timeout_ms
            )
            self.location = postgres.shown_url(self._engine.url)
        else:
            self._engine = open_sqlite_store(path, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
        migrate(self._engine)
        self.read_only = is_read_only(self._engine)
        """Whether the store cannot be written (a read-only mount): it is read as it is, writes are refused."""
        self.core = KnowledgeCore(
            self._engine,
            clock,
            embedder=embedder,
            # A read-only store cannot take the vectors a background worker would write.
            background=settings.index_in_background and not self.read_only,
            hnsw_threshold=settings.vector_hnsw_threshold,
            saved_matrix_min=settings.vector_saved_matrix_min,
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
        self._folders = GemFolders(
            data_dir, name, headless=settings.headless, history_max_bytes=settings.file_history_max_bytes
        )
        self.gems.services.gem_folders = self._folders
        self.gems.factories.update(files=make_files, storage=make_storage, data=make_data)
        self.gems.registry.on_uninstalled.append(self._folders.on_uninstalled)
        self.network_rules = NetworkRulesStore(self.core)
        """The user's network rules for this space ("Settings › System › Network access")."""
        self.gems.services.network_rules = self.network_rules
        self.network = self.network_rules
        """``space.network.rules``: the user's rules, and the methods that change them."""
        self.files = FilesService(data_dir, headless=settings.headless, clock=clock)
        """``space.files.history(folder)`` and ``space.files.rollback(run_id, conversation=…)``."""
        self.gems.factories.update(http=make_http, extract=make_extract)

    def status(self) -> dict[str, object]:
        """Counts of current facts, live entities and changes; passages waiting to be embedded, and an ETA.

        ``etaSeconds`` comes from the embedding rate last measured in this space (``None`` before
        anything was ever embedded, or without an embedder).
        """
        pending = self.index.pending()
        eta = self.index.eta_seconds(pending) if self.index.enabled else None
        return {
            "space": self.name,
            "path": self.location,
            **self.core.counts(),
            "pending": pending,
            "etaSeconds": None if eta is None else _tenths_up(eta),
        }

    def close(self) -> None:
        self._folders.close()
        self.core.close()
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __repr__(self) -> str:
        return f"<Space {self.name} at {self.location}>"


def _refuse_a_file_path(data_dir: Path) -> None:
    """A data directory that is a file, or lies under one, is a mistake in what was typed, not a
    vault still to be made: said as ``init`` says it, before "no vault" could send anyone there."""
    for place in (data_dir, *data_dir.parents):
        if place.exists():
            if not place.is_dir():
                raise ConfigurationError(
                    f"cannot use {_shown(data_dir)} as the data directory: "
                    + ("it is a file" if place == data_dir else f"{_shown(place)} is a file")
                    + ", not a folder; choose a folder with --data-dir or NOTOCHORD_DATA_DIR"
                )
            return


class Notochord:
    """An open data directory. Use as a context manager or call :meth:`close`."""

    def __init__(
        self,
        data_dir: Path,
        *,
        settings: Settings,
        clock: Clock | None = None,
        embedder: Embedder | _Default | None = _DEFAULT,
        create: bool = True,
    ) -> None:
        self.data_dir = data_dir
        self.settings = settings
        _refuse_a_file_path(data_dir)
        if not create and not is_vault(data_dir) and not any((data_dir / "spaces").glob("*.db")):
            raise SpaceNotFoundError.no_vault(_shown(data_dir))
        self.clock: Clock = clock or _system_clock(settings.timezone)
        try:
            (data_dir / "spaces").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            full = disk_full(exc, f"the data directory {data_dir}")
            if full is not None:
                raise full from exc
            reason = (exc.strerror or "the system refused").lower()
            if exc.errno in _NOT_A_FOLDER_PATH:  # the path typed cannot name a folder: the input is wrong
                raise ConfigurationError(
                    f"cannot use {_shown(data_dir)} as the data directory: {reason}; choose a folder "
                    "with --data-dir or NOTOCHORD_DATA_DIR"
                ) from exc
            raise StorageError(f"cannot create the data directory {_shown(data_dir)}: {reason}") from exc
        key_path = data_dir / "master.key"
        # Spaces first, then the key: whoever made a space had its key in place before, so a key
        # still missing after a space was seen is really missing (not another process's first open).
        if any((data_dir / "spaces").glob("*.db")) and not key_path.exists():
            # A fresh key would silently orphan every gem's refs and private storage.
            raise StorageError(
                f"the master key {key_path} is missing although the vault has spaces; "
                "put it back from a backup (`notochord restore`)"
            )
        if settings.database_url and not key_path.exists():
            from notochord.db import postgres

            if postgres.list_spaces(settings.database_url) and not key_path.exists():
                raise StorageError(
                    f"the master key {key_path} is missing although the database server holds this vault's spaces; "
                    "copy master.key from the data directory of a process already using them (every process "
                    "serving the same spaces needs the same key), or put it back from a backup"
                )
        self._master_key = _load_or_create_key(key_path)
        self._embedder = _shared_embedder(settings.embedder) if isinstance(embedder, _Default) else embedder
        self._spaces: dict[str, Space] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._indexer: VaultIndexer | None = None

    def keep_indexed(self) -> bool:
        """Embed the pending passages of every space in the background while this process runs.

        For processes that hold the vault open longer than a command (``serve``, the console, MCP):
        every space with pending passages opens now, which starts its embedding worker; a space
        another process writes to later opens when its passages appear. Returns whether the worker
        runs (not without an embedder, nor with ``index_in_background`` off). Idempotent.
        """
        if self._embedder is None or not self.settings.index_in_background:
            return False
        with self._lock:
            if self._closed:
                raise ClosedError(f"this notochord at {self.data_dir} was closed; open it again with notochord.open()")
            if self._indexer is None:
                self._indexer = VaultIndexer(
                    data_dir=self.data_dir,
                    spaces=self.space_stores,
                    is_open=lambda name: name in self._spaces,
                    open_space=self.space,
                    model_id=self._embedder.model_id,
                )
                self._indexer.start()
        return True

    @property
    def embedding_model_id(self) -> str | None:
        """The id of the model whose vectors make passages searchable by meaning, or ``None`` (full text only)."""
        return None if self._embedder is None else self._embedder.model_id

    def space_stores(self) -> list[tuple[str, SpaceStore]]:
        """Every space that exists as ``(name, store)``, without opening any of them.

        The store is the space's SQLite file, or with ``database_url`` the URL of its database on the
        PostgreSQL server (what :func:`~notochord.search.vault_indexer.has_pending` reads).
        """
        if self.settings.database_url:
            from notochord.db import postgres

            url = self.settings.database_url
            return [
                (
                    name,
                    postgres.server_url(url, postgres.database_name(url, name))
                    .set(drivername="postgresql")
                    .render_as_string(hide_password=False),
                )
                for name in postgres.list_spaces(url)
            ]
        return [
            ("personal" if p.stem == "personal" else "org:" + p.stem.removeprefix("org-"), p)
            for p in sorted((self.data_dir / "spaces").glob("*.db"))
        ]

    def space(self, name: str) -> Space:
        """The space called ``name``: ``"personal"`` or ``"org:<id>"``, as :meth:`spaces` lists them."""
        return self.personal if name == "personal" else self.org(name.removeprefix("org:"))

    @property
    def personal(self) -> Space:
        """The user's personal space."""
        return self._space("personal", self.data_dir / "spaces" / "personal.db")

    def org(self, org_id: str, *, create: bool = False) -> Space:
        """The space of organization ``org_id``.

        Args:
            create: make the space when it does not exist yet. Without it an unknown organization is
                refused, so that a misspelt id never looks like an empty organization.

        Raises:
            ConfigurationError: the id is malformed.
            SpaceNotFoundError: the organization has no space and ``create`` is false.
        """
        check_org_id(org_id)
        name, path = f"org:{org_id}", self.data_dir / "spaces" / f"org-{org_id}.db"
        if not create and name not in self._spaces and not self._exists(name, path):
            known = [n.removeprefix("org:") for n in self.spaces() if n.startswith("org:")]
            raise SpaceNotFoundError(
                f"no organization {org_id!r} in the vault at {_shown(self.data_dir)} "
                f"(known: {', '.join(known) or 'none'}); create its space with `notochord init --org {org_id}`",
                path=str(path),
            )
        return self._space(name, path)

    def _exists(self, name: str, path: Path) -> bool:
        if self.settings.database_url:
            from notochord.db import postgres

            return postgres.database_exists(self.settings.database_url, name)
        return path.exists()

    def spaces(self) -> list[str]:
        """Names of the spaces that exist (on disk, or on the PostgreSQL server)."""
        if self.settings.database_url:
            from notochord.db import postgres

            return postgres.list_spaces(self.settings.database_url)
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
                if self.settings.database_url:
                    from notochord.db import postgres

                    # where a space file would be made on first open, its database is made here
                    postgres.create_database(self.settings.database_url, name)
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
        indexer, self._indexer = self._indexer, None
        if indexer is not None:
            indexer.stop()
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
    create: bool = True,
) -> Notochord:
    """Open a notochord data directory, creating it unless ``create`` is false.

    Args:
        data_dir: the directory; defaults to ``settings.data_dir`` (one per user, for example
            ``~/.local/share/notochord``; ``NOTOCHORD_DATA_DIR`` overrides it).
        settings: defaults to :meth:`Settings.load` (environment and optional file).
        clock: an injected clock, for tests.
        embedder: an injected embedder (or ``None`` for full text only), instead of the one
            ``settings.embedder`` names.
        create: make the directory, its master key and its spaces when missing. With ``False`` a
            directory without a vault is refused and nothing is written.

    Raises:
        SpaceNotFoundError: ``create`` is false and there is no vault at the path.
    """
    settings = settings or Settings.load()
    path = Path(data_dir).expanduser() if data_dir is not None else settings.data_dir
    return Notochord(path, settings=settings, clock=clock, embedder=embedder, create=create)


def check_org_id(org_id: object) -> None:
    """Refuse an organization id that names no space file (``ConfigurationError`` saying what one is)."""
    if not isinstance(org_id, str) or not _ORG_ID.match(org_id):
        raise ConfigurationError(f"organization id {org_id!r} is malformed: use 1-63 lowercase letters, digits, - or _")


def is_vault(data_dir: Path) -> bool:
    """Whether ``data_dir`` holds a vault (its master key)."""
    return (data_dir / "master.key").is_file()


def _shown(path: Path) -> str:
    return os.path.abspath(path)


def _system_clock(tz_name: str | None) -> Clock:
    try:
        return SystemClock(tz_name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigurationError(
            f"setting timezone: {tz_name!r} is not a time zone; use an IANA name such as Europe/Amsterdam"
        ) from exc


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
        # Written whole under a private name, then linked into place: a process opening the vault at
        # the same moment sees no key or the whole key, never a file still being written.
        draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(key)
                handle.flush()
                os.fsync(handle.fileno())
            os.link(draft, path)
        finally:
            draft.unlink(missing_ok=True)
        return key
    except FileExistsError:
        return _load_or_create_key(path)
    except OSError as exc:
        full = disk_full(exc, f"the master key {path}")
        if full is not None:
            raise full from exc
        raise StorageError(f"cannot read or create the master key {path}: {exc}") from exc


def _tenths_up(seconds: float) -> float:
    """Round an ETA up to a tenth of a second: work that remains never shows as ``0.0`` seconds."""
    return math.ceil(seconds * 10) / 10
