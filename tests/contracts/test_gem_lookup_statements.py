"""A gem's ``facts.lookup`` sends the host's statements and no more, and the switches are written in
one place only.

The gem path reads the
switches only when their grants version moved (K-PERM-04), and the version comes with the data
versions every lookup reads anyway, so in the steady state the gem path adds no SQL at all; and
since the version is only as good as its bumps, no module but :mod:`notochord.gems.grants` may write
``gem_grants`` or the version. Counted on the space's
engine with SQLAlchemy events, as the other walk contracts are.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from walk_harness import counted

from knowledge_gem import knowledge_gem
from notochord import Space

pytestmark = pytest.mark.anyio

SRC = Path(__file__).resolve().parents[2] / "src" / "notochord"
WRITER = "gems/grants.py"
_SQL_VERBS = ("insert into", "update", "delete from")
READS = ["facts.read:person:work.company", "facts.read:person:pref.food.*", "entities.read:person"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_gem_lookup_sends_the_statements_of_the_host_lookup(space: Space, tmp_path: Path) -> None:
    """One read transaction, as many statements as the host's (the ranges are in
    the facts statement, the grants version in the data versions'); the switches themselves are
    not read while their version stands."""
    knowledge = knowledge_gem(space, tmp_path, READS)
    anna = space.user.entities.resolve(email="anna@example.org", name="Anna", create=True)
    assert anna is not None
    space.user.facts.put(predicate="work.company", value="Acme", subject=anna.id)
    space.user.facts.put(predicate="contact.email", value="a@acme.example", subject=anna.id)
    (ref,) = [e.ref for e in await knowledge.entities.list("person")]
    await knowledge.facts.lookup(ref, "work")
    space.user.facts.lookup(anna.id, "work")
    with counted(space.core.store.engine) as host:
        space.user.facts.lookup(anna.id, "work")
    with counted(space.core.store.engine) as gem:
        found = await knowledge.facts.lookup(ref, "work")
    assert [f.value for f in found] == ["Acme"]
    assert gem.transactions == host.transactions == 1
    assert gem.count("gem_grants") == 0, "\n".join(gem.statements)
    assert len(gem.statements) == len(host.statements), "\n".join(gem.statements)


async def test_after_a_switch_moves_the_next_lookup_reads_the_switches_once(space: Space, tmp_path: Path) -> None:
    """K-PERM-04: a new version makes the next call read the switches (with the
    version, in one statement), and the call after it is back to the host's statements."""
    knowledge = knowledge_gem(space, tmp_path, ["facts.read:self:pref.food.*", "facts.read:self:work.company"])
    space.user.facts.put(predicate="pref.food.like", value="stew")
    await knowledge.facts.lookup("self", "pref.food")
    space.gems.set_permission("recipes", "facts.read:self:work.company", False)
    with counted(space.core.store.engine) as moved:
        assert [f.value for f in await knowledge.facts.lookup("self", "pref.food")] == ["stew"]
    with counted(space.core.store.engine) as steady:
        await knowledge.facts.lookup("self", "pref.food")
    assert moved.count("gem_grants") == 1, "\n".join(moved.statements)
    assert steady.count("gem_grants") == 0, "\n".join(steady.statements)


def _verb_and_table(node: ast.Call) -> tuple[str, str | None]:
    func = node.func
    verb = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    target = node.args[0] if node.args else func.value if isinstance(func, ast.Attribute) else None
    return verb, target.id if isinstance(target, ast.Name) else None


def _writes_of_grants(source: str) -> list[str]:
    """Each ``insert``/``update``/``delete`` of ``gem_grants`` in ``source`` (Core or SQL), and each
    statement writing ``space_meta`` that names the grants version."""
    found: list[str] = []
    for statement in ast.walk(ast.parse(source)):
        if not isinstance(statement, (ast.Assign, ast.AnnAssign, ast.Expr, ast.Return)):
            continue
        nodes = list(ast.walk(statement))
        writes = {_verb_and_table(n) for n in nodes if isinstance(n, ast.Call)}
        writes = {(verb, table) for verb, table in writes if verb in {"insert", "update", "delete"}}
        texts = [n.value.lower() for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        names = {n.id for n in nodes if isinstance(n, ast.Name)}
        if any(table == "gem_grants" for _, table in writes) or any(
            f"{verb} gem_grants" in text for text in texts for verb in _SQL_VERBS
        ):
            found.append(f"a write of gem_grants at line {statement.lineno}")
        names_version = "GRANTS_VERSION_KEY" in names or any("gem_grants_version" in text for text in texts)
        sql_writes_meta = any(f"{verb} space_meta" in t for t in texts for verb in _SQL_VERBS)
        if names_version and (sql_writes_meta or any(table == "space_meta" for _, table in writes)):
            found.append(f"a write of the grants version at line {statement.lineno}")
    return found


@pytest.mark.parametrize(
    "path",
    sorted(p for p in SRC.rglob("*.py") if p.relative_to(SRC).as_posix() != WRITER and "migrations" not in p.parts),
    ids=lambda p: p.relative_to(SRC).as_posix(),
)
def test_only_the_grant_book_writes_the_switches(path: Path) -> None:
    """One write path for the switches, so that every write bumps the version a
    cached answer is checked against (a writer that skipped it would leave a revoke unseen)."""
    assert _writes_of_grants(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("sa.insert(gem_grants)", 1),
        ("sa.delete(gem_grants).where(x)", 1),
        ("gem_grants.update()", 1),
        ("conn.exec_driver_sql('UPDATE gem_grants SET enabled = 0')", 1),
        ("sa.update(space_meta).where(space_meta.c.key == GRANTS_VERSION_KEY)", 1),
        ("conn.exec_driver_sql(\"UPDATE space_meta SET value = 'x' WHERE key = 'gem_grants_version'\")", 1),
        ("sa.select(gem_grants)", 0),
        ("GRANTS_VERSION_KEY = 'gem_grants_version'", 0),
        ("sa.select(space_meta.c.value).where(space_meta.c.key == GRANTS_VERSION_KEY)", 0),
    ],
)
def test_the_scan_finds_the_writes_it_looks_for(source: str, expected: int) -> None:
    """The scan above would see a new writer."""
    assert len(_writes_of_grants(source)) == expected
