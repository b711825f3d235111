"""What every part of a manifest reader shares: the two forms, and problems collected by JSON path.

A manifest reader never stops at the first mistake: each part adds ``<json path>: <problem>`` to
one :class:`Problems` and goes on, so the user sees every problem at once (OD-P10).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from notochord.files.paths import first_deceptive

__all__ = [
    "CONTROL_PROBLEM",
    "MAX_NAME",
    "Form",
    "Problems",
    "has_control_characters",
    "name_problem",
    "optional_str",
    "required_text",
]

MAX_NAME = 200
"""The longest gem or tool name: every list of gems and tools shows it on one line."""

CONTROL_PROBLEM = (
    "must be one line without control or text-direction characters (line breaks, tabs, escapes, "
    "right-to-left overrides)"
)
"""The problem of a name or version holding one: a terminal showing it would obey it, or the name
would read as another."""

Form = Literal["draft", "packaged"]


class Problems:
    """Collects ``<json path>: <problem>`` lines in the order they are found."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, problem: str) -> None:
        self.items.append(f"{path}: {problem}")


def optional_str(data: Mapping[str, object], key: str, path: str, problems: Problems) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        problems.add(path, "must be a string")
        return None
    return value


def required_text(data: Mapping[str, object], key: str, path: str, problems: Problems) -> str | None:
    value = data.get(key)
    if value is None:
        problems.add(path, "is required")
        return None
    if not isinstance(value, str):
        problems.add(path, "must be a string")
        return None
    if not value.strip():
        problems.add(path, "must not be blank")
        return None
    return value


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a gem or a tool, or ``None``."""
    if has_control_characters(name):
        return CONTROL_PROBLEM
    if len(name) > MAX_NAME:
        return f"is {len(name)} characters; the limit is {MAX_NAME}"
    return None


def has_control_characters(value: str) -> bool:
    """Whether ``value`` holds a control character (line breaks, tabs, ESC, NUL) or one that turns the
    direction of text (``weather\u202egnirts`` shows as ``weatherstring``)."""
    return first_deceptive(value) is not None
