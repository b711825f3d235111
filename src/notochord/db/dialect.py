"""The few SQL spellings that differ between SQLite and PostgreSQL, chosen by the connection's dialect.

Everything else in the code is dialect-neutral SQLAlchemy Core. The backend-specific parts live in
three places only: this module, the engines (:mod:`.engine` for SQLite, :mod:`.postgres`), and
the full-text postings (:mod:`notochord.search.text_store_pg`).
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["json_ids"]


def json_ids(conn: sa.Connection, param: str) -> str:
    """A subquery yielding the integers of the JSON array bound to ``:param`` (one parameter, any length)."""
    if conn.dialect.name == "postgresql":
        return f"SELECT CAST(value AS BIGINT) FROM json_array_elements_text(CAST(:{param} AS JSON))"
    return f"SELECT value FROM json_each(:{param})"
