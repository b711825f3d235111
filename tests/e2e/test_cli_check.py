"""``notochord check [--repair] [--org ID] [--json]`` against a real data directory.

Exit codes: 0 when every checked space is consistent, 9 when a problem is found (or left after
``--repair``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import notochord
from notochord.cli import app
from notochord.settings import Settings

ENV = {"NOTOCHORD_EMBEDDER": "none"}


def run(data_dir: Path, *args: str, code: int) -> Result:
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), *args], env=ENV)
    assert result.exit_code == code, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    settings = Settings(data_dir=path, embedder="none", index_in_background=False)
    with notochord.open(path, settings) as nc:
        nc.personal.user.documents.upsert(collection="keep", key="stew", title="Stew", body="Simmer two hours.")
        nc.org("acme", create=True).user.documents.upsert(
            collection="keep", key="faq", title="Refunds", body="Five days."
        )
    return path


def _damage(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        chunk_id = conn.execute("SELECT min(id) FROM chunks").fetchone()[0]
        conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (chunk_id,))
        conn.execute(
            "INSERT INTO chunk_vectors (chunk_id, model_id, vector, text_hash) VALUES (?, 'm', x'00', ?)",
            (chunk_id, "0" * 64),
        )
    conn.close()


def test_a_consistent_vault_checks_clean_in_every_space(data_dir: Path) -> None:
    """Exit 0 and one line per space."""
    out = run(data_dir, "check", code=0).stdout
    assert "personal: consistent" in out
    assert "org:acme: consistent" in out


def test_problems_are_named_with_exit_9_and_repair_rebuilds_them(data_dir: Path) -> None:
    """Check finds a missing full-text row and a vector of other text; --repair fixes both."""
    _damage(data_dir / "spaces" / "personal.db")

    found = run(data_dir, "check", code=9).stdout
    assert "personal: 2 problems" in found
    assert "fulltext_missing" in found and "vector_stale" in found
    assert "org:acme: consistent" in found
    assert "notochord check --repair" in found

    report = json.loads(run(data_dir, "check", "--json", code=9).stdout)
    assert report["clean"] is False
    personal = next(s for s in report["spaces"] if s["space"] == "personal")
    assert sorted(p["kind"] for p in personal["problems"]) == ["fulltext_missing", "vector_stale"]

    repaired = run(data_dir, "check", "--repair", code=0).stdout
    assert "personal: repaired 2 problems" in repaired
    assert "personal: consistent" in run(data_dir, "check", code=0).stdout
    hits = run(data_dir, "search", "simmer", code=0).stdout
    assert "Stew" in hits


def test_org_checks_only_that_organization(data_dir: Path) -> None:
    """--org limits the check to one space."""
    _damage(data_dir / "spaces" / "personal.db")
    out = run(data_dir, "check", "--org", "acme", code=0).stdout
    assert out.strip() == "org:acme: consistent"
