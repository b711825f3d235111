"""``ctx.storage``: the gem's own key-value store and SQL database (P-STOR-01…03, 08, 09).

Storage is not a permission: every tool of every gem has it, nothing in the manifest asks for it,
and the user switches nothing on (P-STOR-01/04).

Isolation (K-NS-03): a facade knows its gem id and the fingerprint of its installation's storage
key, never a path or the key. On each call the key is derived again from the registry (it exists
only while the gem is installed), checked against that fingerprint, and the store is found by the
gem id alone. So a ``ctx`` held past an uninstall cannot recreate the deleted folder, and one held
across a reinstall cannot reach the new installation's data: both get
:class:`~notochord.errors.ClosedError`.

``kv`` values are JSON; ``sql`` is the gem's own SQLCipher database, where it may run any statement
on its own tables (but never attach another file or change the key; see
:mod:`notochord.files.private`). ``sql.execute`` and ``sql.executemany`` return
``{"rowcount", "last_row_id"}``; ``sql.query`` returns rows as dicts.

Transactions belong to one run: ``sql`` reaches the database through the run's own connection
(:meth:`~notochord.gems.folders.GemFolders.sql`), so another run of the same gem never lands in this
run's ``BEGIN`` … ``COMMIT``, and what a run leaves uncommitted is rolled back when it ends; a
statement still waiting for the database when its run ends is stopped at once. A caller outside any
registered run (a SOP calling ``storage.sql`` directly, P-STOR-03, or the host) shares the gem
store's connection with the other such callers, but not its transactions: a ``BEGIN`` holds that
connection for its caller until it ends, and the others' statements wait for that, or are told the
database is busy; one left resting past its lease is rolled back once another caller or a run needs
the database (:mod:`notochord.files.private_sql`). The key-value store, documents and blobs are
whole in each call and shared by the gem's runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from notochord.errors import ClosedError, GemError
from notochord.gems.context import CapabilityRequest
from notochord.gems.folders import GemFolders, installation_fingerprint

if TYPE_CHECKING:
    from notochord.files.private import GemStore, SqlResult
    from notochord.files.private_sql import GemSql
    from notochord.gems.registry import GemRegistry

__all__ = ["KeyValueApi", "SqlApi", "StorageApi", "StoreAccess", "make_storage"]

T = TypeVar("T")
Params = Sequence[Any] | Mapping[str, Any]


class StoreAccess:
    """Reaches one gem installation's private store, for ``ctx.storage`` and ``ctx.data``."""

    __slots__ = ("_fingerprint", "_folders", "_gem_id", "_registry", "_run_id")

    def __init__(self, *, gem_id: str, run_id: str, registry: GemRegistry, folders: GemFolders) -> None:
        self._gem_id = gem_id
        self._run_id = run_id
        self._registry = registry
        self._folders = folders
        self._fingerprint = installation_fingerprint(registry.key(gem_id, "storage"))

    @classmethod
    def of(cls, request: CapabilityRequest) -> StoreAccess:
        return cls(gem_id=request.gem_id, run_id=request.run_id, registry=request.registry, folders=request.folders())

    async def run(self, action: Callable[[GemStore], T]) -> T:
        return await anyio.to_thread.run_sync(lambda: action(self._folders.store(self._gem_id, key=self._key())))

    async def run_sql(self, action: Callable[[GemSql], T]) -> T:
        """``action`` on the SQL database as this run reaches it, its transactions its own."""
        return await anyio.to_thread.run_sync(
            lambda: action(self._folders.sql(self._gem_id, self._run_id, key=self._key()))
        )

    def _key(self) -> bytes:
        try:
            key = self._registry.key(self._gem_id, "storage")
        except GemError as exc:
            raise ClosedError(f"gem {self._gem_id} was uninstalled; its private storage was deleted with it") from exc
        if installation_fingerprint(key) != self._fingerprint:
            raise ClosedError(
                f"gem {self._gem_id} was reinstalled after this run started; "
                "the storage of the earlier installation is gone"
            )
        return key


class KeyValueApi:
    """``ctx.storage.kv``: JSON values under string keys."""

    __slots__ = ("_access",)

    def __init__(self, access: StoreAccess) -> None:
        self._access = access

    async def get(self, key: str, default: Any = None) -> Any:
        return await self._access.run(lambda s: s.kv.get(key, default))

    async def set(self, key: str, value: Any) -> None:
        await self._access.run(lambda s: s.kv.set(key, value))

    async def delete(self, key: str) -> bool:
        """Remove ``key``; returns whether it existed."""
        return await self._access.run(lambda s: s.kv.delete(key))

    async def list(self, prefix: str = "") -> list[str]:
        """Keys starting with ``prefix``, sorted."""
        return await self._access.run(lambda s: s.kv.list(prefix))


class SqlApi:
    """``ctx.storage.sql``: the gem's own database. Each call is one statement, autocommitted
    unless the run opened a transaction with ``BEGIN``; that transaction is the run's alone and is
    rolled back if the run ends without ``COMMIT``."""

    __slots__ = ("_access",)

    def __init__(self, access: StoreAccess) -> None:
        self._access = access

    # The statement and its parameters are checked by the store itself (GemSql), which every
    # caller goes through: text, one statement, values SQLite keeps as given.

    async def execute(self, sql: str, params: Params = ()) -> dict[str, Any]:
        return await self._access.run_sql(lambda s: _result(s.execute(sql, params)))

    async def executemany(self, sql: str, rows: Iterable[Params]) -> dict[str, Any]:
        """One statement for every parameter row, all or nothing."""
        return await self._access.run_sql(lambda s: _result(s.executemany(sql, rows)))

    async def query(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """Rows as dicts keyed by column name."""
        return await self._access.run_sql(lambda s: s.query(sql, params))


class StorageApi:
    """``ctx.storage``: ``kv`` and ``sql``."""

    __slots__ = ("kv", "sql")

    def __init__(self, access: StoreAccess) -> None:
        self.kv = KeyValueApi(access)
        self.sql = SqlApi(access)


def _result(result: SqlResult) -> dict[str, Any]:
    return {"rowcount": result.rowcount, "last_row_id": result.last_row_id}


def make_storage(request: CapabilityRequest) -> StorageApi:
    """The ``storage`` capability factory: register as ``space.gems.factories["storage"]``."""
    return StorageApi(StoreAccess.of(request))
