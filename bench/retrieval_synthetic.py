"""The cost of search at scale, for ``bench/retrieval.py --synthetic 100000,1000000``.

A synthetic space per size: documents of ten chunks each, every chunk sixty words drawn from a
vocabulary of 30,000 made-up words with Zipf frequencies (so postings have a realistic skew), and
random unit vectors drawn from a mixture of Gaussian clusters (embeddings have neighbourhoods;
isotropic noise has none, and no index could find them). Quality is not measured here, only cost.

The space is written straight into the store's tables (documents, chunks, the FTS5 table, vectors),
in the product's own formats — the product's write path would take hours at a million chunks and is
measured by ``bench/writes.py`` — and kept under ``bench/.cache/spaces/``. A fresh child process
then opens it as the product does and measures, with the legs alternating per query:

- query encoding with the real embedder, alone (each query encoded once, then served from memory,
  so the legs' figures exclude it);
- the full-text leg, the vector leg and ``hybrid_search`` (ten documents, every collection);
- resident memory before and after the first search loads the inverted index and the vectors,
  the seconds that load and (above the HNSW threshold) the graph build take — or its restore from
  the file a previous run saved; two more fresh processes then time a restart (the full-text index
  loaded from the file the first process saved, and refreshed): one with the vectors read from the
  store (their saved matrix set aside: the baseline), one with them loaded from the matrix the
  other saved — and the machine's
  load average while the queries ran (the figures move with it on a shared machine).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import resource
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from rich.table import Table

from notochord.db.engine import write_tx
from notochord.db.schema import chunk_vectors, chunks, documents
from notochord.knowledge.hybrid_search import DEFAULT_LIMIT, full_text_leg, hybrid_search
from notochord.knowledge.indexing import FTS_TABLE
from notochord.search.embeddings import Embedder, load_embedder
from notochord.search.inverted_index import text_index
from notochord.search.textindex import fts_insert
from notochord.search.vector_file import MATRIX_SUFFIX
from notochord.search.vector_index import passage_hash, passage_text
from notochord.search.vectors import to_blob
from notochord.settings import Settings
from retrieval_data import bar, console, open_space, pct, read_marker, slug, write_marker

QUERIES = 200
VOCABULARY = 30_000
WORDS_PER_CHUNK = 60
CHUNKS_PER_DOC = 10
BLOCK = 10_000  # chunks written per transaction


def vocabulary(seed: int = 3) -> list[str]:
    """Made-up lowercase words of 3-10 letters, unique; the first are the most frequent."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        size = int(rng.integers(3, 11))
        words["".join(rng.choice(letters, size))] = None
    return list(words)


def zipf_words(rng: np.random.Generator, count: int) -> npt.NDArray[np.int64]:
    """Word numbers with Zipf frequencies (s ≈ 1.1), within the vocabulary."""
    out = np.zeros(0, dtype=np.int64)
    while out.size < count:
        drawn = rng.zipf(1.1, count * 2) - 1
        out = np.concatenate([out, drawn[drawn < VOCABULARY]])
    return out[:count]


def clustered_vectors(rng: np.random.Generator, centres: npt.NDArray[np.float32], n: int) -> npt.NDArray[np.float32]:
    points = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.standard_normal((n, centres.shape[1]))
    points = points.astype(np.float32)
    unit: npt.NDArray[np.float32] = points / np.linalg.norm(points, axis=1, keepdims=True)
    return unit


