"""Every stored document date with a four-digit year.

Earlier versions wrote a date before the year 1000 with the year unpadded (``999-05-01T…``), and
the stores compare and order these texts as text: such a document sorted as the newest and fell
outside every time range. Only dates whose fifth character is not the ``-`` after a four-digit
year can be affected, so only those are read and rewritten with the year padded to four digits.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_BATCH = 1000


def upgrade() -> None:
    conn = op.get_bind()
    documents = sa.table("documents", sa.column("id", sa.Integer), sa.column("doc_date", sa.String))
    short = conn.execute(
        sa.select(documents.c.id, documents.c.doc_date)
        .where(sa.func.substr(documents.c.doc_date, 5, 1) != "-")
        .order_by(documents.c.id)
    ).all()
    rewritten = []
    for document_id, doc_date in short:
        year, dash, rest = doc_date.partition("-")
        if dash and year.isdigit() and len(year) < 4:
            rewritten.append({"document_id": document_id, "padded": f"{year.zfill(4)}-{rest}"})
    statement = (
        sa.update(documents)
        .where(documents.c.id == sa.bindparam("document_id"))
        .values(doc_date=sa.bindparam("padded"))
    )
    for start in range(0, len(rewritten), _BATCH):
        conn.execute(statement, rewritten[start : start + _BATCH])


def downgrade() -> None:
    """Nothing to undo: four-digit years are what every version reads."""
