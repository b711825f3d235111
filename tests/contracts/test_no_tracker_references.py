"""The product's code and documentation explain themselves; none points at a tracker's numbered item.

Tests cite the items they prove in their docstrings; the shipped code and docs say what they do
and why, in their own words (requirement IDs such as K-CHG stay: they name the specification).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRACKER_REFERENCE = re.compile(r"\b[Ii]ssue \d+")
SHIPPED = [
    *sorted((ROOT / "src").rglob("*.py")),
    *sorted((ROOT / "src").rglob("*.html")),
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "bench").glob("*.py")),
    ROOT / "README.md",
]


def test_no_shipped_file_refers_to_a_numbered_issue() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in SHIPPED
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if TRACKER_REFERENCE.search(line)
    ]
    assert found == []
