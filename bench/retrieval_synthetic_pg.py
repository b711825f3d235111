"""The cost of search at scale on PostgreSQL: ``python bench/retrieval_synthetic_pg.py --synthetic 1000000``.

The same synthetic space as ``bench/retrieval_synthetic.py`` (documents of ten chunks, sixty
Zipf-drawn made-up words a chunk, clustered random unit vectors), written into a space on a
throwaway PostgreSQL server (``bench/postgres_server.py``) with ``COPY``: documents, chunks, the
full-text rows and their postings (made by FTS5's tokenizer, as the write path makes them), and the
vectors into pgvector; the postings table's B-trees and the HNSW index are built once after the load
(the same indexes the product keeps, sorted once instead of kept up row by row). Then, in this process, the
space is opened as the product opens it and the full-text leg, the vector leg (every chunk allowed:
the filtered HNSW scan) and ``hybrid_search`` are timed alternating per query, query encoding
measured alone. Quality is not measured, only cost. It prints; it never asserts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord  # noqa: F401
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))

import numpy as np  # noqa: E402
import psycopg  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from psycopg import sql as psql  # noqa: E402
from rich.table import Table  # noqa: E402

from notochord.db.engine import write_tx  # noqa: E402
from notochord.db.schema import chunks, documents, vector_text  # noqa: E402
from notochord.knowledge.hybrid_search import hybrid_search, search_filters  # noqa: E402
from notochord.knowledge.indexing import FTS_TABLE  # noqa: E402
from notochord.search import text_store_pg, vector_store_pg  # noqa: E402
from notochord.search.embeddings import load_embedder  # noqa: E402
from notochord.search.textindex import FTS_TOKENIZER, index_text  # noqa: E402
from notochord.search.vector_index import passage_hash, passage_text  # noqa: E402
from notochord.settings import Settings  # noqa: E402
from postgres_server import database_url, server_url  # noqa: E402
from retrieval_data import bar, console, open_space, pct  # noqa: E402
from retrieval_synthetic import (  # noqa: E402
    BLOCK,
    CHUNKS_PER_DOC,
    QUERIES,
    WORDS_PER_CHUNK,
    _Encoded,
    clustered_vectors,
    queries,
    search_legs,
    time_alternating,
    vocabulary,
    zipf_words,
)


def _copy(conn: sa.Connection, statement: str, rows: list[tuple[Any, ...]]) -> None:
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    with cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


_BULK_TABLE = f"{FTS_TABLE}_terms"
"""The table of sixty postings a chunk: its B-trees, kept up row by row, were most of the load."""

_BUILD_SETTINGS = (
    "SET LOCAL maintenance_work_mem = '4GB'",  # the HNSW graph of 1M vectors of 384 dims fits in memory
    "SET LOCAL max_parallel_maintenance_workers = 2",
    "SET LOCAL synchronous_commit = off",  # a throwaway space: a lost tail on a crash is no loss
)


def _drop_bulk_indexes(conn: sa.Connection) -> list[str]:
    """Drop the postings table's primary key and indexes; returns the statements that make them again."""
    constraints = conn.execute(
        sa.text(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = CAST(:t AS regclass) AND contype IN ('p', 'u')"
        ),
        {"t": _BULK_TABLE},
    ).all()
    indexes = conn.execute(
        sa.text(
            "SELECT i.indexname, i.indexdef FROM pg_indexes AS i WHERE i.tablename = :t "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conname = i.indexname)"
        ),
        {"t": _BULK_TABLE},
    ).all()
    again: list[str] = []
    for name, definition in constraints:
        conn.exec_driver_sql(f'ALTER TABLE {_BULK_TABLE} DROP CONSTRAINT "{name}"')
        again.append(f'ALTER TABLE {_BULK_TABLE} ADD CONSTRAINT "{name}" {definition}')
    for name, definition in indexes:
        conn.exec_driver_sql(f'DROP INDEX "{name}"')
        again.append(str(definition))
    return again


