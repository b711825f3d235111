"""``notochord runs list``: one row per run, its columns aligned whatever the runs' statuses and the
lengths of their gems' and tools' names."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from cli_harness import Cli, initialised

import notochord
from notochord.db.schema import runs
from notochord.gems.runner import RUN_STATUSES
from notochord.knowledge.actors import USER
from notochord.settings import Settings


def test_every_status_lines_the_gem_column_up_in_the_human_listing(tmp_path: Path) -> None:
    cli: Cli = initialised(tmp_path / "vault")
    settings = Settings(data_dir=cli.data_dir, embedder="none", index_in_background=False)
    with (
        notochord.open(cli.data_dir, settings, embedder=None) as nc,
        nc.personal.core.store.write(actor=USER, run_id=None) as tx,
    ):
        for n, status in enumerate(RUN_STATUSES):
            # a running record with no process behind it is listed interrupted: both appear
            tx.conn.execute(
                sa.insert(runs).values(
                    id=f"run-{n}",
                    gem_id="weather",
                    tool="home",
                    status=status,
                    started_at=tx.now,
                    finished_at=None if status == "running" else tx.now,
                )
            )

    rows = cli.run("runs", "list").stdout.splitlines()

    assert len(rows) == len(RUN_STATUSES)
    assert len({row.index("weather/home") for row in rows}) == 1, rows
    assert {row.split()[1] for row in rows} >= set(RUN_STATUSES) - {"running"}


def test_run_ids_line_up_whatever_the_length_of_the_gem_and_tool_names(tmp_path: Path) -> None:
    """``diary/recall`` beside ``recipes/rate``: the names were padded on their own, so the run ids
    after them started at different columns."""
    cli: Cli = initialised(tmp_path / "vault")
    settings = Settings(data_dir=cli.data_dir, embedder="none", index_in_background=False)
    names = [("diary", "recall"), ("recipes", "rate"), ("a-gem-with-a-long-name", "and-a-long-tool-name")]
    with (
        notochord.open(cli.data_dir, settings, embedder=None) as nc,
        nc.personal.core.store.write(actor=USER, run_id=None) as tx,
    ):
        for n, (gem, tool) in enumerate(names):
            tx.conn.execute(
                sa.insert(runs).values(
                    id=f"run-{n}", gem_id=gem, tool=tool, status="succeeded", started_at=tx.now, finished_at=tx.now
                )
            )

    rows = cli.run("runs", "list").stdout.splitlines()

    assert len(rows) == len(names)
    assert len({row.index("run-") for row in rows}) == 1, rows
