"""What a statement of a gem's SQL and its parameters may be, and the driver's complaints in words.

Statements and parameters SQLite cannot take faithfully (NUL in the text, numbers past 64 bits, NaN,
lists and objects) are refused here, before they reach the driver, whose refusals would be Python
``TypeError``/``ValueError``/``OverflowError`` or, for NaN, a silent NULL. The rows of a query are
bounded by what one answer to the gem may carry. :mod:`notochord.files.private_sql` runs the
statements; every refusal is a :class:`~notochord.errors.FileError` that says what to do.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from notochord.errors import FileError

__all__ = [
    "MAX_QUERY_BYTES",
    "Params",
    "binding_words",
    "bounded_rows",
    "parameter_rows",
    "parameters",
    "statement_text",
]

MAX_QUERY_BYTES = 32 * 1024 * 1024
"""The most text and bytes the rows of one query may hold: they go to the gem in one message."""
_LARGEST_INTEGER = 2**63 - 1
_BINDINGS = re.compile(r"statement uses (\d+), and there are (\d+) supplied")
_NAMED_BINDING = re.compile(r"did not supply a value for binding(?: parameter)? :?(\w+)")

Params = Sequence[Any] | Mapping[str, Any]


def statement_text(sql: object) -> str:
    """``sql`` as the text of one statement, or the refusal that says why it cannot be."""
    if not isinstance(sql, str):
        raise FileError(f"a statement must be text, not {type(sql).__name__}")
    if "\x00" in sql:
        raise FileError("the statement holds a NUL character, which no SQL text may hold; remove it")
    return sql


def parameters(params: object) -> Sequence[Any] | dict[str, Any]:
    """The parameters of one statement: a list, or an object of named ones, each a value SQLite
    keeps as it was given (text, a number of at most 64 bits other than NaN, bytes, true/false, null)."""
    if isinstance(params, Mapping):
        named = dict(params)
        for name, value in named.items():
            _check_parameter(f":{name}", value)
        return named
    if isinstance(params, list | tuple):
        for index, value in enumerate(params, start=1):
            _check_parameter(f"{index}", value)
        return list(params)
    raise FileError(f"the parameters of a statement are a list or an object, not {type(params).__name__}")


def _check_parameter(which: str, value: object) -> None:
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not -_LARGEST_INTEGER - 1 <= value <= _LARGEST_INTEGER
    ):
        raise FileError(f"parameter {which} is a number beyond the 64 bits SQLite holds; store it as text")
    if isinstance(value, float) and math.isnan(value):
        raise FileError(f"parameter {which} is NaN, which SQLite would keep as null; store null or text instead")
    if value is not None and not isinstance(value, str | int | float | bytes | bytearray | memoryview):
        raise FileError(
            f"parameter {which} must be text, a number, bytes, true/false or null, not {type(value).__name__}"
        )


def parameter_rows(rows: object) -> list[Sequence[Any] | dict[str, Any]]:
    """The parameter rows of ``executemany``, each checked as :func:`parameters` checks one."""
    if isinstance(rows, str | bytes | bytearray | Mapping) or not isinstance(rows, Iterable):
        raise FileError(f"executemany takes a list of parameter rows, not {type(rows).__name__}")
    return [parameters(row) for row in rows]


def binding_words(detail: str, what: str) -> str:
    """The driver's complaint about parameters, said in the gem's terms."""
    counted = _BINDINGS.search(detail)
    if counted is not None:
        wanted, given = int(counted[1]), int(counted[2])
        return (
            f"the statement needs {wanted} parameter{'s' * (wanted != 1)}, but {given} "
            f"{'were' if given != 1 else 'was'} given; pass one value for each ?"
        )
    named = _NAMED_BINDING.search(detail)
    if named is not None:
        which = f"number {named[1]}" if named[1].isdigit() else f":{named[1]}"
        return (
            f"the statement's parameter {which} has no value; pass an object with a value for every :name "
            "the statement holds"
        )
    if "executemany" in detail:
        return "executemany runs INSERT, UPDATE, DELETE or REPLACE statements; run a query with query instead"
    if "no name" in detail:
        return "the statement's parameters are ? marks: pass their values as a list, not an object"
    return f"the gem's {what} refused the statement's parameters: {detail}"


def bounded_rows(cur: Any) -> list[tuple[Any, ...]]:
    """All the rows of ``cur``, refused once their text and bytes pass :data:`MAX_QUERY_BYTES`."""
    rows: list[tuple[Any, ...]] = []
    size = 0
    while batch := cur.fetchmany(1000):
        for row in batch:
            size += sum(len(v) if isinstance(v, str | bytes) else 8 for v in row)
        if size > MAX_QUERY_BYTES:
            raise FileError(
                f"the rows of this query hold more than {MAX_QUERY_BYTES // (1024 * 1024)} MB, more than one "
                "answer may carry; select fewer columns or page through them with LIMIT and OFFSET"
            )
        rows.extend(batch)
    return rows
