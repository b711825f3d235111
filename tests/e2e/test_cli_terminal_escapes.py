"""Stored names cannot drive the terminal: human output shows control characters as escapes.

A file name, title, entity name or fact value may hold an ANSI escape sequence (which can retitle
the window, clear the screen, or hide what follows), a C1 control, or a Unicode bidi override
(which makes ``Annexe.exe`` read as something else). Human output prints each of them as a visible
``\\uXXXX`` escape, so a listing shows what is stored instead of obeying it; ``--json`` keeps the
exact stored string. Line breaks inside a stored name are escaped too, so a name cannot forge a
row of a listing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import Cli, initialised

# an OSC window title, a C1 CSI, a right-to-left override and a colour: each one a way to fool the reader
HOSTILE = "\x1b]0;pwned\x07Ann\u202eexe.txt\x9b2J\x1b[31m"
SHOWN = "\\u001b]0;pwned\\u0007Ann\\u202eexe.txt\\u009b2J\\u001b[31m"
FORGED_ROW = "Bob\n     9  person   Mallory"

_BIDI = {*range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _raw_controls(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on instead of showing (line breaks aside)."""
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F or ord(c) in _BIDI]


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


def test_entities_list_escapes_a_hostile_name_and_json_keeps_it(cli: Cli) -> None:
    created = cli.json("entities", "resolve", "--name", HOSTILE, "--create")

    listing = cli.run("entities", "list").stdout

    assert _raw_controls(listing) == []
    assert f"{created['id']:>6}  person   {SHOWN}  (name:{SHOWN})" in listing
    assert [e["displayName"] for e in cli.json("entities", "list")] == [HOSTILE]


def test_a_name_with_a_line_break_cannot_forge_a_row(cli: Cli) -> None:
    cli.run("entities", "resolve", "--name", FORGED_ROW, "--create")

    listing = cli.run("entities", "list").stdout

    assert len(listing.splitlines()) == 1
    assert "Bob\\u000a     9  person   Mallory" in listing


def test_changes_list_escapes_summaries_values_and_run_ids(cli: Cli) -> None:
    cli.run("facts", "put", "location.home.city", "Utrecht")
    # the assistant cannot overwrite the user's city: a conflict, listed with its proposed value
    cli.run("facts", "put", "location.home.city", HOSTILE, "--as-assistant", "--run", f"run-{HOSTILE}")

    listing = cli.run("changes", "list").stdout

    assert _raw_controls(listing) == []
    assert f"current: Utrecht   proposed: {SHOWN}" in listing
    assert f"[run run-{SHOWN}]" in listing
    assert [c["proposed"] for c in cli.json("changes", "list", "--status", "conflict")] == [HOSTILE]


def test_docs_import_and_list_escape_a_hostile_file_name(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / f"{HOSTILE}.txt").write_text("quarterly numbers", encoding="utf-8")

    imported = cli.run("docs", "import", str(folder)).stdout
    listing = cli.run("docs", "list").stdout
    [doc] = cli.json("docs", "list")
    shown = cli.run("docs", "show", str(doc["id"])).stdout

    for output in (imported, listing, shown):
        assert _raw_controls(output) == []
        assert SHOWN in output
    assert doc["title"] == HOSTILE


def test_docs_show_keeps_the_lines_of_a_body_and_escapes_its_controls(cli: Cli, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nfirst line\n\x1b[2Jsecond line\n", encoding="utf-8")
    cli.run("docs", "import", str(note))
    [doc] = cli.json("docs", "list")

    shown = cli.run("docs", "show", str(doc["id"])).stdout

    assert _raw_controls(shown) == []
    assert "first line\n\\u001b[2Jsecond line" in shown


def test_search_escapes_titles_and_snippets(cli: Cli, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text(f"# {HOSTILE}\n\nquarterly numbers {HOSTILE}\n", encoding="utf-8")
    cli.run("docs", "import", str(note))

    hits = cli.run("search", "quarterly").stdout

    assert _raw_controls(hits) == []
    assert SHOWN in hits


def test_an_error_message_escapes_the_name_it_quotes_and_json_keeps_it(cli: Cli, tmp_path: Path) -> None:
    missing = tmp_path / HOSTILE

    refused = cli.run("files", "history", str(missing), code=3)
    as_json = cli.run("files", "history", str(missing), "--json", code=3)

    assert _raw_controls(refused.stderr) == []
    assert SHOWN in " ".join(refused.stderr.split())
    assert str(missing) in json.loads(as_json.stderr)["error"]["message"]
