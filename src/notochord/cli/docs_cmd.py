"""``notochord docs``: import Markdown and text files as documents; list, show, move and delete them.

Import rules:

- Markdown (``.md``, ``.markdown``) and text (``.txt``) files are imported; folders are walked
  recursively in name order. Inside a folder, hidden entries (a name starting with ``.``) and files
  of other types are skipped and counted; a hidden folder counts once and is not entered. Symlinked
  folders are not followed, so a link cannot loop the walk. A file named on the command line is
  imported even when hidden, as long as its type is supported.
- The title is the first level-1 heading (``# …``) of a Markdown file outside code fences, else the
  file's stem. The body is the file's text: strict UTF-8 (a byte-order mark is dropped) with line
  endings normalised to ``\\n``. A file that cannot be read, is not UTF-8, or holds NUL bytes (not
  text) is reported and skipped. ``meta.path`` records where the document came from.
- Every file is read in full before anything is written and is written by one upsert, its own
  transaction: a failing file leaves nothing behind, and the files before it stay imported.
- ``--key-from-path`` uses the path relative to the folder given on the command line (for a file
  given directly, its name), with ``/`` separators, as the document's key: importing the same folder
  again updates changed files and leaves the others ``unchanged`` instead of duplicating them
  (K-DOC-02, K-DOC-03). Keyed documents cannot be moved (K-DOC-19).
- Exit code 2 when nothing could be imported (no supported file, or every one failed); a partial
  import exits 0 and lists what failed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

import notochord
from notochord.cli.collections_cmd import resolve_collection
from notochord.cli.common import DataDir, JsonFlag, OrgOption, console, emit, open_space
from notochord.cli.search_cmd import progress_bar
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.documents import DocumentRecord
from notochord.knowledge.quotas import MAX_BODY, MAX_NAME

__all__ = ["SUFFIXES", "app", "markdown_title"]

app = typer.Typer(help="Documents: import your notes, then list, show, move or delete them.", no_args_is_help=True)

SUFFIXES = frozenset({".md", ".markdown", ".txt"})
_MARKDOWN = frozenset({".md", ".markdown"})
_H1 = re.compile(r" {0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")

# a UTF-8 character takes at most 4 bytes: anything larger cannot fit, so it is not even read
_MAX_FILE_BYTES = 4 * MAX_BODY

DocId = Annotated[int, typer.Argument(help="The document's id.")]


def markdown_title(text: str) -> str | None:
    """The text of the first level-1 ATX heading outside fenced code, or ``None``."""
    fence: str | None = None
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        heading = _H1.match(line)
        if heading and heading.group(1).strip():
            return heading.group(1).strip()
    return None


# ---------------------------------------------------------------------- finding and reading files


@dataclass(frozen=True)
class _Candidate:
    path: Path
    relative: str
    """The path relative to the folder given (or the file's name): ``meta.path`` and the key."""


@dataclass
class _Found:
    files: list[_Candidate]
    skipped: list[str]
    unreadable: list[dict[str, str]]


def _walk(root: Path, folder: Path, found: _Found) -> None:
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        found.unreadable.append({"path": str(folder), "error": f"cannot list it: {exc.strerror or exc}"})
        return
    for entry in entries:
        if entry.name.startswith("."):
            found.skipped.append(str(entry))
        elif entry.is_dir():
            if entry.is_symlink():
                found.skipped.append(str(entry))
            else:
                _walk(root, entry, found)
        elif entry.is_file() and entry.suffix.lower() in SUFFIXES:
            found.files.append(_Candidate(entry, entry.relative_to(root).as_posix()))
        else:
            found.skipped.append(str(entry))


def _find(paths: list[Path]) -> _Found:
    found = _Found([], [], [])
    for given in paths:
        if given.is_dir():
            _walk(given, given, found)
        elif given.is_file():
            if given.suffix.lower() in SUFFIXES:
                found.files.append(_Candidate(given, given.name))
            else:
                found.skipped.append(str(given))
        else:
            found.unreadable.append({"path": str(given), "error": "no such file or folder"})
    return found


def _read(path: Path) -> str:
    """The file's text, or :class:`KnowledgeValidationError` saying why it cannot be imported."""
    try:
        if path.stat().st_size > _MAX_FILE_BYTES:
            raise KnowledgeValidationError(f"too large: a document holds at most {MAX_BODY:,} characters")
        raw = path.read_bytes()
    except OSError as exc:
        raise KnowledgeValidationError(f"cannot read it: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KnowledgeValidationError(f"not UTF-8 text (byte {exc.start} is invalid)") from exc
    if "\x00" in text:
        raise KnowledgeValidationError("not text: it contains NUL bytes")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _title(candidate: _Candidate, text: str) -> str:
    heading = markdown_title(text) if candidate.path.suffix.lower() in _MARKDOWN else None
    return (heading or candidate.path.stem)[:MAX_NAME]


# ---------------------------------------------------------------------- shapes


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


# ---------------------------------------------------------------------- commands


@app.command("import")
def import_files(
    paths: Annotated[list[Path], typer.Argument(help="Markdown or text files, or folders (walked recursively).")],
    collection: Annotated[
        str, typer.Option("--collection", "-c", help="Where to put them: diary, keep, an id or a name.")
    ] = "keep",
    key_from_path: Annotated[
        bool,
        typer.Option("--key-from-path", help="Key each document by its relative path, so importing again updates it."),
    ] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Import Markdown (.md, .markdown) and text (.txt) files as documents."""
    found = _find(paths)
    results: list[dict[str, Any]] = []
    failures = list(found.unreadable)
    counts = {"created": 0, "updated": 0, "unchanged": 0}
    with open_space(data_dir, org) as space:
        target = resolve_collection(space, collection)
        with progress_bar(hidden=as_json or not found.files) as bar:
            task = bar.add_task("importing", total=len(found.files))
            for candidate in found.files:
                bar.update(task, description=candidate.relative)
                try:
                    results.append(_import_one(space, candidate, target.id, key_from_path=key_from_path))
                except KnowledgeValidationError as error:
                    # a refusal of this file's content concerns it alone; storage failures stop the import
                    failures.append({"path": str(candidate.path), "error": error.message})
                else:
                    counts[results[-1]["status"]] += 1
                bar.advance(task)
        pending = space.index.pending()
    summary = {
        "collection": target.id,
        "collectionName": target.name,
        **counts,
        "skipped": len(found.skipped),
        "failed": len(failures),
        "documents": results,
        "failures": failures,
        "skippedPaths": found.skipped,
        "pendingEmbedding": pending,
    }
    _report_import(summary, as_json=as_json)
    if not results:
        raise typer.Exit(2)


def _import_one(
    space: notochord.Space, candidate: _Candidate, collection_id: int, *, key_from_path: bool
) -> dict[str, Any]:
    text = _read(candidate.path)
    key = candidate.relative if key_from_path else None
    outcome = space.user.documents.upsert(
        collection=collection_id,
        key=key,
        title=_title(candidate, text),
        body=text,
        meta={"path": candidate.relative},
    )
    return {"path": str(candidate.path), "key": key, "id": outcome.id, "status": outcome.status}


def _report_import(summary: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        emit(summary, as_json=True)
        return
    for failure in summary["failures"]:
        console.print(f"failed: {failure['path']}: {failure['error']}", highlight=False, markup=False, soft_wrap=True)
    imported = summary["created"] + summary["updated"] + summary["unchanged"]
    line = (
        f"imported {imported} file(s) into {summary['collectionName']}: {summary['created']} created, "
        f"{summary['updated']} updated, {summary['unchanged']} unchanged"
        if imported
        else "nothing was imported"
    )
    if summary["skipped"]:
        line += f"; skipped {summary['skipped']} (hidden, or not Markdown or text)"
    if summary["failed"]:
        line += f"; {summary['failed']} failed"
    lines = [line]
    if summary["pendingEmbedding"] and imported:
        lines.append("to search them by meaning as well as by words, run: notochord reindex")
    emit(None, as_json=False, text="\n".join(lines))


@app.command("list")
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
        f"{d.id:>6}  {d.doc_date[:10]}  {names.get(d.collection_id, '?'):<16} {d.title or '(untitled)'}"
        + (f"  [key {d.key}]" if d.key is not None else "")
        for d in found
    ]
    emit(
        [_summary_json(d, names.get(d.collection_id, "")) for d in found],
        as_json=as_json,
        text="\n".join(lines) or "(no documents)",
    )


def _parse_range(text: str) -> tuple[int | None, int | None]:
    start, sep, end = text.partition(":")
    if not sep or not all(part.strip().isdigit() for part in (start, end) if part.strip()):
        raise typer.BadParameter("use FROM:TO with chunk numbers, e.g. 0:3 (TO exclusive; either may be left out)")
    return (int(start) if start.strip() else None, int(end) if end.strip() else None)


@app.command("show")
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
    with open_space(data_dir, org) as space:
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
        f"{doc.title or '(untitled)'}",
        f"id {doc.id} in {where}" + (f", key {doc.key}" if doc.key is not None else ""),
        f"written by {doc.writer}, updated {doc.updated_at}, {doc.chunk_count} chunk(s)",
    ]
    if doc.source_uri:
        header.append(f"source {doc.source_uri}")
    if "range" in shown:
        r = shown["range"]
        header.append(f"chunks {r['from']} to {r['to']} (exclusive) of {r['total']}")
    emit(None, as_json=False, text="\n".join(header) + "\n\n" + (shown["body"] or ""))


@app.command("delete")
def delete(doc_id: DocId, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Delete a document (revertible with notochord changes revert)."""
    with open_space(data_dir, org) as space:
        change_id = space.user.documents.delete(doc_id)
    emit(
        {"id": doc_id, "status": "deleted", "change": change_id},
        as_json=as_json,
        text=f"deleted document {doc_id} (change {change_id})",
    )


@app.command("move")
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
        change_id = space.user.documents.move(doc_id, collection=target.id)
    emit(
        {"id": doc_id, "collection": target.id, "change": change_id},
        as_json=as_json,
        text=f"moved document {doc_id} to {target.name} (change {change_id})",
    )
