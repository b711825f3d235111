"""Fusion designs measured on the train queries (``bench/retrieval.py --tune``); helpers only.

Each design is one measured row, legs as the product runs them (100 hits per leg, what a search
for 10 documents asks of each leg), nDCG@10 with documents judged:

- reciprocal-rank fusion (``k`` × vector weight), of passages collapsed to documents after fusing
  and of documents (each leg collapsed to its documents first);
- convex combinations ``α · text + (1 − α) · vectors`` of normalised scores, per query: min–max over
  each leg's list (the product's :func:`~notochord.search.fusion.combine`), the "theoretical"
  min–max (BM25 from 0, cosine from −1 or from 0; Bruch et al. 2022) and z-scores, at three levels:
  passages collapsed after fusing, documents at each leg's best passage, and documents with full
  text ranking whole documents;
- pseudo-relevance feedback on the vector leg: the query vector moved towards the mean vector of
  the top fused documents' passages (Rocchio), then fused again;
- the product itself, ``hybrid_search(group_by="document")`` at its default limit, to show the
  chosen row is what search returns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlalchemy as sa
from rich.table import Table

from notochord.db.schema import chunk_vectors
from notochord.knowledge.hybrid_search import DEFAULT_LIMIT, full_text_leg
from notochord.search.fusion import combine, fuse
from notochord.search.vectors import from_blob
from retrieval_data import Ranked, bar, console

if TYPE_CHECKING:
    from retrieval_legs import ProductSearch

DEPTH = 100
RRF_K = (5, 10, 30, 60)
RRF_WEIGHTS = (0.5, 0.75, 1.0, 1.5)
ALPHAS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7)
DEPTHS = (50, 100, 200, 300)
Docs = list[tuple[str, float]]
Score = Callable[[Sequence[list[str]]], tuple[float, float]]


def best_passage(hits: Ranked, chunk_doc: dict[int, str]) -> Docs:
    """Each document once, at its first (best) passage's score."""
    out: dict[str, float] = {}
    for cid, s in hits:
        out.setdefault(chunk_doc[cid], s)
    return list(out.items())


def normalised(hits: Sequence[tuple[object, float]], how: str, cosine_floor: float) -> dict[object, float]:
    """One leg's scores normalised per query; ``how`` is ``mm``, ``tmm-text`` (floor 0),
    ``tmm-vec`` (floor ``cosine_floor``) or ``z``."""
    if not hits:
        return {}
    values = np.array([s for _, s in hits], float)
    if how == "z":
        sd = float(values.std()) or 1.0
        return {i: (s - float(values.mean())) / sd for i, s in hits}
    low = float(values.min()) if how == "mm" else (0.0 if how == "tmm-text" else cosine_floor)
    spread = float(values.max()) - low
    return {i: (s - low) / spread if spread > 0 else 1.0 for i, s in hits}


def convex(
    text: Sequence[tuple[object, float]], vec: Sequence[tuple[object, float]], alpha: float, how: str
) -> list[Any]:
    """``α · text + (1 − α) · vectors`` of normalised scores (a leg missing an id counts its minimum);
    min–max is the product's own :func:`~notochord.search.fusion.combine`."""
    if how == "mm":
        ids = {i: n for n, i in enumerate(dict.fromkeys([i for i, _ in text] + [i for i, _ in vec]))}
        back = list(ids)
        legs = [([(ids[i], s) for i, s in text], alpha), ([(ids[i], s) for i, s in vec], 1 - alpha)]
        return [back[n] for n, _ in combine(legs, limit=len(ids))]
    if how.startswith("tmm"):
        floor = -1.0 if how == "tmm-1" else 0.0
        nt, nv = normalised(text, "tmm-text", floor), normalised(vec, "tmm-vec", floor)
    else:
        nt, nv = normalised(text, how, 0.0), normalised(vec, how, 0.0)
    mt = min(nt.values(), default=0.0) if how == "z" else 0.0
    mv = min(nv.values(), default=0.0) if how == "z" else 0.0
    fused = {i: alpha * nt.get(i, mt) + (1 - alpha) * nv.get(i, mv) for i in set(nt) | set(nv)}
    return sorted(fused, key=lambda i: (-round(fused[i], 12), str(i)))


