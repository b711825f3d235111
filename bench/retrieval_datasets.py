"""Each data set of ``bench/retrieval.py`` measured leg by leg on the chosen backends, its tables
printed, and its figures kept for the targets.

Helpers only; run ``bench/retrieval.py``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.table import Table

from notochord.search.embeddings import Embedder
from postgres_server import database_url as postgres_database
from postgres_server import server_url as postgres_server
from retrieval_data import (
    CHUNK_DEPTH,
    DOC_DEPTH,
    RAW_SAMPLE,
    REPO,
    WORDS_BATCH,
    EmbeddingCache,
    build_space,
    chunker_hash,
    console,
    evaluate,
    load_dataset,
    open_space,
    pct,
    slug,
)
from retrieval_legs import (
    EncodedQueries,
    LegRun,
    ProductSearch,
    UnstemmedFullText,
    bm25s_leg,
    english_stemmer,
    product_legs,
    run_legs,
)
from retrieval_tune import tune


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
