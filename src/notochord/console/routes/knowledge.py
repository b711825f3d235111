"""The Knowledge pages' collections and documents (K-UI-12, K-COL-13, K-DOC-16, K-DOC-19).

Every action goes through the user's host API, so the console refuses exactly what the API
refuses (moving a collection into its own subfolder, into ``diary``, beyond five levels, moving a
keyed document) and shows that refusal as a sentence next to the field, with nothing changed.
A plain form post answers with a redirect (or, on a refusal, the page with the sentence, 422); an
htmx request answers with the part of the page that changed (``#knowledge-main``).
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from notochord.console.forms import whole_number
from notochord.console.routes.common import Form, Page, PageDep, field, redirect
from notochord.console.undo_words import undo_refusal
from notochord.console.views.knowledge import (
    Tree,
    collection_page,
    collection_tree,
    document_page,
    page_number,
    search_documents,
)
from notochord.errors import KnowledgeError, KnowledgeNotFoundError, KnowledgeValidationError

__all__ = ["router"]

router = APIRouter()

_NAME_REASONS = ("too_long", "unstorable")


def _chosen_collection(text: str) -> int | None:
    """A collection id from a picker; blank is "the top level"."""
    if not text:
        return None
    chosen = whole_number(text)
    if chosen is None:
        raise KnowledgeNotFoundError("collection")
    return chosen


def _searchable(
    page: Page,
    template: str,
    part: str,
    *,
    tree: Tree,
    within: int | None,
    query: str,
    notice: str | None,
    errors: dict[str, str] | None,
    values: dict[str, str] | None,
    **context: object,
) -> Response:
    """A Knowledge page with a search box: the documents matching ``query`` inside collection
    ``within`` (everywhere when ``None``) are listed on it."""
    hits = search_documents(page.space, tree, query, within=within) if query else None
    return page.form_answer(
        template,
        part=part,
        notice=notice,
        errors=errors,
        tree=tree,
        query=query,
        hits=hits,
        values=values or {},
        **context,
    )


def _tree_page(
    page: Page,
    *,
    query: str = "",
    notice: str | None = None,
    errors: dict[str, str] | None = None,
    values: dict[str, str] | None = None,
) -> Response:
    return _searchable(
        page,
        "knowledge.html",
        "_knowledge_tree.html",
        tree=collection_tree(page.space),
        within=None,
        query=query,
        notice=notice,
        errors=errors,
        values=values,
    )


@router.get("/knowledge")
def knowledge(page: PageDep, q: str = "") -> Response:
    """The collections tree with document counts, and a search over every document."""
    return _tree_page(page, query=q.strip())


@router.post("/knowledge/collections")
def create_collection(page: PageDep, form: Form) -> Response:
    """Create a collection at the top level or inside another one (K-COL-06…09)."""
    name = field(form, "name")
    parent_text = field(form, "parent")
    values = {"name": name, "parent": parent_text}
    if not name:
        return _tree_page(page, errors={"name": page.t("kn_name_needed")}, values=values)
    try:
        parent = _chosen_collection(parent_text)
        if parent is not None and parent not in collection_tree(page.space).by_id:
            raise KnowledgeNotFoundError("collection")
        row = page.space.user.collections.create(name, parent=parent)
    except KnowledgeNotFoundError:
        return page.not_found()
    except KnowledgeError as error:
        # a name the store refuses is the name's; any other refusal is about where it would go
        on_name = getattr(error, "reason", "") in _NAME_REASONS or not parent_text
        problem = page.problem(error, field="refused_field_collection_name")
        return _tree_page(page, errors={"name" if on_name else "parent": problem}, values=values)
    if page.htmx:
        return _tree_page(page, notice=page.t("kn_created", name=row.name))
    return redirect(f"/knowledge/collections/{row.id}?created=1")


def _collection(
    page: Page,
    collection_id: int,
    *,
    number: int = 1,
    query: str = "",
    notice: str | None = None,
    errors: dict[str, str] | None = None,
    values: dict[str, str] | None = None,
) -> Response:
    tree = collection_tree(page.space)
    try:
        view = collection_page(page.space, tree, collection_id, page=number)
    except KnowledgeNotFoundError:
        return page.not_found()
    return _searchable(
        page,
        "knowledge_collection.html",
        "_knowledge_collection.html",
        tree=tree,
        within=collection_id,
        query=query,
        notice=notice,
        errors=errors,
        values=values,
        view=view,
    )


@router.get("/knowledge/collections/{collection_id}")
def collection(
    page: PageDep, collection_id: int, q: str = "", created: str = "", deleted: str = "", unmoved: str = ""
) -> Response:
    """A collection: where it sits, its documents a page at a time, a search inside it, and its settings."""
    try:
        number = page_number(page.request.query_params.get("page", ""))
    except KnowledgeValidationError as error:
        return _collection(page, collection_id, notice=None, errors={"page": page.problem(error)})
    notice = page.t("kn_collection_created") if created else None
    if whole_number(deleted) is not None:
        notice = page.t("kn_document_deleted")
    if unmoved:
        notice = page.t("kn_collection_already_there")
    return _collection(page, collection_id, number=number, query=q.strip(), notice=notice)


@router.post("/knowledge/collections/{collection_id}/rename")
def rename_collection(page: PageDep, form: Form, collection_id: int) -> Response:
    """Rename a collection as the user (an undoable change)."""
    name = field(form, "name")
    if not name:
        return _collection(page, collection_id, errors={"name": page.t("kn_name_needed")}, values={"name": name})
    try:
        if collection_id not in collection_tree(page.space).by_id:
            raise KnowledgeNotFoundError("collection")
        change = page.space.user.collections.rename(collection_id, name)
    except KnowledgeNotFoundError:
        return page.not_found()
    except KnowledgeError as error:
        problem = page.problem(error, field="refused_field_collection_name")
        return _collection(page, collection_id, errors={"name": problem}, values={"name": name})
    if page.htmx:
        return _collection(
            page, collection_id, notice=page.t("kn_renamed" if change is not None else "kn_name_unchanged")
        )
    return redirect(f"/knowledge/collections/{collection_id}#settings")


@router.post("/knowledge/collections/{collection_id}/move")
def move_collection(page: PageDep, form: Form, collection_id: int) -> Response:
    """Move a collection under another one, or to the top level, by the API's rules (OD-K56)."""
    parent_text = field(form, "parent")
    try:
        parent = _chosen_collection(parent_text)
        tree = collection_tree(page.space)
        if collection_id not in tree.by_id or (parent is not None and parent not in tree.by_id):
            raise KnowledgeNotFoundError("collection")
        change = page.space.user.collections.move(collection_id, parent=parent)
    except KnowledgeNotFoundError:
        return page.not_found()
    except KnowledgeError as error:
        return _collection(page, collection_id, errors={"parent": page.problem(error)}, values={"parent": parent_text})
    # no change id: it was there already and nothing was recorded, so "Moved." would be untrue
    if page.htmx:
        notice = page.t("kn_moved" if change is not None else "kn_collection_already_there")
        return _collection(page, collection_id, notice=notice)
    unmoved = "" if change is not None else "?unmoved=1"
    return redirect(f"/knowledge/collections/{collection_id}{unmoved}#settings")


