"""``ctx.storage.sql`` transactions belong to one run (P-STOR-02, P-STOR-03, P-STOR-11, K-UNINST-03).

Two runs of the same gem at once (two conversations calling the same tool, a scheduled run beside
a manual one) must never share a transaction: one run's ``ROLLBACK`` cannot take another run's
writes with it, and a run that ends with ``BEGIN`` still open leaves nothing behind.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gemfiles_fixtures import GemSpace

from notochord.errors import BusyError, ClosedError
from notochord.files.private import GemStore
from notochord.files.runs import Outcome
from notochord.gems.api.files import RunHandle, start_run
from notochord.gems.context import GemContext

pytestmark = pytest.mark.anyio


def _begin(gem_space: GemSpace, gem: str, run_id: str, chat: Path) -> tuple[GemContext, RunHandle]:
    """A run as the runtime starts it: its ``ctx`` and its registered run."""
    ctx = gem_space.ctx(gem, conversation=chat, run_id=run_id)
    return ctx, start_run(gem_space.request(ctx), name=run_id)


def _committed_names(gem_space: GemSpace, gem: str) -> list[str]:
    """The names another reader of the gem's database sees: what was committed, nothing else."""
    key = gem_space.space.gems.registry.key(gem, "storage")
    with GemStore(gem_space.folders.folder(gem), key=key) as store:
        return [row["name"] for row in store.sql.query("SELECT name FROM items ORDER BY name")]


def _sql_db_handles(gem_space: GemSpace, gem: str) -> int:
    """How many of this process's open files are the gem's ``sql.db``."""
    target = os.path.realpath(gem_space.folders.folder(gem) / "sql.db")
    fd_dir = Path("/proc/self/fd")
    count = 0
    for entry in fd_dir.iterdir():
        try:
            if os.path.realpath(os.readlink(entry)) == target:
                count += 1
        except OSError:
            continue  # the descriptor that listed the folder is gone by now
    return count


async def _make_table(gem_space: GemSpace, gem: str) -> None:
    await gem_space.ctx(gem).storage.sql.execute("CREATE TABLE items (name TEXT PRIMARY KEY)")


