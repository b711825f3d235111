"""Bring a space's database to the newest schema with Alembic, on open."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from notochord.db.engine import storage_errors

__all__ = ["migrate"]

_SCRIPTS = Path(__file__).with_name("migrations")


def migrate(engine: sa.Engine) -> None:
    """Apply every migration the database has not seen yet. Idempotent."""
    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    with storage_errors("migrating the store"), engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
