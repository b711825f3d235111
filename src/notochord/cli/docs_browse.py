"""``notochord docs list``, ``show``, ``delete`` and ``move``: the documents already in a space.

Each function here is one command; :mod:`notochord.cli.docs_cmd` mounts them under ``docs``, after
``import``. A document named by an id that does not exist is answered with the command that lists
the ones there are.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from notochord.cli.collections_cmd import resolve_collection
from notochord.cli.common import DataDir, JsonFlag, OrgOption, asked_for, emit, open_space, printable
from notochord.cli.numbers import ID, whole_number
from notochord.knowledge.arguments import counted
from notochord.knowledge.documents import DocumentRecord

__all__ = ["delete", "list_documents", "move", "show"]

DocId = Annotated[int, typer.Argument(help="The document's id.", parser=ID)]


def _document_json(doc: DocumentRecord, collection_name: str | None = None) -> dict[str, Any]:
    return {
        "id": doc.id,
        "collection": doc.collection_id,
        "collectionName": collection_name,
        "key": doc.key,
        "title": doc.title,
        "body": doc.body,
        "meta": doc.meta,
        "sourceUri": doc.source_uri,
        "createdBy": doc.created_by,
        "writer": doc.writer,
        "createdAt": doc.created_at,
        "updatedAt": doc.updated_at,
        "date": doc.doc_date,
        "chunkCount": doc.chunk_count,
    }


def _summary_json(doc: DocumentRecord, collection_name: str) -> dict[str, Any]:
    shown = _document_json(doc, collection_name)
    del shown["body"]
    return shown


def list_documents(
    collection: Annotated[
        str | None,
        typer.Argument(help="Only documents placed directly in it (diary, keep, an id or a name)."),
    ] = None,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """List documents, newest first: in one collection (not its subfolders), or everywhere."""
    with open_space(data_dir, org) as space:
        names = {r.id: r.name for r in space.user.collections.list()}
        if collection is not None:
            found = space.user.documents.list(resolve_collection(space, collection).id)
        else:
            found = [d for c in names for d in space.user.documents.list(c)]
            found.sort(key=lambda d: (d.doc_date, d.id), reverse=True)
    lines = [
        f"{d.id:>6}  {d.doc_date[:10]}  {printable(names.get(d.collection_id, '?')):<16} "
        f"{printable(d.title or '(untitled)')}" + (f"  [key {printable(d.key)}]" if d.key is not None else "")
        for d in found
    ]
    emit(
        [_summary_json(d, names.get(d.collection_id, "")) for d in found],
        as_json=as_json,
        text="\n".join(lines) or "(no documents)",
    )


_SEE_THEM = "see them with: notochord docs list"
_RANGE_USAGE = "use FROM:TO with chunk numbers, e.g. 0:3 (TO exclusive; either may be left out)"
_CHUNK_NUMBER = whole_number(at_least=0)


def _parse_range(text: str) -> tuple[int | None, int | None]:
    start, sep, end = text.partition(":")
    if not sep:
        raise typer.BadParameter(_RANGE_USAGE)
    try:
        return (
            _CHUNK_NUMBER(start) if start.strip() else None,
            _CHUNK_NUMBER(end) if end.strip() else None,
        )
    except typer.BadParameter as problem:
        raise typer.BadParameter(f"{problem.message}; {_RANGE_USAGE}") from None


def show(
    doc_id: DocId,
    window: Annotated[
        str | None,
        typer.Option("--range", help="Only chunks FROM:TO (0-based, TO exclusive), e.g. 0:3."),
    ] = None,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Show a document, or with --range only some of its chunks."""
    bounds = _parse_range(window) if window is not None else None
    with open_space(data_dir, org) as space, asked_for("document", doc_id, _SEE_THEM):
        doc = space.user.documents.get(doc_id)
        where = space.user.collections.get(doc.collection_id).name
        shown = _document_json(doc, where)
        if bounds is not None:
            start = bounds[0] or 0
            end = doc.chunk_count if bounds[1] is None else bounds[1]
            if end < start:
                raise typer.BadParameter("FROM must not be after TO", param_hint="--range")
            texts, total = space.core.documents.chunk_texts(doc.id, start, end)
            shown["body"] = "\n\n".join(texts)
            shown["range"] = {"from": start, "to": end, "total": total}
        elif doc.body is None:
            # imported text keeps no body (K-DOC-06); its passages are the only copy
            shown["body"] = "\n\n".join(space.core.documents.chunk_texts(doc.id, 0, doc.chunk_count)[0])
    if as_json:
        emit(shown, as_json=True)
        return
    header = [
        printable(doc.title or "(untitled)"),
        f"id {doc.id} in {printable(where)}" + (f", key {printable(doc.key)}" if doc.key is not None else ""),
        f"written by {printable(doc.writer)}, updated {doc.updated_at}, {counted(doc.chunk_count, 'chunk')}",
    ]
    if doc.source_uri:
        header.append(f"source {printable(doc.source_uri)}")
    if "range" in shown:
        r = shown["range"]
        header.append(f"chunks {r['from']} to {r['to']} (exclusive) of {r['total']}")
    emit(None, as_json=False, text="\n".join(header) + "\n\n" + (shown["body"] or ""))


def delete(doc_id: DocId, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Delete a document (revertible with notochord changes revert)."""
    with open_space(data_dir, org) as space, asked_for("document", doc_id, _SEE_THEM):
        change_id = space.user.documents.delete(doc_id)
    emit(
        {"id": doc_id, "status": "deleted", "change": change_id},
        as_json=as_json,
        text=f"deleted document {doc_id} (change {change_id})",
    )


def move(
    doc_id: DocId,
    collection: Annotated[str, typer.Argument(help="Where to move it: keep, an id or a name.")],
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Move a document to another collection (not keyed documents, not into diary)."""
    with open_space(data_dir, org) as space:
        target = resolve_collection(space, collection)
        with asked_for("document", doc_id, _SEE_THEM):
            change_id = space.user.documents.move(doc_id, collection=target.id)
    if change_id is None:
        done = f"document {doc_id} is already in {printable(target.name)}; nothing changed"
    else:
        done = f"moved document {doc_id} to {printable(target.name)} (change {change_id})"
    emit({"id": doc_id, "collection": target.id, "change": change_id}, as_json=as_json, text=done)
