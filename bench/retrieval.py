"""Retrieval quality and speed of notochord's own search path, next to a plain BM25 baseline.

Run from the repository root::

    python bench/retrieval.py                                  # every data set, then 100k synthetic chunks
    python bench/retrieval.py --dataset scifact --skip-synthetic
    python bench/retrieval.py --limit-docs 200 --synthetic 5000   # a quick look
    python bench/retrieval.py --synthetic 100000,1000000 --skip-datasets   # cost at scale only
    python bench/retrieval.py --tune                           # also sweep fusion weights on train queries

For every BEIR-style data set under ``../shared/bench/`` (``corpus.jsonl[.gz]``, ``queries.jsonl``,
``qrels/test.tsv``) it measures, in one process:

- **indexing, as the product imports**: one document per corpus record (title + text) written with
  ``space.user.documents.upsert_many`` into the personal space, 50 documents a write transaction
  (chunks, full-text rows and mentions are written inside it, each document its own change):
  *word indexing* in chunks/s. Then
  ``space.index.wait()`` embeds the pending chunks with the default embedder: *vector indexing* in
  chunks/s, beside the embedder's raw ``embed_passages`` throughput on a sample of the same passages,
  measured in the same process, half just before and half just after;
- **full text alone**: :func:`notochord.knowledge.hybrid_search.full_text_leg` over every collection, as
  :func:`~notochord.knowledge.hybrid_search.hybrid_search` runs it (Porter stems, as the product
  indexes), and the same BM25 over the same chunks tokenised *without* stemming (a throwaway
  in-memory FTS5 table with ``unicode61`` alone), beside FTS5's own ``bm25()`` on the product's table
  (and, with ``--skip-vectors``, ``hybrid_search(group_by="document")`` in a space without embedder);
- **vectors alone**: ``space.index.search`` with every chunk allowed;
- **hybrid**: :func:`~notochord.knowledge.hybrid_search.hybrid_search` over every collection, once deep
  enough (``CHUNK_DEPTH`` chunks) to score Recall@100 on documents, once at the product's default
  limit of 10 documents (``group_by="document"``: what an assistant's search call returns);
- **query encoding**, alone: every test query is encoded once up front, one at a time, and timed
  there; the vector and hybrid legs then get the vectors from memory, so their rows exclude it;
- **bm25s**: the ``bm25s`` package over whole documents and over the same chunks, English stop words,
  with the stemmer bm25s recommends (PyStemmer's English Snowball) when it is installed — it is not
  a dependency; without it, SQLite FTS5's Porter stemmer — and over documents without stemming.

All legs run in one process and alternate per query (the order rotates), so load changes weigh on
all of them alike; the table title names the load average. Chunk hits are collapsed to their
document (best chunk wins) before scoring, as the data sets judge documents. One table per data set:
nDCG@10, Recall@100 and per-query latency p50/p95/p99 of each leg, ratios against bm25s on
documents with stemming; then indexing throughput. ``--tune`` adds, on the *train* queries only:
BM25 ``k1`` × ``b`` for full text alone, and fusion (chunks per leg × RRF ``k`` × vector weight,
the most stable settings, and the chunk → document collapse: best passage against sums of the best
passages). Then a **synthetic space** per size of ``--synthetic`` (default 100,000 chunks; see
``bench/retrieval_synthetic.py``): random words and random clustered vectors, the *cost* of search at
that size, not its quality — full text, vectors and hybrid p50/p95/p99 alternating per query, query
encoding measured alone, resident memory, load and HNSW build times, in a fresh child process.

It prints, with the targets beside the figures; it never asserts.

Indexed spaces are kept under ``bench/.cache/spaces/<data set>[-n<limit>]-<model>-<chunker hash>/``
(the hash covers the chunker and the full-text tokeniser sources), each with a marker file per
completed stage, so a rerun measures search without re-indexing and an interrupted embedding run
resumes. Passage vectors are also kept in ``bench/.cache/embeddings-<model>.npz`` keyed by the
SHA-256 of the exact passage the product embeds; a new space (another chunker, another limit)
pre-fills ``chunk_vectors`` from it and embeds only what is new. A cold run on SciFact embeds about
10,000 passages: tens of minutes on two cores.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))

import numpy as np  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from rich.table import Table  # noqa: E402

import notochord.app  # noqa: E402
from notochord.db.schema import chunk_vectors, chunks, documents  # noqa: E402
from notochord.knowledge.hybrid_search import (  # noqa: E402
    DEFAULT_LIMIT,
    Hit,
    full_text_leg,
    hybrid_search,
)
from notochord.knowledge.indexing import FTS_TABLE, with_title  # noqa: E402
from notochord.search.bm25 import K1, B, query_tokens, rank  # noqa: E402
from notochord.search.embeddings import Embedder, load_embedder  # noqa: E402
from notochord.search.fusion import DEFAULT_RRF_K, fuse, leg_weights  # noqa: E402
from notochord.search.inverted_index import CandidateMask, build_index, text_index  # noqa: E402
from notochord.search.textindex import fts_insert, match_query  # noqa: E402
from notochord.settings import Settings  # noqa: E402
from postgres_server import BACKENDS  # noqa: E402
from postgres_server import database_url as postgres_database  # noqa: E402
from postgres_server import server_url as postgres_server  # noqa: E402
from retrieval_data import (  # noqa: E402
    CHUNK_DEPTH,
    DOC_DEPTH,
    RAW_SAMPLE,
    REPO,
    WORDS_BATCH,
    Dataset,
    EmbeddingCache,
    Ranked,
    Vector,
    bar,
    build_space,
    chunker_hash,
    console,
    discover,
    evaluate,
    load_dataset,
    load_qrels,
    open_space,
    pct,
    slug,
)
from retrieval_fusion import designs as fusion_designs  # noqa: E402
from retrieval_synthetic import bench_synthetic, parse_sizes  # noqa: E402

TARGETS = {
    "hybrid_ndcg": 0.74,  # SciFact hybrid nDCG@10, at the default limit of 10 documents
    "fts_vs_bm25s": 2.0,  # full-text p50 at most this many times bm25s's on the same chunks
    "synthetic_p50_ms": 50.0,  # hybrid p50 at 100k chunks, query encoding excluded (printed beside)
    "synthetic_1m_p50_ms": 100.0,  # the same at 1M chunks (HNSW)
    "words_chunks_per_s": 1000.0,
    "vectors_vs_raw": 0.85,  # vector indexing at least this share of the raw embedder throughput
}


# ---------------------------------------------------------------------- the legs


@dataclass
class LegRun:
    name: str
    docs: list[list[str]] = field(default_factory=list)  # per query: document ids, best first
    ms: list[float] = field(default_factory=list)


class ProductSearch:
    """The product's search calls over one open space, with chunk→document mapping for scoring."""

    def __init__(self, space: notochord.app.Space) -> None:
        self.space = space
        self.store = space.core.store
        self.collection_ids = {c.id for c in space.user.collections.list()}
        with self.store.read() as conn:
            rows = conn.execute(
                sa.select(chunks.c.id, documents.c.id.label("doc"), documents.c.key).join(
                    documents, documents.c.id == chunks.c.document_id
                )
            ).all()
        self.chunk_doc = {int(r.id): str(r.key) for r in rows}
        self.doc_key = {int(r.doc): str(r.key) for r in rows}
        embedder = space.index.embedder
        model_id = embedder.model_id if embedder is not None else ""
        with self.store.read() as conn:
            self.allowed = list(
                conn.execute(sa.select(chunk_vectors.c.chunk_id).where(chunk_vectors.c.model_id == model_id)).scalars()
            )

    def full_text(self, query: str, limit: int = CHUNK_DEPTH) -> Ranked:
        """The full-text leg exactly as ``hybrid_search`` runs it, over every collection."""
        with self.store.read() as conn:
            return full_text_leg(conn, query, collection_ids=self.collection_ids, limit=limit)

    def full_text_documents(self, query: str, limit: int = DOC_DEPTH) -> Ranked:
        """The full-text leg ranking whole documents, as a search that asks for documents runs it."""
        with self.store.read() as conn:
            return full_text_leg(conn, query, collection_ids=self.collection_ids, limit=limit, group_by="document")

    def fts5_bm25(self, query: str, limit: int = CHUNK_DEPTH) -> Ranked:
        """FTS5's own ``bm25()`` over the same table and query terms (statistics of the whole table)."""
        expr = match_query(query)
        if expr is None:
            return []
        with self.store.read() as conn:
            rows = conn.exec_driver_sql(
                f"SELECT rowid, bm25({FTS_TABLE}) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? "
                f"ORDER BY bm25({FTS_TABLE}), rowid LIMIT ?",
                (expr, limit),
            ).all()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def chunk_passages(self) -> tuple[list[int], list[str]]:
        """Every chunk as the full-text index holds it (title, then the chunk), by id."""
        with self.store.read() as conn:
            rows = conn.execute(
                sa.select(chunks.c.id, chunks.c.text, documents.c.title)
                .join(documents, documents.c.id == chunks.c.document_id)
                .order_by(chunks.c.id)
            ).all()
        return [int(r.id) for r in rows], [with_title(r.title, r.text) for r in rows]

    def bm25(self, query: str, *, k1: float = K1, b: float = B, limit: int = CHUNK_DEPTH) -> Ranked:
        """The product's BM25 over every chunk with other ``k1``/``b`` (for tuning on train queries)."""
        with self.store.read() as conn:
            index = text_index(conn, FTS_TABLE)
        if self._everything is None or self._everything[0] is not index:
            self._everything = (index, CandidateMask.of(index, np.ones(len(index.ids), dtype=np.bool_)))
        return rank(index, self._everything[1], query_tokens(query), limit=limit, k1=k1, b=b)

    _everything: tuple[Any, CandidateMask] | None = None

    def vectors(self, query: str, limit: int = CHUNK_DEPTH) -> Ranked:
        return self.space.index.search(query, k=limit, allowed=self.allowed)

    def hybrid(self, query: str, limit: int, group_by: str = "chunk") -> list[Hit]:
        return hybrid_search(
            self.store,
            self.space.index,
            query=query,
            collection_ids=self.collection_ids,
            limit=limit,
            group_by="document" if group_by == "document" else "chunk",
        )

    def collapse(self, hits: Ranked) -> list[str]:
        return self._first_seen(self.chunk_doc[cid] for cid, _ in hits)

    def collapse_hits(self, hits: Sequence[Hit]) -> list[str]:
        return self._first_seen(self.doc_key[h.document_id] for h in hits)

    @staticmethod
    def _first_seen(docs: Iterable[str], depth: int = DOC_DEPTH) -> list[str]:
        """Documents in order of their best chunk: the ranking a document-level judgement scores."""
        out: list[str] = []
        seen: set[str] = set()
        for doc in docs:
            if doc not in seen:
                seen.add(doc)
                out.append(doc)
                if len(out) >= depth:
                    break
        return out


