"""The exception tree: stable codes, and foreign storage errors never escape."""

from __future__ import annotations

import sqlite3

import pytest
import sqlalchemy.exc

from notochord import errors
from notochord.db.engine import storage_errors


def _all_errors() -> list[type[errors.NotochordError]]:
    found: list[type[errors.NotochordError]] = []
    stack: list[type[errors.NotochordError]] = [errors.NotochordError]
    while stack:
        cls = stack.pop()
        found.append(cls)
        stack.extend(cls.__subclasses__())
    return found


def test_every_error_class_is_exported_documented_and_has_a_code() -> None:
    classes = [c for c in _all_errors() if c.__module__ == "notochord.errors"]
    assert {c.__name__ for c in classes} == set(errors.__all__)
    for cls in classes:
        assert cls.__doc__, cls
        assert cls.code.startswith("E_"), cls
        assert cls.__name__ in (errors.__doc__ or ""), f"{cls.__name__} is missing from the tree drawing"


def test_permission_error_names_the_permission_and_what_to_do() -> None:
    error = errors.KnowledgePermissionError("facts.write:self:pref.food.rated")
    assert "lacks knowledge permission facts.write:self:pref.food.rated" in str(error)
    assert "manifest" in str(error)
    assert error.permission == "facts.write:self:pref.food.rated"


def _walk(cls: type[BaseException]) -> list[type[BaseException]]:
    out = [cls]
    for sub in cls.__subclasses__():
        out.extend(_walk(sub))
    return out


@pytest.mark.parametrize(
    "foreign",
    [c for c in _walk(sqlalchemy.exc.SQLAlchemyError) if c.__module__.startswith("sqlalchemy.exc")]
    + _walk(sqlite3.Error),
    ids=lambda c: f"{c.__module__}.{c.__name__}",
)
def test_storage_layer_maps_every_foreign_storage_error(foreign: type[BaseException]) -> None:
    # Constructors differ across the tree; a subclass with a plain message stands for each class.
    stand_in = type(
        f"Raised{foreign.__name__}",
        (foreign,),
        {"__init__": BaseException.__init__, "__str__": lambda self: "boom"},
    )
    instance = stand_in("boom")
    with pytest.raises(errors.StorageError) as caught, storage_errors("a test"):
        raise instance
    assert caught.value.__cause__ is instance
