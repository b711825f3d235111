"""``notochord search`` and ``notochord reindex``: finding passages and embedding what is pending.

Rules:

- ``search`` is the owner's search over every collection, or only the ``--collection`` ones and
  their subfolders (K-SRCH-04), with ``--from``/``--to`` on the document date (a date alone is the
  whole local day, K-SRCH-06) and ``--limit`` (at most 100). An empty query lists one passage per
  document, newest first (K-SRCH-08). Text output gives the title, the collection's name, the
  locator (document id, chunk, character offsets), the score with why the passage was found
  (``words`` when a query word matched it, ``meaning`` with its cosine similarity) and a snippet;
  ``--json`` gives every field, ``textMatch`` and ``similarity`` included.
- **Relevance floor.** The vector leg always finds nearest neighbours, even for a word in no
  document. A passage that no query word matches is shown only when its similarity to the query
  reaches :data:`~notochord.knowledge.hybrid_search.MIN_SIMILARITY` (0.83, calibrated for the default
  model); when nothing passes, the answer is ``(no matches)`` with how many weaker passages were
  left out. The same floor applies to ``--json``; ``--all`` shows them too. The order is always
  the search's own ranking, and the API (``space.user.search``, ``ctx.knowledge.search``, the REST
  service) returns every hit.
- Like every command, these open the space without the background embedding worker
  (:func:`notochord.cli.common.opened`): a short-lived command would only start a batch it must then
  wait for on exit. Embedding happens in ``reindex``, in the caller's thread, with a progress bar; ``search``
  notes on stderr how many passages are not yet searchable by meaning.
- With ``NOTOCHORD_EMBEDDER=none`` search runs on full text alone and ``reindex`` says so and exits 0.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from notochord.cli.collections_cmd import resolve_collection
from notochord.cli.common import (
    DataDir,
    JsonFlag,
    OrgOption,
    console,
    emit,
    interrupted,
    open_space,
    opened,
    printable,
)
from notochord.cli.embedding import EtaColumn
from notochord.cli.numbers import whole_number
from notochord.cli.progress import progress_bar
from notochord.errors import BusyError
from notochord.knowledge.arguments import counted
from notochord.knowledge.hybrid_search import DEFAULT_LIMIT, MAX_LIMIT, MIN_SIMILARITY, Hit, is_relevant

_SEARCH_LIMIT = whole_number(at_least=1, at_most=MAX_LIMIT)

__all__ = ["reindex", "search"]

_SNIPPET = 160
_WORD = re.compile(r"\w+")


def _snippet(text: str, query: str) -> str:
    """About :data:`_SNIPPET` characters of ``text``, around the first query word it contains."""
    flat = " ".join(text.split())
    if len(flat) <= _SNIPPET:
        return flat
    lowered = flat.casefold()
    positions = [p for w in _WORD.findall(query.casefold()) if (p := lowered.find(w)) >= 0]
    start = max(0, min(positions) - _SNIPPET // 4) if positions else 0
    start = min(start, len(flat) - _SNIPPET)
    piece = flat[start : start + _SNIPPET]
    return ("…" if start > 0 else "") + piece + ("…" if start + _SNIPPET < len(flat) else "")


def _hit_json(hit: Hit, collection_names: dict[int, str]) -> dict[str, Any]:
    return {
        "document": hit.document_id,
        "title": hit.title,
        "collection": hit.collection_id,
        "collectionName": collection_names.get(hit.collection_id),
        "text": hit.text,
        "locator": {"chunk": hit.chunk, "from": hit.start, "to": hit.end},
        "meta": hit.meta,
        "date": hit.doc_date,
        "score": hit.score,
        "textMatch": hit.text_match,
        "similarity": hit.similarity,
    }


def _why(hit: Hit) -> str:
    reasons = ["words"] if hit.text_match else []
    if hit.similarity is not None:
        reasons.append(f"meaning {hit.similarity:.2f}")
    return ", ".join(reasons)


def _hit_text(n: int, hit: Hit, collection_names: dict[int, str], query: str) -> str:
    title = printable(hit.title or "(untitled)")
    where = printable(collection_names.get(hit.collection_id, f"collection {hit.collection_id}"))
    locator = f"doc {hit.document_id} chunk {hit.chunk} chars {hit.start}-{hit.end}"
    scored = f"  score {hit.score:.4f} ({_why(hit)})" if query.strip() else ""
    return f"{n:>3}. {title}  [{where}]  {locator}{scored}\n     {printable(_snippet(hit.text, query))}"


def search(
    query: Annotated[str, typer.Argument(help="What to look for; leave empty to list the newest documents.")] = "",
    collection: Annotated[
        list[str] | None,
        typer.Option(
            "--collection",
            "-c",
            help="Only this collection and its subfolders (diary, keep, an id or a name); repeatable.",
        ),
    ] = None,
    from_: Annotated[
        str | None, typer.Option("--from", help="Documents dated on or after this date or ISO time.")
    ] = None,
    to: Annotated[str | None, typer.Option("--to", help="Documents dated on or before this date or ISO time.")] = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="How many passages at most.", parser=_SEARCH_LIMIT)
    ] = DEFAULT_LIMIT,
    show_all: Annotated[
        bool,
        typer.Option("--all", help="Also show passages found only by meaning with a similarity below the floor."),
    ] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Search your documents by words and meaning; an empty query lists the newest documents.

    Each passage shows its score and why it was found: "words" when a query word matched it,
    "meaning" with its cosine similarity to the query (1 means identical). A passage that no query word
    matches is shown only when its similarity reaches 0.83; use --all to see the weaker ones.
    """
    window = {"from": from_, "to": to} if from_ is not None or to is not None else None
    with open_space(data_dir, org) as space:
        chosen: list[str | int] | None = None
        if collection:
            chosen = [resolve_collection(space, c).id for c in collection]
        hits = space.user.search(query, collections=chosen, time_range=window, limit=limit)
        names = {r.id: r.name for r in space.user.collections.list()}
        unembedded = space.index.pending() if query.strip() else 0
    hidden = 0
    if query.strip() and not show_all:
        shown = [h for h in hits if is_relevant(h)]
        hidden, hits = len(hits) - len(shown), shown
    if as_json:
        emit([_hit_json(h, names) for h in hits], as_json=True)
        return
    if unembedded:
        console.print(
            f"note: {counted(unembedded, 'passage')} {'is' if unembedded == 1 else 'are'} not yet searchable by "
            "meaning; run: notochord reindex",
            highlight=False,
            markup=False,
        )
    lines = [_hit_text(n, h, names, query) for n, h in enumerate(hits, start=1)]
    if not lines:
        lines = ["(no documents)" if not query.strip() else "(no matches)"]
    if hidden:
        lines.append(
            f"({counted(hidden, 'passage')} found only by meaning, with a similarity below {MIN_SIMILARITY:.2f}, "
            f"{'is' if hidden == 1 else 'are'} not shown; see them with --all)"
        )
    emit(None, as_json=False, text="\n".join(lines))