Leg = tuple[LegRun, Callable[[str], Any], Callable[[Any], list[str]]]

UNSTEMMED_TOKENIZER = "unicode61 remove_diacritics 2"  # the product's tokenizer without Porter


class UnstemmedFullText:
    """The product's BM25 and index layout over the same chunks, tokenised without Porter stemming.

    A throwaway in-memory FTS5 table holds the same derived text (``fts_insert``: CJK bigrams and
    unigrams, NFKC) with ``unicode61`` alone; the inverted index is read from it as the product reads
    its own, and queries are tokenised by the same tokenizer.
    """

    def __init__(self, chunk_ids: Sequence[int], passages: Sequence[str]) -> None:
        engine = sa.create_engine("sqlite://")
        with engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE VIRTUAL TABLE unstemmed USING fts5(body, tokenize='{UNSTEMMED_TOKENIZER}')")
            fts_insert(conn, "unstemmed", zip(chunk_ids, passages, strict=True))
            self.index = build_index(conn, "unstemmed")
        engine.dispose()
        self.mask = CandidateMask.of(self.index, np.ones(len(self.index.ids), dtype=np.bool_))

    def __call__(self, query: str, limit: int = CHUNK_DEPTH) -> Ranked:
        return rank(self.index, self.mask, query_tokens(query, tokenizer=UNSTEMMED_TOKENIZER), limit=limit)


