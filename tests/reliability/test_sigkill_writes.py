"""A writer killed with SIGKILL at a random moment loses nothing it committed and tears nothing.

For every kind of write (facts, documents, writes through a gem, REST uploads) a forked child writes
as fast as it can and appends what it committed to a log file (``os.write`` on an ``O_APPEND``
file: once it returns, the line survives the kill). The parent kills it, reopens the store and
checks that everything the child reported is there, that every object has its change record and
every change its object, that the full-text index matches the chunks, and that SQLite finds the
file intact. The children are forked from this process, which has loaded every module already, so
a trial costs a fraction of a second and many fit in the suite.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import multiprocessing
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from multiprocessing.synchronize import Event
from pathlib import Path

import httpx
import numpy as np
import numpy.typing as npt
import pytest
import sqlalchemy as sa
import uvicorn

import notochord
from notochord.clock import FixedClock
from notochord.kbservice.actors import actor_from_claims
from notochord.kbservice.service import KbService
from notochord.kbservice.validation import JsonBody
from notochord.knowledge.check import check
from notochord.server.app import PREFIX, create_app
from notochord.server.auth import mint_token
from notochord.settings import Settings
from postgres_server import BACKENDS

pytestmark = pytest.mark.slow

ROUNDS = 8
SECRET = "sigkill-" + "s" * 40
GEM = "keeper"
GEM_PERMISSIONS = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]
OWNER = {"sub": "owner-1", "org": "acme", "org_role": "owner"}


def _settings(data: Path, url: str | None) -> Settings:
    return Settings(data_dir=data, index_in_background=False, embedder="none", jwt_secret=SECRET, database_url=url)


# A writer that is not the user may make 500 writes a day: the writers below move their clock a day
# forward before they reach it, and each round starts far from the days of the others, so the quota
# never ends a trial early however fast the machine writes.
_WRITES_BEFORE_NEXT_DAY = 400
_DAYS_PER_ROUND = 1000


def _clock(round_no: int) -> FixedClock:
    start = datetime(2026, 9, 29, 8, 0, tzinfo=UTC) + timedelta(days=round_no * _DAYS_PER_ROUND)
    return FixedClock(start, tz_name="UTC")


def _next_day_if_due(clock: FixedClock, writes: int) -> None:
    if writes % _WRITES_BEFORE_NEXT_DAY == 0:
        clock.advance(timedelta(days=1))


@dataclass
class Trial:
    data: Path
    url: str | None
    log: Path
    round_no: int
    ready: Event

    def report(self, fd: int, line: str) -> None:
        os.write(fd, (line + "\n").encode())


def _facts(trial: Trial, space: notochord.Space, fd: int, clock: FixedClock) -> None:
    i = 0
    trial.ready.set()
    while True:
        r = space.as_assistant.facts.put(predicate="x.counter", value=f"{trial.round_no}-{i}", run_id="batch")
        trial.report(fd, str(r.id))
        i += 1
        _next_day_if_due(clock, i)
        if i % 37 == 0:  # a single-valued fact: each put supersedes the last, in the same transaction
            space.user.facts.put(predicate="work.title", value=f"title {trial.round_no}-{i}")


def _documents(trial: Trial, space: notochord.Space, fd: int, *, pause: float = 0.0) -> None:
    i = 0
    trial.ready.set()
    while True:
        key = f"note-{i % 7}"  # keys repeat: updates re-chunk an existing document
        body = f"version {trial.round_no}-{i} " + " ".join(f"word{(i * j) % 97}" for j in range(400))
        out = space.user.documents.upsert(collection="keep", key=key, title=f"Note {key}", body=body)
        trial.report(fd, json.dumps({"id": out.id, "body": body[:40]}))
        i += 1
        if pause:
            time.sleep(pause)


def _gem(trial: Trial, space: notochord.Space, fd: int, clock: FixedClock) -> None:
    knowledge = space.gems.context(GEM, run_id=None).knowledge
    assert knowledge is not None

    async def loop() -> None:
        i = 0
        trial.ready.set()
        while True:
            value = f"dish {trial.round_no}-{i}"
            await knowledge.facts.put(predicate_hint="pref.food.like", value=value)
            trial.report(fd, json.dumps(value))
            i += 1
            _next_day_if_due(clock, i)

    asyncio.run(loop())


def _rest(trial: Trial, nc: notochord.Notochord, fd: int, kb_id: str) -> None:
    settings = _settings(trial.data, trial.url)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(nc, settings), host="127.0.0.1", port=0, lifespan="off", ws="none", log_level="critical"
        )
    )
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    token = mint_token(secret=SECRET, user=OWNER["sub"], org=OWNER["org"], role=OWNER["org_role"])
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}{PREFIX}", headers=headers, trust_env=False) as client:
        i = 0
        trial.ready.set()
        while True:
            files = {"file": (f"n{i}.md", f"# Upload {trial.round_no}-{i}\n\n" + "text " * 300, "text/markdown")}
            r = client.post(f"/kb/{kb_id}/documents", files=files)
            assert r.status_code == 201, r.text
            trial.report(fd, r.json()["document"]["id"])
            i += 1


class CountingEmbedder:
    """A deterministic test embedder: a vector of letter counts, so a vector names the text it came from.

    Slow on purpose (a pause per batch), so that kills land while a batch is being embedded.
    """

    model_id = "test/letter-counts-26"
    dim = 26
    multilingual = False

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        time.sleep(0.02)
        return np.vstack([self.embed_query(text) for text in texts]) if texts else np.zeros((0, 26), np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        counts = np.array([text.lower().count(chr(97 + i)) + 1 for i in range(26)], dtype=np.float32)
        return counts / np.linalg.norm(counts)


def _child(kind: str, trial: Trial, kb_id: str) -> None:
    fd = os.open(trial.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    if kind == "embedding":
        # documents written while the background worker embeds: kills land in the write and mid-batch
        settings = dataclasses.replace(_settings(trial.data, trial.url), index_in_background=True)
        with notochord.open(trial.data, settings, clock=_clock(trial.round_no), embedder=CountingEmbedder()) as nc:
            _documents(trial, nc.personal, fd, pause=0.01)  # the worker needs the write lock between writes
        return
    clock = _clock(trial.round_no)
    with notochord.open(trial.data, _settings(trial.data, trial.url), clock=clock, embedder=None) as nc:
        if kind == "rest":
            _rest(trial, nc, fd, kb_id)
        elif kind == "documents":
            _documents(trial, nc.personal, fd)
        elif kind == "facts":
            _facts(trial, nc.personal, fd, clock)
        elif kind == "gem":
            _gem(trial, nc.personal, fd, clock)
        else:
            raise ValueError(f"no writer for the trial kind {kind!r}")


def _reported(log: Path) -> list[str]:
    # The line being written at the kill may be cut short: only whole lines count.
    text = log.read_text() if log.exists() else ""
    return text.split("\n")[:-1]


def _wait_for_a_commit(log: Path, child: multiprocessing.process.BaseProcess, where: str) -> None:
    deadline = time.monotonic() + 120
    while not _reported(log):
        assert child.exitcode is None, f"{where}: the writer stopped by itself"
        assert time.monotonic() < deadline, f"{where}: the writer committed nothing in two minutes"
        time.sleep(0.01)


def _one(conn: sa.Connection, sql: str) -> int:
    return int(conn.execute(sa.text(sql)).scalar_one())


def _check_store(conn: sa.Connection, where: str) -> None:
    if conn.dialect.name == "sqlite":
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok", where
    else:
        stray = _one(
            conn,
            "select count(*) from chunks_fts_terms t "
            "where not exists (select 1 from chunks_fts f where f.rowid = t.chunk_id)",
        )
        assert stray == 0, f"{where}: full-text postings of passages that are gone"
    orphan_facts = _one(
        conn,
        "select count(*) from facts f where not exists (select 1 from change_objects o "
        "where o.object_type = 'fact' and o.object_id = f.id)",
    )
    orphan_docs = _one(
        conn,
        "select count(*) from documents d where not exists (select 1 from changes c "
        "where c.target_type = 'document' and c.target_id = d.id)",
    )
    lost_targets = _one(
        conn,
        "select count(*) from changes c where c.op = 'facts.put' and c.status = 'applied' "
        "and not exists (select 1 from facts f where f.id = c.target_id)",
    )
    assert (orphan_facts, orphan_docs, lost_targets) == (0, 0, 0), where
    unindexed = _one(
        conn, "select count(*) from chunks c where not exists (select 1 from chunks_fts f where f.rowid = c.id)"
    )
    stale = _one(
        conn, "select count(*) from chunks_fts f where not exists (select 1 from chunks c where c.id = f.rowid)"
    )
    assert (unindexed, stale) == (0, 0), f"{where}: the full-text index does not match the chunks"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def vault(tmp_path: Path, new_database_url: Callable[[], str | None]) -> tuple[Path, str, str | None]:
    """A vault with the gem installed and switched on, and one knowledge base of organization acme.

    On both backends, SQLite files and PostgreSQL databases."""
    data = tmp_path / "data"
    url = new_database_url()
    gem_folder = tmp_path / "gem"
    gem_folder.mkdir()
    manifest = {
        "id": GEM,
        "name": "Keeper",
        "version": "1.0.0",
        "description": "Keeps food preferences",
        "permissions": {"knowledge": {"permissions": GEM_PERMISSIONS}},
        "tools": [{"name": "main", "entry": "tools/main.mjs", "permissions": {"knowledge": True}}],
    }
    (gem_folder / "notochord.json").write_text(json.dumps(manifest))
    (gem_folder / "tools").mkdir()
    (gem_folder / "tools" / "main.mjs").write_text("export async function run() { return {}; }\n")
    with notochord.open(data, _settings(data, url), embedder=None) as nc:
        nc.personal.gems.install(gem_folder)
        for permission in GEM_PERMISSIONS:
            nc.personal.gems.set_permission(GEM, permission, True)
        kb = KbService(nc).knowledge_bases.create(actor=actor_from_claims(OWNER), body=JsonBody.of({"name": "Up"}))
    return data, kb.id, url


def _check_facts(nc: notochord.Notochord, reported: list[str], where: str) -> None:
    with nc.personal.core.store.read() as conn:
        stored = set(conn.execute(sa.text("select id from facts")).scalars())
        assert {int(r) for r in reported} <= stored, f"{where}: committed facts are missing"
        current_titles = _one(conn, "select count(*) from facts where predicate = 'work.title' and valid_to is null")
        assert current_titles <= 1, f"{where}: a single-valued fact has two current values"


def _check_documents(nc: notochord.Notochord, reported: list[str], where: str) -> None:
    last: dict[int, str] = {}
    for line in reported:
        entry = json.loads(line)
        last[entry["id"]] = entry["body"]
    with nc.personal.core.store.read() as conn:
        for doc_id, head in last.items():
            body = conn.execute(sa.text("select body from documents where id = :id"), {"id": doc_id}).scalar_one()
            # the child may have committed one more version after its last report, never fewer
            reported_version = int(head.split()[1].split("-")[1])
            stored_version = int(body.split()[1].split("-")[1])
            assert stored_version >= reported_version, f"{where}: document {doc_id} lost a committed version"


def _check_gem(nc: notochord.Notochord, reported: list[str], where: str) -> None:
    with nc.personal.core.store.read() as conn:
        values = set(conn.execute(sa.text("select value_json from facts where writer = :w"), {"w": f"gem:{GEM}"}))
        stored = {json.loads(v) for (v,) in values}
        assert {json.loads(r) for r in reported} <= stored, f"{where}: committed gem writes are missing"


def _check_rest(nc: notochord.Notochord, reported: list[str], where: str, kb_id: str) -> None:
    service = KbService(nc)
    owner = actor_from_claims(OWNER)
    for public_id in reported:
        document = service.documents.get(actor=owner, kb_id=kb_id, document_id=public_id)
        assert document.id == public_id, where


@pytest.mark.parametrize("kind", ["facts", "documents", "gem", "rest", "embedding"])
def test_sigkill_at_any_moment_never_loses_a_commit_or_tears_a_write(
    vault: tuple[Path, str, str | None], tmp_path: Path, kind: str
) -> None:
    """SIGKILL trials over every write kind; the store is whole after each.

    The same trials on PostgreSQL."""
    data, kb_id, url = vault
    rng = random.Random(f"{kind}-20261201")
    context = multiprocessing.get_context("fork")
    reported_total = 0
    for round_no in range(ROUNDS):
        trial = Trial(data, url, tmp_path / f"{kind}-{round_no}.log", round_no, context.Event())
        child = context.Process(target=_child, args=(kind, trial, kb_id))
        child.start()
        assert trial.ready.wait(timeout=60), f"round {round_no}: the writer did not start"
        # A kill only means something once the writer has committed: on a busy machine its first
        # commit may take longer than the pause below, so wait for it, then kill at a random moment.
        _wait_for_a_commit(trial.log, child, f"round {round_no}")
        # the embedding trial lets the worker get going first, so that kills land mid-batch too
        delay = rng.uniform(0.3, 1.0) if kind == "embedding" else rng.uniform(0.05, 0.4)
        # a write to a database server takes about three times as long as to a local file
        time.sleep(delay * (3 if url else 1))
        assert child.pid is not None and child.exitcode is None, f"round {round_no}: the writer stopped by itself"
        os.kill(child.pid, signal.SIGKILL)
        child.join(timeout=60)
        reported = _reported(trial.log)
        reported_total += len(reported)
        where = f"{kind} round {round_no}"

        with notochord.open(data, _settings(data, url), clock=_clock(round_no), embedder=None) as nc:
            if kind == "rest":
                _check_rest(nc, reported, where, kb_id)
            elif kind == "embedding":
                _check_documents(nc, reported, where)
                stale = [p for p in check(nc.personal.core) if p.kind.startswith("vector_")]
                assert stale == [], f"{where}: vectors that do not belong to their passage's text"
            elif kind == "documents":
                _check_documents(nc, reported, where)
            elif kind == "facts":
                _check_facts(nc, reported, where)
            else:
                _check_gem(nc, reported, where)
            for space in (nc.personal, nc.org("acme")):
                with space.core.store.read() as conn:
                    _check_store(conn, f"{where}, {space.name}")
    assert reported_total > ROUNDS, "the writers committed too little for the trials to mean anything"
    # and the checker, which `notochord check` runs, finds every derived structure true to its source
    with notochord.open(data, _settings(data, url), clock=_clock(ROUNDS), embedder=None) as nc:
        for space in (nc.personal, nc.org("acme")):
            assert check(space.core) == [], f"{kind}: {space.name} after {ROUNDS} kills"
        if kind == "embedding":
            with nc.personal.core.store.read() as conn:
                embedded = _one(conn, "select count(*) from chunk_vectors")
            assert embedded > 0, "the worker embedded nothing: no kill landed while it was embedding"
