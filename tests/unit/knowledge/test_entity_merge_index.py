"""Following a merged entity uses an index (every write used to scan the entities table)."""

from __future__ import annotations

import sqlalchemy as sa

import notochord


def test_looking_up_entities_merged_into_one_uses_an_index(space: notochord.Space) -> None:
    kept = space.user.entities.resolve(email="zhangsan@acme.nl", name="Zhang San", create=True)
    other = space.user.entities.resolve(email="zs@home.nl", name="Zhang S.", create=True)
    assert kept is not None and other is not None
    with space.core.store.read() as conn:
        if conn.dialect.name == "postgresql":
            # a table of three rows is read whole whatever its indexes: ask whether an index can serve
            conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
            explain = "EXPLAIN SELECT id FROM entities WHERE merged_into = :id"
        else:
            explain = "EXPLAIN QUERY PLAN SELECT id FROM entities WHERE merged_into = :id"
        plan = conn.execute(sa.text(explain), {"id": kept.id}).fetchall()
    details = " ".join(str(row[-1]) for row in plan)
    assert "ix_entities_merged_into" in details, details