def designs(
    name: str,
    search: ProductSearch,
    texts: Sequence[str],
    score: Score,
    text_lists: Sequence[Ranked],
    vec_lists: Sequence[Ranked],
    query_vectors: Callable[[str], np.ndarray],
) -> None:
    """Print the fusion designs' rows (see the module docstring)."""
    chunk_doc = search.chunk_doc
    collapse = search.collapse
    store = search.store
    doc_lists: list[Ranked] = []
    with bar(f"tuning: full text over whole documents for {len(texts)} train queries", len(texts)) as advance:
        for q in texts:
            with store.read() as conn:
                doc_lists.append(
                    full_text_leg(
                        conn,
                        q,
                        collection_ids=search.collection_ids,
                        limit=max(DEPTHS),
                        group_by="document",
                    )
                )
            advance(1)

    def levels(depth: int) -> dict[str, list[tuple[Docs | Ranked, Docs | Ranked]]]:
        vec_docs = [best_passage(v[:depth], chunk_doc) for v in vec_lists]
        return {
            "passages, collapsed after fusing": [
                (t[:depth], v[:depth]) for t, v in zip(text_lists, vec_lists, strict=True)
            ],
            "documents, each leg at its best passage": [
                (best_passage(t[:depth], chunk_doc), vd) for t, vd in zip(text_lists, vec_docs, strict=True)
            ],
            "documents, full text over whole documents": [
                (best_passage(t[:depth], chunk_doc), vd) for t, vd in zip(doc_lists, vec_docs, strict=True)
            ],
        }

    def to_docs(level: str, ranked: list[Any]) -> list[str]:
        if level.startswith("passages"):
            return collapse([(i, 0.0) for i in ranked])
        return [str(d) for d in ranked[:100]]

    at_depth = levels(DEPTH)
    rrf = Table(title=f"{name}: reciprocal-rank fusion on {len(texts)} train queries, {DEPTH} hits per leg (nDCG@10)")
    for col in ("level", "rrf k", *(f"w_vec {w:g}" for w in RRF_WEIGHTS)):
        rrf.add_column(col, justify="left" if col == "level" else "right")
    for level in ("passages, collapsed after fusing", "documents, each leg at its best passage"):
        pairs = at_depth[level]
        for k in RRF_K:
            cells = []
            for w in RRF_WEIGHTS:
                runs = []
                for t, v in pairs:
                    ids = {i: n for n, i in enumerate(dict.fromkeys([i for i, _ in t] + [i for i, _ in v]))}
                    back = {n: i for i, n in ids.items()}
                    found = fuse(
                        [([(ids[i], s) for i, s in t], 1.0), ([(ids[i], s) for i, s in v], w)], k=k, limit=len(ids)
                    )
                    runs.append(to_docs(level, [back[n] for n, _ in found]))
                cells.append(f"{score(runs)[0]:.4f}")
            rrf.add_row(level, f"{k}", *cells)
    console.print(rrf)

    table = Table(
        title=f"{name}: convex combination α · text + (1 − α) · vectors on train queries, "
        f"{DEPTH} hits per leg (nDCG@10)"
    )
    for col in ("normalisation", "level", *(f"α {a:g}" for a in ALPHAS)):
        table.add_column(col, justify="left" if col in ("normalisation", "level") else "right")
    kinds = {
        "min–max per query (product: combine)": "mm",
        "theoretical min–max, BM25 ≥ 0, cosine ≥ −1": "tmm-1",
        "theoretical min–max, BM25 ≥ 0, cosine ≥ 0": "tmm0",
        "z-score per query": "z",
    }
    with bar("tuning: convex combinations", len(kinds) * len(at_depth) * len(ALPHAS)) as advance:
        for label, how in kinds.items():
            for level, pairs in at_depth.items():
                cells = []
                for a in ALPHAS:
                    cells.append(f"{score([to_docs(level, convex(t, v, a, how)) for t, v in pairs])[0]:.4f}")
                    advance(1)
                table.add_row(label, level, *cells)
    console.print(table)

    chosen = "documents, full text over whole documents"
    depth_row = []
    for depth in DEPTHS:
        pairs = levels(depth)[chosen]
        depth_row.append(f"{depth}: {score([to_docs(chosen, convex(t, v, 0.5, 'mm')) for t, v in pairs])[0]:.4f}")
    console.print(f"train, min–max α 0.5, {chosen}, hits per leg → nDCG@10: " + " · ".join(depth_row))

    # Rocchio on the vector leg: query + β · mean of the top fused documents' passage vectors
    with store.read() as conn:
        rows = conn.execute(sa.select(chunk_vectors.c.chunk_id, chunk_vectors.c.vector)).all()
    chunk_ids = np.array([int(r[0]) for r in rows], np.int64)
    matrix = np.stack([from_blob(r[1], dim=len(query_vectors("warm up").reshape(-1))) for r in rows]).astype(np.float32)
    rows_of: dict[str, list[int]] = {}
    for n, cid in enumerate(chunk_ids.tolist()):
        rows_of.setdefault(chunk_doc[cid], []).append(n)
    prf = []
    pairs = at_depth[chosen]
    for m in (3, 5, 10):
        for beta in (0.25, 0.5):
            runs = []
            for q, (t, v) in zip(texts, pairs, strict=True):
                top = convex(t, v, 0.5, "mm")[:m]
                if not top:
                    runs.append([])
                    continue
                centroid = np.mean([matrix[rows_of[str(d)]].mean(0) for d in top], 0)
                moved = query_vectors(q).reshape(-1) + beta * centroid
                sims = matrix @ (moved / np.linalg.norm(moved))
                order = np.argsort(-sims, kind="stable")[:DEPTH]
                again = best_passage([(int(ids[i]), float(sims[i])) for i in order], chunk_doc)
                runs.append(to_docs(chosen, convex(t, again, 0.5, "mm")))
            prf.append(f"top {m}, β {beta:g}: {score(runs)[0]:.4f}")
    console.print("train, vector pseudo-relevance feedback then min–max α 0.5 → nDCG@10: " + " · ".join(prf))

    hits = [search.collapse_hits(search.hybrid(q, DEFAULT_LIMIT, "document")) for q in texts]
    console.print(
        f"train, the product: hybrid_search(group_by='document', limit {DEFAULT_LIMIT}) → nDCG@10 {score(hits)[0]:.4f}"
    )