class EncodedQueries:
    """The real embedder with the benchmark's queries encoded up front, one at a time and timed there,
    so the vector and hybrid legs are timed without query encoding (printed on a row of its own)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self.model_id = embedder.model_id
        self.dim = embedder.dim
        self.multilingual = embedder.multilingual
        self.encode_ms: list[float] = []
        self._known: dict[str, Vector] = {}

    def encode(self, texts: Iterable[str], *, timed: bool = True) -> None:
        self._embedder.embed_query("warm up")  # loads the weights outside the timings
        for text in texts:
            if text in self._known:
                continue
            t0 = time.perf_counter()
            self._known[text] = self._embedder.embed_query(text)
            if timed:
                self.encode_ms.append((time.perf_counter() - t0) * 1000)

    def embed_query(self, text: str) -> Vector:
        found = self._known.get(text)
        return found if found is not None else self._embedder.embed_query(text)

    def embed_passages(self, texts: Sequence[str]) -> Vector:
        return self._embedder.embed_passages(texts)


def product_legs(search: ProductSearch, *, vectors: bool) -> list[Leg]:
    """The product's calls; every chunk-level list is ranked to ``CHUNK_DEPTH`` and collapsed to documents."""
    legs: list[Leg] = [
        (LegRun("full text (product, Porter; chunks → documents)"), search.full_text, search.collapse),
        (LegRun("full text (product, Porter; documents)"), search.full_text_documents, search.collapse),
    ]
    if search.store.engine.dialect.name == "sqlite":  # FTS5 itself exists on SQLite only
        legs.append((LegRun("FTS5 bm25() (Porter; chunks → documents)"), search.fts5_bm25, search.collapse))
    if not vectors:
        legs.append(
            (
                LegRun(f"search, group_by=document, limit {DOC_DEPTH}"),
                lambda q: search.hybrid(q, DOC_DEPTH, "document"),
                search.collapse_hits,
            )
        )
        return legs
    return [
        *legs,
        (LegRun("vectors (VectorIndex.search, encoding apart)"), search.vectors, search.collapse),
        (LegRun(f"hybrid_search, limit {CHUNK_DEPTH}"), lambda q: search.hybrid(q, CHUNK_DEPTH), search.collapse_hits),
        (
            LegRun(f"hybrid_search, limit {DEFAULT_LIMIT} documents (default)"),
            lambda q: search.hybrid(q, DEFAULT_LIMIT, "document"),
            search.collapse_hits,
        ),
    ]


