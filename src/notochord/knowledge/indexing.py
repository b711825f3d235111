"""Indexing a document inside its own write transaction: chunks, full-text rows and mentions.

A document is searchable by words the moment its transaction commits. Vectors are derived data: the
chunks written here have no vector yet, which is what queues them for the embedding worker
(:mod:`notochord.search.vector_index`). Each chunk records the hash of what is embedded for it
(:func:`~notochord.search.vector_index.passage_hash`), and chunk ids are never reused, so a vector can
only ever be stored for the text it was computed from.

Mentions (OD-K41): a chunk mentions an entity when it contains, case-insensitively and on word
boundaries, the entity's display name, a ``name`` identifier, an email, or a handle's account
(:mod:`notochord.knowledge.mentions`: one automaton per space and entity-data version).
Mentions are recorded against the entity as it is when the document is written; merges are
followed when searching.
"""

from __future__ import annotations

import threading
import weakref

import sqlalchemy as sa

from notochord.db.schema import chunk_vectors, chunks, mentions
from notochord.knowledge.mentions import MentionIndex
from notochord.search.chunking import DEFAULT_MAX_CHARS, Chunk, chunk_markdown
from notochord.search.textindex import fts_delete, fts_insert
from notochord.search.vector_index import passage_hash, passage_text

__all__ = ["FTS_TABLE", "index_document", "unindex_document", "with_title"]

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
    if not new:
        unindex_document(conn, document_id)
    pieces = chunk_markdown(text, max_chars=max_chars)
    if not pieces:
        return []
    rows = [
        {
            "document_id": document_id,
            "idx": c.index,
            "text": c.text,
            "start": c.start,
            "end": c.end,
            "text_hash": passage_hash(title, c.text),
        }
        for c in pieces
    ]
    ids = list(conn.execute(sa.insert(chunks).returning(chunks.c.id, sort_by_parameter_order=True), rows).scalars())
    # chunk ids are never reused, so these have no full-text rows yet
    fts_insert(conn, FTS_TABLE, zip(ids, (with_title(title, c.text) for c in pieces), strict=True), fresh=True)
    matcher = _mention_index(conn.engine).matcher(conn)
    found = [
        {"chunk_id": chunk_id, "entity_id": entity_id}
        for chunk_id, piece in zip(ids, pieces, strict=True)
        for entity_id in sorted(matcher.mentioned(piece.text))
    ]
    if found:
        conn.execute(sa.insert(mentions), found)
    return pieces


def with_title(title: str, text: str) -> str:
    """What is indexed for a chunk: its document's title, then the chunk."""
    return passage_text(title, text)


def unindex_document(conn: sa.Connection, document_id: int) -> None:
    """Remove the document's chunks with everything derived from them."""
    old = list(conn.execute(sa.select(chunks.c.id).where(chunks.c.document_id == document_id)).scalars())
    if not old:
        return
    fts_delete(conn, FTS_TABLE, old)
    conn.execute(sa.delete(mentions).where(mentions.c.chunk_id.in_(old)))
    conn.execute(sa.delete(chunk_vectors).where(chunk_vectors.c.chunk_id.in_(old)))
    conn.execute(sa.delete(chunks).where(chunks.c.id.in_(old)))
