"""BM25 over the caller's candidates only: the full-text leg that leaks nothing (K-SRCH-03).

FTS5's own ``bm25()`` takes document frequencies and the average length from the *whole* table, so
passages a caller may not read would still move the caller's ranking: adding private documents that
share a word would reorder public results. Here every statistic comes from the candidate set the
caller may see — the number of candidates, each term's document frequency among them, their average
length — so results are identical whatever else the store holds.

How: postings come from the in-memory :mod:`~notochord.search.inverted_index`, restricted to the
candidates (:class:`~notochord.search.inverted_index.CandidateMask`), so a query reads no posting
of a chunk the caller cannot find. The query's words (:func:`~notochord.search.textindex.query_term_counts`:
stop words dropped, repeats counted) are tokenised by FTS5 itself — a private in-memory SQLite
database with the same tokenizer, so stems match the index exactly — and a word repeated in the
query weighs as many times as it appears (query term frequency, as bm25s does). Every query term
is ranked; the cost is one array slice per distinct term plus its postings.

Length is a chunk's number of tokens; ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``.

Choices measured on SciFact's 809 *train* queries (full text alone, chunks collapsed to documents,
nDCG@10 / R@100): tokens as length 0.6962 / 0.9292 against characters 0.6944 / 0.9230; stop words
dropped 0.6962 / 0.9292 against kept 0.6891 / 0.9267; query term frequency 0.6962 / 0.9292 against
each term once 0.7003 / 0.9249 — kept, as bm25s does, since SciFact's claims are short and repeat
few words while long natural-language queries gain from it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from notochord.search.inverted_index import CandidateMask, InvertedIndex, top_bm25
from notochord.search.textindex import FTS_TOKENIZER, query_term_counts

__all__ = [
    "K1",
    "B",
    "DocumentGroups",
    "document_groups",
    "query_tokens",
    "rank",
    "rank_documents",
    "rank_exhaustive",
    "stem",
]

K1 = 1.2
B = 0.75
_SCORE_DIGITS = 12


class _Tokenizer:
    """An FTS5 tokenizer outside any space: a private in-memory database, one statement at a time."""

    def __init__(self, spec: str) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(f"CREATE VIRTUAL TABLE w USING fts5(t, tokenize='{spec}')")
        self._db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, instance)")

    def tokens(self, word: str) -> tuple[str, ...]:
        with self._lock:
            self._db.execute("DELETE FROM w")
            self._db.execute("INSERT INTO w(rowid, t) VALUES (1, ?)", (word,))
            found = self._db.execute("SELECT term FROM v ORDER BY offset").fetchall()
            self._db.execute("DELETE FROM w")
        return tuple(str(r[0]) for r in found)


_TOKENIZERS: dict[str, _Tokenizer] = {}
_TOKENIZERS_LOCK = threading.Lock()


def _tokenizer(spec: str) -> _Tokenizer:
    with _TOKENIZERS_LOCK:
        found = _TOKENIZERS.get(spec)
        if found is None:
            found = _TOKENIZERS[spec] = _Tokenizer(spec)
        return found


@lru_cache(maxsize=65536)
def stem(word: str, tokenizer: str = FTS_TOKENIZER) -> tuple[str, ...]:
    """The index tokens FTS5 makes of one query word (usually one Porter stem; none for punctuation).

    ``tokenizer`` is the FTS5 ``tokenize`` option of the index the tokens are looked up in.
    """
    return _tokenizer(tokenizer).tokens(word)


def query_tokens(query: str, *, tokenizer: str = FTS_TOKENIZER) -> dict[str, int]:
    """Index tokens of ``query`` with how many times each occurs in it (stop words dropped)."""
    counts: dict[str, int] = {}
    for word, n in query_term_counts(query).items():
        for token in stem(word, tokenizer):
            counts[token] = counts.get(token, 0) + n
    return counts


def rank(
    index: InvertedIndex,
    candidates: CandidateMask,
    tokens: Mapping[str, int],
    *,
    limit: int,
    k1: float = K1,
    b: float = B,
) -> list[tuple[int, float]]:
    """BM25 of the candidates for the query ``tokens`` (token → count); ``(chunk id, score)``, best first.

    Ties break by the smaller chunk id. Only candidates are scored, and N, the mean length and every
    document frequency are counted among them. ``k1`` and ``b`` are BM25's term-frequency saturation
    and length normalisation (the defaults are the product's).
    """
    if limit <= 0 or candidates.count == 0 or not tokens:
        return []
    pruned = top_bm25(index, candidates, tokens, limit=limit, k1=k1, b=b, digits=_SCORE_DIGITS)
    return pruned if pruned is not None else rank_exhaustive(index, candidates, tokens, limit=limit, k1=k1, b=b)


def rank_exhaustive(
    index: InvertedIndex,
    candidates: CandidateMask,
    tokens: Mapping[str, int],
    *,
    limit: int,
    k1: float = K1,
    b: float = B,
) -> list[tuple[int, float]]:
    """:func:`rank` scoring every posting of every query term (what the pruned path must equal)."""
    if limit <= 0 or candidates.count == 0 or not tokens:
        return []
    scores = _chunk_scores(index, candidates, tokens, k1, b)
    matched = np.flatnonzero(scores)
    if len(matched) == 0:
        return []
    matched, rounded = _contenders(matched, np.round(scores[matched], _SCORE_DIGITS), limit)
    picked = matched[np.lexsort((index.ids[matched], -rounded))[:limit]]
    # converted in one pass each: indexing numpy arrays element by element cost more than the scoring
    return list(zip(index.ids[picked].tolist(), scores[picked].tolist(), strict=True))


def _contenders(
    items: npt.NDArray[np.int64], rounded: npt.NDArray[np.float64], limit: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The ``items`` (with their rounded scores) that can be among the first ``limit``: those at or
    above the limit-th score, everything tied with it included, so that a tie-break stays exact."""
    if len(items) <= limit:
        return items, rounded
    edge = np.partition(rounded, len(rounded) - limit)[len(rounded) - limit]
    kept = rounded >= edge
    return items[kept], rounded[kept]


def _chunk_scores(
    index: InvertedIndex, candidates: CandidateMask, tokens: Mapping[str, int], k1: float, b: float
) -> npt.NDArray[np.float64]:
    """BM25 of every candidate chunk, per index position (0 where no query token occurs)."""
    total = float(candidates.count)
    mean = max(candidates.mean_length, 1.0)
    scores = np.zeros(len(index.ids), dtype=np.float64)
    for token, weight in tokens.items():
        positions, frequencies = candidates.postings(index, token)
        if len(positions) == 0:
            continue
        tf = frequencies.astype(np.float64)
        df = float(len(positions))
        idf = np.log(1.0 + (total - df + 0.5) / (df + 0.5))
        norm = k1 * (1.0 - b + b * index.lengths[positions] / mean)
        scores[positions] += weight * idf * tf * (k1 + 1.0) / (tf + norm)
    return scores


@dataclass(frozen=True)
class DocumentGroups:
    """What document BM25 needs of a candidate set whatever the query: each index position's dense
    document number and the documents' lengths, N and mean length. Passes over every position of
    the index (a third of a hybrid query's time at a million chunks when made per query), so a
    caller that ranks one candidate set many times makes it once (:func:`document_groups`)."""

    groups: npt.NDArray[np.int64]
    """Per index position: a dense document number, ``-1`` for chunks that are not candidates."""
    lengths: npt.NDArray[np.float64]
    present: npt.NDArray[np.bool_]
    total: float
    mean: float

    @property
    def size(self) -> int:
        return len(self.lengths)

    @property
    def nbytes(self) -> int:
        return int(self.groups.nbytes + self.lengths.nbytes + self.present.nbytes)


def document_groups(index: InvertedIndex, candidates: CandidateMask, groups: npt.NDArray[np.int64]) -> DocumentGroups:
    """The document statistics of ``candidates`` grouped by ``groups`` (see :class:`DocumentGroups`)."""
    # a chunk that left the table keeps its position until compaction: never inside
    inside = (groups >= 0) & candidates.mask
    inner = groups[inside]
    size = int(inner.max()) + 1 if len(inner) else 0
    lengths = np.bincount(inner, weights=index.lengths[inside], minlength=size).astype(np.float64)
    present = np.bincount(inner, minlength=size) > 0
    total = float(present.sum())
    mean = max(float(lengths[present].mean()), 1.0) if size else 1.0
    return DocumentGroups(groups, lengths, present, total, mean)


def rank_documents(
    index: InvertedIndex,
    candidates: CandidateMask,
    tokens: Mapping[str, int],
    groups: npt.NDArray[np.int64] | DocumentGroups,
    *,
    limit: int,
    k1: float = K1,
    b: float = B,
) -> list[tuple[int, float]]:
    """BM25 of whole documents: each document's candidate chunks count as one text.

    ``groups`` maps each index position to a dense document number (``-1`` for chunks that are not
    candidates), or is the :class:`DocumentGroups` made of it for ``candidates``. A document's term
    frequency and length are the sums over its candidate chunks; N, the mean length and document
    frequencies are counted over the candidates' documents. Returns ``(chunk id of the document's
    best passage, document score)``, best first, one per document; the best passage is the one
    :func:`rank` puts first. Ties break by the smaller chunk id.
    """
    if limit <= 0 or candidates.count == 0 or not tokens:
        return []
    stats = groups if isinstance(groups, DocumentGroups) else document_groups(index, candidates, groups)
    groups = stats.groups
    size = stats.size
    if size == 0:
        return []
    lengths, total, mean = stats.lengths, stats.total, stats.mean
    scores = np.zeros(size, dtype=np.float64)
    walked: list[tuple[int, npt.NDArray[np.int32], npt.NDArray[np.int32]]] = []
    for token, weight in tokens.items():
        positions, frequencies = candidates.postings(index, token)
        if len(positions) == 0:
            continue
        walked.append((weight, positions, frequencies))
        tf_all = np.bincount(groups[positions], weights=frequencies, minlength=size)
        held = np.flatnonzero(tf_all)
        tf = tf_all[held]
        df = float(len(held))
        idf = np.log(1.0 + (total - df + 0.5) / (df + 0.5))
        norm = k1 * (1.0 - b + b * lengths[held] / mean)
        scores[held] += weight * idf * tf * (k1 + 1.0) / (tf + norm)
    found = np.flatnonzero(scores > 0)
    if len(found) == 0:
        return []
    # only documents that can be in the first `limit` need their best passage
    found, _ = _contenders(found, np.round(scores[found], _SCORE_DIGITS), limit)
    wanted = np.zeros(size, dtype=np.bool_)
    wanted[found] = True
    # each wanted document's best passage: the first of its chunks in the chunk ranking (score,
    # then id), scored exactly as rank() scores chunks, for those documents' chunks alone
    # (only the wanted documents' postings: no pass over every position of the index)
    chunk_total = float(candidates.count)
    chunk_mean = max(candidates.mean_length, 1.0)
    where: list[npt.NDArray[np.int32]] = []
    parts: list[npt.NDArray[np.float64]] = []
    for weight, positions, frequencies in walked:
        keep = wanted[groups[positions]]
        mine = positions[keep]
        if len(mine) == 0:
            continue
        tf_chunk = frequencies[keep].astype(np.float64)
        idf_chunk = np.log(1.0 + (chunk_total - len(positions) + 0.5) / (len(positions) + 0.5))
        norm_chunk = k1 * (1.0 - b + b * index.lengths[mine] / chunk_mean)
        where.append(mine)
        parts.append(weight * idf_chunk * tf_chunk * (k1 + 1.0) / (tf_chunk + norm_chunk))
    if not where:
        return []
    touched, slot = np.unique(np.concatenate(where), return_inverse=True)
    # summed term by term in query order, as adding each term's array in turn would
    summed = np.bincount(slot, weights=np.concatenate(parts), minlength=len(touched))
    nonzero = summed != 0
    matched, passage_scores = touched[nonzero], summed[nonzero]
    by_passage = matched[np.lexsort((index.ids[matched], -np.round(passage_scores, _SCORE_DIGITS)))]
    groups_found, first = np.unique(groups[by_passage], return_index=True)
    best_ids = index.ids[by_passage[first]]
    best_scores = np.round(scores[groups_found], _SCORE_DIGITS)
    order = np.lexsort((best_ids, -best_scores))[:limit]
    return [(int(best_ids[i]), float(scores[groups_found[i]])) for i in order]
