"""The few SQL spellings that differ between SQLite and PostgreSQL, chosen by the connection's dialect.

Everything else in the code is dialect-neutral SQLAlchemy Core. The backend-specific parts live in
three places only: this module, the engines (:mod:`.engine` for SQLite, :mod:`.postgres`), and
the full-text postings (:mod:`notochord.search.text_store_pg`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

__all__ = ["json_ids", "listed_ids"]


def json_ids(conn: sa.Connection, param: str) -> str:
    """A subquery yielding the integers of the JSON array bound to ``:param`` (one parameter, any length)."""
    if conn.dialect.name == "postgresql":
        return f"SELECT CAST(value AS BIGINT) FROM json_array_elements_text(CAST(:{param} AS JSON))"
    return f"SELECT value FROM json_each(:{param})"


def listed_ids(listed: object) -> npt.NDArray[np.int64]:
    """The integers of the comma-separated text an aggregate gave (``group_concat``, ``string_agg``),
    in its order; none for ``NULL`` (an aggregate over no rows). One text split by numpy rather than
    a Python row per id: a million ids in ~0.02 s."""
    if not listed:
        return np.zeros(0, np.int64)
    return np.fromstring(str(listed), dtype=np.int64, sep=",")
