"""A store written before names were kept folded finds its entities by name after the upgrade.

The migration folds every existing entity name and identifier value with the rule new writes use,
on both backends, so a store upgraded in place answers name queries and orders pages exactly as a
new one does. K-ENT-08, OD-K29.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from notochord.db import migrate as migrate_module
from notochord.db.engine import create_sqlite_engine
from notochord.db.migrate import migrate
from notochord.db.postgres import create_database, create_postgresql_engine
from notochord.db.schema import entities, identifiers
from notochord.knowledge.browse import entity_page
from notochord.knowledge.identifiers import folded

_NAMES = ["ÉMILE Zola", "Straße Haus", "adam", "E\u0301lodie"]
_NOW = "2026-09-29T08:00:00.000Z"


@pytest.fixture
def engine(tmp_path: Path, new_database_url: Callable[[], str | None]) -> Iterator[sa.Engine]:
    url = new_database_url()
    if url is None:
        made = create_sqlite_engine(tmp_path / "s.db", busy_timeout_ms=5000)
    else:
        create_database(url, "personal")
        made = create_postgresql_engine(url, "personal")
    yield made
    made.dispose()


def _store_of_schema_0015(engine: sa.Engine) -> None:
    config = Config()
    config.set_main_option("script_location", str(migrate_module._SCRIPTS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0015")
        for n, name in enumerate(_NAMES, start=1):
            conn.execute(
                sa.text(
                    "INSERT INTO entities (id, kind, display_name, created_by, created_at) "
                    "VALUES (:id, 'person', :name, 'user', :now)"
                ),
                {"id": n, "name": name, "now": _NOW},
            )
        conn.execute(
            sa.text(
                "INSERT INTO identifiers (entity_id, type, value, normalized, created_by, created_at) "
                "VALUES (3, 'handle', 'mastodon:ÅSA', 'mastodon:åsa', 'user', :now)"
            ),
            {"now": _NOW},
        )


def test_the_upgrade_folds_existing_names_and_identifiers(engine: sa.Engine) -> None:
    """OD-K29: after the upgrade, names written before it are matched and ordered by their folding."""
    _store_of_schema_0015(engine)

    migrate(engine)

    with engine.connect() as conn:
        stored = dict(conn.execute(sa.select(entities.c.display_name, entities.c.name_folded)).all())
        identifier = conn.execute(sa.select(identifiers.c.value_folded)).scalar_one()
        by_name = entity_page(conn, kind=None, query="émile", offset=0, limit=10)
        by_identifier = entity_page(conn, kind=None, query="åsa", offset=0, limit=10)
        everyone = entity_page(conn, kind=None, query=None, offset=0, limit=10)
    assert stored == {name: folded(name) for name in _NAMES}
    assert identifier == folded("mastodon:ÅSA")
    assert [e.display_name for e in by_name.items] == ["ÉMILE Zola"]
    assert [e.display_name for e in by_identifier.items] == ["adam"]
    assert [e.display_name for e in everyone.items] == sorted(_NAMES, key=folded)
