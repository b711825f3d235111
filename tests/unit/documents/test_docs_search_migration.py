"""A vault indexed before CJK unigrams existed gets them on open (OD-K38)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.settings import Settings


def _open(data: Path, clock: FixedClock) -> notochord.Notochord:
    return notochord.open(data, Settings(data_dir=data, index_in_background=False), clock=clock, embedder=None)


def test_opening_a_vault_indexed_with_bigrams_only_makes_one_character_searchable(
    tmp_path: Path, clock: FixedClock
) -> None:
    """Migration 0007 derives the full-text rows of CJK passages again, so ``鸭``
    finds a document written by an older version; passages without CJK text keep their rows."""
    data = tmp_path / "data"
    with _open(data, clock) as nc:
        space = nc.personal
        duck = space.user.documents.upsert(collection="keep", title="晚饭", body="今天我和张伟在北京吃了烤鸭")
        space.user.documents.upsert(collection="keep", title="Stew", body="Tomato beef stew.")
        with space.core.store.engine.begin() as conn:
            # the rows an older version wrote: bigrams only, and the schema one revision back
            conn.execute(
                sa.text(
                    "UPDATE chunks_fts SET body = :old WHERE rowid IN (SELECT id FROM chunks WHERE document_id = :d)"
                ),
                {"old": "晚饭\n 今天 天我 我和 和张 张伟 伟在 在北 北京 京吃 吃了 了烤 烤鸭 ", "d": duck.id},
            )
            conn.execute(sa.text("UPDATE alembic_version SET version_num = '0006'"))
        assert space.user.search("鸭") == []
    with _open(data, clock) as nc:
        space = nc.personal
        assert [h.document_id for h in space.user.search("鸭")] == [duck.id]
        assert [h.document_id for h in space.user.search("饭")] == [duck.id]
        assert [h.document_id for h in space.user.search("北京")] == [duck.id]
        assert [h.title for h in space.user.search("stew")] == ["Stew"]
