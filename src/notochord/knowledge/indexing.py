"""Indexing a document inside its own write transaction: chunks, full-text rows and mentions.

A document is searchable by words the moment its transaction commits, and has at least one chunk:
one without text is one empty chunk carrying its title
(:func:`~notochord.search.chunking.document_chunks`). Vectors are derived data: the
chunks written here have no vector yet, which is what queues them for the embedding worker
(:mod:`notochord.search.vector_index`). Each chunk records the hash of what is embedded for it
(:func:`~notochord.search.vector_index.passage_hash`), and chunk ids are never reused, so a vector can
only ever be stored for the text it was computed from.

Mentions (OD-K41): a chunk mentions an entity when it contains, case-insensitively and on word
boundaries, the entity's display name, a ``name`` identifier, an email, or a handle's account
(:mod:`notochord.knowledge.mentions`: one automaton per space and entity-data version).
Mentions are recorded against the entity as it is when the document is written; merges are
followed when searching.

Many documents are indexed at once (:func:`index_documents`, what a batch of writes does before
it commits): the rows of all their chunks, full-text rows, postings and mentions go in one
statement each (:mod:`notochord.db.bulk`): indexing a batch takes a fixed number of statements.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from notochord.db.bulk import insert_rows
from notochord.db.schema import chunk_vectors, chunks, kb_knowledge_bases, mentions
from notochord.knowledge.mentions import MentionIndex
from notochord.search.chunking import DEFAULT_MAX_CHARS, Chunk, document_chunks
from notochord.search.textindex import fts_delete, fts_insert
from notochord.search.vector_index import passage_hash, passage_text

__all__ = [
    "FTS_TABLE",
    "IndexWork",
    "chunk_sizes",
    "index_document",
    "index_documents",
    "unindex_document",
    "unindex_documents",
    "with_title",
]

FTS_TABLE = "chunks_fts"

# One mention index per space database, shared by every writer of that space in this process.
_INDEXES: weakref.WeakKeyDictionary[sa.Engine, MentionIndex] = weakref.WeakKeyDictionary()
_INDEXES_LOCK = threading.Lock()


def _mention_index(engine: sa.Engine) -> MentionIndex:
    with _INDEXES_LOCK:
        found = _INDEXES.get(engine)
        if found is None:
            found = _INDEXES[engine] = MentionIndex()
        return found


@dataclass(frozen=True, slots=True)
class IndexWork:
    """One document to (re)index: its id, the text to chunk, its title; ``new`` when it was
    inserted in this transaction, so it has nothing to replace."""

    document_id: int
    text: str
    title: str = ""
    new: bool = False


def index_document(
    conn: sa.Connection,
    document_id: int,
    text: str,
    *,
    title: str = "",
    max_chars: int = DEFAULT_MAX_CHARS,
    new: bool = False,
) -> list[Chunk]:
    """Replace the document's chunks, full-text rows and mentions with those of ``text``.

    The title is indexed with every chunk (a passage about "simmer two hours" is found by the
    recipe's name), while the chunk text and its locator stay exactly the document's characters.
    ``new``: the document was inserted in this transaction, so it has nothing to replace.
    """
    return index_documents(conn, [IndexWork(document_id, text, title, new)], max_chars=max_chars)[0]


def index_documents(
    conn: sa.Connection, work: Sequence[IndexWork], *, max_chars: int = DEFAULT_MAX_CHARS
) -> list[list[Chunk]]:
    """:func:`index_document` for many documents at once (each at most once), in ``conn``'s transaction.

    What is stored is exactly what indexing them one after another stores, chunk ids ascending in
    the same order; the statements are a fixed number whatever the number of documents and chunks:
    the old chunks and what derives from them go by document, the new chunks, their full-text rows
    and their mentions in one statement each (:func:`~notochord.knowledge.bulk.insert_rows`), with
    one matcher for all of them.
    """
    if len({w.document_id for w in work}) != len(work):
        raise ValueError("each document is indexed at most once per call")
    unindex_documents(conn, [w.document_id for w in work if not w.new])
    # A document without text is one empty passage (see document_chunks). Its full-text row is its
    # title alone, and the vector leg embeds that same title rather than nothing: the title is all
    # the document says about itself, both legs rank the same passage text, and its hash, the check
    # and the embedding queue need no case of their own (a passage never embedded would stay pending
    # for good, and a knowledge base's document "indexing"). Untitled too, its passage text is empty:
    # no query word matches it, and it is embedded like any passage.
    pieces = [document_chunks(w.text, max_chars=max_chars) for w in work]
    rows = [
        {
            "document_id": w.document_id,
            "idx": c.index,
            "text": c.text,
            "start": c.start,
            "end": c.end,
            "text_hash": passage_hash(w.title, c.text),
        }
        for w, found in zip(work, pieces, strict=True)
        for c in found
    ]
    if not rows:
        return pieces
    insert_rows(conn, chunks, rows)
    # the documents had no chunks left, so theirs are exactly the rows just written
    ids = {
        (r.document_id, r.idx): int(r.id)
        for r in conn.execute(
            sa.select(chunks.c.id, chunks.c.document_id, chunks.c.idx).where(
                chunks.c.document_id.in_(sorted({w.document_id for w in work}))
            )
        )
    }
    chunk_ids = [ids[(r["document_id"], r["idx"])] for r in rows]
    texts = [with_title(w.title, c.text) for w, found in zip(work, pieces, strict=True) for c in found]
    # chunk ids are never reused, so these have no full-text rows yet
    fts_insert(conn, FTS_TABLE, zip(chunk_ids, texts, strict=True), fresh=True)
    matcher = _mention_index(conn.engine).matcher(conn)
    found_mentions = [
        {"chunk_id": chunk_id, "entity_id": entity_id}
        for chunk_id, piece in zip(chunk_ids, (c for found in pieces for c in found), strict=True)
        for entity_id in sorted(matcher.mentioned(piece.text))
    ]
    insert_rows(conn, mentions, found_mentions)
    return pieces


def chunk_sizes(conn: sa.Connection) -> dict[int, int]:
    """Collection id → chunk size, for the collections of knowledge bases with their own size
    (every other document is cut at :data:`~notochord.search.chunking.DEFAULT_MAX_CHARS`)."""
    sizes: dict[int, int] = {}
    for row in conn.execute(sa.select(kb_knowledge_bases.c.collection_id, kb_knowledge_bases.c.settings_json)):
        try:
            size = json.loads(row.settings_json).get("chunkSize", DEFAULT_MAX_CHARS)
        except (ValueError, AttributeError):
            continue
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            sizes[row.collection_id] = size
    return sizes


def with_title(title: str, text: str) -> str:
    """What is indexed for a chunk: its document's title, then the chunk."""
    return passage_text(title, text)


def unindex_document(conn: sa.Connection, document_id: int) -> None:
    """Remove the document's chunks with everything derived from them."""
    unindex_documents(conn, [document_id])


def unindex_documents(conn: sa.Connection, document_ids: Sequence[int]) -> None:
    """Remove the chunks of ``document_ids`` with everything derived from them, a few statements in all."""
    if not document_ids:
        return
    docs = sorted({int(d) for d in document_ids})
    old = list(conn.execute(sa.select(chunks.c.id).where(chunks.c.document_id.in_(docs))).scalars())
    if not old:
        return
    # by document rather than by chunk id: a long document's chunk ids would overflow a statement's parameters
    doomed = sa.select(chunks.c.id).where(chunks.c.document_id.in_(docs)).scalar_subquery()
    fts_delete(conn, FTS_TABLE, old)
    conn.execute(sa.delete(mentions).where(mentions.c.chunk_id.in_(doomed)))
    conn.execute(sa.delete(chunk_vectors).where(chunk_vectors.c.chunk_id.in_(doomed)))
    conn.execute(sa.delete(chunks).where(chunks.c.document_id.in_(docs)))
