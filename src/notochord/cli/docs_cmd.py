"""``notochord docs``: import your files as documents; list, show, move and delete them.

Import rules:

- Markdown (``.md``, ``.markdown``), text (``.txt``), HTML (``.html``, ``.htm``), PDF (``.pdf``) and
  Word (``.docx``) files are imported; folders are walked recursively in name order. HTML, PDF and
  DOCX go through the same extraction as uploads to the knowledge-base service
  (:func:`notochord.extraction.isolated.extract_file_isolated`: a reader process with a deadline and
  a memory ceiling): HTML and DOCX headings become ``#`` headings, a PDF needs a text layer. Every
  file that is not imported is listed with the reason: hidden (a name starting with ``.``; a hidden
  folder is listed once and not entered), a symlinked folder (not followed, so a link cannot loop
  the walk), a link to a file outside the folder (not followed, so a folder from elsewhere cannot
  import ``~/.ssh/id_rsa`` under the name ``notes.md``), a kind that is not supported (the message
  names the supported ones), or empty. A file named on the command line is imported even when
  hidden or a link, as long as its kind is supported.
- The title is the first level-1 heading (``# …``) of a Markdown file outside code fences, the title
  the extraction finds in HTML, PDF or DOCX, else the file's stem. The body of Markdown and text is
  the file's text: strict UTF-8 (a byte-order mark is dropped) with line endings normalised to
  ``\\n``; the body of the other kinds is the extracted text. A file that cannot be read, is not
  UTF-8, holds NUL bytes, or cannot be extracted is reported as failed with the reason and skipped.
  ``meta.path`` records where the document came from.
- **Importing again never duplicates.** A file is identified by its path relative to the folder
  given on the command line (for a file given directly, its name), with ``/`` separators, within the
  target collection: the document imported from that path before (``meta.path``, written by you,
  without a key) is updated when the file changed and left ``unchanged`` otherwise. Two files with
  the same relative path in one import are refused, the second one failed. ``--as-new`` creates new
  documents regardless. A document moved to another collection is not found there again.
- ``--key-from-path`` instead makes that relative path the document's key (K-DOC-02, K-DOC-03): the
  same deduplication, kept even if ``meta`` is edited, but keyed documents cannot be moved (K-DOC-19).
- Every file is read in full before anything of it is written. Files are written in batches (up to
  50 files or about 4 million characters), one transaction per batch, each file its own change; all
  changes of one import share a run id (``import-…``), so ``notochord changes revert --run`` takes the
  whole import back. A file that is refused fails alone: nothing of it is written, and its batch is
  written without it. A storage failure stops the import; the batches before it stay imported.
- Output lists every file as created, updated, unchanged, skipped or failed (failures on stderr),
  then a summary line; ``--json`` gives the same as data (``documents``, ``skippedFiles``,
  ``failures``). Exit code 2 when a file failed, or nothing could be imported (no supported file,
  or every one skipped), so a script sees a partial import; the files that were imported stay.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

import notochord
from notochord.cli.collections_cmd import resolve_collection
from notochord.cli.common import (
    DataDir,
    JsonFlag,
    OrgOption,
    asked_for,
    console,
    emit,
    given_path,
    interrupted,
    open_space,
    printable,
    printable_text,
)
from notochord.cli.numbers import ID, whole_number
from notochord.cli.progress import progress_bar
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.arguments import counted
from notochord.knowledge.batches import BatchItemError
from notochord.knowledge.documents import DocumentRecord
from notochord.knowledge.quotas import MAX_BODY, MAX_NAME
from notochord.knowledge.writes import USER
from notochord.settings import Settings

__all__ = ["SUFFIXES", "SUPPORTED", "app", "markdown_title"]

app = typer.Typer(help="Documents: import your files, then list, show, move or delete them.", no_args_is_help=True)

_MARKDOWN = frozenset({".md", ".markdown"})
_PLAIN = frozenset({".txt"})
# read by the extraction the knowledge-base service uses for uploads
_EXTRACTED = frozenset({".html", ".htm", ".pdf", ".docx"})
SUFFIXES = _MARKDOWN | _PLAIN | _EXTRACTED
SUPPORTED = "Markdown (.md, .markdown), text (.txt), HTML (.html, .htm), PDF (.pdf) and Word (.docx)"
_H1 = re.compile(r" {0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")

# a UTF-8 character takes at most 4 bytes: anything larger cannot fit, so it is not even read
_MAX_FILE_BYTES = 4 * MAX_BODY

DocId = Annotated[int, typer.Argument(help="The document's id.", parser=ID)]


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
    skipped: list[dict[str, str]]
    unreadable: list[dict[str, str]]

    def skip(self, path: Path, reason: str) -> None:
        self.skipped.append({"path": str(path), "reason": reason})


def _unsupported(path: Path) -> str:
    """Why ``path`` (found beside the files to import, or named) is not imported."""
    if path.is_symlink() and not path.exists():
        return "not imported: a link to nothing (its target does not exist)"
    if path.exists() and not path.is_file() and not path.is_dir():
        return "not imported: not a file but a pipe, socket or device"
    kind = f"{path.suffix.lower()} files are" if path.suffix else "a file without an extension is"
    return f"not imported: {kind} not supported (supported: {SUPPORTED})"


def _walk(root: Path, folder: Path, found: _Found) -> None:
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        found.unreadable.append({"path": str(folder), "error": f"cannot list it: {exc.strerror or exc}"})
        return
    for entry in entries:
        if entry.name.startswith("."):
            found.skip(entry, "hidden")
        elif entry.is_dir():
            if entry.is_symlink():
                found.skip(entry, "a link to a folder, not followed")
            else:
                _walk(root, entry, found)
        elif entry.is_file() and entry.suffix.lower() in SUFFIXES:
            target = entry.resolve()
            if entry.is_symlink() and not target.is_relative_to(root.resolve()):
                # a folder from elsewhere (an unpacked archive) may hold "notes.md" pointing at a key
                found.skip(entry, f"not imported: a link to a file outside the folder ({target}), not followed")
            else:
                found.files.append(_Candidate(entry, entry.relative_to(root).as_posix()))
        else:
            found.skip(entry, _unsupported(entry))


def _find(paths: list[Path]) -> _Found:
    found = _Found([], [], [])
    for given in paths:
        if given.is_dir():
            _walk(given, given, found)
        elif given.is_file() and given.suffix.lower() in SUFFIXES:
            found.files.append(_Candidate(given, given.name))
        elif given.exists() or given.is_symlink():
            found.skip(given, _unsupported(given))
        else:
            found.unreadable.append({"path": str(given), "error": "no such file or folder"})
    return found


_NOT_UTF8_NAME = (
    "its name is not UTF-8 text (a \\udcXX in the path stands for a byte that is not): rename it, then import it"
)


def _is_text(name: str) -> bool:
    """Whether a file name decoded to text: bytes that are not UTF-8 arrive as lone surrogates."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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


