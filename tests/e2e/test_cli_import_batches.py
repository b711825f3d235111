"""``notochord docs import`` writes files in batches, one transaction each (K-DOC, K-CHG).

A refused file still fails alone, and the whole import is one run that ``changes revert --run``
takes back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from cli_harness import Cli, initialised
from sqlalchemy import event

from notochord.knowledge.quotas import MAX_BODY


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


@pytest.fixture
def write_transactions() -> Iterator[list[str]]:
    """Every ``BEGIN IMMEDIATE`` any engine of this process sends while the test runs."""
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement == "BEGIN IMMEDIATE":
            seen.append(statement)

    event.listen(sa.engine.Engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(sa.engine.Engine, "before_cursor_execute", count)


def test_an_import_of_many_files_writes_them_in_a_few_transactions_and_a_refused_file_fails_alone(
    cli: Cli, tmp_path: Path, write_transactions: list[str]
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(120):
        (folder / f"note-{n:03}.md").write_text(f"# Note {n}\n\nabout topic {n}\n", encoding="utf-8")
    # refused only when written (within the byte limit of reading, over the character limit of a body)
    (folder / "note-060-huge.txt").write_text("a" * (MAX_BODY + 1), encoding="utf-8")

    summary = cli.json("docs", "import", str(folder), code=2)  # one file failed

    assert (summary["created"], summary["failed"]) == (120, 1)
    refused = f"body exceeds limit of {MAX_BODY} characters (got {MAX_BODY + 1}); shorten it"
    assert summary["failures"] == [{"path": str(folder / "note-060-huge.txt"), "error": refused}]
    assert [Path(d["path"]).name for d in summary["documents"]] == [f"note-{n:03}.md" for n in range(120)]
    # three batches (50, 50, 20), a retry of the batch that held the refused file, and the vault's
    # own bookkeeping: far fewer than one per file
    assert len(write_transactions) <= 8
    assert summary["runId"].startswith("import-")
    in_run = cli.json("changes", "list", "--run", summary["runId"], "--limit", "500")
    assert len(in_run) == len(cli.json("changes", "list", "--limit", "500")) == 120

    cli.run("changes", "revert", "--run", summary["runId"])
    assert cli.json("docs", "list") == []
