"""Durability: a writer killed with SIGKILL mid-batch loses nothing it committed.

A child process writes facts as fast as it can and reports each committed fact id on stdout. The
parent kills it at a random moment, reopens the store and checks that every reported fact is there,
that every fact has its change record and every change its object, and that the store is intact.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord

CHILD = textwrap.dedent(
    """
    import sys
    import notochord
    with notochord.open(sys.argv[1]) as nc:
        space = nc.personal
        n = int(sys.argv[2])
        sys.stdout.write("ready\\n"); sys.stdout.flush()
        i = 0
        while True:
            r = space.as_assistant.facts.put(predicate="x.counter", value=f"{n}-{i}", run_id=f"batch-{n}")
            sys.stdout.write(f"{r.id}\\n"); sys.stdout.flush()
            i += 1
            if i % 97 == 0:
                space.user.facts.put(predicate="work.title", value=f"title {n}-{i}")
    """
)


@pytest.mark.slow
def test_sigkill_mid_batch_never_loses_a_commit_or_splits_a_write_from_its_change(tmp_path: Path) -> None:
    rng = random.Random(20260929)
    committed: set[int] = set()
    for round_no in range(30):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(tmp_path), str(round_no)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.3))
        child.send_signal(signal.SIGKILL)
        output, _ = child.communicate()
        committed.update(int(line) for line in output.split() if line.isdigit())

        with notochord.open(tmp_path) as nc, nc.personal.core.store.read() as conn:
            fact_ids = set(conn.execute(sa.text("select id from facts")).scalars())
            assert committed <= fact_ids, f"round {round_no}: committed facts are missing"
            orphan_facts = conn.execute(
                sa.text(
                    "select count(*) from facts f where not exists (select 1 from change_objects o "
                    "join changes c on c.id = o.change_id where o.object_type = 'fact' "
                    "and o.object_id = f.id and c.op = 'facts.put')"
                )
            ).scalar_one()
            orphan_changes = conn.execute(
                sa.text(
                    "select count(*) from changes c where c.op = 'facts.put' and c.status = 'applied' "
                    "and not exists (select 1 from facts f where f.id = c.target_id)"
                )
            ).scalar_one()
            assert (orphan_facts, orphan_changes) == (0, 0), f"round {round_no}"
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    assert len(committed) > 30
