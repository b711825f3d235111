"""The in-memory full-text index kept current by applying only what changed (K-SRCH-03).

After any sequence of document writes — new documents, edits, retitles (also one that keeps its
chunk ids and its number of tokens), deletions, moves and reverts — the index a search uses holds
exactly what an index rebuilt from the table holds, and ranks bit-identically, on both backends.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import notochord
from notochord.clock import FixedClock
from notochord.db.schema import changes, chunks, documents
from notochord.errors import NotochordError
from notochord.knowledge.indexing import FTS_TABLE, with_title
from notochord.search.bm25 import query_tokens, rank
from notochord.search.inverted_index import CandidateMask, InvertedIndex, build_index, text_index
from notochord.search.textindex import fts_insert
from notochord.search.vector_index import passage_hash
from notochord.settings import Settings

from .index_contents import index_contents

WORDS = ["granite", "river", "maple", "copper", "violet", "quartz", "harbor", "lantern", "meadow", "falcon"]
TITLES = ["alpha", "beta", "gamma", "delta"]
OPS = ["add", "add", "edit", "retitle", "retitle_in_place", "delete", "move", "revert"]


@pytest.fixture
def open_nc(
    tmp_path: Path, clock: FixedClock, new_database_url: Callable[[], str | None]
) -> Iterator[Callable[[], notochord.Notochord]]:
    """Opens fresh data directories (each with its own database) on the test's backend."""
    opened: list[notochord.Notochord] = []
    counter = itertools.count()

    def make() -> notochord.Notochord:
        directory = tmp_path / f"d{next(counter)}"
        config = Settings(data_dir=directory, index_in_background=False, database_url=new_database_url())
        nc = notochord.open(directory, config, clock=clock, embedder=None)
        opened.append(nc)
        return nc

    yield make
    for nc in opened:
        nc.close()


def both_indexes(space: notochord.Space) -> tuple[InvertedIndex, InvertedIndex]:
    """The index searches share, and one rebuilt from the table, in the same snapshot."""
    with space.core.store.read() as conn:
        return text_index(conn, FTS_TABLE), build_index(conn, FTS_TABLE)


def assert_same(space: notochord.Space, rnd: random.Random) -> None:
    shared, rebuilt = both_indexes(space)
    assert shared.version == rebuilt.version
    assert index_contents(shared) == index_contents(rebuilt)
    live = np.asarray(sorted(index_contents(rebuilt)[0]), dtype=np.int64)
    for visible in (live, live[[rnd.random() < 0.5 for _ in live]]):
        tokens = query_tokens(" ".join(rnd.choices(WORDS + TITLES, k=3)))
        ours = rank(shared, CandidateMask.of(shared, shared.mask_of(visible)), tokens, limit=50)
        theirs = rank(rebuilt, CandidateMask.of(rebuilt, rebuilt.mask_of(visible)), tokens, limit=50)
        assert ours == theirs


def body(rnd: random.Random) -> str:
    return " ".join(rnd.choices(WORDS, k=rnd.randint(1, 12)))


def retitle_keeping_ids(space: notochord.Space, doc_id: int, title: str) -> None:
    """A retitle the way a write path that keeps unchanged chunks would do it: same chunk ids, new
    ``text_hash`` and full-text rows, one change record naming the document."""
    store = space.core.store
    with store.engine.begin() as conn:
        rows = conn.execute(sa.select(chunks.c.id, chunks.c.text).where(chunks.c.document_id == doc_id)).all()
        conn.execute(sa.update(documents).where(documents.c.id == doc_id).values(title=title))
        for row in rows:
            conn.execute(sa.update(chunks).where(chunks.c.id == row.id).values(text_hash=passage_hash(title, row.text)))
        fts_insert(conn, FTS_TABLE, [(row.id, with_title(title, row.text)) for row in rows])
        conn.execute(
            sa.insert(changes).values(
                actor="user",
                op="update",
                target_type="document",
                target_id=doc_id,
                summary="retitled",
                status="applied",
                created_at="2026-09-29T08:00:00.000Z",
            )
        )


