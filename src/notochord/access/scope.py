"""A gem's effective reach over collections, computed from the tree at each call.

Readable (writable) collections are the union of:

- the subtrees of ``diary`` / ``keep`` when ``collections.read|write:diary|keep`` is on;
- the subtrees of the collections the user ticked for the gem, when ``collections.read|write:
  user-selected`` is on (only collections outside diary and keep can be ticked);
- the subtrees of every collection the gem created (K-PERM-15, K-COL-10) in its current
  installation: collection ids only grow, and an installation remembers the highest id that existed
  when it began, so a gem uninstalled with "Keep" and installed again starts with no rights at all
  (K-UNINST-13).

``collections.write:<t>`` implies read (OD-K27). Subtrees are taken at call time, so grants cover
subfolders made later (K-PERM-14) and content moved in or out changes access at once (K-COL-14).
The resulting id sets are compiled into the SQL of listing and search (filters inside the query).
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from notochord.access.permissions import CollectionsAction, PermissionSet
from notochord.knowledge.collections import CollectionTree

__all__ = ["CollectionAccess", "collection_access", "collection_permission"]


@dataclass(frozen=True)
class CollectionAccess:
    readable: frozenset[int]
    writable: frozenset[int]


def _reach(
    tree: CollectionTree,
    grants: PermissionSet,
    action: CollectionsAction,
    *,
    gem_id: str,
    ticked: Set[int],
    created_after: int,
) -> set[int]:
    roots: set[int] = set()
    if grants.collections_allows(action=action, target="diary"):
        roots.add(tree.builtin("diary").id)
    if grants.collections_allows(action=action, target="keep"):
        roots.add(tree.builtin("keep").id)
    if grants.collections_allows(action=action, target="user-selected"):
        roots.update(c for c in ticked if c in tree.by_id and tree.class_of(c) == "user-selected")
    roots.update(row.id for row in tree.by_id.values() if row.created_by == f"gem:{gem_id}" and row.id > created_after)
    reach: set[int] = set()
    for root in roots:
        reach |= tree.subtree(root)
    # knowledge bases of the REST service are never reachable through ctx.knowledge (OD-B24)
    return {c for c in reach if tree.class_of(c) != "kb"}


def collection_access(
    tree: CollectionTree, grants: PermissionSet, *, gem_id: str, ticked: Set[int], created_after: int
) -> CollectionAccess:
    writable = _reach(tree, grants, "write", gem_id=gem_id, ticked=ticked, created_after=created_after)
    readable = _reach(tree, grants, "read", gem_id=gem_id, ticked=ticked, created_after=created_after) | writable
    return CollectionAccess(readable=frozenset(readable), writable=frozenset(writable))


def collection_permission(tree: CollectionTree, collection_id: int, action: str) -> str:
    """The narrowest permission that would allow ``action`` on the collection (OD-K06)."""
    return f"collections.{action}:{tree.class_of(collection_id)}"
