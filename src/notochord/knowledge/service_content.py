"""The REST service's knowledge bases are its own: the host API reads them and never writes them.

A knowledge base keeps its documents in a ``builtin = 'kb'`` collection of its organization's
space, written and deleted by :mod:`notochord.kbservice` alone, which keeps each document's public
id and metadata beside it and deletes documents for good. A document written through
``space.user`` would have neither (the service would list it with no id); one moved, deleted or
undone there would change the service's content behind its back. So every write of the host API
(:mod:`notochord.knowledge.user`, what the CLI, the console and MCP use) asks here first whether it
touches such a collection, and is refused if it does. Gems never reach these collections at all
(:mod:`notochord.access.scope`).
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from notochord.db.schema import change_objects, changes, documents
from notochord.errors import ServiceContentError
from notochord.knowledge.collections import CollectionTree

__all__ = ["refuse_service_changes", "refuse_service_collection"]


def _service_root(tree: CollectionTree, collection_id: int) -> str | None:
    """The knowledge base id (its root collection's name) ``collection_id`` belongs to, if any."""
    if collection_id not in tree.by_id or tree.class_of(collection_id) != "kb":
        return None
    return tree.get(tree.ancestors(collection_id)[-1]).name


def _refusal(kb_id: str, doing: str) -> ServiceContentError:
    return ServiceContentError(
        f"cannot {doing}: it belongs to knowledge base {kb_id} of the REST service, whose documents only the "
        f"service writes; add, replace or delete them through /api/knowledge/kb/{kb_id}/documents",
        kb=kb_id,
    )


def refuse_service_collection(tree: CollectionTree, collection_ids: Iterable[int | None], *, doing: str) -> None:
    """Refuse ``doing`` when any of ``collection_ids`` lies in a knowledge base of the service."""
    for collection_id in collection_ids:
        if collection_id is None:
            continue
        kb_id = _service_root(tree, collection_id)
        if kb_id is not None:
            raise _refusal(kb_id, doing)


def refuse_service_changes(
    conn: sa.Connection, tree: CollectionTree, *, change_id: int | None, run_id: str | None
) -> None:
    """Refuse undoing a change, or a run, that wrote a document of a knowledge base of the service.

    Nothing else of the host's writes can touch one (this module refuses them), so only the
    service's own uploads are found here.
    """
    kb_collections = [c for c in tree.by_id if tree.class_of(c) == "kb"]
    if not kb_collections:
        return
    which = changes.c.id == change_id if change_id is not None else changes.c.run_id == run_id
    found = conn.execute(
        sa.select(documents.c.collection_id)
        .select_from(changes)
        .join(change_objects, change_objects.c.change_id == changes.c.id)
        .join(documents, documents.c.id == change_objects.c.object_id)
        .where(which, change_objects.c.object_type == "document", documents.c.collection_id.in_(kb_collections))
        .limit(1)
    ).scalar()
    if found is not None:
        what = f"undo change {change_id}" if change_id is not None else f"undo run {run_id}"
        refuse_service_collection(tree, [found], doing=what)
