"""Contract: ``docs/architecture.md`` states the import rules the code follows.

The layer table of the architecture page and ``LAYERS`` of the downward-imports
contract are the same rules, and the write-path exceptions the page names are the ones the write-seam
contract allows.
"""

from __future__ import annotations

import re
from pathlib import Path

from test_public_api import LAYERS, TOP
from test_write_seam import ALLOWED

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
_ROW = re.compile(r"^\| (?P<packages>`[^|]+`) \| [^|]+ \| (?P<imports>[^|]+) \|$")


def _layer_rows() -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match:
            for package in re.findall(r"`([a-z_]+)`", match["packages"]):
                rows[package] = match["imports"]
    return rows


def _named(cell: str) -> set[str]:
    return set(re.findall(r"`([a-z_]+)`", cell))


def test_every_layer_and_edge_has_a_row_on_the_architecture_page() -> None:
    rows = _layer_rows()
    assert set(LAYERS) | (TOP - {"__main__", "__init__"}) <= set(rows)


def test_each_layer_row_lists_exactly_what_the_layer_may_import() -> None:
    rows = _layer_rows()
    order = list(rows)
    for layer, allowed in LAYERS.items():
        cell = rows[layer]
        if "everything above" in cell:
            above = set(order[: order.index(layer)]) - {layer}
            expected = above - _named(cell.split("except", 1)[1]) if "except" in cell else above
            assert allowed == expected, layer
        elif "nothing" in cell:
            assert allowed == set(), layer
        else:
            assert allowed == _named(cell), layer


def test_the_page_names_every_allowed_writer_of_knowledge_tables() -> None:
    text = DOC.read_text(encoding="utf-8")
    for module, tables in ALLOWED.items():
        assert f"`{module}`" in text
        for table in tables:
            assert f"`{table}`" in text


def _gems_bullet() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("- **`gems/`**")
    end = text.index("\n- **", start + 1)
    return text[start:end]


def test_the_gems_paragraph_names_every_module_of_gems_and_gems_api() -> None:
    """The page's list of the gems modules is the code's: a module split off (as the manifest
    readers were) or added is named there, and a name there is a module that exists."""
    gems = DOC.parents[1] / "src" / "notochord" / "gems"
    bullet = _gems_bullet()
    named = set(re.findall(r"`([a-z_]+\.py)`", bullet))
    modules = {p.name for folder in (gems, gems / "api") for p in folder.glob("*.py") if p.name != "__init__.py"}
    assert modules - named == set(), "modules the page does not name"
    assert named - modules == set(), "names on the page that are no module"
