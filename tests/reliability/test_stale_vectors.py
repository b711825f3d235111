"""A vector is stored only for the exact text it was computed from.

An edit (or a delete followed by a new upload) that commits while the embedder is
working on a batch must leave the new chunks pending, never holding the old text's vectors.
The embedder here is deterministic and stops mid-batch until the test has written.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.db.schema import chunk_vectors, chunks, documents
from notochord.knowledge.check import check
from notochord.knowledge.indexing import unindex_document
from notochord.search.embeddings import Embedder, normalise_rows
from notochord.search.vector_index import passage_text
from notochord.settings import Settings

DIM = 16


class GatedEmbedder(Embedder):
    """A text's vector is a pure function of its bytes; with ``hold()`` the next batch waits for ``release``."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self._hold = False

    @property
    def model_id(self) -> str:
        return f"test/gated-{DIM}"

    @property
    def dim(self) -> int:
        return DIM

    @property
    def multilingual(self) -> bool:
        return True

    def hold(self) -> None:
        self._hold = True
        self.entered.clear()
        self.release.clear()

    @staticmethod
    def vector(text: str) -> npt.NDArray[np.float32]:
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        return normalise_rows(np.frombuffer(digest[:DIM], dtype=np.uint8).astype(np.float32) - 127.5)

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, DIM), dtype=np.float32)
        if self._hold:
            self._hold = False
            self.entered.set()
            assert self.release.wait(timeout=30), "the test never released the embedder"
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.vector(text)


OLD = "\n\n".join(f"Old paragraph {i} about sourdough starters and rye flour." * 3 for i in range(4))
NEW = "\n\n".join(f"New paragraph {i} about tomato beef stew simmered for hours." * 3 for i in range(4))


@pytest.fixture
def gated() -> GatedEmbedder:
    return GatedEmbedder()


@pytest.fixture
def vault(tmp_path: Path, clock: FixedClock, gated: GatedEmbedder) -> Iterator[notochord.Space]:
    settings = Settings(data_dir=tmp_path / "data", index_in_background=False)
    with notochord.open(tmp_path / "data", settings, clock=clock, embedder=gated) as nc:
        yield nc.personal


def _stale_vectors(space: notochord.Space, embedder: GatedEmbedder) -> list[int]:
    """Chunks whose stored vector is not the vector of their current title and text."""
    with space.core.store.read() as conn:
        rows = conn.execute(
            sa.select(chunks.c.id, chunks.c.text, documents.c.title, chunk_vectors.c.vector)
            .join(documents, documents.c.id == chunks.c.document_id)
            .join(chunk_vectors, chunk_vectors.c.chunk_id == chunks.c.id)
        ).all()
    return [
        r.id
        for r in rows
        if not np.array_equal(np.frombuffer(r.vector, dtype="<f4"), embedder.vector(passage_text(r.title, r.text)))
    ]


def _chunk_ids(space: notochord.Space, doc_id: int) -> list[int]:
    with space.core.store.read() as conn:
        return list(conn.execute(sa.select(chunks.c.id).where(chunks.c.document_id == doc_id)).scalars())


def _edit(space: notochord.Space, doc_id: int) -> int:
    space.user.documents.upsert(collection="keep", key="bread", title="Kitchen", body=NEW)
    return doc_id


def _delete_and_upload(space: notochord.Space, doc_id: int) -> int:
    # what the REST service does: the document and everything derived from it go, physically
    with space.core.store.engine.begin() as conn:
        unindex_document(conn, doc_id)
        conn.execute(sa.delete(documents).where(documents.c.id == doc_id))
    return space.user.documents.upsert(collection="keep", key="bread", title="Kitchen", body=NEW).id


@pytest.mark.parametrize("write", [_edit, _delete_and_upload], ids=["edit", "delete-then-upload"])
def test_a_write_during_an_embedding_batch_leaves_its_chunks_pending_not_stale(
    vault: notochord.Space, gated: GatedEmbedder, write: object
) -> None:
    """K-SRCH-02: the batch's vectors of the old text are not kept for the new chunks."""
    doc_id = vault.user.documents.upsert(collection="keep", key="bread", title="Kitchen", body=OLD).id
    gated.hold()
    worker = threading.Thread(target=vault.index.process_batch)
    worker.start()
    assert gated.entered.wait(timeout=30)
    new_id = write(vault, doc_id)  # type: ignore[operator]
    gated.release.set()
    worker.join(timeout=30)

    new_chunks = _chunk_ids(vault, new_id)
    assert new_chunks, "the new text was chunked"
    assert _stale_vectors(vault, gated) == []
    assert check(vault.core) == []
    assert vault.index.pending() == len(new_chunks)

    vault.index.wait()

    assert vault.index.pending() == 0
    assert _stale_vectors(vault, gated) == []
    assert check(vault.core) == []
    with vault.core.store.read() as conn:
        embedded = set(conn.execute(sa.select(chunk_vectors.c.chunk_id)).scalars())
    assert embedded == set(new_chunks)
    hits = vault.search("New paragraph 0 about tomato beef stew simmered for hours.", limit=1)
    assert hits and "tomato beef stew" in hits[0].text


def test_chunk_ids_are_never_reused(vault: notochord.Space) -> None:
    """An edit's new chunks get ids no chunk ever had, even when the old ones were the newest."""
    doc_id = vault.user.documents.upsert(collection="keep", key="bread", title="Kitchen", body=OLD).id
    before = _chunk_ids(vault, doc_id)
    vault.user.documents.upsert(collection="keep", key="bread", title="Kitchen", body=NEW)
    after = _chunk_ids(vault, doc_id)
    assert min(after) > max(before)
