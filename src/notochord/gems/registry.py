"""The gem registry of one space: install, upgrade, uninstall, and the user's permission switches.

Rules:

- Install validates the manifest (every problem listed at once), that every tool's entry file is in
  the gem folder, that the folder holds nothing an installation cannot keep (links out of it, pipes,
  devices: :mod:`notochord.gems.package`), and the predicate declarations against the vocabulary,
  then records the gem, one switch per requested permission (all off, K-PERM-03) and the declared
  predicates, in one transaction: a failed install leaves nothing (P-KVAL-06). At run time only
  this record is consulted; the manifest file is never read again (P-GEN-04).
- The user can switch on only permissions the installed manifest requested (K-PERM-25). Every write
  of a switch goes through :class:`~notochord.gems.grants.GrantBook`, which gives the switches a new
  version; every call checks that version, so a change takes effect on the very next call (K-PERM-04).
- Upgrade keeps the switches of permissions still requested, adds new ones off, and drops the rest,
  with the ticked collections once no ``user-selected`` permission is requested (P-GEN-06, OD-P11).
- Uninstall counts what the gem contributed; with ``delete_data`` it also removes that knowledge as
  one batch of changes the user can revert (K-UNINST, OD-K48). Either way the switches and the
  installation's key salt go, so the gem's earlier refs and private storage are gone for good.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import sqlalchemy as sa

from notochord.access.permissions import (
    CollectionsPermission,
    EntitiesPermission,
    FactsPermission,
    Permission,
    PermissionSet,
)
from notochord.access.sentences import sentence
from notochord.db.schema import collection_ticks, collections, facts, gem_grants, gem_settings, gems
from notochord.errors import GemError, GemNotFoundError, KnowledgeValidationError, ManifestError
from notochord.gems.entries import check_tool_entries
from notochord.gems.grants import GrantBook
from notochord.gems.keys import derive_key
from notochord.gems.manifest import Manifest, parse_manifest, read_manifest
from notochord.gems.package import check_package
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.fact_rows import written_by
from notochord.knowledge.writes import USER

__all__ = [
    "CREATOR_WATERMARK",
    "GemRegistry",
    "InstalledGem",
    "PermissionSwitch",
    "UninstallReport",
    "covers",
    "folder_of",
]

CREATOR_WATERMARK = "creator_watermark"
"""gem_settings key: the highest collection id when the installation began (creator rights start after it)."""


@dataclass(frozen=True)
class InstalledGem:
    id: str
    name: str
    version: str | None
    description: str | None
    manifest: Manifest
    installed_at: str
    updated_at: str
    left_out: tuple[tuple[str, int], ...] = ()
    """What the install or upgrade that returned this left out of the copy it keeps (kind, how
    many; :func:`~notochord.gems.package.left_out_kind`); empty when the gem is read back later."""


class PermissionSwitch(NamedTuple):
    """One requested permission as the user sees it on the gem's page."""

    permission: str
    on: bool
    sentence_en: str
    sentence_zh: str


@dataclass(frozen=True)
class UninstallReport:
    """What the gem contributed (counted before anything is removed), and what was done."""

    gem_id: str
    facts: int
    documents: int
    collections: int
    deleted: bool
    run_id: str | None


Counter = Callable[[sa.Connection, str], dict[str, int]]


