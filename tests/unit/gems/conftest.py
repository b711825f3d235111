"""Manifest fixtures: the verbatim examples EX-01 (draft) and EX-02 (packaged excerpt)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

MANIFESTS = Path(__file__).resolve().parents[2] / "fixtures" / "manifests"

Json = dict[str, Any]


def _read(relative: str) -> Json:
    data: Json = json.loads((MANIFESTS / relative).read_text(encoding="utf-8"))
    return data


@pytest.fixture
def manifests_dir() -> Path:
    return MANIFESTS


@pytest.fixture
def ex01() -> Json:
    """EX-01 exactly as the source gives it (a fresh copy per test)."""
    return _read("ex01/manifest.json")


@pytest.fixture
def ex02_excerpt() -> Json:
    """EX-02 exactly as the source gives it: an excerpt without a name."""
    return _read("ex02/notochord.json")


@pytest.fixture
def ex02() -> Json:
    """EX-02 completed with the gem-level fields a whole notochord.json carries."""
    data = _read("ex02/notochord.json")
    return {"id": "home-weather", "name": "Home weather", "version": "1.2.0", **data}


@pytest.fixture
def manifest_bases(ex01: Json, ex02: Json) -> Callable[[str], Json]:
    """Fresh deep copies of the named base manifest: ``draft`` (EX-01) or ``packaged`` (EX-02)."""
    bases = {"draft": ex01, "packaged": ex02}
    return lambda name: copy.deepcopy(bases[name])