def apply(nc: notochord.Notochord, op: str, key: int, rnd: random.Random, where: dict[int, str]) -> None:
    docs = nc.personal.user.documents
    name = f"d{key}"
    found = docs.get_by_key(where[key], name) if key in where else None
    try:
        if op == "add" or found is None:
            where.setdefault(key, "keep")
            docs.upsert(collection=where[key], key=name, title=rnd.choice(TITLES), body=body(rnd))
        elif op == "edit":
            docs.upsert(collection=where[key], key=name, title=found.title, body=body(rnd))
        elif op == "retitle":
            docs.upsert(collection=where[key], key=name, title=rnd.choice(TITLES) + " new", body=found.body)
        elif op == "retitle_in_place":
            # same number of tokens as the old title, so only the change log can tell
            retitle_keeping_ids(nc.personal, found.id, rnd.choice(TITLES))
        elif op == "delete":
            docs.delete(found.id)
            where.pop(key)
        elif op == "move":
            where[key] = "diary" if where[key] == "keep" else "keep"
            docs.move(found.id, collection=where[key])
        elif op == "revert":
            nc.personal.changes.revert()
            for k in list(where):
                if docs.get_by_key(where[k], f"d{k}") is None:
                    where.pop(k)
    except NotochordError:
        pass  # a revert that conflicts, or a document gone meanwhile: the index must still match


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)])
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.generate],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    steps=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 5)), min_size=1, max_size=14),
)
def test_the_index_kept_current_equals_a_rebuild_after_any_writes(
    open_nc: Callable[[], notochord.Notochord], backend: str, seed: int, steps: list[tuple[str, int]]
) -> None:
    """K-SRCH-03: after every write of a random sequence of upserts, edits,
    retitles (one keeping its chunk ids and token count), deletions, moves and reverts, the shared
    index holds the same chunks, lengths and postings as a rebuild, and ranks bit-identically."""
    rnd = random.Random(seed)
    nc = open_nc()
    where: dict[int, str] = {}
    docs = nc.personal.user.documents
    for i in range(3):
        where[i] = "keep"
        docs.upsert(collection="keep", key=f"d{i}", title=TITLES[i], body=body(rnd))
    assert_same(nc.personal, rnd)
    for op, key in steps:
        apply(nc, op, key, rnd, where)
        assert_same(nc.personal, rnd)


def test_a_retitle_that_keeps_the_chunk_ids_and_token_count_is_seen(open_nc: Callable[[], notochord.Notochord]) -> None:
    """The chunks keep their ids and FTS5 counts as many rows and tokens as before;
    the change log names the document, so the next search finds it by its new title only."""
    nc = open_nc()
    space = nc.personal
    space.user.documents.upsert(collection="keep", key="k", title="alpha", body="granite river")
    doc = space.user.documents.get_by_key("keep", "k")
    assert doc is not None
    before, _ = both_indexes(space)
    retitle_keeping_ids(space, doc.id, "gamma")
    after, rebuilt = both_indexes(space)
    assert after.ids.tolist() == before.ids.tolist()
    assert index_contents(after) == index_contents(rebuilt)
    assert "alpha" not in index_contents(after)[1] and "gamma" in index_contents(after)[1]
    assert [h.title for h in space.user.search("gamma")] == ["gamma"]
    assert space.user.search("alpha") == []


def test_a_write_by_another_process_is_seen_by_the_next_search(
    tmp_path: Path, clock: FixedClock, open_nc: Callable[[], notochord.Notochord]
) -> None:
    """Another process adds one document and deletes another; this process's next
    search sees both, and its index still equals a rebuild."""
    directory = tmp_path / "shared"
    config = Settings(data_dir=directory, index_in_background=False)
    with notochord.open(directory, config, clock=clock, embedder=None) as nc:
        docs = nc.personal.user.documents
        for i in range(5):
            docs.upsert(collection="keep", key=f"d{i}", title=f"note {i}", body=f"granite river {WORDS[i]}")
        assert len(nc.personal.user.search("granite")) == 5
        script = (
            "import notochord, sys\n"
            "from notochord.settings import Settings\n"
            "d = sys.argv[1]\n"
            "with notochord.open(d, Settings(data_dir=d, index_in_background=False), embedder=None) as nc:\n"
            "    docs = nc.personal.user.documents\n"
            "    docs.upsert(collection='keep', key='new', title='fresh', body='granite obsidian')\n"
            "    docs.delete(docs.get_by_key('keep', 'd0').id)\n"
        )
        subprocess.run([sys.executable, "-c", script, str(directory)], check=True, timeout=120)
        titles = [h.title for h in nc.personal.user.search("granite")]
        assert "fresh" in titles and "note 0" not in titles and len(titles) == 5
        assert [h.title for h in nc.personal.user.search("obsidian")] == ["fresh"]
        shared, rebuilt = both_indexes(nc.personal)
        assert index_contents(shared) == index_contents(rebuilt)


def test_a_reader_a_write_behind_gets_the_index_of_its_own_snapshot(
    open_nc: Callable[[], notochord.Notochord],
) -> None:
    """A search that began before another write was refreshed into the shared
    index still ranks over its own snapshot's index (the last few versions are kept)."""
    nc = open_nc()
    space = nc.personal
    space.user.documents.upsert(collection="keep", key="a", title="first", body="granite river")
    with space.core.store.read() as old:
        before = text_index(old, FTS_TABLE)
        space.user.documents.upsert(collection="keep", key="b", title="second", body="granite quartz")
        assert [h.title for h in space.user.search("quartz")] == ["second"]
        again = text_index(old, FTS_TABLE)
        assert again is before
        assert index_contents(again) == index_contents(build_index(old, FTS_TABLE))
    assert len(space.user.search("granite")) == 2
