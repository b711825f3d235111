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

Finding the files and reading their text is :mod:`notochord.cli.docs_files`; the commands on the
documents already in a space (``list``, ``show``, ``delete``, ``move``) are
:mod:`notochord.cli.docs_browse`, mounted here after ``import``.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

import notochord
from notochord.cli import docs_browse
from notochord.cli.collections_cmd import resolve_collection
from notochord.cli.common import (
    DataDir,
    JsonFlag,
    OrgOption,
    console,
    emit,
    given_path,
    interrupted,
    open_space,
    printable,
    printable_text,
)
from notochord.cli.docs_files import (
    EXTRACTED,
    MARKDOWN,
    NOT_UTF8_NAME,
    SUFFIXES,
    SUPPORTED,
    Candidate,
    find,
    is_text,
    markdown_title,
    read_text,
)
from notochord.cli.progress import progress_bar
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.arguments import counted
from notochord.knowledge.batches import BatchItemError
from notochord.knowledge.quotas import MAX_NAME
from notochord.knowledge.writes import USER
from notochord.settings import Settings

__all__ = ["SUFFIXES", "SUPPORTED", "app", "markdown_title"]

app = typer.Typer(help="Documents: import your files, then list, show, move or delete them.", no_args_is_help=True)


def _title(candidate: Candidate, text: str) -> str:
    heading = markdown_title(text) if candidate.path.suffix.lower() in MARKDOWN else None
    return (heading or candidate.path.stem)[:MAX_NAME]


@dataclass(frozen=True)
class _Content:
    title: str
    body: str


def _content(candidate: Candidate) -> _Content | None:
    """The file's title and body, ``None`` when it is empty, or :class:`KnowledgeValidationError`."""
    if candidate.path.suffix.lower() not in EXTRACTED:
        text = read_text(candidate.path)
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
    found = find(paths)
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
                    if not is_text(candidate.relative):
                        raise KnowledgeValidationError(NOT_UTF8_NAME)
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
    waiting: list[tuple[Candidate, dict[str, Any]]] = field(default_factory=list)
    chars: int = 0

    def add(self, candidate: Candidate, item: dict[str, Any], chars: int) -> None:
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


def _absolute(path: str) -> str:
    # normalised, links not followed: a link inside the folder is imported under its own name
    return os.path.abspath(path)


def _with_absolute_paths(summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` with every file named by its absolute path, as data read in another folder needs;
    the listing for people keeps the paths as they were typed."""
    named = {"documents", "failures", "skippedFiles"}
    shown = {key: [{**row, "path": _absolute(row["path"])} for row in summary[key]] for key in named}
    return {**summary, **shown, "skippedPaths": [_absolute(p) for p in summary["skippedPaths"]]}


def _report_import(summary: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        emit(_with_absolute_paths(summary), as_json=True)
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


# after import, in the order --help lists them
app.command("list")(docs_browse.list_documents)
app.command("show")(docs_browse.show)
app.command("delete")(docs_browse.delete)
app.command("move")(docs_browse.move)
