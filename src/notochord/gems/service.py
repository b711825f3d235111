"""``space.gems``: the host-side face of the gem system of one space."""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import contextlib
import dataclasses
import shlex
import shutil
from pathlib import Path

from notochord.access.change_scope import Scope
from notochord.clock import Clock
from notochord.errors import BusyError, GemError, GemNotFoundError, NotochordError
from notochord.gems.api.documents import creator_watermark, register_document_layer
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.gems.context import (
    CAPABILITIES,
    CapabilityFactory,
    CapabilityRequest,
    GemContext,
    SpaceServices,
    new_run_id,
)
from notochord.gems.manifest import Manifest
from notochord.gems.package import gems_with_leftovers, remove_leftovers, stage_package, swap_in
from notochord.gems.refs import RefCodec
from notochord.gems.registry import GemRegistry, InstalledGem, PermissionSwitch, UninstallReport, folder_of
from notochord.gems.resources import download_resources
from notochord.gems.run_leases import CodeHold, RunLeases
from notochord.gems.runner import Runner
from notochord.knowledge.core import KnowledgeCore

__all__ = ["Gems"]

_CODECS_KEPT = 256


class Gems:
    """Install, switch permissions, open a run's ``ctx``, uninstall."""

    def __init__(
        self, core: KnowledgeCore, *, master_key: bytes, data_dir: Path, space_name: str, clock: Clock
    ) -> None:
        self._core = core
        self._data_dir = data_dir
        self._space_name = space_name
        self._clock = clock
        self.registry = GemRegistry(core, master_key=master_key)
        self.scope = Scope(core, watermark=creator_watermark)
        register_document_layer(self.registry)
        lease_dir = data_dir / "run-leases" / space_name.replace(":", "-")
        self.runner = Runner(
            self,
            core,
            code_root=data_dir / "gem-code" / space_name.replace(":", "-"),
            data_dir=data_dir,
            lease_dir=lease_dir,
        )
        """Runs tools in their own processes (``space.gems.runner.run(...)``)."""
        self.factories: dict[str, CapabilityFactory] = {}
        """Capability name (``http``, ``files``, …) → factory building that facade for one run."""
        self.services = SpaceServices()
        """Space-level services the factories share."""
        # one codec per installation key, so the refs a gem used in one run are not sealed again in
        # the next; a reinstall has a new key, hence a new codec
        self._codecs: dict[tuple[str, bytes], RefCodec] = {}
        self.registry.on_uninstalled.append(self._forget_codecs)
        self._leases = RunLeases(lease_dir)
        # what a killed install, upgrade or uninstall left goes as the gems are opened, not only at
        # the next change of the same gem, which may never come
        with contextlib.suppress(NotochordError):
            self.remove_leftovers()

    def install(self, path: str | Path) -> InstalledGem:
        """Install the gem in ``path``: its code is kept with the installation, and the files its
        manifest lists under ``resources`` are downloaded and verified; if any of that fails, nothing
        stays installed.

        The manifest recorded is the one of the copy kept, checked again there: what runs is what
        was checked, even if the folder changes meanwhile. The gem returned says what the copy left
        out (:func:`~notochord.gems.package.left_out_kind`).

        Raises:
            BusyError: an uninstall or upgrade of the same gem id is changing its code and did not
                end within a few seconds; nothing was installed.
        """
        source = Path(path)
        manifest, _ = self.registry.read(source, installed=False)
        # from the copy to its swap the code is held alone: an uninstall of the same id holds it from
        # its record to its code removal (an install in between would be recorded, then lose its
        # code), and a copy half made is always the leftover of a process that is gone
        with self._installing(manifest.id) as hold:
            self._remove_leftovers(manifest.id)
            staged = stage_package(folder_of(source), self.runner.code_dir(manifest.id))
            try:
                copied, raw = self._read_copy(source, staged.path, manifest, doing="installed")
                gem = self.registry.install(copied, raw, source=source)
                self._put_in_place(gem, staged.path)
            except BaseException:
                shutil.rmtree(staged.path, ignore_errors=True)
                if not self._is_installed(manifest.id):
                    hold.release(remove=True)  # no lock file stays for a gem that never was
                raise
        return dataclasses.replace(gem, left_out=tuple(sorted(staged.left_out.items())))

    def _read_copy(
        self, source: Path, staged: Path, manifest: Manifest, *, doing: str
    ) -> tuple[Manifest, dict[str, object]]:
        """The manifest of the copy, which must be of the gem whose code is held.

        Raises:
            GemError: the folder now holds another gem (it changed after it was first read).
            ManifestError: the copy's manifest is invalid, or a tool's entry is not a file of it.
        """
        copied, raw = self.registry.read_copy(staged / source.name if source.is_file() else staged)
        if copied.id != manifest.id:
            raise GemError(
                f"the gem folder {folder_of(source)} changed while it was read: it held gem {manifest.id}, now gem "
                f"{copied.id}; nothing was {doing}. Try again once nothing changes the folder"
            )
        return copied, raw

    def _is_installed(self, gem_id: str) -> bool:
        try:
            self.registry.get(gem_id)
        except GemNotFoundError:
            return False
        return True

    def _remove_leftovers(self, gem_id: str) -> None:
        """Remove the copies of ``gem_id``'s code that a killed install, upgrade or uninstall left;
        the caller holds the gem's code alone (:func:`~notochord.gems.package.remove_leftovers`)."""
        remove_leftovers(self.runner.code_root, gem_id)

    def remove_leftovers(self) -> builtins.list[str]:
        """Remove every gem's copies of code and half-downloaded resources left by a killed install,
        upgrade or uninstall, and the code lock of a gem no longer installed; returns the names of
        the folders removed.

        A gem whose code is held (a run, or a change in another process) is passed over, its
        leftovers kept for later.
        """
        removed: builtins.list[str] = []
        for gem_id in gems_with_leftovers(self.runner.code_root):
            hold = self._leases.try_change_code(gem_id)
            if hold is None:
                continue
            try:
                removed += remove_leftovers(self.runner.code_root, gem_id)
            finally:
                hold.release(remove=not self._is_installed(gem_id))
        return removed

    def _installing(self, gem_id: str) -> CodeHold:
        """Hold the code of ``gem_id`` alone for an install.

        Raises:
            BusyError: another install, upgrade or uninstall of that id did not end in time.
        """
        try:
            return self.runner.changing_code(gem_id)
        except BusyError as busy:
            # the hold's own words speak of a running tool, which an install never replaces
            raise BusyError(
                f"gem {gem_id} is being installed, upgraded or uninstalled right now, so nothing was installed; "
                "install it again in a moment",
                retry_after=busy.retry_after,
            ) from busy

    def _put_in_place(self, gem: InstalledGem, staged: Path) -> None:
        """Move the staged code of the just recorded ``gem`` in and download its resources; if
        either fails, the gem is uninstalled again."""
        try:
            swap_in(staged, self.runner.code_dir(gem.id))
            self._download_resources(gem.manifest, gem.id)
        except BaseException as exc:
            self.registry.uninstall(gem.id)
            self.runner.drop_code(gem.id)
            shutil.rmtree(self.resources_dir(gem.id), ignore_errors=True)
            if isinstance(exc, OSError):
                raise GemError(f"cannot keep the code of gem {gem.id}: {exc.strerror or exc}") from exc
            raise

    def _creator_watermark(self, gem_id: str) -> int:
        with self._core.store.read() as conn:
            return creator_watermark(conn, gem_id)

    def resources_dir(self, gem_id: str) -> Path:
        """Where the gem's downloaded ``resources`` are kept (read-only for its tools)."""
        return self.runner.code_dir(gem_id).with_name(f"{gem_id}.resources")

    def _download_resources(self, manifest: Manifest, gem_id: str) -> None:
        if not manifest.resources:
            return
        rules = self.services.network_rules
        if rules is None:
            raise GemError(f"gem {gem_id} lists resources, but this space has no network rules to download them under")
        dest = self.resources_dir(gem_id)

        def download() -> None:
            asyncio.run(
                download_resources(
                    manifest,
                    dest=dest,
                    user_rules=rules.get(),
                    resolver=self.services.resolver,
                    transport=self.services.http_transport,
                    limits=self.services.http_limits,
                )
            )

        # its own thread and event loop, so that installing from inside a running loop works too
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(download).result()

    def upgrade(self, path: str | Path) -> InstalledGem:
        """Upgrade to the gem in ``path``: new code, and the new version's ``resources``.

        Everything that can fail (checking the folder, copying it, downloading the resources) is
        done before the new manifest is recorded: a refused upgrade leaves the installed version,
        its code and its switches as they were. The gem returned says what the copy left out.

        Raises:
            BusyError: a run of the gem is still running, or another change of its code did not
                end in time; nothing was changed.
        """
        source = Path(path)
        manifest, _ = self.registry.read(source, installed=True)
        # a running tool keeps its code and resources: the upgrade waits for it, or is refused
        with self.runner.changing_code(manifest.id):
            self._remove_leftovers(manifest.id)
            staged = stage_package(folder_of(source), self.runner.code_dir(manifest.id))
            try:
                copied, raw = self._read_copy(source, staged.path, manifest, doing="changed")
                self._download_resources(copied, copied.id)
                gem = self.registry.upgrade(copied, raw, source=source)
                swap_in(staged.path, self.runner.code_dir(gem.id))
            except BaseException:
                shutil.rmtree(staged.path, ignore_errors=True)
                raise
        return dataclasses.replace(gem, left_out=tuple(sorted(staged.left_out.items())))

    def list(self) -> builtins.list[InstalledGem]:
        return self.registry.list()

    def get(self, gem_id: str) -> InstalledGem:
        return self.registry.get(gem_id)

    def permissions(self, gem_id: str) -> builtins.list[PermissionSwitch]:
        return self.registry.permissions(gem_id)

    def switches_of_all(self) -> dict[str, dict[str, bool]]:
        """Every gem's switches, ``{gem id: {permission: on}}``, in one read (for lists of gems)."""
        return self.registry.switches_of_all()

    def set_permission(self, gem_id: str, permission: str, on: bool) -> None:
        self.registry.set_permission(gem_id, permission, on)

    def set_permissions(self, gem_id: str, permissions: builtins.list[str], on: bool) -> builtins.list[str]:
        """Switch several requested permissions at once: all of them, or none if one was not requested."""
        return self.registry.set_permissions(gem_id, permissions, on)

    def asks_for_chosen_collections(self, gem_id: str) -> bool:
        """Whether the gem requests a ``user-selected`` collections permission, so that ticking a
        collection for it means something (K-PERM-13, K-UI-10)."""
        return self.registry.manifest(gem_id).knowledge.asks_for_chosen_collections()

    def tick_collection(self, gem_id: str, collection_id: int, *, on: bool) -> None:
        """Tick (``on``) or untick a collection for the gem's ``user-selected`` permissions (K-PERM-13).

        Every front end ticks through here, so this is the one place that decides whether a tick is
        allowed. Unticking always is: it can only take access away, also from a gem whose upgrade
        no longer asks for chosen collections.

        Raises:
            GemNotFoundError: no such gem is installed.
            GemError: ``on`` for a gem that requests no ``user-selected`` permission; nothing changed.
            KnowledgeNotFoundError: no such collection.
            KnowledgeValidationError: the collection is ``diary``, ``keep`` or inside them.
        """
        if on and not self.asks_for_chosen_collections(gem_id):
            raise GemError(
                f"gem {gem_id} does not ask for collections you choose (its manifest requests neither "
                "collections.read:user-selected nor collections.write:user-selected), so ticking a collection "
                f"would give it nothing; nothing was changed. See what it requests with: notochord gem permissions "
                f"{gem_id}"
            )
        self._core.collections.set_tick(gem_id=gem_id, collection_id=collection_id, on=on)

    def permission_hint(self, gem_id: str, needed: str) -> str | None:
        """What the person can do when a call of the gem lacks ``needed``, or ``None`` for the default words.

        The command names the permission the gem requested that covers the call (what the person
        can switch on), not ``needed`` itself, which is often narrower than anything requested.
        """
        try:
            covering = self.registry.covering(gem_id, needed)
            granted = self.registry.granted(gem_id).strings()
        except GemNotFoundError:
            return None  # uninstalled while the run went on: the refusal itself is what matters
        if covering is None:
            return f"gem {gem_id} does not request it; its manifest must request it before it can be switched on"
        org = f" --org {self._space_name.removeprefix('org:')}" if self._space_name.startswith("org:") else ""
        if covering in granted:
            if covering.endswith(":user-selected"):
                # on, and still refused: the collection is not one the user ticked for the gem
                return (
                    f"{covering} is on, but you have not ticked this collection for the gem; "
                    f"tick it with: notochord collections tick {gem_id} COLLECTION{org}"
                )
            return None  # on already, yet the call is out of its reach: nothing to switch on
        return f"switch it on with: notochord gem grant {gem_id} {shlex.quote(covering)}{org}"

    def contributions(self, gem_id: str) -> dict[str, int]:
        return self.registry.contributions(gem_id)

    def uninstall(self, gem_id: str, *, delete_data: bool = False) -> UninstallReport:
        """Uninstall the gem (:meth:`GemRegistry.uninstall`) and remove its code and resources.

        Raises:
            GemNotFoundError: no such gem is installed.
            BusyError: a run of the gem is still running; nothing was changed.
        """
        self.registry.get(gem_id)
        with self.runner.changing_code(gem_id) as hold:
            report = self.registry.uninstall(gem_id, delete_data=delete_data)
            self.runner.drop_code(gem_id)
            shutil.rmtree(self.resources_dir(gem_id), ignore_errors=True)
            self._remove_leftovers(gem_id)
            # the lock file goes with the gem; whoever waited on it locks the path's file anew
            hold.release(remove=True)
        return report

    def context(
        self,
        gem_id: str,
        *,
        tool: str | None = None,
        run_id: str | None = None,
        conversation: str | Path | None = None,
    ) -> GemContext:
        """The ``ctx`` for one run of ``tool`` (or of the gem as a whole when ``tool`` is ``None``).

        ``conversation`` is the folder of the conversation the run was called from; without one,
        ``workspace:`` paths are refused (P-FILE-27).
        """
        return self.open_run(gem_id, tool=tool, run_id=run_id, conversation=conversation)[0]

    def _codec(self, gem_id: str) -> RefCodec:
        key = (gem_id, self.registry.key(gem_id, "refs"))
        codec = self._codecs.get(key)
        if codec is None:
            if len(self._codecs) >= _CODECS_KEPT:
                self._codecs.clear()
            codec = self._codecs[key] = RefCodec(key[1])
        return codec

    def _forget_codecs(self, gem_id: str) -> None:
        for key in [k for k in self._codecs if k[0] == gem_id]:
            self._codecs.pop(key, None)

    def open_run(
        self,
        gem_id: str,
        *,
        tool: str | None = None,
        run_id: str | None = None,
        conversation: str | Path | None = None,
    ) -> tuple[GemContext, CapabilityRequest]:
        """The ``ctx`` of a run and the request its capabilities were built from (for the runtime)."""
        manifest = self.registry.manifest(gem_id)
        spec = None
        if tool is not None:
            spec = next((t for t in manifest.tools if t.name == tool), None)
            if spec is None:
                names = ", ".join(t.name for t in manifest.tools) or "none"
                raise GemNotFoundError(f"gem {gem_id} has no tool {tool!r} (tools: {names})")
            with_knowledge = spec.knowledge
        else:
            with_knowledge = True
        run = run_id or new_run_id()
        knowledge = (
            KnowledgeApi(
                core=self._core,
                gem_id=gem_id,
                run_id=run,
                refs=self._codec(gem_id),
                grants=lambda: self.registry.granted(gem_id),
                grants_in=lambda conn: self.registry.granted(gem_id, conn),
                scope=self.scope,
                manifest_network=manifest.network,
                created_after=self._creator_watermark(gem_id),
                permission_hint=lambda needed: self.permission_hint(gem_id, needed),
            )
            if with_knowledge
            else None
        )
        request = CapabilityRequest(
            gem_id=gem_id,
            manifest=manifest,
            tool=spec,
            run_id=run,
            conversation=Path(conversation).resolve() if conversation is not None else None,
            data_dir=self._data_dir,
            space_name=self._space_name,
            core=self._core,
            registry=self.registry,
            clock=self._clock,
            services=self.services,
        )
        built = {name: self.factories[name](request) for name in CAPABILITIES if name in self.factories}
        return (
            GemContext(gem_id=gem_id, tool=tool, run_id=run, knowledge=knowledge, capabilities=built),
            request,
        )
