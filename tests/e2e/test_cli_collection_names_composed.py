"""A collection named on the command line is found however its accented letters are composed.

A name typed at one terminal may arrive composed ("é" as one character) and at another decomposed
("e" and a combining accent); the two are the same name, and the store keeps names composed.
"""

from __future__ import annotations

from pathlib import Path

from cli_harness import initialised

COMPOSED = "Caf\u00e9"
DECOMPOSED = "Cafe\u0301"


def test_a_collection_is_found_by_its_name_composed_or_decomposed_K_COL_01(tmp_path: Path) -> None:
    """K-COL-01: ``docs import --collection NAME`` and ``docs list NAME`` resolve the collection by
    either spelling of its name."""
    cli = initialised(tmp_path / "vault")
    cli.json("collections", "create", DECOMPOSED)
    menu = tmp_path / "menu.md"
    menu.write_text("# Menu\n\nsoup\n", encoding="utf-8")
    cli.run("docs", "import", str(menu), "--collection", COMPOSED)

    for spelling in (COMPOSED, DECOMPOSED):
        assert [d["title"] for d in cli.json("docs", "list", spelling)] == ["Menu"], spelling
