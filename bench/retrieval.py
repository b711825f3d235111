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
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord  # noqa: F401
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))

from rich.table import Table  # noqa: E402

from notochord.search.embeddings import load_embedder  # noqa: E402
from notochord.settings import Settings  # noqa: E402
from postgres_server import BACKENDS  # noqa: E402
from retrieval_data import REPO, EmbeddingCache, chunker_hash, console, discover  # noqa: E402
from retrieval_datasets import Summary, bench_datasets  # noqa: E402
from retrieval_synthetic import bench_synthetic, parse_sizes  # noqa: E402

TARGETS = {
    "hybrid_ndcg": 0.74,  # SciFact hybrid nDCG@10, at the default limit of 10 documents
    "fts_vs_bm25s": 2.0,  # full-text p50 at most this many times bm25s's on the same chunks
    "synthetic_p50_ms": 50.0,  # hybrid p50 at 100k chunks, query encoding excluded (printed beside)
    "synthetic_1m_p50_ms": 100.0,  # the same at 1M chunks (HNSW)
    "words_chunks_per_s": 1000.0,
    "vectors_vs_raw": 0.85,  # vector indexing at least this share of the raw embedder throughput
}


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
