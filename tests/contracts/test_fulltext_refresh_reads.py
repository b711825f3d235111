"""Contract: refreshing the full-text index costs what changed, not the size of the space.

The rows and postings a search reads to bring the shared in-memory index up to date after one
document is written, edited or deleted are counted (``inverted_index_delta.reads``): they are that
document's, whether the space holds 200 documents or 2,000.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import notochord
from notochord.clock import FixedClock
from notochord.search import inverted_index_delta
from notochord.settings import Settings

WORDS = ["granite", "river", "maple", "copper", "violet", "quartz", "harbor", "lantern", "meadow", "falcon"]


@pytest.fixture
def space_of(tmp_path: Path, clock: FixedClock) -> Iterator[Callable[[int], notochord.Space]]:
    """A space on a SQLite file holding ``n`` documents, its full-text index built by one search."""
    opened: list[notochord.Notochord] = []

    def make(n: int) -> notochord.Space:
        directory = tmp_path / f"space{n}"
        nc = notochord.open(directory, Settings(data_dir=directory, index_in_background=False), clock=clock)
        opened.append(nc)
        rnd = random.Random(n)
        nc.personal.user.documents.upsert_many(
            [
                {"collection": "keep", "key": f"d{i}", "title": f"t{i}", "body": " ".join(rnd.choices(WORDS, k=20))}
                for i in range(n)
            ]
        )
        nc.personal.user.search("granite")
        return nc.personal

    yield make
    for nc in opened:
        nc.close()


def read_by(action: Callable[[], object], space: notochord.Space, query: str) -> tuple[int, int, list[str]]:
    """Rows and postings the next search reads after ``action``, and the titles it finds."""
    action()
    rows, postings = inverted_index_delta.reads.rows, inverted_index_delta.reads.postings
    titles = [h.title for h in space.user.search(query)]
    return inverted_index_delta.reads.rows - rows, inverted_index_delta.reads.postings - postings, titles


@pytest.mark.parametrize("size", [200, 2000])
def test_one_new_document_is_all_a_refresh_reads(space_of: Callable[[int], notochord.Space], size: int) -> None:
    """After one new one-chunk document, the search reads its row, its chunk's
    hash, the change log's one document, and its five postings (one, more, granite, obsidian, falcon)."""
    space = space_of(size)
    add = lambda: space.user.documents.upsert(  # noqa: E731
        collection="keep", key="one", title="one more", body="granite obsidian obsidian falcon"
    )
    rows, postings, titles = read_by(add, space, "obsidian")
    assert titles == ["one more"]
    assert rows <= 4
    assert postings == 5


@pytest.mark.parametrize("size", [200, 2000])
def test_one_deleted_or_edited_document_is_all_a_refresh_reads(
    space_of: Callable[[int], notochord.Space], size: int
) -> None:
    """Deleting one document reads the change log's entry (its chunks are gone);
    editing one reads its new chunk and postings — never the ids of the whole space."""
    space = space_of(size)
    doc = space.user.documents.get_by_key("keep", "d1")
    assert doc is not None
    rows, postings, _ = read_by(lambda: space.user.documents.delete(doc.id), space, "granite")
    assert rows <= 2 and postings == 0
    edit = lambda: space.user.documents.upsert(collection="keep", key="d2", title="t2", body="basalt")  # noqa: E731
    rows, postings, titles = read_by(edit, space, "basalt")
    assert titles == ["t2"]
    assert rows <= 8 and postings == 2
