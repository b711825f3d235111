"""The documents part of ``bench/writes.py``: words indexing one ``upsert`` per transaction and in
``upsert_many`` batches, beside plain ``sqlite3`` storing the same chunks in a table and an FTS5 index.

Helpers only; run ``bench/writes.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from rich.table import Table

import notochord
from notochord.search.chunking import chunk_markdown
from notochord.settings import Settings
from writes_data import notes, people
from writes_measure import batched, console, progress, ratio


@dataclass
class DocRun:
    """One way of writing the documents into a fresh space: what was stored and how long it took."""

    chunks: int = 0
    mentions: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.chunks / self.seconds if self.seconds else float("nan")


@dataclass
class DocFigures:
    backend: str
    documents: int
    characters: int
    single: DocRun
    batched: DocRun | None
    floor: DocRun
    """Plain ``sqlite3``: the same chunk texts into a table and an FTS5 index, ``--doc-batch`` per transaction."""


@contextlib.contextmanager
def _documents_space(data_dir: Path, database_url: str | None, names: Sequence[str]) -> Iterator[notochord.Space]:
    settings = Settings(data_dir=data_dir, database_url=database_url, index_in_background=False)
    with notochord.open(data_dir, settings, embedder=None) as nc:
        space = nc.personal
        with space.core.store.batch():  # the people are set-up, not measured
            for name in names:
                space.user.entities.resolve(name=name, create=True)
        yield space


def _stored(space: notochord.Space, run: DocRun) -> None:
    with space.core.store.read() as conn:
        run.chunks = int(conn.execute(sa.text("SELECT count(*) FROM chunks")).scalar_one())
        run.mentions = int(conn.execute(sa.text("SELECT count(*) FROM mentions")).scalar_one())


def _one_way(
    path: Path,
    url: str | None,
    names: Sequence[str],
    docs: Sequence[tuple[str, str]],
    label: str,
    batch: int | None,
) -> DocRun | None:
    """Write ``docs`` into a fresh space, one ``upsert`` per transaction (``batch`` None) or in
    ``upsert_many`` batches; ``None`` on a checkout without ``upsert_many``."""
    run = DocRun()
    with progress() as bar, _documents_space(path, url, names) as space:
        upsert_many = getattr(space.user.documents, "upsert_many", None)
        if batch is not None and upsert_many is None:
            return None
        task = bar.add_task(label, total=len(docs))
        started = time.perf_counter()
        if batch is None:
            for title, body in docs:
                space.user.documents.upsert(collection="keep", title=title, body=body)
                bar.advance(task)
        else:
            assert upsert_many is not None  # a checkout without it returned above
            for chunk in batched(docs, batch):
                upsert_many([{"collection": "keep", "title": t, "body": b} for t, b in chunk])
                bar.advance(task, len(chunk))
        run.seconds = time.perf_counter() - started
        _stored(space, run)
    return run


def run_documents(
    root: Path,
    names: Sequence[str],
    docs: Sequence[tuple[str, str]],
    *,
    batch: int,
    backend: str,
    database_urls: Callable[[], contextlib.AbstractContextManager[str | None]],
) -> DocFigures:
    """The same documents into two fresh spaces of ``backend``: one ``upsert`` per transaction, then
    ``upsert_many`` of ``batch``; words indexing only (chunks, full-text rows and postings, mentions)."""
    with database_urls() as url:
        single = _one_way(root / f"{backend}-single", url, names, docs, f"{backend}: upsert (1/tx)", None)
    with database_urls() as url:
        many = _one_way(root / f"{backend}-batched", url, names, docs, f"{backend}: upsert_many ({batch}/tx)", batch)
    assert single is not None
    return DocFigures(
        backend=backend,
        documents=len(docs),
        characters=sum(len(t) + len(b) for t, b in docs),
        single=single,
        batched=many,
        floor=run_documents_floor(root / f"{backend}-floor.db", docs, batch=batch),
    )


_FLOOR_DDL = """
CREATE TABLE chunks (id INTEGER PRIMARY KEY, doc INTEGER NOT NULL, idx INTEGER NOT NULL, text TEXT NOT NULL);
CREATE VIRTUAL TABLE chunks_fts USING fts5(body, tokenize='porter unicode61 remove_diacritics 2');
"""


def run_documents_floor(path: Path, docs: Sequence[tuple[str, str]], *, batch: int) -> DocRun:
    """Plain ``sqlite3`` beside it: the same chunks (cut beforehand, not timed) into a chunk table and an
    FTS5 table with notochord's tokenizer, ``batch`` documents per transaction; no mentions, no changes."""
    pieces = [(title, [c.text for c in chunk_markdown(body)]) for title, body in docs]
    run = DocRun(chunks=sum(len(texts) for _, texts in pieces))
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_FLOOR_DDL)
        started = time.perf_counter()
        for start in range(0, len(pieces), batch):
            conn.execute("BEGIN IMMEDIATE")
            for doc, (title, texts) in enumerate(pieces[start : start + batch], start=start):
                for idx, text in enumerate(texts):
                    row = conn.execute("INSERT INTO chunks (doc, idx, text) VALUES (?, ?, ?)", (doc, idx, text))
                    conn.execute(
                        "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)", (row.lastrowid, f"{title}\n\n{text}")
                    )
            conn.execute("COMMIT")
        run.seconds = time.perf_counter() - started
    finally:
        conn.close()
    return run


