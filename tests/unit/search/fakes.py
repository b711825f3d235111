"""Test fakes for the search machinery.

:class:`HashedNgramEmbedder` is a deterministic stand-in for a real embedding model: texts that share
character trigrams get similar vectors. It exists only here, never in ``src/`` (DESIGN §9, OD-K38).
:func:`clustered` makes unit vectors with neighbourhoods, as embeddings have.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from notochord.search.embeddings import normalise_rows


class HashedNgramEmbedder:
    """Hashes lowercase character trigrams into ``dim`` buckets and L2-normalises the counts."""

    def __init__(self, *, dim: int = 128, multilingual: bool = True) -> None:
        self._dim = dim
        self._multilingual = multilingual
        self.calls = 0

    @property
    def model_id(self) -> str:
        return f"test/hashed-trigram-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def multilingual(self) -> bool:
        return self._multilingual

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        vec = np.zeros(self._dim, dtype=np.float32)
        padded = f"  {text.lower()}  "
        for i in range(len(padded) - 2):
            vec[zlib.crc32(padded[i : i + 3].encode("utf-8")) % self._dim] += 1.0
        return vec

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return normalise_rows(np.stack([self._vector(t) for t in texts]))

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        self.calls += 1
        return normalise_rows(self._vector(text))


def clustered(n: int, *, seed: int, dim: int) -> npt.NDArray[np.float32]:
    """``n`` unit vectors drawn around ``n // 100`` random centres (random points in many dimensions
    have no neighbourhoods to find; embeddings do, so nearest-neighbour recall is measured on these)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(n // 100, 4), dim)).astype(np.float32)
    points = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    norms: npt.NDArray[np.float32] = np.linalg.norm(points, axis=1, keepdims=True)
    return (points / norms).astype(np.float32)


class PlaneEmbedder:
    """Vectors in a plane: every query points along x; a subclass places each passage (``_vector``)."""

    model_id = "test/plane-2"
    dim = 2
    multilingual = True

    @staticmethod
    def _vector(text: str) -> npt.NDArray[np.float32]:
        return np.array([0.0, 1.0], np.float32)

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return normalise_rows(np.stack([self._vector(t) for t in texts]))

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return normalise_rows(np.array([1.0, 0.0], np.float32))
