"""What an ``Allow`` header must say for a set of route templates, for the console's and the REST
service's tests of 405 answers (RFC 9110 §15.5.6): a path is served by its own route and by any
other route whose pattern takes it, and ``HEAD`` is served wherever ``GET`` is."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["allow_header", "methods_by_path"]

_ORDER = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def methods_by_path(templates: Iterable[tuple[str, set[str]]], sample: str) -> dict[str, set[str]]:
    """Each template's path with every parameter filled with ``sample``, and the methods of every
    template that matches it."""
    listed = list(templates)
    found: dict[str, set[str]] = {}
    for template, _ in listed:
        path = re.sub(r"\{\w+\}", sample, template)
        for other, methods in listed:
            if re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", other), path):
                found.setdefault(path, set()).update(methods)
    return found


def allow_header(methods: set[str]) -> str:
    """The ``Allow`` value for ``methods``, ``HEAD`` added beside ``GET``, in a fixed order."""
    named = methods | ({"HEAD"} if "GET" in methods else set())
    return ", ".join(method for method in _ORDER if method in named)