async def test_one_runs_rollback_keeps_another_runs_committed_row(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-STOR-02/03: run B's autocommitted insert is not swept into run A's open transaction."""
    await _make_table(gem_space, gem)
    ctx_a, run_a = _begin(gem_space, gem, "run-a", chat)
    ctx_b, run_b = _begin(gem_space, gem, "run-b", chat)

    await ctx_a.storage.sql.execute("BEGIN")
    await ctx_b.storage.sql.execute("INSERT INTO items VALUES ('from b')")
    await ctx_a.storage.sql.execute("INSERT INTO items VALUES ('from a')")
    await ctx_a.storage.sql.execute("ROLLBACK")

    assert await ctx_b.storage.sql.query("SELECT name FROM items") == [{"name": "from b"}]
    assert await ctx_a.storage.sql.query("SELECT name FROM items") == [{"name": "from b"}]
    assert _committed_names(gem_space, gem) == ["from b"]
    run_a.finish("success", None)
    run_b.finish("success", None)


async def test_a_run_does_not_see_or_join_another_runs_open_transaction(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    """P-STOR-02: while run A holds a change open, run B reads the committed state, and B's write
    waits for SQLite's lock and is refused as busy, changing nothing, instead of joining A's change."""
    await _make_table(gem_space, gem)
    ctx_a, run_a = _begin(gem_space, gem, "run-a", chat)
    ctx_b, run_b = _begin(gem_space, gem, "run-b", chat)

    await ctx_a.storage.sql.execute("BEGIN")
    await ctx_a.storage.sql.execute("INSERT INTO items VALUES ('from a')")
    assert await ctx_b.storage.sql.query("SELECT name FROM items") == []
    with pytest.raises(BusyError, match="another run of this gem"):
        await ctx_b.storage.sql.execute("INSERT INTO items VALUES ('from b')")
    await ctx_a.storage.sql.execute("COMMIT")

    assert await ctx_b.storage.sql.query("SELECT name FROM items") == [{"name": "from a"}]
    assert _committed_names(gem_space, gem) == ["from a"]
    run_a.finish("success", None)
    run_b.finish("success", None)


@pytest.mark.parametrize("outcome", ["success", "failure", "cancelled"])
async def test_a_run_that_ends_inside_a_transaction_leaves_nothing_open(
    gem_space: GemSpace, gem: str, chat: Path, outcome: Outcome
) -> None:
    """P-STOR-02: whatever way a run ends (a timeout or a kill ends as a failure or cancelled), the
    change it left open is rolled back, and the next run writes at once, for any reader to see."""
    await _make_table(gem_space, gem)
    ctx_a, run_a = _begin(gem_space, gem, "run-a", chat)
    await ctx_a.storage.sql.execute("BEGIN")
    await ctx_a.storage.sql.execute("INSERT INTO items VALUES ('left open')")
    run_a.finish(outcome, None)

    ctx_b, run_b = _begin(gem_space, gem, "run-b", chat)
    assert await ctx_b.storage.sql.query("SELECT name FROM items") == []
    await ctx_b.storage.sql.execute("INSERT INTO items VALUES ('next run')")
    assert _committed_names(gem_space, gem) == ["next run"]
    run_b.finish("success", None)
    assert await gem_space.ctx(gem).storage.sql.query("SELECT name FROM items") == [{"name": "next run"}]


async def test_a_transaction_spans_the_calls_of_one_run(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-STOR-03: BEGIN, INSERT and COMMIT in separate calls of one run are one change, shared with
    the tools a SOP calls in the same run (P-FILE-06), and visible to other runs once committed."""
    await _make_table(gem_space, gem)
    sop_ctx, sop = _begin(gem_space, gem, "run-sop", chat)
    tool_ctx, tool = _begin(gem_space, gem, "run-sop", chat)
    other_ctx, other = _begin(gem_space, gem, "run-other", chat)

    await sop_ctx.storage.sql.execute("BEGIN")
    await sop_ctx.storage.sql.execute("INSERT INTO items VALUES ('stew')")
    await tool_ctx.storage.sql.executemany("INSERT INTO items VALUES (?)", [["pie"], ["soup"]])
    assert await tool_ctx.storage.sql.query("SELECT count(*) AS n FROM items") == [{"n": 3}]
    assert await other_ctx.storage.sql.query("SELECT count(*) AS n FROM items") == [{"n": 0}]
    tool.finish("success", None)  # a joined tool does not end the SOP's run, nor its change
    await sop_ctx.storage.sql.execute("COMMIT")

    assert await other_ctx.storage.sql.query("SELECT name FROM items ORDER BY name") == [
        {"name": "pie"},
        {"name": "soup"},
        {"name": "stew"},
    ]
    sop.finish("success", None)
    other.finish("success", None)
    assert _committed_names(gem_space, gem) == ["pie", "soup", "stew"]


async def test_a_finished_run_holds_no_connection(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-STOR-02: a run's own connection to the database lasts as long as the run."""
    await _make_table(gem_space, gem)
    before = _sql_db_handles(gem_space, gem)
    ctx, run = _begin(gem_space, gem, "run-a", chat)
    await ctx.storage.sql.execute("INSERT INTO items VALUES ('x')")
    run.finish("success", None)
    assert _sql_db_handles(gem_space, gem) == before


async def test_uninstall_closes_every_runs_connection(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-STOR-11, K-UNINST-03: uninstalling mid-run closes the runs' connections and deletes the folder."""
    await _make_table(gem_space, gem)
    ctx_a, run_a = _begin(gem_space, gem, "run-a", chat)
    ctx_b, _run_b = _begin(gem_space, gem, "run-b", chat)
    await ctx_a.storage.sql.execute("BEGIN")
    await ctx_a.storage.sql.execute("INSERT INTO items VALUES ('a')")
    await ctx_b.storage.sql.query("SELECT name FROM items")
    assert _sql_db_handles(gem_space, gem) >= 3  # the shared store's and one for each run

    gem_space.uninstall(gem)

    assert _sql_db_handles(gem_space, gem) == 0
    assert not gem_space.folders.folder(gem).exists()
    with pytest.raises(ClosedError, match="uninstalled"):
        await ctx_a.storage.sql.execute("COMMIT")
    run_a.finish("success", None)


async def test_closing_the_space_closes_every_runs_connection(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-STOR-02: closing the vault closes the shared store and each run's connection, rolling back
    what a run left open."""
    await _make_table(gem_space, gem)
    ctx_a, _run_a = _begin(gem_space, gem, "run-a", chat)
    ctx_b, _run_b = _begin(gem_space, gem, "run-b", chat)
    await ctx_a.storage.sql.execute("BEGIN")
    await ctx_a.storage.sql.execute("INSERT INTO items VALUES ('a')")
    await ctx_b.storage.sql.query("SELECT name FROM items")

    gem_space.folders.close()

    assert _sql_db_handles(gem_space, gem) == 0
    with pytest.raises(ClosedError, match="closed"):
        await ctx_b.storage.sql.query("SELECT name FROM items")
    assert _committed_names(gem_space, gem) == []


async def test_a_statement_arriving_after_its_run_ended_is_refused(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-STOR-02: a call of a run that already ended (one still queued when the run timed out) is
    refused, rather than opening a transaction on the gem's shared connection that nobody ends."""
    await _make_table(gem_space, gem)
    ctx, run = _begin(gem_space, gem, "run-a", chat)
    run.finish("failure", None)

    with pytest.raises(ClosedError, match="ended"):
        await ctx.storage.sql.execute("BEGIN")
    with pytest.raises(ClosedError, match="ended"):
        await ctx.storage.sql.execute("INSERT INTO items VALUES ('late')")

    await gem_space.ctx(gem).storage.sql.execute("INSERT INTO items VALUES ('outside any run')")
    assert _committed_names(gem_space, gem) == ["outside any run"]


async def test_a_run_id_started_again_gets_a_fresh_connection(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-STOR-03: a run id used again (a retry) is a run again, with its own transactions."""
    await _make_table(gem_space, gem)
    ctx, run = _begin(gem_space, gem, "run-retry", chat)
    await ctx.storage.sql.execute("BEGIN")
    await ctx.storage.sql.execute("INSERT INTO items VALUES ('first try')")
    run.finish("failure", None)

    retry_ctx, retry = _begin(gem_space, gem, "run-retry", chat)
    await retry_ctx.storage.sql.execute("BEGIN")
    await retry_ctx.storage.sql.execute("INSERT INTO items VALUES ('second try')")
    await retry_ctx.storage.sql.execute("COMMIT")
    retry.finish("success", None)
    assert _committed_names(gem_space, gem) == ["second try"]