def _document(page: Page, doc_id: int, *, notice: str | None = None, errors: dict[str, str] | None = None) -> Response:
    tree = collection_tree(page.space)
    try:
        view = document_page(page.space, tree, doc_id)
    except KnowledgeNotFoundError:
        return page.not_found()
    return page.form_answer(
        "knowledge_document.html", part="_knowledge_document.html", notice=notice, errors=errors, tree=tree, doc=view
    )


@router.get("/knowledge/documents/{doc_id}")
def document(page: PageDep, doc_id: int, unmoved: str = "") -> Response:
    """A document to read: title, collection, who added it and when, and its text or passages."""
    return _document(page, doc_id, notice=page.t("kn_document_already_there") if unmoved else None)


@router.post("/knowledge/documents/{doc_id}/move")
def move_document(page: PageDep, form: Form, doc_id: int) -> Response:
    """Move a document to another collection (never a keyed one, never into diary, K-DOC-19)."""
    target_text = field(form, "collection")
    try:
        target = _chosen_collection(target_text)
        tree = collection_tree(page.space)
        if target is None:
            return _document(page, doc_id, errors={"collection": page.t("kn_choose_collection")})
        if target not in tree.by_id or page.space.user.documents.get(doc_id).collection_id not in tree.by_id:
            raise KnowledgeNotFoundError("collection")
        change = page.space.user.documents.move(doc_id, collection=target)
    except KnowledgeNotFoundError:
        return page.not_found()
    except KnowledgeError as error:
        return _document(page, doc_id, errors={"collection": page.problem(error)})
    if page.htmx:
        notice = page.t("kn_document_moved" if change is not None else "kn_document_already_there")
        return _document(page, doc_id, notice=notice)
    return redirect(f"/knowledge/documents/{doc_id}" + ("" if change is not None else "?unmoved=1"))


@router.post("/knowledge/documents/{doc_id}/delete")
def delete_document(page: PageDep, form: Form, doc_id: int) -> Response:
    """Delete a document (an undoable change; the collection page offers to restore it)."""
    try:
        collection_id = page.space.user.documents.get(doc_id).collection_id
        if collection_id not in collection_tree(page.space).by_id:
            raise KnowledgeNotFoundError("document")
        page.space.user.documents.delete(doc_id)
    except KnowledgeNotFoundError:
        return page.not_found()
    except KnowledgeError as error:
        return _document(page, doc_id, errors={"delete": page.problem(error)})
    if page.htmx and field(form, "from") == "list":
        return _collection(page, collection_id, notice=page.t("kn_document_deleted"))
    return redirect(f"/knowledge/collections/{collection_id}?deleted={doc_id}")


@router.post("/knowledge/documents/{doc_id}/restore")
def restore_document(page: PageDep, doc_id: int) -> Response:
    """Bring a deleted document back by undoing its deletion."""
    gone = page.space.user.documents.deleted_one(doc_id)
    if gone is None or gone.document.collection_id not in collection_tree(page.space).by_id:
        return page.not_found()
    collection_id = gone.document.collection_id
    try:
        page.space.user.documents.restore(doc_id)
    except KnowledgeNotFoundError:
        return page.not_found()
    except KnowledgeError as error:
        # a restore is the undo of the deletion, refused for the same reasons
        reason = undo_refusal(error, page.lang)
        return _collection(page, collection_id, errors={"restore": page.t("kn_restore_refused", reason=reason)})
    if page.htmx:
        return _collection(page, collection_id, notice=page.t("kn_document_restored"))
    return redirect(f"/knowledge/documents/{doc_id}")
