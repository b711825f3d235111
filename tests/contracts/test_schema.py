"""The migrations build exactly the schema the code is written against."""

from __future__ import annotations

import warnings
from pathlib import Path

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from notochord.db.engine import create_sqlite_engine
from notochord.db.migrate import migrate
from notochord.db.schema import built_on, metadata


def test_migrated_database_matches_the_schema_metadata(tmp_path: Path) -> None:
    engine = create_sqlite_engine(tmp_path / "s.db", busy_timeout_ms=1000)
    migrate(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn,
            opts={
                "compare_type": False,
                # the FTS5 index is a virtual table with shadow tables, made by the migration only
                "include_name": lambda name, type_, _parents: (
                    not (type_ == "table" and name is not None and name.startswith("chunks_fts"))
                ),
                # an index built on PostgreSQL only is none of SQLite's
                "include_object": lambda _item, name, type_, _reflected, _compare_to: (
                    type_ != "index" or built_on(name, "sqlite")
                ),
            },
        )
        with warnings.catch_warnings():
            # alembic reads the metadata's indexes before any filter: it says it cannot compare the
            # server's expression index on SQLite, which builds none (include_object above)
            warnings.filterwarnings("ignore", message="autogenerate skipping metadata-specified expression-based index")
            differences = compare_metadata(context, metadata)
    engine.dispose()
    assert differences == []


def test_migrating_twice_is_a_no_op(tmp_path: Path) -> None:
    engine = create_sqlite_engine(tmp_path / "s.db", busy_timeout_ms=1000)
    migrate(engine)
    migrate(engine)
    with engine.connect() as conn:
        tables = set(sa.inspect(conn).get_table_names())
    engine.dispose()
    assert {"facts", "changes", "entities", "alembic_version"} <= tables
