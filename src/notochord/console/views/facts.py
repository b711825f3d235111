"""The rows of the one fact editor the gem page and the contacts page share (``_fact_macros.html``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from notochord.knowledge.predicates import Cardinality

__all__ = ["FactRow", "FactValue", "value_text"]


@dataclass(frozen=True)
class FactValue:
    fact_id: int
    text: str


@dataclass(frozen=True)
class FactRow:
    """One predicate of the editor with its current values; ``added_by_gem`` marks a gem's own predicate."""

    predicate: str
    label: str
    cardinality: Cardinality
    values: list[FactValue]
    added_by_gem: bool = False


def value_text(value: Any) -> str:
    """A fact's value as the editor shows it: text as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
