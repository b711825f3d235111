"""Contract: the knowledge tables are written only through ``knowledge/`` and ``db/``.

"Every write is recorded and undoable" can be checked by reading ``knowledge/``
(its unit of work, ``Store.write``) because no other package inserts, updates or deletes rows of
those tables. The scan is syntactic: a SQLAlchemy ``insert(t)``/``update(t)``/``delete(t)`` or
``t.insert()``/``t.update()``/``t.delete()`` of a knowledge ``Table`` imported from
``notochord.db.schema``, and any string holding ``INSERT INTO``/``UPDATE``/``DELETE FROM`` one of
those table names.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import notochord

SRC = Path(notochord.__file__).parent

KNOWLEDGE_TABLES = frozenset(
    {
        "facts",
        "entities",
        "identifiers",
        "collections",
        "documents",
        "chunks",
        "chunk_vectors",
        "changes",
        "change_objects",
    }
)

# The packages that own the write path.
OWNERS = ("knowledge", "db")

# Documented exceptions (docs/architecture.md, "The one write path"), each limited to what it may write:
# - the embedding worker stores vectors, derived data recomputable from the chunks, in the same
#   transaction that checks each chunk still holds the text the vector was computed from;
# - the file history keeps its own ``changes`` table in its own database (history.db), which is not
#   the space's knowledge table of that name; its saved versions (``files/versions.py``) mark there
#   which changes' earlier versions were dropped.
ALLOWED: dict[str, frozenset[str]] = {
    "search/vector_index.py": frozenset({"chunk_vectors"}),
    "files/history.py": frozenset({"changes"}),
    "files/versions.py": frozenset({"changes"}),
}

_SQL = re.compile(
    r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(?:\"|`)?(" + "|".join(sorted(KNOWLEDGE_TABLES)) + r")\b",
    re.IGNORECASE,
)
_VERBS = {"insert", "update", "delete"}


def _schema_names(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """Local name → knowledge table imported from ``notochord.db.schema``; local names of that module."""
    names: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "notochord.db.schema":
            for alias in node.names:
                if alias.name in KNOWLEDGE_TABLES:
                    names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module == "notochord.db":
            modules.update(alias.asname or alias.name for alias in node.names if alias.name == "schema")
        elif isinstance(node, ast.Import):
            modules.update(alias.asname for alias in node.names if alias.name == "notochord.db.schema" and alias.asname)
    return names, modules


def _table_of(node: ast.expr, names: dict[str, str], modules: set[str]) -> str | None:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    # ``schema.facts`` after ``from notochord.db import schema``
    if (
        isinstance(node, ast.Attribute)
        and node.attr in KNOWLEDGE_TABLES
        and isinstance(node.value, ast.Name)
        and node.value.id in modules
    ):
        return node.attr
    return None


def writes_in(source: str) -> set[str]:
    """The knowledge tables a module's source writes."""
    tree = ast.parse(source)
    names, modules = _schema_names(tree)
    written: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            verb = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if verb in _VERBS:
                if node.args and (table := _table_of(node.args[0], names, modules)):
                    written.add(table)  # sa.insert(facts)
                if isinstance(func, ast.Attribute) and (table := _table_of(func.value, names, modules)):
                    written.add(table)  # facts.insert()
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            written.update(m.lower() for m in _SQL.findall(node.value))
    return written


def _outside_owners() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if p.relative_to(SRC).parts[0] not in OWNERS)


@pytest.mark.parametrize("path", _outside_owners(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_outside_knowledge_and_db_writes_a_knowledge_table(path: Path) -> None:
    """The write path is the only seam."""
    rel = path.relative_to(SRC).as_posix()
    written = writes_in(path.read_text(encoding="utf-8")) - ALLOWED.get(rel, frozenset())
    assert written == set(), f"{rel} writes {sorted(written)}; go through notochord.knowledge instead"


def test_every_allowed_exception_still_names_a_real_module() -> None:
    """An exception outliving its module would silently widen the seam for whatever comes next."""
    for rel in ALLOWED:
        assert (SRC / rel).is_file(), rel


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from notochord.db.schema import facts\nsa.update(facts).values(x=1)", {"facts"}),
        ("from notochord.db.schema import documents as d\nconn.execute(sa.delete(d))", {"documents"}),
        ("from notochord.db.schema import chunks\nchunks.insert()", {"chunks"}),
        ("from notochord.db import schema\nsa.insert(schema.collections)", {"collections"}),
        ("conn.exec_driver_sql('DELETE FROM change_objects WHERE 1')", {"change_objects"}),
        ("text('update entities set x = 1')", {"entities"}),
        ("from notochord.db.schema import facts\nsa.select(facts)", set()),
        ("from notochord.db.schema import kb_grants\nsa.delete(kb_grants)", set()),
        ("counts.update(other)", set()),
        ("space.user.documents.delete(doc_id)", set()),
        ("'DELETE FROM temp.notochord_query_tokens'", set()),
    ],
)
def test_the_scan_sees_every_way_of_writing_a_table(source: str, expected: set[str]) -> None:
    """The contract is only as good as its scan: each spelling of a write is caught, reads are not."""
    assert writes_in(source) == expected
