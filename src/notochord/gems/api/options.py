"""The object arguments of the gem API: a camelCase ``dict`` and snake_case keywords mean the same call.

``facts.put({"predicateHint": "pref.food.rated"})`` and ``facts.put(predicate_hint="pref.food.rated")``
are one call; every ``ctx`` part parses its options here, so an unknown key gets the same message
everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic.alias_generators import to_camel

from notochord.errors import KnowledgeValidationError
from notochord.knowledge.arguments import shown

__all__ = ["names", "options"]


def options(given: Mapping[str, Any] | None, kwargs: Mapping[str, Any], known: Mapping[str, str]) -> dict[str, Any]:
    """Merge a camelCase option object and snake_case keywords into snake_case; refuse unknown keys."""
    merged: dict[str, Any] = {}
    for source in (given or {}), kwargs:
        if not isinstance(source, Mapping):
            raise KnowledgeValidationError("options must be an object (a dict)")
        for key, value in source.items():
            name = known.get(key)
            if name is None:
                listed = ", ".join(sorted({to_camel(name) for name in known.values()}))
                raise KnowledgeValidationError(f"unknown option {shown(key)} (known: {listed})")
            merged[name] = value
    return merged


def names(*snake: str) -> dict[str, str]:
    """The option table of ``snake`` names: each spelled snake_case or camelCase."""
    table = {name: name for name in snake}
    table.update({to_camel(name): name for name in snake})
    return table
