"""``bench/retrieval.py --tune``: BM25's ``k1`` and ``b``, and fusion (chunks per leg, RRF ``k``,
vector weight, the chunk → document collapse), swept on a data set's *train* queries only.

Helpers only; run ``bench/retrieval.py``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from rich.table import Table

from notochord.search.bm25 import K1, B
from notochord.search.fusion import DEFAULT_RRF_K, fuse, leg_weights
from retrieval_data import DOC_DEPTH, Dataset, Ranked, bar, console, evaluate, load_qrels
from retrieval_fusion import designs as fusion_designs
from retrieval_legs import EncodedQueries, ProductSearch

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
