"""The Knowledge pages' collections and documents as data (K-UI-12, K-COL-13, OD-K52).

Everything is read through the user's host API (``space.user``), a fixed number of calls per page:
the tree is one read of the collections plus one count of documents per collection, a page of
documents is one slice. Collections of the REST service's knowledge bases (class ``kb``) are not
the user's folders and are left out of the tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from notochord.app import Space
from notochord.console.forms import FieldValueError, shown, whole_number
from notochord.errors import KnowledgeNotFoundError
from notochord.knowledge.browse import DeletedDocument, DocumentSummary
from notochord.knowledge.collections import KB_MARKER, CollectionRow

__all__ = [
    "DOCS_PER_PAGE",
    "MAX_PASSAGES",
    "CollectionPage",
    "DocumentPage",
    "SearchHit",
    "Tree",
    "TreeNode",
    "collection_page",
    "collection_tree",
    "document_page",
    "page_number",
    "search_documents",
]

DOCS_PER_PAGE: Final = 50
MAX_PASSAGES: Final = 200
_MAX_PAGE_NUMBER: Final = 10_000
_SNIPPET: Final = 280
SEARCH_LIMIT: Final = 50


@dataclass(frozen=True)
class TreeNode:
    id: int
    name: str
    builtin: str | None
    kind: str
    documents: int
    depth: int
    """1 for a top-level collection."""
    children: list[TreeNode]


@dataclass(frozen=True)
class Tree:
    roots: list[TreeNode]
    by_id: dict[int, TreeNode]

    def flat(self) -> list[TreeNode]:
        """Every node, depth first, children in creation order: the order of a picker."""
        found: list[TreeNode] = []

        def walk(node: TreeNode) -> None:
            found.append(node)
            for child in node.children:
                walk(child)

        for root in self.roots:
            walk(root)
        return found

    def path(self, collection_id: int) -> list[TreeNode]:
        """The collection's ancestors, top first, and the collection last."""
        chain: list[TreeNode] = []
        parents = {child.id: node for node in self.by_id.values() for child in node.children}
        current: TreeNode | None = self.by_id.get(collection_id)
        while current is not None and current not in chain:
            chain.append(current)
            current = parents.get(current.id)
        return list(reversed(chain))


def page_number(text: str) -> int:
    """A page number from a query string; blank is the first page.

    Raises:
        FieldValueError: not a whole number from 1 to 10000.
    """
    given = text.strip() or "1"
    page = whole_number(given)
    if page is None or not 1 <= page <= _MAX_PAGE_NUMBER:
        raise FieldValueError("refused_page", value=shown(given), max=_MAX_PAGE_NUMBER)
    return page


def collection_tree(space: Space) -> Tree:
    """The user's collections as a tree with how many documents each holds directly."""
    rows = space.user.collections.list()
    counts = space.user.collections.document_counts()
    by_row = {r.id: r for r in rows}
    children: dict[int | None, list[CollectionRow]] = {}
    for row in rows:
        # a parent no longer live would hide its children; show them at the top instead
        parent = row.parent_id if row.parent_id in by_row else None
        children.setdefault(parent, []).append(row)
    by_id: dict[int, TreeNode] = {}

    def build(row: CollectionRow, depth: int) -> TreeNode:
        node = TreeNode(
            id=row.id,
            name=row.name,
            builtin=row.builtin,
            kind=row.kind,
            documents=counts.get(row.id, 0),
            depth=depth,
            children=[build(c, depth + 1) for c in children.get(row.id, [])],
        )
        by_id[row.id] = node
        return node

    roots = [build(r, 1) for r in children.get(None, []) if r.builtin != KB_MARKER]
    return Tree(roots=roots, by_id=by_id)


@dataclass(frozen=True)
class SearchHit:
    document_id: int
    title: str
    collection_id: int
    collection_name: str
    text: str


def search_documents(space: Space, tree: Tree, query: str, *, within: int | None) -> list[SearchHit]:
    """Documents whose title or text match ``query``, best first, once each (the host search API);
    ``within`` limits it to one collection and its subfolders (K-SRCH-04)."""
    chosen: list[str | int] = [within] if within is not None else [n.id for n in tree.roots]
    hits = space.user.search(query, collections=chosen, limit=SEARCH_LIMIT, group_by="document")
    found = []
    for hit in hits:
        node = tree.by_id.get(hit.collection_id)
        if node is None:
            continue
        text = hit.text if len(hit.text) <= _SNIPPET else hit.text[: _SNIPPET - 1].rstrip() + "…"
        found.append(
            SearchHit(
                document_id=hit.document_id,
                title=hit.title,
                collection_id=hit.collection_id,
                collection_name=node.name,
                text=text,
            )
        )
    return found


@dataclass(frozen=True)
class CollectionPage:
    node: TreeNode
    path: list[TreeNode]
    documents: list[DocumentSummary]
    total: int
    page: int
    has_older: bool
    deleted: list[DeletedDocument]
    editable: bool
    """A built-in collection can be neither renamed nor moved."""
    parent_id: int | None


def collection_page(space: Space, tree: Tree, collection_id: int, *, page: int) -> CollectionPage:
    """A collection with one page of its own documents.

    Raises:
        KnowledgeNotFoundError: no live collection of the user's has that id.
    """
    node = tree.by_id.get(collection_id)
    if node is None:
        raise KnowledgeNotFoundError("collection")
    slice_ = space.user.documents.page(collection_id, offset=(page - 1) * DOCS_PER_PAGE, limit=DOCS_PER_PAGE)
    path = tree.path(collection_id)
    return CollectionPage(
        node=node,
        path=path,
        documents=slice_.items,
        total=slice_.total,
        page=page,
        has_older=slice_.has_more,
        deleted=space.user.documents.deleted(collection_id),
        editable=node.builtin is None,
        parent_id=path[-2].id if len(path) > 1 else None,
    )


@dataclass(frozen=True)
class DocumentPage:
    id: int
    title: str
    key: str | None
    collection: TreeNode
    created_at: str
    created_by: str
    writer: str
    updated_at: str
    source_uri: str | None
    body: str | None
    passages: list[str]
    passage_count: int
    movable: bool
    """A document written with a key stays where its key finds it (K-DOC-19)."""


def document_page(space: Space, tree: Tree, doc_id: int) -> DocumentPage:
    """One document to read: its title, place, who added it and when, and its text.

    Raises:
        KnowledgeNotFoundError: no live document of the user's collections has that id.
    """
    record = space.user.documents.get(doc_id)
    node = tree.by_id.get(record.collection_id)
    if node is None:
        raise KnowledgeNotFoundError("document")
    passages, total = ([], 0) if record.body is not None else space.user.documents.passages(doc_id, end=MAX_PASSAGES)
    return DocumentPage(
        id=record.id,
        title=record.title,
        key=record.key,
        collection=node,
        created_at=record.created_at,
        created_by=record.created_by,
        writer=record.writer,
        updated_at=record.updated_at,
        source_uri=record.source_uri,
        body=record.body,
        passages=passages,
        passage_count=total if record.body is None else record.chunk_count,
        movable=record.key is None,
    )