def build(directory: Path, size: int, model_id: str, dim: int) -> None:
    """Write a synthetic space of ``size`` chunks at ``directory`` (see the module docstring)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    words = np.array(vocabulary())
    rng = np.random.default_rng(11)
    centres = rng.standard_normal((max(size // 200, 8), dim)).astype(np.float32)
    started = time.perf_counter()
    with open_space(directory, None) as nc:
        space = nc.personal
        space.user.documents.upsert(collection="keep", key="template", title="template", body="template")
        engine = space.core.store.engine
        with engine.connect() as conn:
            template = dict(conn.execute(sa.select(documents).where(documents.c.key == "template")).mappings().one())
            next_doc = int(template["id"]) + 1
            next_chunk = int(conn.execute(sa.select(sa.func.max(chunks.c.id))).scalar_one()) + 1
        with bar(f"writing a synthetic space (chunks, {size:,})", size) as advance:
            for start in range(0, size, BLOCK):
                n = min(BLOCK, size - start)
                picked = zipf_words(rng, n * WORDS_PER_CHUNK + 1000)
                texts = [
                    " ".join(words[picked[i * WORDS_PER_CHUNK : (i + 1) * WORDS_PER_CHUNK]]) + "." for i in range(n)
                ]
                doc_rows: list[dict[str, Any]] = []
                chunk_rows: list[dict[str, Any]] = []
                for i, text in enumerate(texts):
                    number = start + i
                    doc_id = next_doc + number // CHUNKS_PER_DOC
                    title = f"synthetic {doc_id}"
                    if number % CHUNKS_PER_DOC == 0:
                        body = "\n\n".join(texts[i : i + CHUNKS_PER_DOC])
                        doc_rows.append(
                            {
                                **template,
                                "id": doc_id,
                                "key": f"s{doc_id}",
                                "title": title,
                                "body": body,
                                "content_hash": hashlib.sha256(body.encode()).hexdigest(),
                            }
                        )
                    chunk_rows.append(
                        {
                            "id": next_chunk + number,
                            "document_id": doc_id,
                            "idx": number % CHUNKS_PER_DOC,
                            "text": text,
                            "start": 0,
                            "end": len(text),
                            "text_hash": passage_hash(title, text),
                        }
                    )
                vectors = clustered_vectors(rng, centres, n)
                with write_tx(engine) as conn:
                    if doc_rows:
                        conn.execute(sa.insert(documents), doc_rows)
                    conn.execute(sa.insert(chunks), chunk_rows)
                    fts_insert(
                        conn,
                        FTS_TABLE,
                        ((r["id"], passage_text(f"synthetic {r['document_id']}", r["text"])) for r in chunk_rows),
                    )
                    conn.execute(
                        sa.insert(chunk_vectors),
                        [
                            {
                                "chunk_id": r["id"],
                                "model_id": model_id,
                                "vector": to_blob(v),
                                "text_hash": r["text_hash"],
                            }
                            for r, v in zip(chunk_rows, vectors, strict=True)
                        ],
                    )
                advance(n)
    write_marker(
        directory,
        "synthetic",
        {"chunks": size, "docs": -(-size // CHUNKS_PER_DOC), "seconds": time.perf_counter() - started},
    )


def queries(count: int, seed: int = 21) -> list[str]:
    """Two to six vocabulary words each, Zipf-drawn like the text (so they match postings)."""
    words = vocabulary()
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        picked = zipf_words(rng, int(rng.integers(2, 7)) + 5)[: int(rng.integers(2, 7))]
        out.append(" ".join(words[i] for i in picked))
    return out


class _Encoded:
    """The real embedder, with every benchmark query encoded up front (timed there, not in the legs)."""

    def __init__(self, embedder: Embedder, texts: Sequence[str]) -> None:
        self._embedder = embedder
        self.model_id = embedder.model_id
        self.dim = embedder.dim
        self.multilingual = embedder.multilingual
        self.encode_ms: list[float] = []
        embedder.embed_query("warm up")  # loads the model's weights outside the timings
        self._known: dict[str, npt.NDArray[np.float32]] = {}
        for text in texts:
            t0 = time.perf_counter()
            self._known[text] = embedder.embed_query(text)
            self.encode_ms.append((time.perf_counter() - t0) * 1000)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        found = self._known.get(text)
        return found if found is not None else self._embedder.embed_query(text)

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._embedder.embed_passages(texts)


def _rss_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def search_legs(space: Any, collection_ids: set[int]) -> dict[str, Callable[[str], object]]:
    """The calls timed at scale: the full-text leg, the vector leg over every chunk, ``hybrid_search``."""
    store, index = space.core.store, space.index
    with store.read() as conn:
        all_ids = np.asarray(conn.execute(sa.select(chunks.c.id)).scalars().all(), dtype=np.int64)

    def text_leg(q: str) -> object:
        with store.read() as conn:
            return full_text_leg(conn, q, collection_ids=collection_ids, limit=100)

    return {
        "full text (100 chunks)": text_leg,
        "vectors (100 chunks)": lambda q: index.search(q, k=100, allowed=all_ids, allowed_key="all"),
        f"hybrid_search ({DEFAULT_LIMIT} documents)": lambda q: hybrid_search(
            store, index, query=q, collection_ids=collection_ids, limit=DEFAULT_LIMIT, group_by="document"
        ),
    }


def time_alternating(legs: dict[str, Callable[[str], object]], texts: Sequence[str]) -> dict[str, list[float]]:
    """Milliseconds of every leg on every query, the legs taking turns going first (same load for each)."""
    names = list(legs)
    ms: dict[str, list[float]] = {name: [] for name in names}
    for n, q in enumerate(texts):
        for j in range(len(names)):
            name = names[(n + j) % len(names)]
            t0 = time.perf_counter()
            legs[name](q)
            ms[name].append((time.perf_counter() - t0) * 1000)
    return ms


def probe(directory: str, texts: list[str], hnsw_threshold: int | None = None) -> dict[str, Any]:
    """In a fresh process: load, then time the three legs alternating per query."""
    real = load_embedder(Settings().embedder)
    assert real is not None
    embedder = _Encoded(real, texts)
    with open_space(Path(directory), embedder, hnsw_threshold) as nc:
        space = nc.personal
        store, index = space.core.store, space.index
        collection_ids = {c.id for c in space.user.collections.list()}
        rss_before = _rss_mib()
        t0 = time.perf_counter()
        hybrid_search(store, index, query=texts[0], collection_ids=collection_ids)
        first_s = time.perf_counter() - t0
        rss_loaded = _rss_mib()
        t0 = time.perf_counter()
        graph = index.wait_for_graph()
        graph_s = time.perf_counter() - t0
        origin = index.memory.graph_origin if index.memory is not None else None
        legs = search_legs(space, collection_ids)
        names = list(legs)
        for name in names:
            legs[name](texts[0])
        load_before = os.getloadavg()[0]
        ms = time_alternating(legs, texts)
        memory = index.memory
        load_after = os.getloadavg()[0]
    return {
        "load": (load_before, load_after),
        "ms": ms,
        "encode_ms": embedder.encode_ms,
        "first_s": first_s,
        "graph": graph,
        "graph_s": graph_s,
        "origin": origin,
        "rss_before": rss_before,
        "rss_loaded": rss_loaded,
        "rss_after": _rss_mib(),
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "vectors_mib": (memory.nbytes / 2**20) if memory is not None else 0.0,
    }


def probe_restart(directory: str, texts: list[str], hnsw_threshold: int | None = None) -> dict[str, Any]:
    """In a fresh process, as after a restart: the first search, then the graph ready (restored or built)."""
    real = load_embedder(Settings().embedder)
    assert real is not None
    with open_space(Path(directory), _Encoded(real, texts), hnsw_threshold) as nc:
        space = nc.personal
        collection_ids = {c.id for c in space.user.collections.list()}
        t0 = time.perf_counter()
        with space.core.store.read() as conn:
            text_index(conn, FTS_TABLE)
        words_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        hybrid_search(space.core.store, space.index, query=texts[0], collection_ids=collection_ids)
        first_s = time.perf_counter() - t0 + words_s
        t0 = time.perf_counter()
        space.index.wait_for_graph()
        graph_s = time.perf_counter() - t0
        memory = space.index.memory
        return {
            "first_s": first_s,
            "words_s": words_s,
            "graph_s": graph_s,
            "origin": memory.graph_origin if memory else None,
            "vectors": space.index.origin,
        }


def bench_synthetic(cache: Path, sizes: Sequence[int], hnsw_threshold: int | None = None) -> dict[int, float]:
    """Build (or reuse) a synthetic space per size, probe each in a child process, print; hybrid p50 per size."""
    real = load_embedder(Settings().embedder)
    assert real is not None
    texts = queries(QUERIES)
    found: dict[int, float] = {}
    for size in sizes:
        console.rule(f"synthetic space: {size:,} chunks (random clustered vectors: cost, not quality)")
        directory = cache / "spaces" / f"synthetic-words-{size}-{slug(real.model_id)}"
        if read_marker(directory, "synthetic") is None:
            build(directory, size, real.model_id, real.dim)
        marker = read_marker(directory, "synthetic") or {}
        console.print(f"probing {len(texts)} queries × 3 legs in a fresh process …")
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            result = pool.submit(probe, str(directory), texts, hnsw_threshold).result()
        # the first probe saved the full-text index (and the graph, when built) beside the database
        # the baseline first: without a saved matrix the vectors are read from the store (and saved
        # again at close), then the same restart loads them from that file
        for saved in (directory / "spaces").glob(f"*{MATRIX_SUFFIX}"):
            saved.unlink()
        console.print("opening the space again in a fresh process without its saved vectors, as after a restart …")
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            unsaved = pool.submit(probe_restart, str(directory), texts[:1], hnsw_threshold).result()
        console.print("opening the space again in a fresh process, as after a restart …")
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            restart = pool.submit(probe_restart, str(directory), texts[:1], hnsw_threshold).result()
        table = Table(
            title=f"synthetic: {marker.get('chunks', size):,} chunks in {marker.get('docs', '?'):,} documents "
            f"({'HNSW graph' if result['graph'] else 'exact vectors'})"
        )
        for col in ("figure", "p50 ms", "p95 ms", "p99 ms"):
            table.add_column(col, justify="left" if col == "figure" else "right")
        for name, values in result["ms"].items():
            table.add_row(name, f"{pct(values, 50):.2f}", f"{pct(values, 95):.2f}", f"{pct(values, 99):.2f}")
        enc = result["encode_ms"]
        table.add_row(
            "query encoding (alone, not in the rows above)",
            f"{pct(enc, 50):.2f}",
            f"{pct(enc, 95):.2f}",
            f"{pct(enc, 99):.2f}",
        )
        console.print(table)
        memory = Table(title=f"synthetic {size:,}: load and memory")
        memory.add_column("figure")
        memory.add_column("value", justify="right")
        memory.add_row("first search (loads the inverted index and the vectors), s", f"{result['first_s']:.1f}")
        if result["graph"]:
            how = "restored from the saved file" if result["origin"] == "restored" else "built"
            memory.add_row(f"HNSW graph {how} after the first search, s", f"{result['graph_s']:.1f}")
        memory.add_row(
            f"after a restart: first search (vectors {restart['vectors'] or 'not loaded'}), s",
            f"{restart['first_s']:.1f}",
        )
        memory.add_row(
            f"after a restart: first search (vectors {unsaved['vectors'] or 'not loaded'}, no saved matrix), s",
            f"{unsaved['first_s']:.1f}",
        )
        memory.add_row(
            "after a restart: first search with / without the saved matrix",
            f"{restart['first_s'] / max(unsaved['first_s'], 1e-9):.2f}×",
        )
        memory.add_row("after a restart: full-text index loaded from its saved file, s", f"{restart['words_s']:.1f}")
        if result["graph"]:
            memory.add_row(
                f"after a restart: HNSW graph {restart['origin'] or 'not'} ready after the first search, s",
                f"{restart['graph_s']:.1f}",
            )
        memory.add_row(
            "RSS before / after the first search, MiB", f"{result['rss_before']:,.0f} / {result['rss_loaded']:,.0f}"
        )
        memory.add_row("RSS after the queries / peak, MiB", f"{result['rss_after']:,.0f} / {result['peak_mib']:,.0f}")
        memory.add_row("vectors in memory (matrix + graph), MiB", f"{result['vectors_mib']:,.0f}")
        memory.add_row("building the space (direct writes), s", f"{marker.get('seconds', 0):.0f}")
        memory.add_row("load average (1 min) when the queries began / ended", "{:.1f} / {:.1f}".format(*result["load"]))
        console.print(memory)
        found[size] = pct(result["ms"][f"hybrid_search ({DEFAULT_LIMIT} documents)"], 50)
    return found


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SystemExit(
            f"--synthetic takes chunk counts separated by commas, such as 100000,1000000; got {text!r}"
        ) from None
    if not sizes or min(sizes) < 1:
        raise SystemExit(f"--synthetic takes positive chunk counts; got {text!r}")
    return sizes
