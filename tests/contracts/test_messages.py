"""Contracts: what a person reads never shows requirement IDs or points at pages that do not exist.

Three places carry user-facing text: string literals in the code (error
messages, printed lines, help texts), the command line's help (which typer also takes from the
commands' docstrings), and the REST service's OpenAPI document (which FastAPI takes from the
routes' and models' docstrings). Module, class and function docstrings elsewhere are for developers
and may cite the SPEC.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

import notochord
from notochord.cli import app
from notochord.settings import Settings

SRC = Path(notochord.__file__).parent
REPO = SRC.parents[1]
REQUIREMENT_ID = re.compile(r"\b(?:[KP]-[A-Z]+-\d\d|KB-[A-Z]+-\d|OD-[KPB]\d)")
# A settings page of an application this package does not ship, and documentation links.
MISSING_PAGE = re.compile(r"Settings ›|›\s*System ›")
DOC_FILE = re.compile(r"\bdocs/[\w./-]+\.md\b")
# XML namespace names (Office Open XML, Microsoft's Office extensions, Dublin Core) look like URLs
# but are identifiers, never shown; so are the doctype system identifiers the HTML standard lists.
WEB_PAGE = re.compile(
    r"https?://(?!127\.0\.0\.1|localhost|example\.|[\w.-]*example\.(?:com|org|net)"
    r"|schemas\.openxmlformats\.org/|schemas\.microsoft\.com/office/|purl\.org/dc/|www\.ibm\.com/data/dtd/)"
    r"[\w-]+\.[\w.-]+"
)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """Strings standing alone as statements: docstrings of modules, classes, functions and attributes."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def _literals() -> Iterator[tuple[str, str]]:
    """Every string literal in ``src`` that is not a docstring, as ("path:line", text)."""
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstring_nodes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                yield f"{path.relative_to(SRC)}:{node.lineno}", node.value


def _problems(text: str) -> list[str]:
    problems = [f"requirement id {m.group(0)}" for m in REQUIREMENT_ID.finditer(text)]
    problems += [f"a page that does not exist: {m.group(0)!r}" for m in MISSING_PAGE.finditer(text)]
    problems += [f"{m.group(0)} does not exist" for m in DOC_FILE.finditer(text) if not (REPO / m.group(0)).is_file()]
    problems += [f"a web page: {m.group(0)}" for m in WEB_PAGE.finditer(text)]
    return problems


def test_no_string_literal_in_the_code_shows_a_requirement_id_or_a_missing_page() -> None:
    """The console's own labels name its pages ("Settings › Knowledge"): those exist."""
    found = [
        f"{where}: {problem}"
        for where, text in _literals()
        for problem in _problems(text)
        if not (where.startswith("console/") and problem.startswith("a page that does not exist"))
    ]
    assert found == []


def _help_texts(command: Any, path: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    name = " ".join(("notochord", *path))
    yield name, command.help or ""
    for param in command.params:
        yield f"{name} {param.name}", getattr(param, "help", None) or ""
    for sub_name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _help_texts(sub, (*path, sub_name))


def test_no_cli_help_shows_a_requirement_id_or_a_missing_page() -> None:
    texts = list(_help_texts(typer.main.get_command(app), ()))
    assert len(texts) > 100  # the whole tree was walked, lazily loaded groups included
    found = [f"{where}: {problem}" for where, text in texts for problem in _problems(text)]
    assert found == []


def test_the_openapi_document_shows_no_requirement_id(tmp_path: Path) -> None:
    from notochord.server.app import create_app

    settings = Settings(data_dir=tmp_path, index_in_background=False, jwt_secret="s" * 48)
    with notochord.open(tmp_path, settings, embedder=None) as nc:
        document = json.dumps(create_app(nc, settings).openapi(), ensure_ascii=False)
    assert [m.group(0) for m in REQUIREMENT_ID.finditer(document)] == []


@pytest.mark.parametrize(
    "text",
    [
        "refused it (rule user-allowlist, P-NET-12)",
        "see OD-K21",
        "KB-LNK-09 applies",
        "add it in Settings › System › Network access",
        "read docs/nowhere.md",
        "see https://notochord.dev/errors",
    ],
)
def test_the_scan_recognises_what_it_forbids(text: str) -> None:
    assert _problems(text) != []


@pytest.mark.parametrize(
    "text",
    ["see docs/gems.md", "notochord knowledge-base service on http://", "http://127.0.0.1:8420/docs", "K-12 rating"],
)
def test_the_scan_lets_ordinary_text_through(text: str) -> None:
    assert _problems(text) == []