def run_legs(legs: Sequence[Leg], queries: Sequence[str]) -> list[LegRun]:
    """Every leg on every query, the legs alternating per query (the order rotates), so a change of
    load on the machine weighs on every leg alike; only the call is timed, collapsing is not."""
    for _, call, _ in legs:  # model, matrix, index and masks load outside the timings
        call("warm up")
    with bar("searching (queries × legs)", len(queries) * len(legs)) as advance:
        for n, q in enumerate(queries):
            for j in range(len(legs)):
                run, call, to_docs = legs[(n + j) % len(legs)]
                t0 = time.perf_counter()
                found = call(q)
                run.ms.append((time.perf_counter() - t0) * 1000)
                run.docs.append(to_docs(found))
                advance(1)
    return [run for run, _, _ in legs]


class PorterStemmer:
    """SQLite FTS5's Porter stemmer (the one the product's index uses) as a bm25s stemmer."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:")
        self._db.execute("CREATE VIRTUAL TABLE w USING fts5(t, tokenize='porter unicode61 remove_diacritics 2')")
        self._db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, instance)")
        self._known: dict[str, str] = {}

    def __call__(self, words: list[str]) -> list[str]:
        new = [w for w in dict.fromkeys(words) if w not in self._known]
        if new:
            self._db.execute("DELETE FROM w")
            self._db.executemany("INSERT INTO w(rowid, t) VALUES (?, ?)", enumerate(new, start=1))
            stems: dict[int, str] = {}
            for doc, term in self._db.execute("SELECT doc, term FROM v ORDER BY doc, offset DESC"):
                stems[int(doc)] = str(term)  # the first token of the word wins
            for i, w in enumerate(new, start=1):
                self._known[w] = stems.get(i, w.lower())
        return [self._known[w] for w in words]


def english_stemmer() -> tuple[str, Callable[[list[str]], list[str]]]:
    """The stemmer bm25s recommends (PyStemmer's English Snowball) when installed, else FTS5's Porter."""
    try:
        import Stemmer  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return "FTS5 Porter", PorterStemmer()
    stemmer = Stemmer.Stemmer("english")
    return "PyStemmer", lambda words: list(stemmer.stemWords(words))


def bm25s_leg(
    name: str,
    texts: Sequence[str],
    to_docs: Callable[[list[int]], list[str]],
    depth: int,
    stemmer: Callable[[list[str]], list[str]] | None,
) -> tuple[Leg, float]:
    """bm25s (English stop words, ``stemmer`` or none) over ``texts``; returns the leg and its
    indexing rate (texts/s)."""
    import bm25s  # type: ignore[import-untyped,unused-ignore]

    t0 = time.perf_counter()
    tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    rate = len(texts) / (time.perf_counter() - t0)
    k = min(depth, len(texts))

    def call(q: str) -> list[int]:
        q_tokens = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
        if not q_tokens[0]:
            return []
        ids, scores = retriever.retrieve(q_tokens, k=k, show_progress=False, n_threads=1)
        # bm25s pads with zero-score documents; the other legs return matches only
        return [int(i) for i, s in zip(ids[0], scores[0], strict=True) if s > 0]

    return (LegRun(name), call, to_docs), rate


# ---------------------------------------------------------------------- one data set


@dataclass
class Summary:
    dataset: str
    full: bool
    hybrid_ndcg: float | None
    fts_ndcg: float
    fts_name: str
    bm25s_ndcg: float
    bm25s_stemmer: str
    fts_p50_ratio: float
    words_rate: float
    vectors_rate: float | None
    raw_rate: float | None
    backend: str = "sqlite"
    rows: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # method: nDCG@10, R@100, p50


def _is_baseline(name: str) -> bool:
    return name.startswith(("bm25s", "FTS5"))


def bench_dataset(
    args: argparse.Namespace,
    path: Path,
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
    database_url: str | None = None,
) -> Summary | None:
    ds = load_dataset(path, args.limit_docs)
    qids = [q for q in ds.qrels if q in ds.queries][: args.queries]
    if not qids:
        console.print(f"{ds.name}: no judged test query among the indexed documents; skipped")
        return None
    qtexts = [ds.queries[q] for q in qids]
    limited = "" if args.limit_docs is None else f"-n{args.limit_docs}"
    model = "words" if embedder is None else slug(embedder.model_id)
    directory = Path(args.cache) / "spaces" / f"{ds.name}{limited}-{model}-{chunker_hash()}"
    backend = "sqlite" if database_url is None else "postgresql"
    if database_url is not None:
        # the server is a throwaway one: the space is built anew in it (vectors from the cache)
        directory = Path(tempfile.mkdtemp(prefix=f"notochord-bench-{ds.name}-")) / "space"
    console.rule(f"{ds.name} on {backend}: {len(ds.doc_ids)} documents, {len(qids)} judged test queries")
    console.print(f"space: {directory.relative_to(REPO) if directory.is_relative_to(REPO) else directory}")
    figures = build_space(ds, directory, embedder, cache, database_url)
    encoded = None if embedder is None else EncodedQueries(embedder)
    if encoded is not None:
        encoded.encode(qtexts)

    with open_space(directory, encoded, database_url=database_url) as nc:
        search = ProductSearch(nc.personal)
        legs = product_legs(search, vectors=embedder is not None)
        chunk_ids, passages = search.chunk_passages()
        legs.insert(
            1,
            (
                LegRun("full text (product, no stemming; chunks → documents)"),
                UnstemmedFullText(chunk_ids, passages),
                search.collapse,
            ),
        )
        stemmer_name, stemmer = english_stemmer()
        doc_texts = [f"{t}\n{x}" if t else x for t, x in zip(ds.titles, ds.texts, strict=True)]

        def to_docs(found: list[int]) -> list[str]:
            return [ds.doc_ids[i] for i in found]

        by_chunk, _ = bm25s_leg(
            f"bm25s ({stemmer_name}; chunks → documents)",
            passages,
            lambda found: search.collapse([(chunk_ids[i], 0.0) for i in found]),
            CHUNK_DEPTH,
            stemmer,
        )
        by_doc_plain, _ = bm25s_leg("bm25s (no stemming; documents)", doc_texts, to_docs, DOC_DEPTH, None)
        by_doc, bm25s_dps = bm25s_leg(f"bm25s ({stemmer_name}; documents)", doc_texts, to_docs, DOC_DEPTH, stemmer)
        legs += [by_chunk, by_doc_plain, by_doc]
        runs = run_legs(legs, qtexts)
        if args.tune:
            tune(ds, search, encoded)

    scores = {r.name: evaluate(r.docs, qids, ds.qrels) for r in runs}
    base, chunk_base = by_doc[0], by_chunk[0]
    base_nd, base_rc = scores[base.name]
    base_p50 = pct(base.ms, 50)
    product_fts = runs[0]
    # the product's own document search (full text alone) when it ran, else its passages collapsed
    fts_docs = next(
        (r for r in runs if r.name.startswith(("search, group_by=document", "full text (product, Porter; documents)"))),
        product_fts,
    )
    hybrid_nd = next((scores[r.name][0] for r in runs if r.name.endswith("(default)")), None)

    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}" if a is not None and b else "-"

    table = Table(
        title=f"{ds.name} on {backend}: {len(qids)} test queries, {figures.docs} documents, {figures.chunks} chunks; "
        f"ratios against {base.name}; legs alternate per query; load average {os.getloadavg()[0]:.1f}"
    )
    for col in ("method", "nDCG@10", "×bm25s", "R@100", "×bm25s", "p50 ms", "p95 ms", "p99 ms", "p50 ×bm25s"):
        table.add_column(col, justify="left" if col == "method" else "right")
    ordered = sorted(runs, key=lambda r: _is_baseline(r.name))  # the product's rows first, then baselines
    for run in ordered:
        nd, rc = scores[run.name]
        shallow = run.name.endswith("(default)")  # ten documents cannot score a recall at 100
        table.add_row(
            run.name,
            f"{nd:.4f}",
            ratio(nd, base_nd),
            "-" if shallow else f"{rc:.4f}",
            "-" if shallow else ratio(rc, base_rc),
            f"{pct(run.ms, 50):.2f}",
            f"{pct(run.ms, 95):.2f}",
            f"{pct(run.ms, 99):.2f}",
            ratio(pct(run.ms, 50), base_p50),
            end_section=run is ordered[-1]
            or _is_baseline(run.name) != _is_baseline(ordered[ordered.index(run) + 1].name),
        )
    if encoded is not None and encoded.encode_ms:
        enc = encoded.encode_ms
        table.add_row(
            f"query encoding ({embedder.model_id if embedder else ''}; alone, not in the rows above)",
            "-",
            "-",
            "-",
            "-",
            f"{pct(enc, 50):.2f}",
            f"{pct(enc, 95):.2f}",
            f"{pct(enc, 99):.2f}",
            ratio(pct(enc, 50), base_p50),
        )
    console.print(table)

    when = "now" if figures.measured_now else "when the space was built (cached since)"
    index = Table(title=f"{ds.name}: indexing throughput, measured {when}")
    for col in ("stage", "items", "seconds", "chunks/s", "note"):
        index.add_column(col, justify="left" if col in ("stage", "note") else "right")
    index.add_row(
        f"words: documents.upsert_many ({WORDS_BATCH}/tx)",
        f"{figures.chunks}",
        f"{figures.words_s:.1f}",
        f"{figures.words_rate:,.0f}",
        "",
    )
    if embedder is not None:
        vec_note = f"{figures.prefilled} chunks pre-filled from the embedding cache" if figures.prefilled else ""
        if figures.vectors_rate is not None:
            index.add_row(
                "vectors: space.index.wait()",
                f"{figures.embedded}",
                f"{figures.vectors_s:.1f}",
                f"{figures.vectors_rate:,.1f}",
                vec_note,
            )
        else:
            index.add_row("vectors: space.index.wait()", "0", "-", "-", vec_note or "nothing to embed")
        index.add_row(
            "raw embed_passages",
            f"{min(RAW_SAMPLE, figures.embedded or 0)}",
            "-",
            "-" if figures.raw_chunks_per_s is None else f"{figures.raw_chunks_per_s:,.1f}",
            "sample of the same passages, same process",
        )
    index.add_row("bm25s index (documents)", f"{figures.docs}", "-", "-", f"{bm25s_dps:,.0f} documents/s")
    console.print(index)

    return Summary(
        ds.name,
        args.limit_docs is None and args.queries is None,
        hybrid_nd,
        scores[fts_docs.name][0],
        fts_docs.name,
        base_nd,
        stemmer_name,
        pct(product_fts.ms, 50) / pct(chunk_base.ms, 50),
        figures.words_rate,
        figures.vectors_rate,
        figures.raw_chunks_per_s,
        backend,
        # a shallow run (ten chunks) scores no recall at 100 documents: NaN, shown as "-"
        {
            r.name: (
                scores[r.name][0],
                float("nan") if r.name.endswith("(default)") else scores[r.name][1],
                pct(r.ms, 50),
            )
            for r in runs
        },
    )


def print_side_by_side(summaries: Sequence[Summary]) -> None:
    """Each data set's methods on SQLite and PostgreSQL next to each other (``--backend both``)."""
    for name in dict.fromkeys(s.dataset for s in summaries):
        lite = next((s for s in summaries if s.dataset == name and s.backend == "sqlite"), None)
        pg = next((s for s in summaries if s.dataset == name and s.backend == "postgresql"), None)
        if lite is None or pg is None:
            continue
        table = Table(title=f"{name}: SQLite and PostgreSQL side by side")
        columns = ("nDCG@10 sqlite", "nDCG@10 pg", "Δ", "R@100 sqlite", "R@100 pg", "p50 ms sqlite", "p50 ms pg")
        for col in ("method", *columns):
            table.add_column(col, justify="left" if col == "method" else "right")
        for method in dict.fromkeys([*lite.rows, *pg.rows]):
            a, b = lite.rows.get(method), pg.rows.get(method)
            table.add_row(
                method,
                "-" if a is None else f"{a[0]:.4f}",
                "-" if b is None else f"{b[0]:.4f}",
                "-" if a is None or b is None else f"{b[0] - a[0]:+.4f}",
                "-" if a is None or a[1] != a[1] else f"{a[1]:.4f}",
                "-" if b is None or b[1] != b[1] else f"{b[1]:.4f}",
                "-" if a is None else f"{a[2]:.2f}",
                "-" if b is None else f"{b[2]:.2f}",
            )
        console.print(table)


def bench_datasets(
    args: argparse.Namespace, paths: Sequence[Path], embedder: Embedder | None, cache: EmbeddingCache | None
) -> list[Summary]:
    """Every data set on the chosen backends (``--backend``); PostgreSQL on a throwaway server."""
    summaries: list[Summary] = []
    if args.backend in ("sqlite", "both"):
        summaries += [s for p in paths if (s := bench_dataset(args, p, embedder, cache)) is not None]
    if args.backend in ("postgresql", "both"):
        with postgres_server() as server:
            for p in paths:
                with postgres_database(server) as url:
                    if (s := bench_dataset(args, p, embedder, cache, url)) is not None:
                        summaries.append(s)
    if args.backend == "both":
        print_side_by_side(summaries)
    return summaries


# ---------------------------------------------------------------------- tuning on train queries

TUNE_K = (10, 20, 30, 60, 100)
TUNE_VECTOR_WEIGHTS = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
TUNE_DEPTHS = (100, 200, 300)  # chunks per leg; the product asks max(5 × limit, 100)
TUNE_K1 = (0.9, 1.2, 1.5, 2.0)
TUNE_B = (0.4, 0.6, 0.75, 0.9)


def collapse_sum(fused: Ranked, chunk_doc: dict[int, str], best: int) -> list[str]:
    """Documents by the sum of the fused scores of their ``best`` best passages."""
    per_doc: dict[str, list[float]] = {}
    for cid, score in fused:
        per_doc.setdefault(chunk_doc[cid], []).append(score)
    totals = {d: sum(sorted(s, reverse=True)[:best]) for d, s in per_doc.items()}
    return sorted(totals, key=lambda d: (-round(totals[d], 12), d))[:DOC_DEPTH]


def tune(ds: Dataset, search: ProductSearch, encoded: EncodedQueries | None) -> None:
    """Sweep BM25's k1/b and fusion (k, weights, depth per leg, chunk→document collapse) on the train
    queries, legs as the product runs them; never on the test queries the main table reports."""
    train_path = ds.path / "qrels" / "train.tsv"
    if not train_path.exists():
        console.print(f"{ds.name}: no train split; nothing to tune on")
        return
    qrels = load_qrels(train_path, set(ds.doc_ids))
    qids = [q for q in qrels if q in ds.queries]
    texts = [ds.queries[q] for q in qids]

    def score(runs: Sequence[list[str]]) -> tuple[float, float]:
        return evaluate(runs, qids, qrels)

    bm25_table = Table(title=f"{ds.name}: full text alone, BM25 k1 × b on {len(qids)} train queries (nDCG@10 / R@100)")
    bm25_table.add_column("k1", justify="right")
    for b in TUNE_B:
        bm25_table.add_column(f"b {b:g}" + (" (product)" if b == B else ""), justify="right")
    with bar("tuning: BM25 k1 × b on train queries", len(TUNE_K1) * len(TUNE_B)) as advance:
        for k1 in TUNE_K1:
            cells = []
            for b in TUNE_B:
                nd, rc = score([search.collapse(search.bm25(q, k1=k1, b=b)) for q in texts])
                cells.append(f"{nd:.4f} / {rc:.4f}")
                advance(1)
            bm25_table.add_row(f"{k1:g}" + (" (product)" if k1 == K1 else ""), *cells)
    console.print(bm25_table)
    if encoded is None:
        return

    encoded.encode(texts, timed=False)
    text_lists: list[Ranked] = []
    vec_lists: list[Ranked] = []
    with bar(f"tuning: legs for {len(qids)} train queries", len(qids)) as advance:
        for q in texts:
            text_lists.append(search.full_text(q))
            vec_lists.append(search.vectors(q))
            advance(1)
    multilingual = bool(search.space.index.embedder and search.space.index.embedder.multilingual)
    alone = {
        "full text": score([search.collapse(x[:100]) for x in text_lists]),
        "vectors": score([search.collapse(x[:100]) for x in vec_lists]),
    }
    console.print(
        "train, each leg alone (100 chunks): "
        + " · ".join(f"{name} {nd:.4f} / {rc:.4f}" for name, (nd, rc) in alone.items())
    )

    def fused_lists(rrf_k: int, vw: float, depth: int) -> list[Ranked]:
        out = []
        for q, t, v in zip(texts, text_lists, vec_lists, strict=True):
            tw, vwq = leg_weights(q, embedder_multilingual=multilingual, text_weight=1.0, vector_weight=vw)
            out.append(fuse([(t[:depth], tw), (v[:depth], vwq)], k=rrf_k, limit=2 * depth))
        return out

    sweep = Table(title=f"{ds.name}: fusion on {len(qids)} train queries, best passage per document (nDCG@10)")
    for col in ("chunks per leg", "rrf k", *(f"w_vec {w:g}" for w in TUNE_VECTOR_WEIGHTS)):
        sweep.add_column(col, justify="right")
    results: dict[tuple[int, int, float], tuple[float, float]] = {}
    with bar("tuning: fusion sweep", len(TUNE_DEPTHS) * len(TUNE_K) * len(TUNE_VECTOR_WEIGHTS)) as advance:
        for depth in TUNE_DEPTHS:
            for rrf_k in TUNE_K:
                cells = []
                for vw in TUNE_VECTOR_WEIGHTS:
                    results[(depth, rrf_k, vw)] = nd_rc = score(
                        [search.collapse(f) for f in fused_lists(rrf_k, vw, depth)]
                    )
                    cells.append(f"{nd_rc[0]:.4f}")
                    advance(1)
                mark = " (default)" if rrf_k == DEFAULT_RRF_K else ""
                sweep.add_row(f"{depth}", f"{rrf_k}{mark}", *cells)
    console.print(sweep)
    best = sorted(results.items(), key=lambda kv: -kv[1][0])[:8]
    console.print(
        "train, best fusion settings (chunks per leg, k, w_vec → nDCG@10 / R@100): "
        + " · ".join(f"({d}, {k}, {w:g}) {nd:.4f} / {rc:.4f}" for (d, k, w), (nd, rc) in best)
    )

    # the neighbourhood of each setting: a stable region beats a lone peak
    def neighbourhood(d: int, k: int, w: float) -> float:
        ks, ws = list(TUNE_K), list(TUNE_VECTOR_WEIGHTS)
        around = [
            results[(d, kk, ww)]
            for kk in ks[max(ks.index(k) - 1, 0) : ks.index(k) + 2]
            for ww in ws[max(ws.index(w) - 1, 0) : ws.index(w) + 2]
        ]
        return statistics.fmean(nd for nd, _ in around)

    stable = sorted(results, key=lambda s: -neighbourhood(*s))[:5]
    console.print(
        "train, most stable settings (mean nDCG@10 of the setting and its neighbours in k and w_vec): "
        + " · ".join(f"({d}, {k}, {w:g}) {neighbourhood(d, k, w):.4f}" for d, k, w in stable)
    )

    collapse = Table(title=f"{ds.name}: chunk → document collapse on train queries (nDCG@10 / R@100)")
    for col in ("chunks per leg", "rrf k", "w_vec", "best passage", "sum of best 2", "sum of best 3", "sum of all"):
        collapse.add_column(col, justify="right")
    for d, k, w in [*stable[:3], (100, DEFAULT_RRF_K, 1.0)]:
        lists = fused_lists(k, w, d)
        by_rule = [score([search.collapse(f) for f in lists])]
        by_rule += [score([collapse_sum(f, search.chunk_doc, m) for f in lists]) for m in (2, 3, 10_000)]
        collapse.add_row(f"{d}", f"{k}", f"{w:g}", *(f"{nd:.4f} / {rc:.4f}" for nd, rc in by_rule))
    console.print(collapse)
    fusion_designs(ds.name, search, texts, score, text_lists, vec_lists, encoded.embed_query)


# ---------------------------------------------------------------------- main


def print_targets(summaries: Sequence[Summary], synthetic: dict[int, float]) -> None:
    table = Table(title="targets (printed, never asserted)")
    for col in ("target", "measured", "met"):
        table.add_column(col, justify="left" if col == "target" else "right")

    def row(name: str, value: float | None, shown: str, ok: bool | None) -> None:
        table.add_row(name, shown if value is not None else "-", "-" if ok is None else ("yes" if ok else "no"))

    for s in summaries:
        tag = (s.dataset if s.full else f"{s.dataset} (partial run)") + (
            "" if s.backend == "sqlite" else f" on {s.backend}"
        )
        if s.dataset == "scifact" and s.hybrid_ndcg is not None:
            row(
                f"{tag}: hybrid nDCG@10 ≥ {TARGETS['hybrid_ndcg']}",
                s.hybrid_ndcg,
                f"{s.hybrid_ndcg:.4f}",
                s.hybrid_ndcg >= TARGETS["hybrid_ndcg"],
            )
        row(
            f"{tag}: {s.fts_name} nDCG@10 ≥ bm25s with stemming ({s.bm25s_stemmer}, documents) {s.bm25s_ndcg:.4f}",
            s.fts_ndcg,
            f"{s.fts_ndcg:.4f}",
            s.fts_ndcg >= s.bm25s_ndcg,
        )
        row(
            f"{tag}: full-text p50 ≤ {TARGETS['fts_vs_bm25s']:g}× bm25s on chunks",
            s.fts_p50_ratio,
            f"{s.fts_p50_ratio:.2f}×",
            s.fts_p50_ratio <= TARGETS["fts_vs_bm25s"],
        )
        row(
            f"{tag}: word indexing ≥ {TARGETS['words_chunks_per_s']:,.0f} chunks/s in batches",
            s.words_rate,
            f"{s.words_rate:,.0f}",
            s.words_rate >= TARGETS["words_chunks_per_s"],
        )
        share = s.vectors_rate / s.raw_rate if s.vectors_rate and s.raw_rate else None
        row(
            f"{tag}: vector indexing ≥ {TARGETS['vectors_vs_raw']:.0%} of raw embedder",
            share,
            f"{share:.0%}" if share is not None else "-",
            None if share is None else share >= TARGETS["vectors_vs_raw"],
        )
    for size, p50 in synthetic.items():
        limit = TARGETS["synthetic_p50_ms"] if size <= 100_000 else TARGETS["synthetic_1m_p50_ms"]
        row(f"hybrid p50 ≤ {limit:g} ms at {size:,} chunks (encoding excluded)", p50, f"{p50:.2f} ms", p50 <= limit)
    console.print(table)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench", help="data sets (or one data set)")
    ap.add_argument("--dataset", default=None, help="only the data set of this directory name")
    ap.add_argument("--limit-docs", type=int, default=None, help="index only the first N documents (own cache key)")
    ap.add_argument("--queries", type=int, default=None, help="evaluate only the first N test queries")
    ap.add_argument("--skip-synthetic", action="store_true", help="skip the synthetic large space")
    ap.add_argument(
        "--synthetic",
        type=parse_sizes,
        default=[100_000],
        help="chunks of each synthetic space, comma-separated (for example 100000,1000000)",
    )
    ap.add_argument("--skip-datasets", action="store_true", help="only the synthetic spaces")
    ap.add_argument("--hnsw-threshold", type=int, default=None, help="vectors from which search uses HNSW")
    ap.add_argument("--cache", type=Path, default=REPO / "bench" / ".cache")
    ap.add_argument(
        "--backend",
        choices=[*BACKENDS, "both"],
        default="sqlite",
        help="the store of the data sets' spaces: SQLite files, a throwaway PostgreSQL server, or both side by side",
    )
    ap.add_argument("--tune", action="store_true", help="sweep fusion weights on the train queries")
    ap.add_argument(
        "--skip-vectors",
        action="store_true",
        help="full text only: no embedder, vectors, hybrid or synthetic",
    )
    args = ap.parse_args(argv)

    paths = discover(args.data, args.dataset)
    if not paths and not args.skip_datasets:
        console.print(f"no data set found under {args.data}" + (f" named {args.dataset}" if args.dataset else ""))
        return
    if args.skip_vectors:
        console.print(f"full text only, chunker {chunker_hash()}")
        summaries = bench_datasets(args, paths, None, None)
        print_targets(summaries, {})
        return
    embedder = load_embedder(Settings().embedder)
    if embedder is None:
        console.print("the configured embedder is 'none': run with --skip-vectors for the full-text figures")
        return
    cache = EmbeddingCache(args.cache, embedder.model_id)
    console.print(f"embedder {embedder.model_id}, chunker {chunker_hash()}, {len(cache.vectors)} cached vectors")
    summaries = [] if args.skip_datasets else bench_datasets(args, paths, embedder, cache)
    synthetic = {} if args.skip_synthetic else bench_synthetic(Path(args.cache), args.synthetic, args.hnsw_threshold)
    print_targets(summaries, synthetic)


if __name__ == "__main__":
    main()
