"""Contract: no import cycles between the modules of one package.

Imports between layers only go downward (``test_public_api.py``); inside a package
the modules form no cycle either, so each can be read, tested and moved starting from its
dependencies. Every import counts: top-level, inside a function (a deferred import is a cycle hidden,
not removed) and under ``TYPE_CHECKING`` (a type-only cycle still ties the two modules together).
"""

from __future__ import annotations

import ast
from pathlib import Path

import notochord

SRC = Path(notochord.__file__).parent

# Cycles still being untangled, each with what removes it: none left, and nothing may be added here.
KNOWN_CYCLES: set[frozenset[str]] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in SRC.rglob("*.py")}


def _package(module: str) -> str:
    return module.rsplit(".", 1)[0]


def import_graph() -> dict[str, set[str]]:
    """Module → the modules of its own package it imports."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("notochord"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in MODULES else node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("notochord"))
        graph[module] = {m for m in found if m in MODULES and m != module and _package(m) == _package(module)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_no_package_has_an_import_cycle_between_its_modules() -> None:
    """Gems.runner ↔ gems.service and the option parsing of gems.api are untangled."""
    new = [sorted(c) for c in cycles(import_graph()) if c not in KNOWN_CYCLES]
    assert new == []


def test_the_cycle_finder_finds_a_cycle_and_only_within_a_component() -> None:
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}, "p.e": set()}
    assert cycles(graph) == [frozenset({"p.a", "p.b", "p.c"})]
    assert cycles({"p.a": {"p.b"}, "p.b": set()}) == []
