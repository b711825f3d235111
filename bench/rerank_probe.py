"""What a reranking stage after fusion could gain on a data set's *train* queries, and what one costs.

Usage (from the repository root)::

    python bench/rerank_probe.py --space bench/.cache/spaces/scifact-<model>-<hash>
    python bench/rerank_probe.py --space … --scorer mymodule:score   # a candidate model

It searches a copy of an already built benchmark space (``bench/retrieval.py`` builds them; the
copy is made in a temporary directory and the original is only read) for every train query with
``hybrid_search(group_by="document")``, as the product does, and prints:

- nDCG@10 of the product's 10 documents, and its milliseconds per query in this process;
- recall of the judged documents within the top ``--depth`` documents (what any reranker of that
  many candidates can reach), and nDCG@10 of a perfect reranker of them (the judgements sorted to
  the front): the ceiling of a reranking stage at that depth;
- with ``--scorer module:callable``, nDCG@10 and milliseconds per query of reranking the top
  ``--depth`` documents by ``callable(query, texts) -> scores`` (higher is better), each text the
  document's title and its best passage, alone and interpolated with the fused score.

It never asserts and never touches the test queries.
"""

from __future__ import annotations

import argparse
import importlib
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord  # noqa: F401  (only whether it is importable)
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))

from notochord.knowledge.hybrid_search import Hit, hybrid_search  # noqa: E402
from notochord.search.embeddings import load_embedder  # noqa: E402
from notochord.settings import Settings  # noqa: E402
from retrieval_data import console, load_dataset, load_qrels, ndcg_at, open_space, pct  # noqa: E402

Scorer = Callable[[str, Sequence[str]], Sequence[float]]
MIXES = (0.25, 0.5, 0.75)  # the reranker's share when interpolated with the fused score


def load_scorer(spec: str) -> Scorer:
    module, _, name = spec.partition(":")
    scorer: Scorer = getattr(importlib.import_module(module), name or "score")
    return scorer


def rerank_text(hit: Hit) -> str:
    return f"{hit.title}\n{hit.text}" if hit.title else hit.text


def minmax(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else 1.0 for v in values]


def oracle(ranked: Sequence[str], rels: dict[str, int]) -> list[str]:
    """The same candidates with the judged ones first, best grade first (a perfect reranker)."""
    return sorted(ranked, key=lambda d: -rels.get(d, 0))


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--space", type=Path, required=True, help="a space built by bench/retrieval.py (read only)")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench" / "scifact")
    ap.add_argument("--depth", type=int, default=30, help="documents handed to the reranker")
    ap.add_argument("--queries", type=int, default=None, help="only the first N train queries")
    ap.add_argument("--scorer", default=None, help="module:callable(query, texts) -> scores")
    args = ap.parse_args(argv)

    ds = load_dataset(args.data, None)
    qrels = load_qrels(args.data / "qrels" / "train.tsv", set(ds.doc_ids))
    qids = [q for q in qrels if q in ds.queries][: args.queries]
    scorer = load_scorer(args.scorer) if args.scorer else None
    embedder = load_embedder(Settings().embedder)
    with tempfile.TemporaryDirectory(prefix="rerank-probe-") as tmp:
        directory = Path(tmp) / "space"
        shutil.copytree(args.space, directory)
        with open_space(directory, embedder) as nc:
            space = nc.personal
            collection_ids = {c.id for c in space.user.collections.list()}
            store, index = space.core.store, space.index

            def search(query: str, limit: int) -> list[Hit]:
                return hybrid_search(
                    store, index, query=query, collection_ids=collection_ids, limit=limit, group_by="document"
                )

            search("warm up", 10)
            plain_ms: list[float] = []
            rerank_ms: list[float] = []
            base: list[float] = []
            deep_top: list[float] = []
            recall: list[float] = []
            ceiling: list[float] = []
            reranked: list[float] = []
            mixed: dict[float, list[float]] = {m: [] for m in MIXES}
            for n, qid in enumerate(qids, 1):
                query, rels = ds.queries[qid], qrels[qid]
                t0 = time.perf_counter()
                top10 = search(query, 10)
                plain_ms.append((time.perf_counter() - t0) * 1000)
                base.append(ndcg_at([h.document_key for h in top10], rels))
                hits = search(query, args.depth)
                keys = [h.document_key for h in hits]
                deep_top.append(ndcg_at(keys, rels))
                recall.append(len(set(keys) & set(rels)) / len(rels))
                ceiling.append(ndcg_at(oracle(keys, rels), rels))
                if scorer is not None and hits:
                    t0 = time.perf_counter()
                    scores = list(scorer(query, [rerank_text(h) for h in hits]))
                    rerank_ms.append((time.perf_counter() - t0) * 1000)
                    order = sorted(range(len(hits)), key=lambda i: -scores[i])
                    reranked.append(ndcg_at([keys[i] for i in order], rels))
                    own, fused = minmax(scores), minmax([h.score for h in hits])
                    for m in MIXES:
                        mix = [m * a + (1 - m) * b for a, b in zip(own, fused, strict=True)]
                        order = sorted(range(len(hits)), key=lambda i: -mix[i])
                        mixed[m].append(ndcg_at([keys[i] for i in order], rels))
                if n % 100 == 0:
                    console.print(f"{n}/{len(qids)} queries")

    def mean(values: list[float]) -> float:
        return statistics.fmean(values) if values else math.nan

    console.print(f"{ds.name}: {len(qids)} train queries, hybrid_search(group_by='document')")
    console.print(
        f"product, 10 documents: nDCG@10 {mean(base):.4f} · "
        f"{pct(plain_ms, 50):.0f} ms p50 / {pct(plain_ms, 95):.0f} ms p95 per query (this process)"
    )
    console.print(
        f"top {args.depth} documents: nDCG@10 as fused {mean(deep_top):.4f} · recall@{args.depth} "
        f"{mean(recall):.4f} · perfect reranker's nDCG@10 {mean(ceiling):.4f}"
    )
    if scorer is not None:
        console.print(
            f"reranked by {args.scorer}: nDCG@10 {mean(reranked):.4f} · "
            + " · ".join(f"mixed {m:g}: {mean(v):.4f}" for m, v in mixed.items())
            + f" · {pct(rerank_ms, 50):.0f} ms p50 per query on top of the search"
        )


if __name__ == "__main__":
    main()