def reindex(org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Embed every passage not yet searchable by meaning, with a progress bar and an ETA."""
    from notochord.search.vault_indexer import indexer_pid

    with opened(data_dir) as nc:
        space = nc.org(org) if org is not None else nc.personal
        embedder = space.index.embedder
        if embedder is None:
            emit(
                {"embedder": None, "embedded": 0, "pending": 0},
                as_json=as_json,
                text="search by meaning is switched off (NOTOCHORD_EMBEDDER=none); nothing to embed",
            )
            return
        before = space.index.pending()
        holder = indexer_pid(nc.data_dir)
        if holder is not None and before:
            # embedding the same passages beside it would only do all the work twice
            who = f"another notochord process (pid {holder})" if holder else "another notochord process"
            raise BusyError(
                f"{who} is embedding this vault's passages now; follow it with: notochord status, or run "
                "reindex again once it has stopped",
                retry_after=60,
            )
        reached = [0, before]

        def advance(done: int, total: int) -> None:
            reached[:] = [done, total]
            bar.update(task, completed=done, total=total)

        with progress_bar(hidden=as_json or before == 0, remaining=EtaColumn()) as bar:
            # the bar moves every few passages; its ETA starts from the rate measured on earlier runs
            task = bar.add_task("embedding passages", total=before, rate=space.index.rate())
            try:
                embedded = space.index.wait(progress=advance)
            except KeyboardInterrupt:
                bar.stop()
                interrupted(
                    f"embedded {reached[0]} of {counted(reached[1], 'passage')}; what was embedded stays, "
                    "run notochord reindex again to embed the rest"
                )
        left = space.index.pending()
        model = embedder.model_id
    text = (
        f"embedded {counted(embedded, 'passage')} with {model}"
        if embedded
        else f"nothing to embed: every passage is already indexed with {model}"
    )
    if left:
        text += f"; {left} written meanwhile are still pending"
    emit({"embedder": model, "embedded": embedded, "pending": left}, as_json=as_json, text=text)
