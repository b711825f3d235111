"""Data sets, metrics, caches and the product-indexed spaces of ``bench/retrieval.py``.

Helpers only; run ``bench/retrieval.py``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import random
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))

import sqlalchemy as sa  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import (  # noqa: E402
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

import notochord.app  # noqa: E402
from notochord.db.engine import read_tx, write_tx  # noqa: E402
from notochord.db.schema import chunk_vectors, chunks, documents  # noqa: E402
from notochord.search import vector_store_pg  # noqa: E402
from notochord.search.embeddings import Embedder  # noqa: E402
from notochord.search.vectors import to_blob  # noqa: E402
from notochord.settings import Settings  # noqa: E402

DOC_DEPTH = 100  # Recall@100
CHUNK_DEPTH = 300  # chunks asked of each run so that ~100 distinct documents survive collapsing
RAW_SAMPLE = 128  # passages embedded directly to measure the embedder's raw throughput
WORDS_BATCH = 50  # documents per upsert_many while indexing a data set's words
CHUNKER_SOURCES = ("src/notochord/search/chunking.py", "src/notochord/search/textindex.py")
console = Console(width=None if sys.stdout.isatty() else 160)

Vector = npt.NDArray[np.float32]
Ranked = list[tuple[int, float]]


# ---------------------------------------------------------------------- data sets and metrics


@dataclass
class Dataset:
    name: str
    path: Path
    doc_ids: list[str]
    titles: list[str]
    texts: list[str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # test judgements of known documents only

    def sentences(self) -> list[str]:
        return [s for t in self.texts for s in re.split(r"(?<=[.!?])\s+", t) if len(s) > 20]


def discover(root: Path, only: str | None) -> list[Path]:
    """Data set directories under ``root`` (or ``root`` itself when it is one)."""
    found = [root] if _is_dataset(root) else sorted(p for p in root.iterdir() if p.is_dir() and _is_dataset(p))
    return [p for p in found if only is None or p.name == only]


def _is_dataset(path: Path) -> bool:
    has_corpus = (path / "corpus.jsonl.gz").exists() or (path / "corpus.jsonl").exists()
    return has_corpus and (path / "queries.jsonl").exists() and (path / "qrels" / "test.tsv").exists()


def load_dataset(path: Path, limit: int | None) -> Dataset:
    corpus = path / "corpus.jsonl.gz"
    opener = gzip.open if corpus.exists() else open
    doc_ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    with opener(corpus if corpus.exists() else path / "corpus.jsonl", "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            doc_ids.append(str(rec["_id"]))
            titles.append(str(rec.get("title") or ""))
            texts.append(str(rec["text"]))
            if limit is not None and len(doc_ids) >= limit:
                break
    with open(path / "queries.jsonl", encoding="utf-8") as fh:
        queries = {str(r["_id"]): str(r["text"]) for r in map(json.loads, fh)}
    qrels = load_qrels(path / "qrels" / "test.tsv", set(doc_ids))
    return Dataset(path.name, path, doc_ids, titles, texts, queries, qrels)


def load_qrels(path: Path, known_docs: set[str]) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.rstrip("\n").split("\t")
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


def evaluate(runs: Sequence[list[str]], qids: Sequence[str], qrels: dict[str, dict[str, int]]) -> tuple[float, float]:
    nd = statistics.fmean(ndcg_at(r, qrels[q]) for r, q in zip(runs, qids, strict=True))
    rc = statistics.fmean(recall_at(r, qrels[q]) for r, q in zip(runs, qids, strict=True))
    return nd, rc


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )


@contextmanager
def bar(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """A progress bar; yields ``advance(n)``."""
    with progress() as prog:
        task = prog.add_task(description, total=total)
        yield lambda n: prog.advance(task, n)


# ---------------------------------------------------------------------- caches


class EmbeddingCache:
    """Vectors of one model, keyed by the SHA-256 of the embedded text (``p:`` passages, ``q:`` queries)."""

    def __init__(self, directory: Path, model_id: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"embeddings-{slug(model_id)}.npz"
        self.vectors: dict[str, Vector] = {}
        self._dirty = 0
        if self.path.exists():
            with np.load(self.path) as data:
                for key, vec in zip(data["keys"].tolist(), data["vectors"], strict=True):
                    self.vectors[key] = vec

    @staticmethod
    def key(kind: str, body: str) -> str:
        return kind + hashlib.sha256(body.encode("utf-8")).hexdigest()

    def put(self, key: str, vec: Vector) -> None:
        if key not in self.vectors:
            self.vectors[key] = vec
            self._dirty += 1

    def save(self) -> None:
        if not self._dirty:
            return
        keys = np.array(list(self.vectors), dtype="U80")
        mat = np.stack(list(self.vectors.values()))
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=mat)
        os.replace(tmp, self.path)
        self._dirty = 0


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def chunker_hash() -> str:
    digest = hashlib.sha256()
    for rel in CHUNKER_SOURCES:
        digest.update((REPO / rel).read_bytes())
    return digest.hexdigest()[:12]


def passage(title: str, text: str) -> str:
    """What the vector index embeds for a chunk (``VectorIndex.process_batch``)."""
    return f"{title}\n{text}" if title else text


def read_marker(directory: Path, stage: str) -> dict[str, Any] | None:
    path = directory / f"{stage}.done.json"
    return dict(json.loads(path.read_text())) if path.exists() else None


def write_marker(directory: Path, stage: str, data: dict[str, Any]) -> None:
    (directory / f"{stage}.done.json").write_text(json.dumps(data, indent=2))


def open_space(
    directory: Path, embedder: Embedder | None, hnsw_threshold: int | None = None, database_url: str | None = None
) -> notochord.app.Notochord:
    # no background worker: embedding happens only inside space.index.wait(), where it is timed
    settings = Settings(data_dir=directory, index_in_background=False, database_url=database_url)
    if hnsw_threshold is not None:
        settings = replace(settings, vector_hnsw_threshold=hnsw_threshold)
    return notochord.app.open(directory, settings, embedder=embedder)


# ---------------------------------------------------------------------- indexing a data set


def index_words(space: notochord.app.Space, titles: Sequence[str], bodies: Sequence[str], keys: Sequence[str]) -> float:
    """Write every document through the host API in batches of :data:`WORDS_BATCH` (``upsert_many``,
    one transaction each, as an import does); returns the seconds spent."""
    spent = 0.0
    items = [
        {"collection": "keep", "key": key, "title": title, "body": body}
        for title, body, key in zip(titles, bodies, keys, strict=True)
    ]
    with bar("indexing words (documents)", len(items)) as advance:
        for start in range(0, len(items), WORDS_BATCH):
            batch = items[start : start + WORDS_BATCH]
            t0 = time.perf_counter()
            space.user.documents.upsert_many(batch)
            spent += time.perf_counter() - t0
            advance(len(batch))
    return spent


def chunk_count(space: notochord.app.Space) -> int:
    with space.core.store.read() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(chunks)).scalar_one())


def pending_passages(space: notochord.app.Space, model_id: str) -> list[tuple[int, str]]:
    return [(chunk_id, text) for chunk_id, text, _ in _pending(space, model_id)]


def _pending(space: notochord.app.Space, model_id: str) -> list[tuple[int, str, str]]:
    done = sa.select(chunk_vectors.c.chunk_id).where(chunk_vectors.c.model_id == model_id)
    with read_tx(space.core.store.engine) as conn:
        rows = conn.execute(
            sa.select(chunks.c.id, chunks.c.text, chunks.c.text_hash, documents.c.title)
            .join(documents, documents.c.id == chunks.c.document_id)
            .where(chunks.c.id.not_in(done))
            .order_by(chunks.c.id)
        ).all()
    return [(int(r.id), passage(r.title, r.text), str(r.text_hash)) for r in rows]


def prefill(space: notochord.app.Space, model_id: str, cache: EmbeddingCache) -> int:
    """Write cached vectors of pending chunks into ``chunk_vectors`` (pgvector on PostgreSQL); returns how many."""
    rows = []
    for chunk_id, text, text_hash in _pending(space, model_id):
        vec = cache.vectors.get(cache.key("p:", text))
        if vec is not None:
            rows.append({"chunk_id": chunk_id, "model_id": model_id, "vector": to_blob(vec), "text_hash": text_hash})
    for off in range(0, len(rows), 2000):
        with write_tx(space.core.store.engine) as conn:
            conn.execute(sa.insert(chunk_vectors), rows[off : off + 2000])
    if rows and vector_store_pg.is_postgresql(space.core.store.engine):
        # what the embedding worker does with its first vector of a dimension, once for the whole load
        with write_tx(space.core.store.engine) as conn:
            vector_store_pg.ensure_indexes(conn)
    return len(rows)


def export_vectors(space: notochord.app.Space, model_id: str, cache: EmbeddingCache) -> None:
    with read_tx(space.core.store.engine) as conn:
        rows = conn.execute(
            sa.select(chunk_vectors.c.vector, chunks.c.text, documents.c.title)
            .join(chunks, chunks.c.id == chunk_vectors.c.chunk_id)
            .join(documents, documents.c.id == chunks.c.document_id)
            .where(chunk_vectors.c.model_id == model_id)
        ).all()
    for r in rows:
        cache.put(cache.key("p:", passage(r.title, r.text)), np.frombuffer(r.vector, dtype="<f4").astype(np.float32))
    cache.save()


@dataclass
class IndexFigures:
    docs: int
    chunks: int
    words_s: float
    embedded: int | None = None  # chunks embedded by space.index.wait() when it was measured
    vectors_s: float | None = None
    prefilled: int = 0
    raw_chunks_per_s: float | None = None
    measured_now: bool = True

    @property
    def words_rate(self) -> float:
        return self.chunks / self.words_s

    @property
    def vectors_rate(self) -> float | None:
        return self.embedded / self.vectors_s if self.embedded and self.vectors_s else None


def build_space(
    ds: Dataset,
    directory: Path,
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
    database_url: str | None = None,
) -> IndexFigures:
    """Index ``ds`` into the space at ``directory`` (its store on ``database_url`` when given),
    reusing whatever stage a previous run completed."""
    words = read_marker(directory, "words")
    if words is None:
        shutil.rmtree(directory, ignore_errors=True)  # an interrupted word stage starts over
        directory.mkdir(parents=True)
        with open_space(directory, embedder, database_url=database_url) as nc:
            seconds = index_words(nc.personal, ds.titles, ds.texts, ds.doc_ids)
            words = {"docs": len(ds.doc_ids), "chunks": chunk_count(nc.personal), "seconds": seconds}
        write_marker(directory, "words", words)
    figures = IndexFigures(int(words["docs"]), int(words["chunks"]), float(words["seconds"]))
    if embedder is None or cache is None:
        return figures
    vectors = read_marker(directory, "vectors")
    if vectors is None:
        with open_space(directory, embedder, database_url=database_url) as nc:
            space = nc.personal
            model_id = embedder.model_id
            prefilled = prefill(space, model_id, cache)
            pending = pending_passages(space, model_id)
            sample = [text for _, text in random.Random(7).sample(pending, min(RAW_SAMPLE, len(pending)))]
            half = len(sample) // 2
            raw_s = 0.0
            if pending:
                console.print(f"{len(pending)} chunks to embed ({prefilled} taken from the embedding cache)")
                embedder.embed_passages(sample[:2])  # loads the model outside both timings
                raw_s += _timed(lambda: embedder.embed_passages(sample[:half]))
            with progress() as prog:
                task = prog.add_task("indexing vectors (chunks)", total=len(pending))
                t0 = time.perf_counter()
                embedded = space.index.wait(progress=lambda done, _total: prog.update(task, completed=done))
                seconds = time.perf_counter() - t0
            # half the raw sample before the queue and half after, so a change of load on the
            # machine during a long run weighs on both figures alike
            raw_s += _timed(lambda: embedder.embed_passages(sample[half:])) if pending else 0.0
            raw = len(sample) / raw_s if raw_s else None
            if raw is not None:
                console.print(f"raw embed_passages: {raw:.1f} chunks/s on {len(sample)} passages")
            export_vectors(space, model_id, cache)
        vectors = {"embedded": embedded, "seconds": seconds, "prefilled": prefilled, "raw_chunks_per_s": raw}
        write_marker(directory, "vectors", vectors)
    else:
        figures.measured_now = False
    figures.embedded = int(vectors["embedded"])
    figures.vectors_s = float(vectors["seconds"])
    figures.prefilled = int(vectors["prefilled"])
    figures.raw_chunks_per_s = None if vectors["raw_chunks_per_s"] is None else float(vectors["raw_chunks_per_s"])
    return figures


def _timed(call: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0
