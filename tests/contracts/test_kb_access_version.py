"""Contract: every write of what a knowledge-base request remembers replaces the access version.

A search, a retrieval and a document list reuse the knowledge base, the agent,
its links and the caller's grants read under the space's access version (``kbservice/spaces.py``);
that is only sound while every write of those tables runs in a service write transaction, which
replaces the version as it commits (``OrgSpace.write``). The scan is syntactic: every
``insert``/``update``/``delete`` of one of those tables anywhere in the package sits inside a
``with <…>.write() as conn`` block of ``kbservice/``. ``tests/kbservice/test_access_cache.py``
shows the behaviour over HTTP.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import notochord

SRC = Path(notochord.__file__).parent

# what a request remembers under the access version
REMEMBERED = frozenset({"kb_knowledge_bases", "kb_agents", "kb_agent_links", "kb_grants"})
_VERBS = {"insert", "update", "delete"}
_SQL_VERBS = ("INSERT INTO", "UPDATE", "DELETE FROM")


def _writes(tree: ast.Module) -> list[ast.Call]:
    """The calls writing one of the remembered tables: ``sa.insert(t)`` or ``t.insert()``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        verb = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if verb not in _VERBS:
            continue
        named = [a.id for a in node.args[:1] if isinstance(a, ast.Name)]
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            named.append(func.value.id)
        if REMEMBERED & set(named):
            found.append(node)
    return found


def _inside_a_service_write(tree: ast.Module, call: ast.Call) -> bool:
    for node in ast.walk(tree):
        if not isinstance(node, ast.With):
            continue
        opens_write = any(
            isinstance(item.context_expr, ast.Call)
            and isinstance(item.context_expr.func, ast.Attribute)
            and item.context_expr.func.attr == "write"
            for item in node.items
        )
        if opens_write and any(inner is call for inner in ast.walk(node)):
            return True
    return False


def _sources() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "migrations" not in p.parts)


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_every_write_of_a_remembered_table_is_a_service_write(path: Path) -> None:
    """No write of the knowledge bases, agents, links or grants escapes
    ``OrgSpace.write``, which replaces the access version."""
    rel = path.relative_to(SRC).as_posix()
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    for call in _writes(tree):
        assert rel.startswith("kbservice/"), f"{rel}:{call.lineno} writes a knowledge-base table outside kbservice"
        assert _inside_a_service_write(tree, call), (
            f"{rel}:{call.lineno} writes a knowledge-base table outside a `with store.write()` block"
        )
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.upper()
            for table in REMEMBERED:
                assert not any(f"{verb} {table.upper()}" in text for verb in _SQL_VERBS), (
                    f"{rel}:{node.lineno} writes {table} in SQL text"
                )


def test_the_scan_sees_the_service_writes() -> None:
    """The scan is not vacuous: it finds the grant writes of ``kbservice/grants.py`` inside writes."""
    tree = ast.parse((SRC / "kbservice" / "grants.py").read_text(encoding="utf-8"))
    calls = _writes(tree)
    assert len(calls) >= 3
    assert all(_inside_a_service_write(tree, c) for c in calls)
    stray = ast.parse("from notochord.db.schema import kb_grants\nconn.execute(sa.delete(kb_grants))")
    assert [not _inside_a_service_write(stray, c) for c in _writes(stray)] == [True]


def test_a_service_write_replaces_the_access_version() -> None:
    """``OrgSpace.write`` replaces the version as the transaction's last statement."""
    source = (SRC / "kbservice" / "spaces.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    write = next(
        method
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef) and cls.name == "OrgSpace"
        for method in cls.body
        if isinstance(method, ast.FunctionDef) and method.name == "write"
    )
    body = ast.unparse(write)
    assert body.index("yield tx.conn") < body.index("_bump_access_version(tx.conn)")
