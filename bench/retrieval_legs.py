"""The legs of ``bench/retrieval.py``: the product's search calls over one indexed space, the
baselines beside them (full text without stemming, ``bm25s``), and the runner that alternates them
per query.

Helpers only; run ``bench/retrieval.py``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa

import notochord.app
from notochord.db.schema import chunk_vectors, chunks, documents
from notochord.knowledge.hybrid_search import DEFAULT_LIMIT, Hit, full_text_leg, hybrid_search
from notochord.knowledge.indexing import FTS_TABLE, with_title
from notochord.search.bm25 import K1, B, query_tokens, rank
from notochord.search.embeddings import Embedder
from notochord.search.inverted_index import CandidateMask, build_index, text_index
from notochord.search.textindex import fts_insert, match_query
from retrieval_data import CHUNK_DEPTH, DOC_DEPTH, Ranked, Vector, bar


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