def build(directory: Path, url: str, size: int, model_id: str, dim: int) -> float:
    """Write a synthetic space of ``size`` chunks into the database of ``url``; returns the seconds."""
    words = np.array(vocabulary())
    rng = np.random.default_rng(11)
    centres = rng.standard_normal((max(size // 200, 8), dim)).astype(np.float32)
    started = time.perf_counter()
    with open_space(directory, None, database_url=url) as nc:
        space = nc.personal
        space.user.documents.upsert(collection="keep", key="template", title="template", body="template")
        engine = space.core.store.engine
        with engine.connect() as conn:
            template = dict(conn.execute(sa.select(documents).where(documents.c.key == "template")).mappings().one())
            next_doc = int(template["id"]) + 1
            next_chunk = int(conn.execute(sa.select(sa.func.max(chunks.c.id))).scalar_one()) + 1
        doc_columns = [c.name for c in documents.columns]
        # the same rows and, once loaded, the same indexes as the product's; sorted once, not kept up per row
        with write_tx(engine) as conn:
            rebuild = _drop_bulk_indexes(conn)
        with bar(f"copying a synthetic space into PostgreSQL (chunks, {size:,})", size) as advance:
            for start in range(0, size, BLOCK):
                n = min(BLOCK, size - start)
                picked = zipf_words(rng, n * WORDS_PER_CHUNK + 1000)
                texts = [
                    " ".join(words[picked[i * WORDS_PER_CHUNK : (i + 1) * WORDS_PER_CHUNK]]) + "." for i in range(n)
                ]
                doc_rows: list[tuple[Any, ...]] = []
                chunk_rows: list[tuple[Any, ...]] = []
                for i, text in enumerate(texts):
                    number = start + i
                    doc_id = next_doc + number // CHUNKS_PER_DOC
                    title = f"synthetic {doc_id}"
                    if number % CHUNKS_PER_DOC == 0:
                        body = "\n\n".join(texts[i : i + CHUNKS_PER_DOC])
                        row = {
                            **template,
                            "id": doc_id,
                            "key": f"s{doc_id}",
                            "title": title,
                            "body": body,
                            "content_hash": hashlib.sha256(body.encode()).hexdigest(),
                        }
                        doc_rows.append(tuple(row[c] for c in doc_columns))
                    chunk_rows.append(
                        (
                            next_chunk + number,
                            doc_id,
                            number % CHUNKS_PER_DOC,
                            text,
                            0,
                            len(text),
                            passage_hash(title, text),
                        )
                    )
                derived = [(r[0], index_text(passage_text(f"synthetic {r[1]}", r[3]))) for r in chunk_rows]
                postings = text_store_pg.tokenize(derived, FTS_TOKENIZER)
                vectors = clustered_vectors(rng, centres, n)
                with write_tx(engine) as conn:
                    conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
                    if doc_rows:
                        _copy(conn, f"COPY documents ({', '.join(doc_columns)}) FROM STDIN", doc_rows)
                    _copy(
                        conn, 'COPY chunks (id, document_id, idx, text, start, "end", text_hash) FROM STDIN', chunk_rows
                    )
                    _copy(conn, f"COPY {FTS_TABLE} (rowid, body) FROM STDIN", derived)
                    _copy(
                        conn,
                        f"COPY {FTS_TABLE}_terms (term, chunk_id, tf) FROM STDIN",
                        [(p["term"], p["chunk_id"], p["tf"]) for p in postings],
                    )
                    _copy(
                        conn,
                        "COPY chunk_vectors (chunk_id, model_id, vector, text_hash) FROM STDIN",
                        [(r[0], model_id, vector_text(v), r[6]) for r, v in zip(chunk_rows, vectors, strict=True)],
                    )
                advance(n)
        with write_tx(engine) as conn:
            conn.exec_driver_sql(f"SELECT setval(pg_get_serial_sequence('documents', 'id'), {next_doc + size})")
            conn.exec_driver_sql(f"SELECT setval(pg_get_serial_sequence('chunks', 'id'), {next_chunk + size})")
            # a new full-text version, so no reader keeps an index of before the load
            text_store_pg.index_terms(conn, FTS_TABLE, [], FTS_TOKENIZER)
        console.print(f"loaded in {time.perf_counter() - started:.0f} s; building the indexes of {_BULK_TABLE} …")
        with write_tx(engine) as conn:
            for statement in _BUILD_SETTINGS:
                conn.exec_driver_sql(statement)
            for statement in rebuild:
                conn.exec_driver_sql(statement)
        console.print(f"at {time.perf_counter() - started:.0f} s: building the HNSW index …")
        with write_tx(engine) as conn:
            for statement in _BUILD_SETTINGS:
                conn.exec_driver_sql(statement)
            vector_store_pg.ensure_indexes(conn)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE")
        console.print(f"built in {time.perf_counter() - started:.0f} s")
    return time.perf_counter() - started


def probe(directory: Path, url: str, texts: list[str]) -> dict[str, Any]:
    real = load_embedder(Settings().embedder)
    assert real is not None
    embedder = _Encoded(real, texts)
    with open_space(directory, embedder, database_url=url) as nc:
        space = nc.personal
        store, index = space.core.store, space.index
        collection_ids = {c.id for c in space.user.collections.list()}
        t0 = time.perf_counter()
        hybrid_search(store, index, query=texts[0], collection_ids=collection_ids)
        first_s = time.perf_counter() - t0
        legs = search_legs(space, collection_ids)
        # the vector leg as hybrid search runs it: the conditions that select the allowed chunks go
        # into the query, so the server filters inside its HNSW scan instead of by a list of 1M ids
        where = search_filters(collection_ids, None, None)
        with store.read() as conn:
            allowed = np.asarray(conn.execute(sa.select(chunks.c.id)).scalars().all(), dtype=np.int64)
        legs["vectors (100 chunks)"] = lambda q: index.search(q, k=100, allowed=allowed, allowed_key="all", where=where)
        ms = time_alternating(legs, texts)
    return {
        "ms": ms,
        "encode_ms": embedder.encode_ms,
        "first_s": first_s,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _drop_databases(server: str, prefix: str) -> None:
    with psycopg.connect(server, autocommit=True) as conn:
        found = conn.execute("SELECT datname FROM pg_database WHERE starts_with(datname, %s)", (prefix,))
        for name in [row[0] for row in found]:
            conn.execute(psql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(psql.Identifier(name)))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--synthetic", type=int, default=100_000, help="chunks of the synthetic space")
    ap.add_argument("--queries", type=int, default=QUERIES, help="queries timed per leg")
    ap.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep the server and the built space under DIR (a later run with the same DIR and size only searches)",
    )
    args = ap.parse_args(argv)
    real = load_embedder(Settings().embedder)
    if real is None:
        console.print("the configured embedder is 'none': the synthetic space needs one")
        return
    texts = queries(args.queries)
    keep: Path | None = args.keep / f"synthetic-pg-{args.synthetic}" if args.keep else None
    built = keep / "built.json" if keep else None
    with server_url(keep) as server, database_url(server, "synthetic" if keep else None) as url:
        if keep is not None:
            directory = keep / "space"
        else:
            directory = Path(tempfile.mkdtemp(prefix="notochord-bench-synthetic-pg-")) / "space"
        directory.mkdir(parents=True, exist_ok=True)
        console.rule(f"synthetic space on PostgreSQL: {args.synthetic:,} chunks (clustered vectors: cost, not quality)")
        if built is not None and built.exists():
            seconds = float(json.loads(built.read_text())["seconds"])
            console.print(f"reusing the space built earlier in {keep} ({seconds:.0f} s to build)")
        else:
            if keep is not None:  # a build cut short leaves half a space: start again from nothing
                _drop_databases(server, "synthetic_")
                shutil.rmtree(directory)
                directory.mkdir(parents=True)
            seconds = build(directory, url, args.synthetic, real.model_id, real.dim)
            if built is not None:
                built.write_text(json.dumps({"seconds": seconds, "chunks": args.synthetic}))
        result = probe(directory, url, texts)
    table = Table(title=f"synthetic on PostgreSQL: {args.synthetic:,} chunks, {len(texts)} queries")
    for col in ("figure", "p50 ms", "p95 ms", "p99 ms"):
        table.add_column(col, justify="left" if col == "figure" else "right")
    for name, values in result["ms"].items():
        table.add_row(name, f"{pct(values, 50):.2f}", f"{pct(values, 95):.2f}", f"{pct(values, 99):.2f}")
    enc = result["encode_ms"]
    table.add_row("query encoding (alone, not in the rows above)", f"{pct(enc, 50):.2f}", f"{pct(enc, 95):.2f}", "-")
    console.print(table)
    console.print(
        f"building the space (COPY + HNSW index) {seconds:.0f} s; first search {result['first_s']:.1f} s; "
        f"peak RSS of this process {result['peak_mib']:,.0f} MiB (no vectors held: the server searches them)"
    )


if __name__ == "__main__":
    main()
