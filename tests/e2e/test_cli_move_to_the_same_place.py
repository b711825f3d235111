"""Moving a document or a collection to where it already is says so and changes nothing.

K-DOC-19 and K-COL-06 (moving documents and collections) and K-CHG-01 (every change is recorded):
a move to the same place is no change, so none is recorded and the command says there was nothing
to do, instead of naming a change that does not exist; ``--json`` carries ``"change": null``.
"""

from __future__ import annotations

from pathlib import Path

from cli_harness import initialised


def test_moving_a_document_to_its_own_collection_says_nothing_changed_K_DOC_19(tmp_path: Path) -> None:
    cli = initialised(tmp_path / "vault")
    cli.json("collections", "create", "Recipes")
    note = tmp_path / "soup.md"
    note.write_text("# Soup\n\nleeks\n", encoding="utf-8")
    cli.run("docs", "import", str(note), "--collection", "Recipes")
    [document] = cli.json("docs", "list", "Recipes")
    changes_before = cli.json("changes", "list")

    said = cli.run("docs", "move", str(document["id"]), "Recipes").stdout
    assert said.strip() == f"document {document['id']} is already in Recipes; nothing changed"
    assert cli.json("docs", "move", str(document["id"]), "Recipes")["change"] is None
    assert cli.json("changes", "list") == changes_before


def test_moving_a_collection_to_where_it_is_says_nothing_changed_K_COL_06(tmp_path: Path) -> None:
    cli = initialised(tmp_path / "vault")
    outer = cli.json("collections", "create", "Kitchen")
    inner = cli.json("collections", "create", "Recipes", "--parent", "Kitchen")
    changes_before = cli.json("changes", "list")

    said = cli.run("collections", "move", "Recipes", "--parent", "Kitchen").stdout
    assert said.strip() == f"collection {inner['id']} Recipes is already in Kitchen; nothing changed"
    at_top = cli.run("collections", "move", "Kitchen", "--top").stdout
    assert at_top.strip() == f"collection {outer['id']} Kitchen is already at the top level; nothing changed"
    assert cli.json("collections", "move", "Recipes", "--parent", "Kitchen")["change"] is None
    assert cli.json("changes", "list") == changes_before
