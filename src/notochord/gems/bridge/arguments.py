"""The arguments a tool process sends with a call, checked against the method they are for.

A tool process is code notochord does not control: a call may give a method too few or too many
arguments, a keyword it does not take, or a number where a path belongs. Each is the tool's mistake,
refused here with a :class:`~notochord.errors.GemError` that says what the method takes, before the
method runs; nothing reaches a ``ctx`` part that it could not have been given by Python code that
type-checks. The method's own annotations are the rule: text, bytes, numbers, true/false, null,
objects and lists, and unions of them (what is inside a list or an object is the method's to check).
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from notochord.errors import GemError
from notochord.knowledge.arguments import kind_of

__all__ = ["check_arguments"]

_WORDS: dict[type, str] = {
    str: "text",
    bytes: "bytes",
    bool: "true or false",
    int: "a whole number",
    float: "a number",
    dict: "an object",
    list: "a list",
    type(None): "null",
}
_CONTAINERS: dict[object, type] = {
    dict: dict,
    collections.abc.Mapping: dict,
    list: list,
    tuple: list,
    collections.abc.Sequence: list,
    collections.abc.Iterable: list,
}


def check_arguments(method: str, target: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """Refuse a call to ``ctx.<method>`` whose arguments do not fit ``target``, naming what it takes."""
    try:
        signature = inspect.signature(target)
        hints = typing.get_type_hints(target)
    except (TypeError, ValueError, NameError):  # nothing to read: the method checks its own arguments
        return
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        given = f"{len(args)} argument{'' if len(args) == 1 else 's'}"
        if kwargs:
            given += " and " + ", ".join(repr(name) for name in kwargs)
        raise GemError(f"ctx.{method}{_takes(signature)} cannot be called with {given}") from None
    for name, value in bound.arguments.items():
        kinds = _kinds(hints.get(name, Any))
        if kinds is not None and not _fits(value, kinds):
            expected = " or ".join(dict.fromkeys(_WORDS[kind] for kind in kinds))
            raise GemError(f"ctx.{method}: {name} must be {expected}, not {kind_of(value)}")


def _takes(signature: inspect.Signature) -> str:
    """``(path[, encoding])``: the parameters a method takes, the optional ones in brackets."""
    required = [p.name for p in signature.parameters.values() if p.default is inspect.Parameter.empty]
    optional = [p.name for p in signature.parameters.values() if p.default is not inspect.Parameter.empty]
    shown = ", ".join(required)
    for name in optional:
        shown += f"[, {name}]" if shown else f"[{name}]"
    return f"({shown})"


def _kinds(annotation: object) -> tuple[type, ...] | None:
    """The JSON kinds an annotation accepts, or ``None`` for any value."""
    if annotation is Any or annotation is object:
        return None
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        found: list[type] = []
        for member in typing.get_args(annotation):
            kinds = _kinds(member)
            if kinds is None:
                return None
            found.extend(kinds)
        return tuple(found)
    if annotation is None or annotation is type(None):
        return (type(None),)
    container = _CONTAINERS.get(origin if origin is not None else annotation)
    if container is not None:
        return (container,)
    if isinstance(annotation, type) and annotation in _WORDS:
        return (float, int) if annotation is float else (annotation,)
    return None


def _fits(value: object, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool):  # a bool is an int to Python, never a number to a caller
        return bool in kinds
    if isinstance(value, bytearray | memoryview):
        return bytes in kinds
    return isinstance(value, kinds)
