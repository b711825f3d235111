"""Copying a space from one store to another (SQLite to PostgreSQL), leaving the source untouched.

Rules:

- The target is a freshly migrated, empty store: a target that holds any row is refused, so a copy
  never merges two spaces. :func:`filled_tables` tells beforehand, without writing, whether a
  store (migrated or not) already holds a space's data.
- Every table of the schema is copied whole, ids included, in one write transaction on the target
  (all or nothing) while the source is read in one snapshot. Columns that point into their own
  table (an entity merged into another, a collection's parent) are filled in a second pass, so row
  order never trips a foreign key.
- The full-text index is not copied but rebuilt from the chunks through the same write path
  (:func:`~notochord.search.textindex.fts_insert`), so it is exactly what a write on the target would
  have made. Vectors are copied as they are (they belong to the chunk text, which is copied): on
  PostgreSQL into pgvector, bit for bit, with the HNSW index of each dimension built once after the
  load (:func:`~notochord.search.vector_store_pg.ensure_indexes`), faster than row by row.
- PostgreSQL's id sequences are moved past the copied ids, so new rows never reuse one.
- The row count of every table is compared after the copy; a difference aborts it.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from notochord.db.engine import read_tx, write_tx
from notochord.db.schema import chunks, documents, metadata, space_meta
from notochord.errors import StorageError
from notochord.knowledge.indexing import FTS_TABLE, with_title
from notochord.knowledge.writes import GRANTS_VERSION_KEY
from notochord.search import vector_store_pg
from notochord.search.textindex import fts_insert

__all__ = ["copy_space", "filled_tables"]

_BATCH = 1000


_SEEDED_BY_MIGRATIONS = (GRANTS_VERSION_KEY,)


def _count(conn: sa.Connection, table: sa.Table, *, seeded: bool = True) -> int:
    """Rows of ``table``; without ``seeded``, not those every new space gets from its migrations."""
    query = sa.select(sa.func.count()).select_from(table)
    if table is space_meta:
        # the backend's own bookkeeping (PostgreSQL's full-text version), not the space's data
        query = query.where(sa.not_(space_meta.c.key.startswith("fulltext_version:")))
        if not seeded:
            query = query.where(space_meta.c.key.not_in(_SEEDED_BY_MIGRATIONS))
    return int(conn.execute(query).scalar_one())


def filled_tables(conn: sa.Connection) -> list[str]:
    """The tables of the schema that hold a space's data in ``conn``'s store, in schema order.

    A table not created yet is empty, and what the migrations seed in every new space is no data:
    a store that a copy created and an interrupted one left behind is empty again.
    """
    present = set(sa.inspect(conn).get_table_names())
    return [t.name for t in metadata.sorted_tables if t.name in present and _count(conn, t, seeded=False)]


def _self_references(table: sa.Table) -> list[str]:
    return [fk.parent.name for fk in table.foreign_keys if fk.column.table is table]


def _copy_table(src: sa.Connection, dst: sa.Connection, table: sa.Table) -> None:
    deferred = _self_references(table)
    rows = [dict(r) for r in src.execute(sa.select(table)).mappings()]
    later: list[dict[str, Any]] = []
    for row in rows:
        if any(row[c] is not None for c in deferred):
            later.append({"_pk": row[table.primary_key.columns.values()[0].name], **{c: row[c] for c in deferred}})
            row.update(dict.fromkeys(deferred))
    for start in range(0, len(rows), _BATCH):
        dst.execute(sa.insert(table), rows[start : start + _BATCH])
    if later:
        pk = table.primary_key.columns.values()[0]
        dst.execute(
            sa.update(table).where(pk == sa.bindparam("_pk")).values({c: sa.bindparam(c) for c in deferred}),
            later,
        )


def _advance_sequences(dst: sa.Connection) -> None:
    for table in metadata.sorted_tables:
        pk = table.primary_key.columns.values()
        if len(pk) == 1 and isinstance(pk[0].type, sa.Integer) and pk[0].autoincrement in (True, "auto"):
            dst.execute(
                sa.text(
                    f"SELECT setval(pg_get_serial_sequence('{table.name}', '{pk[0].name}'), "
                    f"GREATEST((SELECT max({pk[0].name}) FROM {table.name}), 1))"
                )
            )


def copy_space(source: sa.Engine, target: sa.Engine) -> dict[str, int]:
    """Copy every row of ``source`` into the empty, migrated ``target``; return the rows per table.

    Raises:
        StorageError: the target holds rows already, or a count differs after the copy (nothing is kept).
    """
    with read_tx(source) as src, write_tx(target, action="copying the space") as dst:
        # the migrations seed these in every new space; the source's own take their place
        dst.execute(sa.delete(space_meta).where(space_meta.c.key.in_(_SEEDED_BY_MIGRATIONS)))
        filled = filled_tables(dst)
        if filled:
            raise StorageError(
                f"the target store already holds data (in {', '.join(filled[:3])}); "
                "copy into a space that does not exist yet"
            )
        for table in metadata.sorted_tables:
            _copy_table(src, dst, table)
        passages = dst.execute(
            sa.select(chunks.c.id, chunks.c.text, documents.c.title)
            .join(documents, documents.c.id == chunks.c.document_id)
            .order_by(chunks.c.id)
        ).all()
        for start in range(0, len(passages), _BATCH):
            batch = passages[start : start + _BATCH]
            fts_insert(dst, FTS_TABLE, ((r.id, with_title(r.title or "", r.text)) for r in batch))
        if dst.dialect.name == "postgresql":
            _advance_sequences(dst)
            vector_store_pg.ensure_indexes(dst)
        counts = {t.name: _count(src, t) for t in metadata.sorted_tables}
        copied = {t.name: _count(dst, t) for t in metadata.sorted_tables}
        if copied != counts:
            wrong = sorted(name for name in counts if counts[name] != copied[name])
            raise StorageError(f"the copy does not match the source in {', '.join(wrong)}; nothing was kept")
    return counts