def report_documents(people_count: int, doc_batch: int, figures: DocFigures) -> None:
    chunks = figures.single.chunks
    table = Table(
        title=(
            f"documents on {figures.backend}: {figures.documents:,} notes of 12 paragraphs "
            f"(≈{figures.characters / max(figures.documents, 1):,.0f} characters, "
            f"≈{chunks / max(figures.documents, 1):.1f} chunks each), each paragraph naming 3 of {people_count:,} "
            "people; each way into a fresh space"
        ),
        title_justify="left",
    )
    table.add_column("figure")
    table.add_column("upsert (1 per tx)", justify="right")
    table.add_column(f"upsert_many ({doc_batch} per tx)", justify="right")
    table.add_column("batch / single", justify="right")
    table.add_column(f"sqlite3 + FTS5 ({doc_batch} per tx)", justify="right")
    many = figures.batched
    floor = figures.floor
    table.add_row("chunks", f"{chunks:,}", f"{many.chunks:,}" if many else "n/a", "", f"{floor.chunks:,}")
    table.add_row("mentions", f"{figures.single.mentions:,}", f"{many.mentions:,}" if many else "n/a", "", "—")
    table.add_row(
        "seconds",
        f"{figures.single.seconds:,.2f}",
        f"{many.seconds:,.2f}" if many else "n/a",
        "",
        f"{floor.seconds:,.2f}",
    )
    table.add_row(
        "chunks/s (words indexing)",
        f"{figures.single.rate:,.0f}",
        f"{many.rate:,.0f}" if many else "n/a",
        ratio(many.rate, figures.single.rate) if many else "n/a",
        f"{floor.rate:,.0f}",
    )
    table.add_row(
        "÷ sqlite3 + FTS5 in the same run",
        ratio(figures.single.rate, floor.rate),
        ratio(many.rate, floor.rate) if many else "n/a",
        "",
        "1.00×",
    )
    console.print(table)
    if many and (many.chunks, many.mentions) != (chunks, figures.single.mentions):
        console.print("  [yellow]warning:[/yellow] the two ways stored different chunks or mentions")
    console.print(
        "  words indexing = chunks, full-text rows (and postings on PostgreSQL), mentions, one change per document; "
        "target: ≥ 1,000 chunks/s in batches"
    )
    console.print()


def measure_documents(args: argparse.Namespace) -> dict[str, float]:
    """The documents measurement on each backend of ``--backend``; its headline figures."""
    headline: dict[str, float] = {}
    rng = random.Random(args.seed)
    names = people(args.people, rng)
    docs = notes(args.documents, names, rng)
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="notochord-bench-") as tmp:
        server: str | None = None
        if "postgresql" in backends:
            import postgres_server  # beside this script; starts a throwaway server unless one is named

            server = stack.enter_context(postgres_server.server_url())
        for backend in backends:

            def database_urls(backend: str = backend) -> contextlib.AbstractContextManager[str | None]:
                if backend == "sqlite":
                    return contextlib.nullcontext(None)
                assert server is not None
                return postgres_server.database_url(server)

            figures = run_documents(
                Path(tmp), names, docs, batch=args.doc_batch, backend=backend, database_urls=database_urls
            )
            report_documents(len(names), args.doc_batch, figures)
            where = "" if backend == "sqlite" else f" on {backend}"
            floor = figures.floor.rate
            headline[f"documents{where}: chunks/s (1 per tx)"] = figures.single.rate
            headline[f"documents{where}: chunks/s (1 per tx) / sqlite3 + FTS5"] = figures.single.rate / floor
            if figures.batched is not None:
                headline[f"documents{where}: chunks/s (batched)"] = figures.batched.rate
                headline[f"documents{where}: chunks/s (batched) / sqlite3 + FTS5"] = figures.batched.rate / floor
    return headline
