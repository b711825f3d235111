"""Verify every derived structure of a space against its source, and rebuild what is derived.

What is checked, exactly and in one read snapshot:

- **chunks ↔ document bodies.** A document that keeps its body has exactly the chunks
  :func:`~notochord.search.chunking.document_chunks` cuts from it (at the chunk size of its knowledge
  base, or the default): one empty chunk when it has no text. Imported documents keep only their
  index, so there is nothing to compare but that they have a chunk at all (none hides a document
  from every search; a store written before every document had one holds such documents). Every
  chunk belongs to an existing document and carries the hash of its title and text.
- **full-text rows ↔ chunks.** One row per chunk, holding the derived text of its title and text;
  no row without a chunk. On PostgreSQL, where the postings are a plain table rather than FTS5's
  own structure, every chunk's postings are also exactly the terms and term frequencies the
  tokenizer gives for that derived text, and no posting names a chunk that does not exist.
- **vectors ↔ chunks.** Every vector belongs to an existing chunk and carries that chunk's current
  hash (else it was computed from other text); vectors of the current model have its dimension,
  finite values and unit length (embedders give L2-normalised vectors: a damaged one of the right
  size would otherwise stop every search by meaning, or top every one). Vectors of other models are
  ignored by search and re-embedded, so they are not problems.
- **change log ↔ state.** A change is ``reverted`` exactly when it names the change that reverted
  it, and that change exists; a fact expired by a change names an existing one.
- **quota counters ↔ change rows.** A writer's counter for a day is never below the number of
  write transactions its change rows show for that local day (one transaction's changes share one
  timestamp), and never above the daily limit.

:func:`repair` rebuilds what is derived: chunks and full-text rows from bodies, drops vectors that
do not match their chunk (the worker re-embeds those chunks), and raises undercounted quota
counters. The change log is the record itself; its problems are reported, never rewritten.
A store that cannot be written is refused before anything is attempted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np
import sqlalchemy as sa

from notochord.db.engine import is_read_only, read_tx, write_tx
from notochord.db.schema import changes, chunk_vectors, chunks, documents, facts, quota_usage
from notochord.errors import ReadOnlyStoreError
from notochord.knowledge.arguments import counted as in_words
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.indexing import FTS_TABLE, chunk_sizes, index_document
from notochord.knowledge.quotas import DAILY_WRITES
from notochord.search import inverted_index_delta, text_store_pg
from notochord.search.chunking import DEFAULT_MAX_CHARS, document_chunks
from notochord.search.textindex import FTS_TOKENIZER, fts_delete, fts_insert, index_text
from notochord.search.vector_index import passage_hash, passage_text

__all__ = ["Problem", "ProblemKind", "check", "repair"]

ProblemKind = Literal[
    "chunks_differ_from_body",
    "chunk_without_document",
    "chunk_hash_wrong",
    "fulltext_missing",
    "fulltext_stale",
    "fulltext_orphan",
    "postings_differ",
    "postings_orphan",
    "vector_stale",
    "vector_orphan",
    "vector_malformed",
    "change_revert_link",
    "fact_expired_by_missing",
    "quota_undercount",
    "quota_over_limit",
    "space_unreadable",
]

_REPAIRABLE: frozenset[str] = frozenset(
    {
        "chunks_differ_from_body",
        "chunk_without_document",
        "chunk_hash_wrong",
        "fulltext_missing",
        "fulltext_stale",
        "fulltext_orphan",
        "postings_differ",
        "postings_orphan",
        "vector_stale",
        "vector_orphan",
        "vector_malformed",
        "quota_undercount",
    }
)


_UNIT_TOLERANCE = 1e-3
"""How far from 1 a stored vector's length may be: float32 rounding of a normalised vector stays
within about 1e-6, while a damaged value is off by orders of magnitude."""


@dataclass(frozen=True)
class Problem:
    """One disagreement between a derived structure and its source."""

    kind: ProblemKind
    target: str
    """What is wrong, as ``type:id`` (``document:3``, ``chunk:17``, ``quota:gem:x@2026-01-02``)."""
    detail: str

    @property
    def repairable(self) -> bool:
        """Whether :func:`repair` rebuilds it (the change log is never rewritten)."""
        return self.kind in _REPAIRABLE

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "detail": self.detail, "repairable": self.repairable}


def _documents_problems(conn: sa.Connection) -> list[Problem]:
    problems: list[Problem] = []
    sizes = chunk_sizes(conn)
    by_document: dict[int, list[Any]] = defaultdict(list)
    for row in conn.execute(
        sa.select(chunks.c.id, chunks.c.document_id, chunks.c.idx, chunks.c.text, chunks.c.start, chunks.c.end)
        .select_from(chunks)
        .order_by(chunks.c.document_id, chunks.c.idx, chunks.c.id)
    ):
        by_document[row.document_id].append(row)
    docs = {
        r.id: r
        for r in conn.execute(sa.select(documents.c.id, documents.c.collection_id, documents.c.title, documents.c.body))
    }
    for doc_id in sorted(set(by_document) - set(docs)):
        problems.append(
            Problem(
                "chunk_without_document",
                f"document:{doc_id}",
                f"{in_words(len(by_document[doc_id]), 'chunk')} of a missing document",
            )
        )
    for doc_id, doc in sorted(docs.items()):
        actual = [(c.idx, c.text, c.start, c.end) for c in by_document.get(doc_id, [])]
        if doc.body is None:
            if not actual:
                problems.append(
                    Problem(
                        "chunks_differ_from_body",
                        f"document:{doc_id}",
                        "an imported document without a chunk, which no search finds (it is indexed as one at least)",
                    )
                )
            continue
        expected = [
            (c.index, c.text, c.start, c.end)
            for c in document_chunks(doc.body, max_chars=sizes.get(doc.collection_id, DEFAULT_MAX_CHARS))
        ]
        if actual != expected:
            problems.append(
                Problem(
                    "chunks_differ_from_body",
                    f"document:{doc_id}",
                    f"{in_words(len(actual), 'chunk')} stored, {len(expected)} cut from the body, and they differ",
                )
            )
    return problems


def _index_problems(conn: sa.Connection, model_id: str | None, dim: int | None) -> list[Problem]:
    problems: list[Problem] = []
    rows = conn.execute(
        sa.select(chunks.c.id, chunks.c.text, chunks.c.text_hash, documents.c.title).join(
            documents, documents.c.id == chunks.c.document_id
        )
    ).all()
    hashes = {r.id: r.text_hash for r in rows}
    fts: dict[int, str] = {int(r[0]): str(r[1]) for r in conn.execute(sa.text(f"SELECT rowid, body FROM {FTS_TABLE}"))}
    for r in rows:
        if r.text_hash != passage_hash(r.title, r.text):
            problems.append(Problem("chunk_hash_wrong", f"chunk:{r.id}", "its hash is not that of its title and text"))
        indexed = fts.get(r.id)
        if indexed is None:
            problems.append(Problem("fulltext_missing", f"chunk:{r.id}", "not in the full-text index"))
        elif indexed != index_text(passage_text(r.title, r.text)):
            problems.append(Problem("fulltext_stale", f"chunk:{r.id}", "the full-text index holds other text"))
    all_chunks = set(conn.execute(sa.select(chunks.c.id)).scalars())
    for rowid in sorted(set(fts) - all_chunks):
        problems.append(Problem("fulltext_orphan", f"chunk:{rowid}", "a full-text row of a chunk that does not exist"))
    if text_store_pg.is_postgresql(conn):
        # a chunk whose full-text row is already wrong is rebuilt whole: one problem is enough
        fts_wrong = {int(p.target.split(":", 1)[1]) for p in problems if p.kind.startswith("fulltext_")}
        derived = [(r.id, index_text(passage_text(r.title, r.text))) for r in rows if r.id not in fts_wrong]
        problems += _postings_problems(conn, derived, all_chunks)
    for v in conn.execute(
        sa.select(
            chunk_vectors.c.chunk_id,
            chunk_vectors.c.model_id,
            chunk_vectors.c.text_hash,
            sa.func.length(chunk_vectors.c.vector).label("size"),
            _vector_length(conn),
        ).order_by(chunk_vectors.c.chunk_id, chunk_vectors.c.model_id)
    ):
        target = f"chunk:{v.chunk_id}"
        if v.chunk_id not in all_chunks:
            problems.append(Problem("vector_orphan", target, f"a {v.model_id} vector of a chunk that does not exist"))
        elif v.chunk_id in hashes and v.text_hash != hashes[v.chunk_id]:
            problems.append(Problem("vector_stale", target, f"its {v.model_id} vector was computed from other text"))
        elif v.model_id == model_id and dim is not None and v.size != 4 * dim:
            problems.append(
                Problem("vector_malformed", target, f"its {v.model_id} vector holds {v.size} bytes, not {4 * dim}")
            )
        elif v.model_id == model_id and dim is not None:
            wrong = _not_unit(v.length)
            if wrong:
                problems.append(Problem("vector_malformed", target, f"its {v.model_id} vector {wrong}"))
    return problems


def _vector_length(conn: sa.Connection) -> sa.ColumnElement[Any]:
    """What gives each vector's Euclidean length: pgvector computes it on the server, while on SQLite
    the stored bytes are read and measured here (:func:`_not_unit`)."""
    if text_store_pg.is_postgresql(conn):
        return sa.func.vector_norm(chunk_vectors.c.vector, type_=sa.Float).label("length")
    # the raw bytes, not the column's own type: that one converts values on PostgreSQL only
    return sa.type_coerce(chunk_vectors.c.vector, sa.LargeBinary).label("length")


def _not_unit(length: float | bytes | None) -> str | None:
    """Why a vector (its bytes, or its length as the server measured it) is unusable, or ``None``.

    An all-zero vector is left alone: an embedder may give one, and it matches nothing.
    """
    if isinstance(length, bytes | bytearray | memoryview):
        values = np.frombuffer(bytes(length), dtype="<f4")
        if not np.isfinite(values).all():
            return "holds values that are not finite numbers (NaN or infinity)"
        length = float(np.linalg.norm(values.astype(np.float64)))
    if length is None or length == 0.0:
        return None
    if abs(float(length) - 1.0) > _UNIT_TOLERANCE:
        return f"has length {float(length):.6g}, not 1"
    return None


def _postings_problems(conn: sa.Connection, derived: Sequence[tuple[int, str]], all_chunks: set[int]) -> list[Problem]:
    """The stored postings of the chunks in ``derived`` against what the tokenizer gives for their
    derived text; and postings of chunks that do not exist."""
    expected: dict[int, dict[str, int]] = defaultdict(dict)
    for posting in text_store_pg.tokenize(derived, FTS_TOKENIZER):
        expected[int(str(posting["chunk_id"]))][str(posting["term"])] = int(str(posting["tf"]))
    stored: dict[int, dict[str, int]] = defaultdict(dict)
    for term, chunk_id, tf in conn.execute(sa.text(f"SELECT term, chunk_id, tf FROM {FTS_TABLE}_terms")):
        stored[int(chunk_id)][str(term)] = int(tf)
    problems: list[Problem] = []
    for chunk_id, _ in sorted(derived):
        want, have = expected.get(chunk_id, {}), stored.get(chunk_id, {})
        if want == have:
            continue
        missing = sorted(set(want) - set(have))
        extra = sorted(set(have) - set(want))
        wrong = sorted(t for t in set(want) & set(have) if want[t] != have[t])
        parts = [
            f"{len(found)} {what} ({', '.join(found[:3])}{', …' if len(found) > 3 else ''})"
            for what, found in (("missing", missing), ("extra", extra), ("with a wrong frequency", wrong))
            if found
        ]
        problems.append(Problem("postings_differ", f"chunk:{chunk_id}", "full-text postings " + "; ".join(parts)))
    for chunk_id in sorted(set(stored) - all_chunks):
        problems.append(
            Problem("postings_orphan", f"chunk:{chunk_id}", "full-text postings of a chunk that does not exist")
        )
    return problems


def _change_problems(conn: sa.Connection) -> list[Problem]:
    problems: list[Problem] = []
    ids = set(conn.execute(sa.select(changes.c.id)).scalars())
    for row in conn.execute(
        sa.select(changes.c.id, changes.c.status, changes.c.reverted_by).where(
            (changes.c.status == "reverted") | changes.c.reverted_by.is_not(None)
        )
    ):
        if row.status != "reverted" or row.reverted_by not in ids:
            problems.append(
                Problem(
                    "change_revert_link",
                    f"change:{row.id}",
                    f"status {row.status} with reverted_by {row.reverted_by}: a reverted change names "
                    "the existing change that reverted it, and only a reverted one does",
                )
            )
    for fact in conn.execute(sa.select(facts.c.id, facts.c.expired_by).where(facts.c.expired_by.is_not(None))):
        if fact.expired_by not in ids:
            problems.append(
                Problem(
                    "fact_expired_by_missing",
                    f"fact:{fact.id}",
                    f"expired by change {fact.expired_by}, which does not exist",
                )
            )
    return problems


def _transactions(conn: sa.Connection, core: KnowledgeCore) -> dict[tuple[str, str], int]:
    """(writer, local day) → write transactions of writers with a quota, as the change rows show them."""
    tz = core.store.clock.tz
    stamps: dict[tuple[str, str], set[str]] = defaultdict(set)
    for row in conn.execute(
        sa.select(changes.c.actor, changes.c.created_at).where(changes.c.actor != "user").distinct()
    ):
        moment = datetime.fromisoformat(row.created_at.replace("Z", "+00:00"))
        stamps[(row.actor, moment.astimezone(tz).date().isoformat())].add(row.created_at)
    return {key: len(value) for key, value in stamps.items()}


def _quota_problems(conn: sa.Connection, core: KnowledgeCore) -> list[Problem]:
    problems: list[Problem] = []
    counted = {(r.writer, r.day): r.writes for r in conn.execute(sa.select(quota_usage))}
    for (writer, day), seen in sorted(_transactions(conn, core).items()):
        if counted.get((writer, day), 0) < seen:
            problems.append(
                Problem(
                    "quota_undercount",
                    f"quota:{writer}@{day}",
                    f"{in_words(counted.get((writer, day), 0), 'write')} counted, the change log shows {seen}",
                )
            )
    for (writer, day), writes in sorted(counted.items()):
        if writes > DAILY_WRITES:
            problems.append(
                Problem(
                    "quota_over_limit", f"quota:{writer}@{day}", f"{writes} writes counted, the limit is {DAILY_WRITES}"
                )
            )
    return problems


def check(core: KnowledgeCore) -> list[Problem]:
    """Every problem found in the space, in a stable order; an empty list means all is consistent."""
    embedder = core.vectors.embedder
    with read_tx(core.store.engine) as conn:
        return [
            *_documents_problems(conn),
            *_index_problems(conn, embedder.model_id if embedder else None, embedder.dim if embedder else None),
            *_change_problems(conn),
            *_quota_problems(conn, core),
        ]


def _ids(problems: Iterable[Problem], *kinds: str) -> list[int]:
    return sorted({int(p.target.split(":", 1)[1]) for p in problems if p.kind in kinds})


def repair(core: KnowledgeCore, problems: Sequence[Problem] | None = None) -> list[Problem]:
    """Rebuild what is derived for ``problems`` (default: a fresh :func:`check`); returns what was repaired.

    Documents are re-chunked and re-indexed from their bodies; vectors that do not match their chunk
    are dropped, so the worker (or ``reindex``) embeds those chunks again; undercounted quota
    counters are raised to the count the change log shows. Everything happens in one transaction.
    """
    found = list(check(core) if problems is None else problems)
    fixable = [p for p in found if p.repairable]
    if not fixable:
        return []
    if is_read_only(core.store.engine):
        # refused here, in words: a write would fail deep inside the full-text index with the
        # driver's own text
        raise ReadOnlyStoreError(
            f"cannot repair {in_words(len(fixable), 'problem')}: the store {core.store.engine.url.database} "
            "is read-only; make the data directory writable and run the repair again"
        )
    with write_tx(core.store.engine) as conn:
        sizes = chunk_sizes(conn)
        # chunks of a missing document, and their derived rows
        orphan_docs = _ids(fixable, "chunk_without_document")
        if orphan_docs:
            gone = list(conn.execute(sa.select(chunks.c.id).where(chunks.c.document_id.in_(orphan_docs))).scalars())
            fts_delete(conn, FTS_TABLE, gone)
            conn.execute(sa.delete(chunks).where(chunks.c.id.in_(gone)))
        # documents whose chunks, hashes or full-text rows disagree are rebuilt whole from their body
        chunk_ids = _ids(fixable, "chunk_hash_wrong", "fulltext_missing", "fulltext_stale", "postings_differ")
        docs = set(_ids(fixable, "chunks_differ_from_body"))
        if chunk_ids:
            docs |= set(conn.execute(sa.select(chunks.c.document_id).where(chunks.c.id.in_(chunk_ids))).scalars())
        for doc in conn.execute(sa.select(documents).where(documents.c.id.in_(sorted(docs)))).all():
            if doc.body is not None:
                index_document(
                    conn,
                    doc.id,
                    doc.body,
                    title=doc.title,
                    max_chars=sizes.get(doc.collection_id, DEFAULT_MAX_CHARS),
                )
                continue
            # an imported document keeps only its chunks: re-derive what comes from them
            rows = conn.execute(sa.select(chunks.c.id, chunks.c.text).where(chunks.c.document_id == doc.id)).all()
            if not rows:
                # none at all: its text held nothing to cut (else it had chunks), so it is one empty chunk
                index_document(conn, doc.id, "", title=doc.title)
                continue
            for row in rows:
                conn.execute(
                    sa.update(chunks).where(chunks.c.id == row.id).values(text_hash=passage_hash(doc.title, row.text))
                )
            conn.execute(sa.delete(chunk_vectors).where(chunk_vectors.c.chunk_id.in_([r.id for r in rows])))
            fts_insert(conn, FTS_TABLE, ((r.id, passage_text(doc.title, r.text)) for r in rows))
        fts_delete(conn, FTS_TABLE, _ids(fixable, "fulltext_orphan"))
        orphan_postings = _ids(fixable, "postings_orphan")
        if orphan_postings:
            text_store_pg.delete_terms(conn, FTS_TABLE, orphan_postings)
        bad_vectors = _ids(fixable, "vector_stale", "vector_orphan", "vector_malformed")
        if bad_vectors:
            conn.execute(sa.delete(chunk_vectors).where(chunk_vectors.c.chunk_id.in_(bad_vectors)))
        if any(p.kind == "quota_undercount" for p in fixable):
            _recount(conn, core)
        # rows were rewritten outside the change log: every process holding a full-text index
        # (a running console or service) rebuilds it instead of trusting its refresh
        inverted_index_delta.new_generation(conn)
    core.vectors.reset()
    core.vectors.notify()
    return fixable


def _recount(conn: sa.Connection, core: KnowledgeCore) -> None:
    counted = {(r.writer, r.day): r for r in conn.execute(sa.select(quota_usage))}
    for (writer, day), seen in _transactions(conn, core).items():
        row = counted.get((writer, day))
        if row is None:
            conn.execute(sa.insert(quota_usage).values(writer=writer, day=day, writes=seen, chars=0))
        elif row.writes < seen:
            conn.execute(
                sa.update(quota_usage)
                .where(quota_usage.c.writer == writer, quota_usage.c.day == day)
                .values(writes=seen)
            )
