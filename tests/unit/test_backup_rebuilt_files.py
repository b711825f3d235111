"""A backup leaves out what the vault rebuilds by itself: saved search graphs and vector matrices.

A large space's HNSW graph and its vectors are saved beside its database to spare the next process
the build and the read; they can weigh as much as the database and are rebuilt from it, so a backup
carries the database only and a restored vault rebuilds them.
"""

from __future__ import annotations

import json
import sqlite3
import tarfile
from pathlib import Path

from notochord.backup import MANIFEST, backup


def test_a_backup_holds_the_database_but_not_its_saved_search_graphs(tmp_path: Path) -> None:
    """``*.usearch`` and ``*.matrix`` files (and ones half written) stay out; everything else is in."""
    vault = tmp_path / "vault"
    (vault / "spaces").mkdir(parents=True)
    (vault / "master.key").write_bytes(b"k" * 32)
    database = vault / "spaces" / "personal.sqlite"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    (vault / "spaces" / "personal.sqlite.vectors-0123456789ab.usearch").write_bytes(b"graph" * 100)
    (vault / "spaces" / "personal.sqlite.vectors-0123456789ab.usearch.4242.partial").write_bytes(b"half")
    (vault / "spaces" / "personal.sqlite.vectors-0123456789ab.matrix").write_bytes(b"rows" * 100)
    (vault / "spaces" / "personal.sqlite.vectors-0123456789ab.matrix.4242.partial").write_bytes(b"half")
    (vault / "spaces" / "notes.usearch-like.txt").write_text("kept: only the graph files are rebuilt")

    summary = backup(vault, tmp_path / "backup.tar.gz")

    with tarfile.open(summary.path) as archive:
        manifest = json.loads(archive.extractfile(MANIFEST).read())  # type: ignore[union-attr]
    assert sorted(f["path"] for f in manifest["files"]) == [
        "master.key",
        "spaces/notes.usearch-like.txt",
        "spaces/personal.sqlite",
    ]