class GemRegistry:
    def __init__(self, core: KnowledgeCore, *, master_key: bytes) -> None:
        self._core = core
        self._master_key = master_key
        self._lock = threading.Lock()
        self.grants = GrantBook()
        """The one write path of the switches, and their version-checked reader."""
        self._manifests: dict[tuple[str, str], Manifest] = {}
        self.counters: list[Counter] = [_count_facts]
        self.on_uninstalled: list[Callable[[str], None]] = []

    # ------------------------------------------------------------ install / upgrade

    def read(self, path: str | Path, *, installed: bool | None = None) -> tuple[Manifest, dict[str, object]]:
        """Read and check the gem in ``path``: its manifest, its tools' entries and the folder itself
        (nothing an installation cannot keep); records nothing.

        ``installed`` ``False`` also refuses a gem that is installed already, ``True`` one that is not.

        Raises:
            ManifestError: the manifest is invalid, or a tool's entry is not a file of the folder.
            GemError: the folder holds what an installation cannot keep (:mod:`notochord.gems.package`),
                or the gem is (not) installed against ``installed``.
        """
        manifest, raw = read_manifest(Path(path))
        folder = folder_of(Path(path))
        check_tool_entries(manifest, raw, folder)
        check_package(folder)
        if installed is not None:
            with self._core.store.read() as conn:
                present = conn.execute(sa.select(gems.c.id).where(gems.c.id == manifest.id)).first() is not None
            if present and not installed:
                raise GemError(f"gem {manifest.id} is already installed; upgrade it instead")
            if installed and not present:
                raise GemNotFoundError(f"gem {manifest.id} is not installed; install it first")
        return manifest, raw

    def read_copy(self, path: Path) -> tuple[Manifest, dict[str, object]]:
        """Read the manifest of a copy :func:`~notochord.gems.package.stage_package` made, and check
        its tools' entries there; the copy's files were checked as they were copied.

        Raises:
            ManifestError: the manifest is invalid, or a tool's entry is not a file of the copy (the
                gem folder changed after it was read).
        """
        manifest, raw = read_manifest(path)
        check_tool_entries(manifest, raw, folder_of(path))
        return manifest, raw

    def install(self, manifest: Manifest, raw: dict[str, object], *, source: Path) -> InstalledGem:
        """Record the gem of ``manifest`` (read by :meth:`read` or :meth:`read_copy`) as installed from
        ``source``, a folder or a manifest file. Every permission starts off.

        Raises:
            ManifestError: the manifest declares a predicate that clashes with the vocabulary;
                nothing was installed.
            GemError: a gem with that id is already installed (use :meth:`upgrade`).
        """
        store = self._core.store
        with store.write(actor=USER, run_id=None) as tx:
            if tx.conn.execute(sa.select(gems.c.id).where(gems.c.id == manifest.id)).first() is not None:
                raise GemError(f"gem {manifest.id} is already installed; upgrade it instead")
            self._declare_predicates(tx.conn, manifest, now=tx.now)
            tx.conn.execute(
                sa.insert(gems).values(
                    id=manifest.id,
                    name=manifest.name,
                    version=manifest.version,
                    manifest_json=json.dumps({"form": manifest.form, "data": raw}, ensure_ascii=False),
                    source_path=str(source.resolve()),
                    key_salt=secrets.token_hex(32),
                    installed_at=tx.now,
                    updated_at=tx.now,
                )
            )
            self.grants.add(tx.conn, manifest.id, manifest.knowledge.permission_strings(), now=tx.now)
            newest = tx.conn.execute(sa.select(sa.func.coalesce(sa.func.max(collections.c.id), 0))).scalar_one()
            tx.conn.execute(
                sa.insert(gem_settings).values(
                    gem_id=manifest.id, key=CREATOR_WATERMARK, value_json=json.dumps(int(newest)), changed_at=tx.now
                )
            )
        return self.get(manifest.id)

    def upgrade(self, manifest: Manifest, raw: dict[str, object], *, source: Path) -> InstalledGem:
        """Record ``manifest`` (read by :meth:`read` or :meth:`read_copy`) as the installed gem's new
        one, from ``source``, keeping the switches of permissions still requested.

        The ticked collections go when the new manifest requests no ``user-selected`` permission
        (OD-P11), so a later version asking for them again starts with none ticked.
        """
        with self._core.store.write(actor=USER, run_id=None) as tx:
            if tx.conn.execute(sa.select(gems.c.id).where(gems.c.id == manifest.id)).first() is None:
                raise GemNotFoundError(f"gem {manifest.id} is not installed; install it first")
            self._declare_predicates(tx.conn, manifest, now=tx.now)
            requested = set(manifest.knowledge.permission_strings())
            current = {
                row.permission: row.enabled
                for row in tx.conn.execute(sa.select(gem_grants).where(gem_grants.c.gem_id == manifest.id))
            }
            self.grants.drop(tx.conn, manifest.id, set(current) - requested)
            added = [p for p in manifest.knowledge.permission_strings() if p not in current]
            self.grants.add(tx.conn, manifest.id, added, now=tx.now)
            if not manifest.knowledge.asks_for_chosen_collections():
                tx.conn.execute(sa.delete(collection_ticks).where(collection_ticks.c.gem_id == manifest.id))
            tx.conn.execute(
                sa.update(gems)
                .where(gems.c.id == manifest.id)
                .values(
                    name=manifest.name,
                    version=manifest.version,
                    manifest_json=json.dumps({"form": manifest.form, "data": raw}, ensure_ascii=False),
                    source_path=str(source.resolve()),
                    updated_at=tx.now,
                )
            )
        return self.get(manifest.id)

    def _declare_predicates(self, conn: sa.Connection, manifest: Manifest, *, now: str) -> None:
        vocabulary = self._core.vocabulary
        prefix = "knowledge.predicates" if manifest.form == "draft" else "permissions.knowledge.predicates"
        problems = []
        for index, declaration in enumerate(manifest.knowledge.predicates):
            existing = vocabulary.get(conn, declaration.predicate)
            if existing is not None and existing.cardinality != declaration.cardinality:
                problems.append(
                    f"{prefix}[{index}].cardinality: {declaration.predicate} already exists with "
                    f"cardinality {existing.cardinality}; declare it as {existing.cardinality} "
                    "or choose another name"
                )
        if problems:
            raise ManifestError(problems, source=manifest.source)
        for declaration in manifest.knowledge.predicates:
            vocabulary.add(
                conn,
                name=declaration.predicate,
                cardinality=declaration.cardinality,
                description=declaration.description,
                declared_by=f"gem:{manifest.id}",
                aliases=declaration.aliases,
                now=now,
            )

    # ------------------------------------------------------------ reading

    def list(self) -> builtins.list[InstalledGem]:
        """Every installed gem, by id, read in one query whatever their number."""
        with self._core.store.read() as conn:
            rows = conn.execute(sa.select(gems).order_by(gems.c.id)).all()
        return [self._installed(row) for row in rows]

    def get(self, gem_id: str) -> InstalledGem:
        return self._installed(self._row(gem_id))

    def _installed(self, row: sa.Row[Any]) -> InstalledGem:
        manifest = self._manifest_of(row)
        return InstalledGem(
            id=row.id,
            name=row.name,
            version=row.version,
            description=manifest.description,
            manifest=manifest,
            installed_at=row.installed_at,
            updated_at=row.updated_at,
        )

    def manifest(self, gem_id: str) -> Manifest:
        """The installed manifest record (never re-read from the gem's folder)."""
        return self._manifest_of(self._row(gem_id))

    def switches_of_all(self) -> dict[str, dict[str, bool]]:
        """Every gem's switches (``{gem id: {permission: on}}``), read in one query."""
        found: dict[str, dict[str, bool]] = {}
        with self._core.store.read() as conn:
            for r in conn.execute(sa.select(gem_grants)):
                found.setdefault(r.gem_id, {})[r.permission] = bool(r.enabled)
        return found

    def _manifest_of(self, row: sa.Row[Any]) -> Manifest:
        gem_id = row.id
        # keyed by content: an upgrade (or a reinstall) within the same millisecond still changes it
        key = (gem_id, hashlib.sha256(row.manifest_json.encode()).hexdigest())
        with self._lock:
            cached = self._manifests.get(key)
        if cached is None:
            stored = json.loads(row.manifest_json)
            cached = parse_manifest(stored["data"], form=stored["form"], source=f"installed gem {gem_id}")
            with self._lock:
                self._manifests[key] = cached
        return cached

    def permissions(self, gem_id: str) -> builtins.list[PermissionSwitch]:
        """Every requested permission with its switch and its sentences, in manifest order."""
        manifest = self.manifest(gem_id)
        state = self._switches(gem_id)
        describe = manifest.knowledge.describe_predicate
        return [
            PermissionSwitch(
                permission=str(p),
                on=state.get(str(p), False),
                sentence_en=sentence(p, lang="en", describe_predicate=describe),
                sentence_zh=sentence(p, lang="zh", describe_predicate=describe),
            )
            for p in manifest.knowledge.permissions
        ]

    def covering(self, gem_id: str, needed: str) -> str | None:
        """The requested permission that would allow what ``needed`` allows, or ``None``.

        ``needed`` itself when it was requested, else the first covering one in manifest order.
        """
        try:
            wanted = Permission.parse(needed)
        except KnowledgeValidationError:
            return None
        found = [p for p in self.manifest(gem_id).knowledge.permissions if covers(p, wanted)]
        best = next((p for p in found if p == wanted), found[0] if found else None)
        return None if best is None else str(best)

    def granted(self, gem_id: str, conn: sa.Connection | None = None) -> PermissionSet:
        """The permissions switched on right now: checked against the grants version on every
        call, so a switch moved anywhere holds from the next call on (:mod:`notochord.gems.grants`).

        With ``conn``, read on that connection: inside a write transaction, the answer holds until
        it commits.
        """
        if conn is not None:
            return self.grants.granted(conn, gem_id)
        with self._core.store.read() as read:
            return self.grants.granted(read, gem_id)

    def installation(self, gem_id: str, conn: sa.Connection | None = None) -> str | None:
        """Which installation of the gem is installed now, ``None`` when none is: the same from install
        to uninstall (an upgrade keeps it), another after every reinstall under the same id, so a
        holder of the old one can tell. Drawn from the installation's key salt, of which it tells
        nothing. With ``conn``, read on that connection.
        """
        query = sa.select(gems.c.key_salt).where(gems.c.id == gem_id)
        if conn is not None:
            salt = conn.execute(query).scalar()
        else:
            with self._core.store.read() as read:
                salt = read.execute(query).scalar()
        return None if salt is None else hashlib.sha256(b"installation:" + bytes.fromhex(salt)).hexdigest()

    def key(self, gem_id: str, purpose: str) -> bytes:
        """A key of this installation of the gem (``"refs"``, ``"storage"``)."""
        row = self._row(gem_id)
        return derive_key(self._master_key, salt=bytes.fromhex(row.key_salt), gem_id=gem_id, purpose=purpose)

    def _switches(self, gem_id: str) -> dict[str, bool]:
        with self._core.store.read() as conn:
            return {
                r.permission: bool(r.enabled)
                for r in conn.execute(sa.select(gem_grants).where(gem_grants.c.gem_id == gem_id))
            }

    def _row(self, gem_id: str) -> sa.Row[Any]:
        with self._core.store.read() as conn:
            row = conn.execute(sa.select(gems).where(gems.c.id == gem_id)).first()
        if row is None:
            raise GemNotFoundError(
                f"no gem {gem_id!r} is installed in this space; see the installed ones with: notochord gem list"
            )
        return row

    # ------------------------------------------------------------ settings of one installation

    def setting(self, gem_id: str, key: str) -> Any:
        """A value kept with this installation (``gem_settings``), or ``None``; it goes with the gem."""
        with self._core.store.read() as conn:
            text = conn.execute(
                sa.select(gem_settings.c.value_json).where(gem_settings.c.gem_id == gem_id, gem_settings.c.key == key)
            ).scalar()
        return None if text is None else json.loads(text)

    def set_setting(self, gem_id: str, key: str, value: Any) -> None:
        """Keep ``value`` (JSON) under ``key`` for this installation; ``None`` removes it."""
        self._row(gem_id)
        with self._core.store.write(actor=USER, run_id=None) as tx:
            tx.conn.execute(sa.delete(gem_settings).where(gem_settings.c.gem_id == gem_id, gem_settings.c.key == key))
            if value is not None:
                tx.conn.execute(
                    sa.insert(gem_settings).values(
                        gem_id=gem_id, key=key, value_json=json.dumps(value), changed_at=tx.now
                    )
                )

    # ------------------------------------------------------------ the user's switches

    def set_permission(self, gem_id: str, permission: str, on: bool) -> None:
        """Switch one requested permission on or off; effective on the gem's next call.

        Raises:
            GemError: the gem did not request this permission (only requested ones can be switched).
        """
        self.set_permissions(gem_id, [permission], on)

    def set_permissions(self, gem_id: str, permissions: Sequence[str], on: bool) -> builtins.list[str]:
        """Switch several requested permissions on or off at once; returns their canonical strings.

        Every permission is checked before any switch moves: if one is malformed or was not
        requested, nothing changes.

        Raises:
            KnowledgeValidationError: a permission string is malformed.
            GemNotFoundError: no such gem is installed.
            GemError: the gem did not request one of them (only requested ones can be switched).
        """
        canonical = list(dict.fromkeys(str(Permission.parse(p)) for p in permissions))
        if not canonical:
            raise GemError("name at least one permission to switch")
        self._row(gem_id)
        with self._core.store.write(actor=USER, run_id=None) as tx:
            requested = set(
                tx.conn.execute(sa.select(gem_grants.c.permission).where(gem_grants.c.gem_id == gem_id)).scalars()
            )
            unrequested = [p for p in canonical if p not in requested]
            if unrequested:
                listed = ", ".join(unrequested)
                known = ", ".join(self.manifest(gem_id).knowledge.permission_strings()) or "none"
                raise GemError(
                    f"gem {gem_id} did not request {listed}; only permissions in its manifest can be switched "
                    f"(it requests: {known}); nothing was changed"
                )
            self.grants.switch(tx.conn, gem_id, canonical, on, now=tx.now)
        return canonical

    # ------------------------------------------------------------ uninstall

    def contributions(self, gem_id: str) -> dict[str, int]:
        """What the uninstall confirmation shows: the gem's facts, documents and collections."""
        self._row(gem_id)
        counts = {"facts": 0, "documents": 0, "collections": 0}
        with self._core.store.read() as conn:
            for counter in self.counters:
                counts.update(counter(conn, gem_id))
        return counts

    def uninstall(self, gem_id: str, *, delete_data: bool = False) -> UninstallReport:
        """Uninstall; ``delete_data`` also removes the gem's knowledge as one revertible batch."""
        counts = self.contributions(gem_id)
        run_id: str | None = None
        with self._core.store.write(actor=USER, run_id=None) as tx:
            if delete_data:
                run_id = f"uninstall:{gem_id}:{tx.now}"
                tx.run_id = run_id
                author, reason = f"gem:{gem_id}", f"removed with gem {gem_id}"
                self._core.facts.expire_by_writer(tx, writer=author, reason=reason)
                self._core.documents.remove_by_writer(tx, author=author, reason=reason)
                if not tx.recorded:
                    # no change carries the run id, so offering it for an undo would answer "not found"
                    run_id = None
            self.grants.drop(tx.conn, gem_id)
            tx.conn.execute(sa.delete(gem_settings).where(gem_settings.c.gem_id == gem_id))
            tx.conn.execute(sa.delete(gems).where(gems.c.id == gem_id))
        for hook in self.on_uninstalled:
            hook(gem_id)
        return UninstallReport(
            gem_id=gem_id,
            facts=counts["facts"],
            documents=counts["documents"],
            collections=counts["collections"],
            deleted=delete_data,
            run_id=run_id,
        )


def folder_of(path: Path) -> Path:
    """The gem folder of a folder or manifest path (what the installation copies)."""
    return path if path.is_dir() else path.parent


def covers(held: Permission, needed: Permission) -> bool:
    """Whether holding ``held`` allows everything ``needed`` allows (implications included)."""
    if isinstance(held, FactsPermission) and isinstance(needed, FactsPermission):
        return held.action == needed.action and held.covers_facts(needed)
    if isinstance(held, EntitiesPermission) and isinstance(needed, EntitiesPermission):
        return held.allows(action=needed.action, kind=needed.kind)
    if isinstance(held, CollectionsPermission) and isinstance(needed, CollectionsPermission):
        return held.allows(action=needed.action, target=needed.target)
    return held == needed


def _count_facts(conn: sa.Connection, gem_id: str) -> dict[str, int]:
    count = conn.execute(
        sa.select(sa.func.count()).select_from(facts).where(written_by(f"gem:{gem_id}"), facts.c.valid_to.is_(None))
    ).scalar_one()
    return {"facts": int(count)}
