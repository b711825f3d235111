"""What one knowledge-base search or retrieval asks the store: one transaction, a few statements.

The knowledge base
and the caller's grant on it are one statement, and the search runs in the same read transaction,
so the permission question is answered in the snapshot the passages are read from; the passages
come with their documents' keys and sources, so no document is read again; a retrieval reads the
agent, its links with the caller's grant on each linked knowledge base and every linked knowledge
base's passages in one transaction too. Counted on the organization space's real engine over real
HTTP on both backends (statements and transactions, never time). Once read, the knowledge base,
the agent, its links and the grants are remembered under the space's access version, so a repeated
search reads only that version of them (``test_access_cache``). Permissions are still asked on
every request (``test_request_path``), and the audit log is untouched: searching is not audited
(OD-B19).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from kb_harness import World

# the write lock's and the driver's own statements are not the request's
_SKIPPED = ("BEGIN", "COMMIT", "ROLLBACK", "SET TRANSACTION", "SELECT pg_advisory")


@dataclass
class Walk:
    transactions: int = 0
    statements: list[str] = field(default_factory=list)

    def reading(self, table: str) -> list[str]:
        return [s for s in self.statements if f"FROM {table}" in s or f"JOIN {table}" in s]


@contextlib.contextmanager
def counted(world: World) -> Iterator[Walk]:
    """Every transaction begun and statement sent on organization A's engine inside the block."""
    engine = world.live.nc.org(world.a).core.store.engine
    walk = Walk()

    def on_begin(_conn: Any) -> None:
        walk.transactions += 1

    def on_statement(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if not statement.lstrip().upper().startswith(_SKIPPED):
            walk.statements.append(" ".join(statement.split()))

    sa.event.listen(engine, "begin", on_begin)
    sa.event.listen(engine, "before_cursor_execute", on_statement)
    try:
        yield walk
    finally:
        sa.event.remove(engine, "begin", on_begin)
        sa.event.remove(engine, "before_cursor_execute", on_statement)


def _kb_with_documents(world: World, name: str, count: int) -> str:
    kb = world.create_kb(name=name)
    for n in range(count):
        body = {"title": f"{name} {n}", "content": f"Parcels for {name} leave on Mondays, batch {n}."}
        added = world.request("POST", f"/kb/{kb['id']}/documents", world["owner"], json=body)
        assert added.status_code == 201, added.text
    return str(kb["id"])


def test_a_search_is_one_transaction_and_reads_no_document_twice(world: World) -> None:
    """One read transaction; the knowledge base and the grant, read by the first search,
    are not read again (the access version they are remembered under is); the passages are read once
    with their documents' keys; at most 6 statements in all (the data versions the caches are keyed
    by included). A search showing passages already shown at this data version reads none again."""
    kb = _kb_with_documents(world, "Shipping", 3)
    path = f"/kb/{kb}/search"
    # warm the caches with a search that shows no passage
    assert world.request("POST", path, world["viewer"], json={"query": "zeppelin"}).json()["count"] == 0
    with counted(world) as walk:
        response = world.request("POST", path, world["viewer"], json={"query": "parcels mondays"})
    assert response.status_code == 200, response.text
    assert response.json()["count"] == 3
    assert walk.transactions == 1
    assert walk.reading("kb_knowledge_bases") == [], "remembered under the access version"
    assert walk.reading("kb_grants") == [], "remembered with the knowledge base"
    assert len(walk.reading("space_meta")) >= 1, "the access version is read"
    assert len(walk.reading("documents")) == 1, "documents are read once, with the passages"
    assert len(walk.statements) <= 6, "\n".join(walk.statements)
    assert not [s for s in walk.statements if s.upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    with counted(world) as again:
        repeated = world.request("POST", path, world["viewer"], json={"query": "parcels"})
    assert repeated.json()["results"] == response.json()["results"]
    assert again.transactions == 1
    assert again.reading("documents") == [], "the passages shown at this data version are kept"


def test_a_refused_search_reads_only_the_knowledge_base(world: World) -> None:
    """A caller without view permission is refused after the access version and the one
    statement that finds the knowledge base and their grant; nothing is searched."""
    kb = _kb_with_documents(world, "Private", 1)
    with counted(world) as walk:
        response = world.request("POST", f"/kb/{kb}/search", world["roleless"], json={"query": "parcels"})
    assert response.status_code == 403
    assert walk.transactions == 1
    assert len(walk.statements) == 2, "\n".join(walk.statements)
    assert len(walk.reading("space_meta")) == 1


def test_a_retrieval_over_two_knowledge_bases_is_one_transaction(world: World) -> None:
    """The agent, its links with the caller's grant on each knowledge base, and both
    knowledge bases' passages in one read transaction; no grant is read per knowledge base."""
    first, second = _kb_with_documents(world, "North", 2), _kb_with_documents(world, "South", 2)
    agent = world.create_agent()
    for kb in (first, second):
        linked = world.request("POST", f"/kb/{kb}/agents/{agent['id']}", world["owner"], json={"priority": 1})
        assert linked.status_code == 200, linked.text
    path = f"/agents/{agent['id']}/retrieve"
    # warm the caches with a retrieval that shows no passage
    assert world.request("POST", path, world["viewer"], json={"query": "zeppelin"}).json()["count"] == 0
    with counted(world) as walk:
        response = world.request("POST", path, world["viewer"], json={"query": "parcels mondays", "limit": 10})
    assert response.status_code == 200, response.text
    assert response.json()["count"] == 4
    assert walk.transactions == 1
    assert walk.reading("kb_grants") == [], "the agent's and the links' grants are remembered"
    assert walk.reading("kb_agent_links") == [], "the links are remembered"
    assert len(walk.reading("documents")) == 2, "each knowledge base's passages once"
