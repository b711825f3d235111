"""Bring a space's database to the newest schema with Alembic, on open.

Revisions are numbered ``0001``, ``0002``, … in file names and ids alike, so the newest one is known
without loading Alembic: a database already at the head (every open after the first) costs one
query, and Alembic is imported only when there is something to migrate.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from notochord.db.engine import storage_errors

__all__ = ["head_revision", "migrate"]

_SCRIPTS = Path(__file__).with_name("migrations")


def head_revision() -> str:
    """The newest revision id shipped with this version of notochord."""
    return max(p.name.split("_", 1)[0] for p in (_SCRIPTS / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def _current(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()


def migrate(engine: sa.Engine) -> None:
    """Apply every migration the database has not seen yet. Idempotent."""
    with storage_errors("migrating the store"):
        if _current(engine) == head_revision():
            return
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(_SCRIPTS))
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
