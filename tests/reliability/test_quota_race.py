"""Sixteen processes writing through one gem share its daily quota exactly, from a fresh data directory on.

Each process opens the same, not yet existing, data directory at once (the schema is created once);
one installs the gem while the others wait; then all of them write through the gem as fast as they
can until the quota refuses. Every write they were told succeeded must be in the store, and no more
than the quota.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import traceback
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from notochord.errors import KnowledgeQuotaError
from notochord.knowledge.quotas import DAILY_WRITES
from notochord.settings import Settings
from postgres_server import BACKENDS

PROCESSES = 16
GEM = "racer"
PERMISSIONS = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]
MANIFEST = {
    "id": GEM,
    "name": "Racer",
    "version": "1.0.0",
    "description": "Writes food preferences as fast as it can",
    "permissions": {"knowledge": {"permissions": PERMISSIONS}},
    "tools": [{"name": "main", "entry": "tools/main.mjs", "permissions": {"knowledge": True}}],
}


def _settings(data: Path, database_url: str | None = None) -> Settings:
    return Settings(data_dir=data, index_in_background=False, embedder="none", database_url=database_url)


async def _write_until_refused(space: notochord.Space, n: int) -> tuple[int, str]:
    knowledge = space.gems.context(GEM, run_id=None).knowledge
    assert knowledge is not None
    done = 0
    while True:
        try:
            await knowledge.facts.put(predicate_hint="pref.food.like", value=f"dish {n}-{done}")
        except KnowledgeQuotaError as exc:
            return done, exc.message
        done += 1


def _race(
    data: Path, url: str | None, gem_folder: Path, opened: Barrier, installed: Barrier, results: Queue[str], n: int
) -> None:
    try:
        opened.wait(timeout=60)
        with notochord.open(data, _settings(data, url), embedder=None) as nc:
            space = nc.personal
            if n == 0:
                space.gems.install(gem_folder)
                for permission in PERMISSIONS:
                    space.gems.set_permission(GEM, permission, True)
            installed.wait(timeout=60)
            done, refusal = asyncio.run(_write_until_refused(space, n))
        results.put(json.dumps({"done": done, "refusal": refusal}))
    except BaseException:  # every failure must reach the parent, whatever it is
        results.put(json.dumps({"error": traceback.format_exc()}))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.slow
def test_sixteen_processes_through_one_gem_write_exactly_its_daily_quota_from_a_fresh_data_dir(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """The quota race, a fresh data dir included (K-QUOTA-01, K-QUOTA-05).

    The same on PostgreSQL, where the sixteen processes also race to create the space's database.
    """
    url = request.getfixturevalue("database_url") if backend == "postgresql" else None
    gem_folder = tmp_path / "gem"
    gem_folder.mkdir()
    (gem_folder / "notochord.json").write_text(json.dumps(MANIFEST))
    (gem_folder / "tools").mkdir()
    (gem_folder / "tools" / "main.mjs").write_text("export async function run() { return {}; }\n")
    # One open before forking loads every module, so the children race on the store, not on imports.
    warm = tmp_path / "warm"
    with notochord.open(warm, _settings(warm), embedder=None) as nc:
        nc.personal.gems.install(gem_folder)

    data = tmp_path / "data"
    context = multiprocessing.get_context("fork")
    opened, installed = context.Barrier(PROCESSES), context.Barrier(PROCESSES)
    results: Queue[str] = context.Queue()
    children = [
        context.Process(target=_race, args=(data, url, gem_folder, opened, installed, results, n))
        for n in range(PROCESSES)
    ]
    for child in children:
        child.start()
    outcomes = [json.loads(results.get(timeout=300)) for _ in children]
    for child in children:
        child.join(timeout=60)

    errors = [o["error"] for o in outcomes if "error" in o]
    assert errors == [], errors[0]
    assert all("quota" in o["refusal"] for o in outcomes)
    assert sum(o["done"] for o in outcomes) == DAILY_WRITES

    with notochord.open(data, _settings(data, url), embedder=None) as nc, nc.personal.core.store.read() as conn:
        stored = conn.execute(
            sa.text("select count(*) from facts where predicate = 'pref.food.like' and valid_to is null")
        ).scalar_one()
    assert stored == DAILY_WRITES
