"""Files in the ``spaces`` folder that no space reads: a copy the user made beside the real file, a
sync tool's "conflicted copy", a name with capitals or spaces.

``status`` and ``check`` are what the user runs to find out what is wrong, so such a file is named
as a problem of its own, with what to do, and every real space is still shown and checked (each
space is a separate store, OD-K47).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_harness import Cli

import notochord
from notochord.settings import Settings

STRAYS = ("notes.db", "org-Acme Copy.db", "personal (conflicted copy).db")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    with notochord.open(path, Settings(data_dir=path, embedder="none", index_in_background=False)) as nc:
        nc.personal.user.documents.upsert(collection="keep", key="stew", title="Stew", body="Simmer two hours.")
        nc.org("acme", create=True)
    for stray in STRAYS:
        shutil.copy(path / "spaces" / "personal.db", path / "spaces" / stray)
    return path


def test_status_shows_every_space_and_names_each_file_no_space_reads(vault: Path) -> None:
    """OD-K47: before, one stray file made ``status`` fail whole (exit 3, "no organization 'notes'
    … (known: notes)", or exit 2 for a malformed organization id)."""
    cli = Cli(vault)
    out = cli.run("status", code=0)
    lines = {line.split()[0]: " ".join(line.split()) for line in out.stdout.splitlines()[1:] if line.strip()}
    assert "documents 1" in lines["personal"]
    assert "documents 0" in lines["org:acme"]
    for stray in STRAYS:
        [line] = [text for text in lines.values() if stray in text]
        assert "no space reads it" in line and "move it out of" in line

    report = json.loads(cli.run("status", "--json", code=0).stdout)
    errors = [s["error"] for s in report["spaces"] if "error" in s]
    assert len(errors) == len(STRAYS)
    assert {e["code"] for e in errors} == {"E_STORAGE"}
    assert {s["space"] for s in report["spaces"] if "error" not in s} == {"personal", "org:acme"}


def test_check_names_each_file_no_space_reads_and_checks_the_real_spaces(vault: Path) -> None:
    out = Cli(vault).run("check", code=9).stdout
    assert "personal: consistent" in out and "org:acme: consistent" in out
    for stray in STRAYS:
        assert stray in out
    assert out.count("space_unreadable") == len(STRAYS)
    assert "notochord check --repair" not in out