@dataclass(frozen=True)
class _Content:
    title: str
    body: str


def _content(candidate: _Candidate) -> _Content | None:
    """The file's title and body, ``None`` when it is empty, or :class:`KnowledgeValidationError`."""
    if candidate.path.suffix.lower() not in _EXTRACTED:
        text = _read(candidate.path)
        return _Content(_title(candidate, text), text) if text.strip() else None
    try:
        if candidate.path.stat().st_size == 0:
            return None
    except OSError as exc:
        raise KnowledgeValidationError(f"cannot read it: {exc.strerror or exc}") from exc
    # imported here: the parsers are only needed when such a file is imported
    from notochord.extraction.isolated import extract_file_isolated

    extracted = extract_file_isolated(candidate.path)
    return _Content((extracted.title or candidate.path.stem)[:MAX_NAME], extracted.text)


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
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Files (Markdown, text, HTML, PDF, Word .docx) or folders (walked recursively).", parser=given_path
        ),
    ],
    collection: Annotated[
        str, typer.Option("--collection", "-c", help="Where to put them: diary, keep, an id or a name.")
    ] = "keep",
    key_from_path: Annotated[
        bool,
        typer.Option(
            "--key-from-path", help="Also make the relative path the document's key (keyed documents cannot be moved)."
        ),
    ] = False,
    as_new: Annotated[
        bool,
        typer.Option("--as-new", help="Create new documents even for files imported into this collection before."),
    ] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Import files as documents: Markdown, text, HTML, PDF and Word (.docx).

    Importing again does not duplicate: a file is identified by its path relative to the folder you
    name (for a file named directly, its file name) within the collection, so a changed file updates
    its document and an unchanged one is left alone. Hidden, empty and unsupported files are listed
    as skipped with the reason.
    """
    found = _find(paths)
    results: list[dict[str, Any]] = []
    failures = list(found.unreadable)
    skipped = list(found.skipped)
    counts = {"created": 0, "updated": 0, "unchanged": 0}
    run_id = f"import-{uuid.uuid4().hex}"
    with _telling_what_stays(run_id, again=not as_new), open_space(data_dir, org) as space:
        target = resolve_collection(space, collection)
        earlier = {} if as_new or key_from_path else _imported_before(space, target.id)
        seen: dict[str, str] = {}
        with progress_bar(hidden=as_json or not found.files) as bar:
            task = bar.add_task("importing", total=len(found.files))
            batch = _Batch(space, run_id, lambda done: bar.advance(task, done), results, failures, counts)
            for candidate in found.files:
                bar.update(task, description=printable(candidate.relative))
                first = seen.setdefault(candidate.relative, str(candidate.path))
                try:
                    if first != str(candidate.path) and not as_new:
                        raise KnowledgeValidationError(
                            f"{first} in this import has the same relative path {candidate.relative!r}; "
                            "import one of them into another collection, or use --as-new"
                        )
                    if not _is_text(candidate.relative):
                        raise KnowledgeValidationError(_NOT_UTF8_NAME)
                    content = _content(candidate)
                except KnowledgeValidationError as error:
                    # a refusal of this file's content concerns it alone; storage failures stop the import
                    failures.append({"path": str(candidate.path), "error": error.message})
                    bar.advance(task)
                    continue
                if content is None:
                    skipped.append({"path": str(candidate.path), "reason": "empty: there is no text to import"})
                    bar.advance(task)
                    continue
                key = candidate.relative if key_from_path else None
                item = {
                    "collection": target.id,
                    "key": key,
                    "id": earlier.get(candidate.relative),
                    "title": content.title,
                    "body": content.body,
                    "meta": {"path": candidate.relative},
                }
                batch.add(candidate, item, len(content.body))
            batch.flush()
        pending = space.index.pending()
    summary = {
        "collection": target.id,
        "collectionName": target.name,
        **counts,
        "skipped": len(skipped),
        "failed": len(failures),
        "documents": results,
        "failures": failures,
        "skippedFiles": skipped,
        "skippedPaths": [s["path"] for s in skipped],
        "pendingEmbedding": pending,
        "runId": run_id if counts["created"] or counts["updated"] else None,
    }
    _report_import(summary, as_json=as_json)
    if failures or not results:
        raise typer.Exit(2)


@contextlib.contextmanager
def _telling_what_stays(run_id: str, *, again: bool) -> Iterator[None]:
    """On Ctrl-C, name the run of the batches already written, so that they can be undone.

    Each batch is its own transaction: those written before the interruption stay, the one being
    written is not, and the listing of what was written is never printed.
    """
    try:
        yield
    except KeyboardInterrupt:
        finish = "import the same files again to finish (the ones imported are recognised), or " if again else ""
        interrupted(
            f"the files written before it (if any) stay imported, as run {run_id}; "
            f"{finish}undo them with: notochord changes revert --run {run_id}"
        )


def _imported_before(space: notochord.Space, collection_id: int) -> dict[str, int]:
    """``meta.path`` → id of the unkeyed documents you imported into the collection (newest wins)."""
    found: dict[str, int] = {}
    # list() is newest first, so the first document seen for a path is the one to update
    for doc in space.user.documents.list(collection_id):
        path = doc.meta.get("path")
        if doc.key is None and doc.created_by == str(USER) and isinstance(path, str):
            found.setdefault(path, doc.id)
    return found


_BATCH_FILES = 50
_BATCH_CHARS = 4_000_000


@dataclass
class _Batch:
    """Files read and waiting to be written together: one transaction per batch."""

    space: notochord.Space
    run_id: str
    advance: Callable[[int], None]
    results: list[dict[str, Any]]
    failures: list[dict[str, str]]
    counts: dict[str, int]
    waiting: list[tuple[_Candidate, dict[str, Any]]] = field(default_factory=list)
    chars: int = 0

    def add(self, candidate: _Candidate, item: dict[str, Any], chars: int) -> None:
        self.waiting.append((candidate, item))
        self.chars += chars
        if len(self.waiting) >= _BATCH_FILES or self.chars >= _BATCH_CHARS:
            self.flush()

    def flush(self) -> None:
        """Write the waiting files; a refused file fails alone and the rest is written without it."""
        while self.waiting:
            try:
                outcome = self.space.user.documents.upsert_many([i for _, i in self.waiting], run_id=self.run_id)
            except BatchItemError as error:
                candidate, _ = self.waiting.pop(error.index)
                self.failures.append({"path": str(candidate.path), "error": error.problem})
                self.advance(1)
                continue
            for (candidate, item), result in zip(self.waiting, outcome.results, strict=True):
                self.results.append(
                    {"path": str(candidate.path), "key": item["key"], "id": result.id, "status": result.status}
                )
                self.counts[result.status] += 1
            self.advance(len(self.waiting))
            self.waiting.clear()
        self.chars = 0


def _embedding_hint() -> str:
    """What makes the imported passages searchable by meaning: nothing to do, or ``reindex``.

    With ``index_in_background`` on (the default) the passages are handed to a background worker as
    the command exits (or a running ``notochord serve`` embeds them), so sending the person to
    ``reindex`` would have them wait for work that is already being done.
    """
    if Settings.load().index_in_background:
        return (
            "they become searchable by meaning as well as by words once embedded in the background "
            "(notochord status shows what is pending)"
        )
    return "to search them by meaning as well as by words, run: notochord reindex"


def _report_import(summary: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        emit(summary, as_json=True)
        return
    for failure in summary["failures"]:
        console.print(
            f"failed: {printable(failure['path'])}: {printable_text(failure['error'])}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    lines = [f"{d['status']:<9} {printable(d['path'])}" for d in summary["documents"]]
    lines += [f"skipped   {printable(s['path'])}: {printable(s['reason'])}" for s in summary["skippedFiles"]]
    imported = summary["created"] + summary["updated"] + summary["unchanged"]
    line = (
        f"imported {counted(imported, 'file')} into {printable(summary['collectionName'])}: "
        f"{summary['created']} created, {summary['updated']} updated, {summary['unchanged']} unchanged"
        if imported
        else "nothing was imported"
    )
    if summary["skipped"]:
        line += f"; skipped {summary['skipped']}"
    if summary["failed"]:
        line += f"; {summary['failed']} failed"
    lines.append(line)
    if summary["pendingEmbedding"] and imported:
        lines.append(_embedding_hint())
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


@app.command("delete")
def delete(doc_id: DocId, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Delete a document (revertible with notochord changes revert)."""
    with open_space(data_dir, org) as space, asked_for("document", doc_id, _SEE_THEM):
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
        with asked_for("document", doc_id, _SEE_THEM):
            change_id = space.user.documents.move(doc_id, collection=target.id)
    emit(
        {"id": doc_id, "collection": target.id, "change": change_id},
        as_json=as_json,
        text=f"moved document {doc_id} to {printable(target.name)} (change {change_id})",
    )
