"""A write is visible to the very next search, and costs that search what it wrote.

The candidates a search may find are kept per filter and data version and brought forward from the
change log after a write (:mod:`notochord.knowledge.candidates`). These tests hold the guarantees
around that: the host API's and a gem's next search see a new, edited, deleted, moved or reverted
document — with both legs of search running, on both backends — a write by another process is seen
as well, and the rows read to bring the candidates forward are those of the written document.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from docs_fixtures import fake_embedder, gem, titles

import notochord
from notochord import Space
from notochord.clock import FixedClock
from notochord.knowledge import candidates
from notochord.settings import Settings

pytestmark = pytest.mark.anyio


def _fill(space: Space, n: int) -> None:
    space.user.documents.upsert_many(
        [
            {"collection": "keep", "key": f"d{i}", "title": f"note {i}", "body": f"granite river note {i}"}
            for i in range(n)
        ]
    )
    space.index.wait()


async def test_each_write_is_visible_to_the_next_host_and_gem_search(space: Space, gems_root: Path) -> None:
    """K-SRCH-03: after each write the very next
    search — the host's and a gem that reads ``keep`` only — finds exactly what is there now (the
    document matching the words first, nothing deleted or moved out of reach), with the candidates
    brought forward from the change log rather than read whole."""
    _fill(space, 20)
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    other = space.user.collections.create("Private").id

    def host(query: str) -> list[str]:
        # the passages matching a word (the new chunks have no vector yet: the vector leg ranks the rest)
        return [h.title for h in space.user.search(query, limit=50) if h.text_match]

    async def gems(query: str) -> list[str]:
        return [h.title for h in await api.search(query, {"limit": 50})]

    assert "Obsidian" not in host("obsidian")
    assert "Obsidian" not in await gems("obsidian")
    whole = candidates.reads.whole

    space.user.documents.upsert(collection="keep", key="new", title="Obsidian", body="obsidian falcon")
    assert host("obsidian") == ["Obsidian"]
    assert "Obsidian" in await gems("obsidian")

    space.user.documents.upsert(collection="keep", key="new", title="Basalt", body="basalt falcon")
    assert host("obsidian") == []
    assert host("basalt") == ["Basalt"]
    assert "Basalt" in await gems("basalt")

    loose = space.user.documents.upsert(collection="keep", title="Pumice", body="pumice stone").id
    assert host("pumice") == ["Pumice"]
    moved = space.user.documents.move(loose, collection=other)
    assert host("pumice") == ["Pumice"]  # the user reads every collection
    assert "Pumice" not in await gems("pumice")
    space.changes.revert(moved)
    assert "Pumice" in await gems("pumice")

    doc = space.user.documents.get_by_key("keep", "new")
    assert doc is not None
    deleted = space.user.documents.delete(doc.id)
    assert host("basalt") == []
    assert "Basalt" not in await gems("basalt")
    space.changes.revert(deleted)
    assert host("basalt") == ["Basalt"]
    assert "Basalt" in await gems("basalt")
    # every write was brought forward: no search after one read its candidates whole
    assert candidates.reads.whole == whole


def test_a_write_by_another_process_is_seen_by_the_next_search(
    space: Space, nc: notochord.Notochord, tmp_path: Path, clock: FixedClock
) -> None:
    """ "A write is visible to the next search": a second process on the same data — another
    open of the space (its own engine and caches) — writes; this process's next search sees it."""
    _fill(space, 10)
    assert "Far" not in titles(space.user.search("obsidian", limit=50))
    with notochord.open(nc.settings.data_dir, nc.settings, clock=clock, embedder=fake_embedder()) as second:
        second.personal.user.documents.upsert(collection="keep", key="far", title="Far", body="obsidian far away")
        doc = second.personal.user.documents.get_by_key("keep", "d3")
        assert doc is not None
        second.personal.user.documents.delete(doc.id)
    assert [h.title for h in space.user.search("obsidian") if h.text_match] == ["Far"]
    assert "note 3" not in titles(space.user.search("granite", limit=50))


def test_a_write_by_a_subprocess_is_seen_by_the_next_search(tmp_path: Path, clock: FixedClock) -> None:
    """A separate Python process writes to the SQLite file; the next search here sees it."""
    directory = tmp_path / "shared"
    settings = Settings(data_dir=directory, index_in_background=False)
    with notochord.open(directory, settings, clock=clock, embedder=None) as nc:
        _fill(nc.personal, 10)
        assert titles(nc.personal.user.search("obsidian")) == []
        script = (
            "import sys, notochord\n"
            "from notochord.settings import Settings\n"
            "d = sys.argv[1]\n"
            "with notochord.open(d, Settings(data_dir=d, index_in_background=False), embedder=None) as nc:\n"
            "    nc.personal.user.documents.upsert(collection='keep', key='far', title='Far', body='obsidian')\n"
        )
        subprocess.run([sys.executable, "-c", script, str(directory)], check=True, timeout=120)
        assert titles(nc.personal.user.search("obsidian")) == ["Far"]


@pytest.mark.parametrize("size", [50, 500])
def test_one_written_document_is_all_the_candidates_read(space: Space, size: int) -> None:
    """After one document is written, edited, moved or deleted, bringing the candidates of
    a search forward reads that document's chunk rows only — the same count whatever the space's size."""
    _fill(space, size)
    other = space.user.collections.create("Private").id
    space.user.search("granite")
    space.user.search("granite", collections=["keep"])

    def rows_read_by_next_searches() -> int:
        before, whole = candidates.reads.rows, candidates.reads.whole
        space.user.search("granite")
        space.user.search("granite", collections=["keep"])
        assert candidates.reads.whole == whole
        return candidates.reads.rows - before

    space.user.documents.upsert(collection="keep", key="one", title="one", body="granite obsidian")
    assert rows_read_by_next_searches() == 2  # its one chunk, for each of the two filters
    space.user.documents.upsert(collection="keep", key="one", title="one", body="granite basalt")
    assert rows_read_by_next_searches() == 2
    loose = space.user.documents.upsert(collection="keep", title="loose", body="granite pumice").id
    assert rows_read_by_next_searches() == 2
    space.user.documents.move(loose, collection=other)
    assert rows_read_by_next_searches() == 1  # still a candidate of every collection, no longer of keep
    space.user.facts.put(predicate="pref.colour", value="green")
    assert rows_read_by_next_searches() == 0
    doc = space.user.documents.get_by_key("keep", "one")
    assert doc is not None
    space.user.documents.delete(doc.id)
    assert rows_read_by_next_searches() == 0
