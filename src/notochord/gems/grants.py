"""The gems' permission switches (``gem_grants``): their one write path, and a reader that reuses
what it read as long as the switches have not moved.

Rules:

- Every write of a switch goes through :class:`GrantBook`: install, upgrade, a switch turned on or
  off (console, CLI, REST or code), uninstall. Each write replaces the *grants version* in the same
  transaction: a random token in ``space_meta`` under :data:`GRANTS_VERSION_KEY`. The token is
  replaced right after the write statement, with nothing read in between.
- A reader takes the token its own transaction sees (read once per transaction with the other data
  versions, :func:`~notochord.knowledge.writes.data_versions`, so a lookup sends no statement for
  it) and reuses the switches it read before under the same token; under any other token, or none,
  it reads the switches afresh. The token lives in the space's database, so a switch turned off in
  this process, in another process on the same SQLite file, or through another replica on the same
  PostgreSQL server is seen at the very next call (K-PERM-04): what is reused is checked on every
  call, and never answers for switches that have moved.
- The switches and the token of a fresh read come from one statement, so under any isolation level
  they describe the same moment.
- A random token, not a counter: a token seen inside a transaction that rolled back, or written by a
  state later replaced by restoring a backup, is never taken again by different switches.
  A space without a token (written before it existed and not yet migrated) is never cached.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Sequence

import sqlalchemy as sa

from notochord.access.permissions import PermissionSet
from notochord.db.schema import gem_grants, space_meta
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.writes import GRANTS_VERSION_KEY, data_versions, forget_lookups

__all__ = ["GRANTS_VERSION_KEY", "GrantBook"]

_CACHED_GEMS = 1024

# the token and the enabled switches in one statement (one row with permission NULL when none is on)
_VERSION_AND_GRANTED = Prepared(
    sa.select(space_meta.c.value, gem_grants.c.permission)
    .select_from(
        space_meta.outerjoin(
            gem_grants,
            sa.and_(gem_grants.c.gem_id == sa.bindparam("gem_id"), gem_grants.c.enabled == sa.true()),
        )
    )
    .where(space_meta.c.key == GRANTS_VERSION_KEY)
)
_GRANTED = Prepared(
    sa.select(gem_grants.c.permission).where(
        gem_grants.c.gem_id == sa.bindparam("gem_id"), gem_grants.c.enabled == sa.true()
    )
)
_BUMP = Prepared(
    sa.update(space_meta).where(space_meta.c.key == GRANTS_VERSION_KEY).values(value=sa.bindparam("token"))
)
_INSERT_VERSION = Prepared(sa.insert(space_meta).values(key=GRANTS_VERSION_KEY, value=sa.bindparam("token")))


@functools.lru_cache(maxsize=512)
def _permission_set(strings: tuple[str, ...]) -> PermissionSet:
    return PermissionSet.of(strings)


def _granted_set(permissions: Iterable[str | None]) -> PermissionSet:
    return _permission_set(tuple(sorted(p for p in permissions if p is not None)))


class GrantBook:
    """The one writer of ``gem_grants`` of a space, and its version-checked reader."""

    def __init__(self) -> None:
        # gem id → (grants version, the switches on under it); replaced whole, so readers on other
        # threads see either the old pair or the new one
        self._seen: dict[str, tuple[str, PermissionSet]] = {}

    # ------------------------------------------------------------ reading

    def granted(self, conn: sa.Connection, gem_id: str) -> PermissionSet:
        """The permissions of ``gem_id`` switched on as ``conn``'s transaction sees them."""
        seen = self._seen.get(gem_id)
        if seen is not None and data_versions(conn).grants == seen[0]:
            return seen[1]
        rows = _VERSION_AND_GRANTED.rows(conn, {"gem_id": gem_id})
        if not rows:
            return _granted_set(r.permission for r in _GRANTED.rows(conn, {"gem_id": gem_id}))
        granted = _granted_set(r.permission for r in rows)
        if len(self._seen) >= _CACHED_GEMS:
            self._seen.clear()
        self._seen[gem_id] = (rows[0].value, granted)
        return granted

    # ------------------------------------------------------------ writing (each one bumps the version)

    def add(self, conn: sa.Connection, gem_id: str, permissions: Sequence[str], *, now: str) -> None:
        """New switches of ``gem_id``, all off (K-PERM-03)."""
        if permissions:
            rows = [{"gem_id": gem_id, "permission": p, "enabled": False, "changed_at": now} for p in permissions]
            self._write(conn, sa.insert(gem_grants), rows)

    def drop(self, conn: sa.Connection, gem_id: str, permissions: Iterable[str] | None = None) -> None:
        """Remove the switches ``permissions`` of ``gem_id`` (``None``: every one, for uninstall)."""
        statement = sa.delete(gem_grants).where(gem_grants.c.gem_id == gem_id)
        if permissions is not None:
            dropped = sorted(permissions)
            if not dropped:
                return
            statement = statement.where(gem_grants.c.permission.in_(dropped))
        self._write(conn, statement)

    def switch(self, conn: sa.Connection, gem_id: str, permissions: Sequence[str], on: bool, *, now: str) -> None:
        """Turn the switches ``permissions`` of ``gem_id`` on or off."""
        statement = (
            sa.update(gem_grants)
            .where(gem_grants.c.gem_id == gem_id, gem_grants.c.permission.in_(list(permissions)))
            .values(enabled=on, changed_at=now)
        )
        self._write(conn, statement)

    def _write(
        self, conn: sa.Connection, statement: sa.Executable, rows: list[dict[str, object]] | None = None
    ) -> None:
        if rows is None:
            conn.execute(statement)
        else:
            conn.execute(statement, rows)
        token = {"token": uuid.uuid4().hex}
        if not _BUMP.run(conn, token):
            _INSERT_VERSION.run(conn, token)
        # the versions this transaction read before are not what it sees now
        forget_lookups(conn)
