"""Removal operations of the knowledge store: uninstall's removal by writer, and the REST service's purge.

These used to be written by the gem registry, the gem document API and the REST
service themselves; they are ``knowledge/`` operations inside the one unit of work (``Store.write``).
"""

from __future__ import annotations

import sqlalchemy as sa

from notochord import Space
from notochord.db.schema import change_objects, changes, chunks, collections, documents
from notochord.knowledge.purge import collection_subtree, purge_collections, purge_documents
from notochord.knowledge.writes import USER, Actor


def test_expire_by_writer_expires_only_that_writers_live_facts_one_revertible_change_each(space: Space) -> None:
    """K-UNINST, OD-K48: each fact expires with its own uninstall change."""
    core = space.core
    gem = Actor.gem("acme")
    ours = core.facts.put(actor=gem, subject="self", predicate="pref.food.like", value="stew")
    theirs = space.as_assistant.facts.put(predicate="pref.food.like", value="rice")
    with core.store.write(actor=USER, run_id="uninstall:acme") as tx:
        expired = core.facts.expire_by_writer(tx, writer="gem:acme", reason="removed with gem acme")
    assert expired == 1
    assert space.user.facts.get(ours.id).valid_to is not None
    assert space.user.facts.get(theirs.id).valid_to is None
    [change] = [c for c in space.changes.list() if c.op == "uninstall.delete"]
    assert (change.target_type, change.target_id, change.summary) == (
        "fact",
        ours.id,
        "removed with gem acme: pref.food.like",
    )
    space.changes.revert(change.id)
    assert space.user.facts.get(ours.id).valid_to is None


def test_remove_by_writer_removes_the_writers_collections_with_their_contents_and_its_documents(
    space: Space,
) -> None:
    """K-UNINST: a gem's own collection goes with what is inside; its diary entry too."""
    core = space.core
    gem = Actor.gem("acme")
    mine = core.collections.create(actor=gem, name="Recipes")
    inside = core.documents.upsert(actor=USER, collection_id=mine.id, key="k", title="Stew", body="Simmer.")
    diary = core.collections.read_tree().builtin("diary").id
    elsewhere = core.documents.upsert(actor=gem, collection_id=diary, key="2026-12-01", title="Day", body="Hi.")
    users = core.documents.upsert(actor=USER, collection_id=diary, key="2026-12-02", title="Mine", body="Mine.")
    with core.store.write(actor=USER, run_id="uninstall:acme") as tx:
        core.documents.remove_by_writer(tx, author="gem:acme", reason="removed with gem acme")
    with core.store.read() as conn:
        gone = set(conn.execute(sa.select(documents.c.id).where(documents.c.deleted_at.is_not(None))).scalars())
        col_gone = conn.execute(sa.select(collections.c.deleted_at).where(collections.c.id == mine.id)).scalar()
    assert gone == {inside.id, elsewhere.id}
    assert users.id not in gone
    assert col_gone is not None
    summaries = sorted(c.summary for c in space.changes.list() if c.op == "uninstall.delete")
    assert summaries == [
        "removed with gem acme: collection Recipes",
        "removed with gem acme: document Day",
        "removed with gem acme: document Stew",
    ]


def test_purge_removes_documents_their_chunks_and_every_change_record_about_them(space: Space) -> None:
    """KB-DEL-04: the REST service's physical deletion, inside one write."""
    core = space.core
    with core.store.write(actor=USER, run_id=None) as tx:
        root = core.collections.create_kb_root(tx.conn, name="kb-1", now=tx.now)
    doc = core.documents.upsert(actor=USER, collection_id=root, key="d", title="T", body="Some words here.")
    with core.store.write(actor=USER, run_id=None) as tx:
        assert collection_subtree(tx.conn, root) == [root]
        purge_documents(tx.conn, [doc.id])
    with core.store.read() as conn:
        assert conn.execute(sa.select(documents).where(documents.c.id == doc.id)).first() is None
        assert conn.execute(sa.select(chunks).where(chunks.c.document_id == doc.id)).first() is None
        about = sa.select(change_objects).where(
            change_objects.c.object_type == "document", change_objects.c.object_id == doc.id
        )
        assert conn.execute(about).first() is None


def test_purge_collections_removes_the_subtree_children_first_and_reports_its_documents(space: Space) -> None:
    """KB-DEL-04: a knowledge base's collection goes with everything under it."""
    core = space.core
    with core.store.write(actor=USER, run_id=None) as tx:
        root = core.collections.create_kb_root(tx.conn, name="kb-2", now=tx.now)
    doc = core.documents.upsert(actor=USER, collection_id=root, key="d", title="T", body="Words.")
    before = len(space.changes.list())
    with core.store.write(actor=USER, run_id=None) as tx:
        removed = purge_collections(tx.conn, collection_subtree(tx.conn, root))
    assert removed == [doc.id]
    with core.store.read() as conn:
        assert conn.execute(sa.select(collections).where(collections.c.id == root)).first() is None
        assert int(conn.execute(sa.select(sa.func.count()).select_from(changes)).scalar_one()) == before - 1
