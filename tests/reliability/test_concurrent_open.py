"""Many processes opening the same data directory at once: every one of them gets a working store.

The processes are forked from this one (notochord is already imported, so they start in
milliseconds) and released together by a barrier, the closest a test gets to simultaneous starts.
"""

from __future__ import annotations

import multiprocessing
import traceback
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from notochord.db.migrate import head_revision
from notochord.settings import Settings

PROCESSES = 16


def _open_and_write(data: Path, barrier: Barrier, results: Queue[str], n: int) -> None:
    try:
        barrier.wait(timeout=60)
        settings = Settings(data_dir=data, index_in_background=False, embedder="none")
        with notochord.open(data, settings, embedder=None) as nc:
            nc.personal.user.facts.put(predicate="work.title", value=f"title {n}")
        results.put("ok")
    except BaseException:  # every failure must reach the parent, whatever it is
        results.put(traceback.format_exc())


@pytest.mark.slow
def test_sixteen_processes_opening_a_fresh_data_directory_at_once_all_succeed(tmp_path: Path) -> None:
    """The schema is created once, the others wait for it instead of failing on a lock."""
    # One open before forking loads every module, so the children race on the store, not on imports.
    warm = Settings(data_dir=tmp_path / "warm", index_in_background=False, embedder="none")
    with notochord.open(tmp_path / "warm", warm, embedder=None) as nc:
        nc.personal.user.facts.put(predicate="work.title", value="warm")
    context = multiprocessing.get_context("fork")
    for trial in range(3):
        data = tmp_path / f"data-{trial}"
        barrier = context.Barrier(PROCESSES)
        results: Queue[str] = context.Queue()
        children = [context.Process(target=_open_and_write, args=(data, barrier, results, n)) for n in range(PROCESSES)]
        for child in children:
            child.start()
        outcomes = [results.get(timeout=120) for _ in children]
        for child in children:
            child.join(timeout=60)
        failures = [o for o in outcomes if o != "ok"]
        assert failures == [], f"trial {trial}: {len(failures)} of {PROCESSES} failed, first:\n{failures[0]}"

        engine = sa.create_engine(f"sqlite:///{data / 'spaces' / 'personal.db'}")
        with engine.connect() as conn:
            assert conn.execute(sa.text("select version_num from alembic_version")).scalars().all() == [head_revision()]
            titles = conn.execute(
                sa.text("select count(*) from facts where predicate = 'work.title' and valid_to is null")
            )
            assert titles.scalar_one() == 1, "work.title is single-valued: the last write stands alone"
        engine.dispose()
