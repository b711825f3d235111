"""Daily write quotas and single-write size limits (K-QUOTA, OD-K22…K25).

Rules:

- Quotas apply to every writer that is not the user: each gem and the assistant. The user's own
  edits and imports are not throttled; the quota is a safeguard against runaway automation.
- A writer may make 500 counted writes and write 50,000,000 characters (200,000,000 with
  ``collections.bulk``) per *local* date. Counters live in ``quota_usage`` and are charged inside the
  write's own transaction, so a refused or failed write leaves no trace and concurrent writers are
  counted exactly (the transaction holds the write lock: ``BEGIN IMMEDIATE`` on SQLite, the space's
  advisory lock on PostgreSQL, see :mod:`notochord.db.postgres`).
- Size limits are checked before anything else (OD-K07) and raise ``exceeds limit``, never ``quota``.
- A JSON value (a fact's value, a document's ``meta``) nests at most :data:`MAX_JSON_DEPTH` arrays or
  objects: a fixed bound, so that whatever was accepted can be read back by every reader (the
  decoder, result models, the tool bridge), however deep the reader's own call stack is.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import quota_usage
from notochord.errors import KnowledgeQuotaError, KnowledgeValidationError
from notochord.knowledge.arguments import kind_of, shown

__all__ = [
    "DAILY_CHARS",
    "DAILY_CHARS_BULK",
    "DAILY_WRITES",
    "MAX_JSON_DEPTH",
    "DailyLimits",
    "QuotaTally",
    "charge",
    "check_json_size",
    "check_length",
    "compact_json",
    "nests_deeper",
    "refuse_nul",
    "refuse_nul_in",
    "refuse_nul_statement",
    "refuse_unstorable_filter",
    "storable",
]

DAILY_WRITES = 500
DAILY_CHARS = 50_000_000
DAILY_CHARS_BULK = 200_000_000

MAX_NAME = 1000
MAX_JSON_BYTES = 65_536
MAX_BODY = 5_000_000
MAX_JSON_DEPTH = 100
"""How many arrays or objects a stored JSON value may nest, one inside the other."""


@dataclass(frozen=True)
class DailyLimits:
    writes: int = DAILY_WRITES
    chars: int = DAILY_CHARS

    @classmethod
    def for_writer(cls, *, bulk: bool) -> DailyLimits:
        return cls(chars=DAILY_CHARS_BULK if bulk else DAILY_CHARS)


# What ``json.dumps(..., ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)``
# uses, built once (``dumps`` with options builds one per call); a string is encoded directly.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)
_encode_string = json.encoder.encode_basestring


def compact_json(value: Any, *, what: str = "value") -> str:
    """The canonical JSON used for size limits, equality and character counts (OD-K17, OD-K23).

    An object key that is not text is refused: the encoder would write ``{10: …, 9: …}`` in the
    order of the numbers, a text no JSON caller can send, so the same JSON would have two canonical
    texts and be stored twice instead of found equal.
    """
    if value.__class__ is str:
        return _encode_string(value)
    try:
        encoded = _COMPACT.encode(value)
    except RecursionError:
        raise _too_deep(what) from None
    except (ValueError, TypeError) as exc:
        _refuse_non_text_key(what, value)
        if _holds_non_finite(value):
            raise KnowledgeValidationError(
                f"{what} holds NaN or Infinity, which JSON has no number for; send a finite number, "
                "or the word as text in quotes"
            ) from None
        # the encoder's own words name Python's types; say what JSON can hold instead
        raise KnowledgeValidationError(
            f"{what} is not JSON-serialisable: use objects with text keys, lists, text, numbers "
            "(at most 4300 digits), true, false and null"
        ) from exc
    if "{" in encoded:  # only an object has keys; most values hold none
        _refuse_non_text_key(what, value)
    return encoded


def _refuse_non_text_key(what: str, value: Any) -> None:
    """Refuse ``value`` when an object in it has a key that is not text, naming the first found."""
    # an explicit stack: a value nested as deep as the encoder allows must not exhaust the recursion
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    raise KnowledgeValidationError(
                        f"{what} has an object key {shown(key)} ({kind_of(key)}) that is not text; JSON object "
                        f"keys are text: write the key as text, such as {shown(str(key))}"
                    )
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def _holds_non_finite(value: Any, depth: int = 0) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if depth > 200:  # deeper than any JSON a parser hands over; the encoder's own error stands
        return False
    if isinstance(value, dict):
        return any(_holds_non_finite(v, depth + 1) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_non_finite(v, depth + 1) for v in value)
    return False


def check_length(what: str, text: str, limit: int = MAX_NAME) -> None:
    """Refuse ``text`` longer than ``limit`` code points (inclusive limit)."""
    if len(text) > limit:
        raise KnowledgeValidationError(
            f"{what} exceeds limit of {limit} characters (got {len(text)}); shorten it",
            reason="too_long",
            values={"what": what, "limit": str(limit), "got": str(len(text))},
        )


def check_run_id(run_id: object) -> str:
    """A ``runId`` names a batch of writes: a non-empty text of at most 200 characters (OD-K45)."""
    if not isinstance(run_id, str) or not run_id.strip():
        raise KnowledgeValidationError(f"runId must be a non-empty string, not {shown(run_id)}")
    check_length("runId", run_id, 200)
    return run_id


# What a stored column is to the person who wrote it, for the NUL refusal.
_FIELDS = {
    ("entities", "display_name"): "the entity name",
    ("identifiers", "value"): "the identifier value",
    ("identifiers", "normalized"): "the identifier value",
    ("facts", "source_ref"): "sourceRef",
    ("facts", "origin"): "origin",
    ("facts", "source"): "source",
    ("predicates", "name"): "the predicate name",
    ("predicates", "description"): "the predicate description",
    ("predicate_aliases", "alias"): "the predicate alias",
    ("documents", "key"): "the document key",
    ("documents", "title"): "the document title",
    ("documents", "body"): "the document body",
    ("documents", "source_uri"): "the document sourceUri",
    ("chunks", "text"): "the document text",
    ("collections", "name"): "the collection name",
    ("changes", "summary"): "the written value or name",
}


_SURROGATE = re.compile("[\ud800-\udfff]")
# Python's ``surrogateescape`` decodes each byte 0x80-0xFF that is not part of UTF-8 (in a shell
# argument, a file name) to U+DC80-U+DCFF: such a surrogate is a byte of another encoding
_ESCAPED_BYTES = range(0xDC80, 0xDD00)


@dataclass(frozen=True, slots=True)
class _Unstorable:
    """What in a text the store cannot hold: said for a person, its code point, and whether it is a
    byte that is not UTF-8 (then the fix is sending UTF-8, not removing a character)."""

    said: str
    char: str
    not_utf8: bool = False


_NUL = _Unstorable("the NUL character (U+0000)", "U+0000")


def _unstorable(text: str) -> _Unstorable | None:
    """What in ``text`` the store cannot hold, or ``None``.

    U+0000 (PostgreSQL's text cannot hold it) and a lone surrogate (half of a UTF-16 pair, as a
    ``\\ud83d`` escape without its partner decodes to, or a byte that is not UTF-8 as Python decodes
    it: not a character, so not UTF-8-encodable).
    """
    if "\x00" in text:
        return _NUL
    if not text.isascii():
        found = _SURROGATE.search(text)
        if found is not None:
            return _lone_surrogate(found.group(), found.start())
    return None


def storable(text: str | None) -> bool:
    """Whether the store can hold ``text`` as it is (the quick test before naming what it cannot)."""
    return text is None or ("\x00" not in text and (text.isascii() or _SURROGATE.search(text) is None))


def _lone_surrogate(char: str, at: int | None) -> _Unstorable:
    """``char`` at index ``at`` of its text (``None`` when unknown), said for a person."""
    code = ord(char)
    if code in _ESCAPED_BYTES:
        where = "" if at is None else f", at character {at + 1}"
        return _Unstorable(f"a byte that is not UTF-8 (0x{code - 0xDC00:02x}{where})", f"U+{code:04X}", not_utf8=True)
    return _Unstorable(f"a lone surrogate (U+{code:04X}, half of a UTF-16 pair, not a character)", f"U+{code:04X}")


def _surrogate_in(value: Any) -> _Unstorable | None:
    """The first lone surrogate in the texts (keys included) of JSON-like ``value``, with its place
    in the text that holds it, or ``None``."""
    # an explicit stack: the walk must not itself run out of the interpreter's recursion
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found = _SURROGATE.search(item)
            if found is not None:
                return _lone_surrogate(found.group(), found.start())
        elif isinstance(item, dict):
            stack.extend(reversed([part for pair in item.items() for part in pair]))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
    return None


def _unstorable_error(field: str, found: _Unstorable) -> KnowledgeValidationError:
    remedy = (
        "send the text as UTF-8 and write again"
        if found.not_utf8
        else "remove it (or replace it, e.g. with a space) and write again"
    )
    return KnowledgeValidationError(
        f"{field} contains {found.said}, which the store cannot hold; {remedy}",
        reason="unstorable",
        values={"what": field, "char": found.char},
    )


def refuse_nul(field: str, value: Any) -> None:
    """Refuse ``value`` (a string, or JSON-like data holding strings) if any of its text holds what the
    store cannot hold: U+0000 or a lone surrogate (:func:`_unstorable`)."""
    if isinstance(value, str):
        found = _unstorable(value)
        if found is not None:
            raise _unstorable_error(field, found)
    elif isinstance(value, dict):
        for key, item in value.items():
            refuse_nul(field, key)
            refuse_nul(field, item)
    elif isinstance(value, list | tuple):
        for item in value:
            refuse_nul(field, item)


def refuse_unstorable_filter(field: str, value: str | None) -> None:
    """Refuse a read filter holding what no stored text can hold (U+0000 or a lone surrogate): no
    row could match it, so it is the caller's mistake, and PostgreSQL cannot even compare a NUL."""
    if value is None:
        return
    if not isinstance(value, str):
        raise KnowledgeValidationError(f"{field} must be text, not {shown(value)}")
    found = _unstorable(value)
    if found is not None:
        remedy = "send the text as UTF-8 and ask again" if found.not_utf8 else "remove it and ask again"
        raise KnowledgeValidationError(
            f"{field} contains {found.said}, which no stored text can hold, so nothing could match; {remedy}",
            reason="unstorable_filter",
            values={"what": field, "char": found.char},
        )


def refuse_nul_in(table: str | None, row: Any) -> None:
    """Refuse a row about to be written to ``table`` (a mapping of column keys to values) when one
    of its texts holds U+0000 or a lone surrogate, naming the field. PostgreSQL cannot store the
    first and no UTF-8 store the second, so the store holds them on no backend: every write statement
    of the knowledge store passes here (:class:`~notochord.knowledge.prepared.Prepared` and the
    engine's ``before_execute`` hook)."""
    for key, value in row.items():
        if value.__class__ is str:
            found = _unstorable(value)
            if found is not None:
                column = str(key)
                field = _FIELDS.get((table or "", column), f"{column.replace('_', ' ')} of {table or 'a row'}")
                raise _unstorable_error(field, found)


def refuse_nul_statement(
    _conn: sa.Connection, statement: Any, multiparams: Any, params: Any, _options: Any, *_rest: Any
) -> None:
    """``before_execute`` of a store's engine: refuse a write statement whose texts hold U+0000 (see
    :func:`refuse_nul_in`)."""
    if isinstance(statement, _CORE_WRITES):
        table = statement.table.name if isinstance(statement.table, sa.Table) else None
        inline = getattr(statement, "_values", None)
        if inline:
            refuse_nul_in(table, {getattr(k, "key", k): getattr(v, "value", None) for k, v in inline.items()})
        for rows in getattr(statement, "_multi_values", ()):
            for row in rows:
                if isinstance(row, dict):
                    refuse_nul_in(table, {getattr(k, "key", k): getattr(v, "value", v) for k, v in row.items()})
    else:
        # a text clause's own text: str() of it would compile the statement on every execution
        sql = statement.text if isinstance(statement, sa.TextClause) else statement
        if not isinstance(sql, str) or not _WRITE_SQL.match(sql):
            return
        table = None
    for given in (params, *multiparams):
        for row in given if isinstance(given, list | tuple) else (given,):
            if isinstance(row, dict):
                refuse_nul_in(table, row)
            elif isinstance(row, list | tuple):
                refuse_nul_in(table, dict(enumerate(row)))


_WRITE_SQL = re.compile(r"\s*(INSERT|UPDATE|REPLACE)\b", re.IGNORECASE)
_CORE_WRITES = (sa.Insert, sa.Update)


def check_json_size(what: str, value: Any, limit: int = MAX_JSON_BYTES) -> str:
    """Refuse a value whose compact JSON is larger than ``limit`` UTF-8 bytes, or that nests more than
    :data:`MAX_JSON_DEPTH` arrays or objects; return the JSON."""
    encoded = compact_json(value, what=what)
    try:
        size = len(encoded.encode("utf-8"))
    except UnicodeEncodeError as exc:
        found = _surrogate_in(value) or _lone_surrogate(exc.object[exc.start], None)
        raise _unstorable_error(what, found) from None
    if size > limit:
        raise KnowledgeValidationError(
            f"{what} exceeds limit of {limit} bytes as JSON (got {size}); store large data in a document",
            reason="too_large",
            values={"what": what, "limit": str(limit), "got": str(size)},
        )
    # a value nested deeper than the limit spells at least that many brackets: most never walk
    if encoded.count("[") + encoded.count("{") > MAX_JSON_DEPTH and nests_deeper(value, MAX_JSON_DEPTH):
        raise _too_deep(what)
    return encoded


def _too_deep(what: str) -> KnowledgeValidationError:
    return KnowledgeValidationError(
        f"{what} is nested too deeply to be stored as JSON (more than {MAX_JSON_DEPTH} levels of arrays "
        "or objects); flatten it into fewer levels"
    )


def nests_deeper(value: Any, limit: int) -> bool:
    """Whether ``value`` holds more than ``limit`` arrays or objects one inside the other."""
    # an explicit stack: the walk must not itself run out of the interpreter's recursion
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _check(writer: str, day: str, writes: int, used: int, chars: int, limits: DailyLimits) -> None:
    if writes + 1 > limits.writes:
        raise KnowledgeQuotaError(
            f"daily write quota of {limits.writes} writes reached for {writer} on {day}; "
            "writes succeed again on the next local date"
        )
    if used + chars > limits.chars:
        raise KnowledgeQuotaError(
            f"daily text quota of {limits.chars} characters would be exceeded for {writer} on {day} "
            f"({used} used, this write needs {chars}); writes succeed again on the next local date"
        )


def charge(conn: sa.Connection, *, writer: str, day: str, chars: int, limits: DailyLimits) -> None:
    """Count one write of ``chars`` characters for ``writer`` on ``day``, or raise without counting.

    Must run inside a write transaction that holds the write lock.
    """
    row = conn.execute(
        sa.select(quota_usage.c.writes, quota_usage.c.chars).where(
            quota_usage.c.writer == writer, quota_usage.c.day == day
        )
    ).first()
    writes, used = (row.writes, row.chars) if row else (0, 0)
    _check(writer, day, writes, used, chars, limits)
    if row is None:
        conn.execute(sa.insert(quota_usage).values(writer=writer, day=day, writes=1, chars=chars))
    else:
        conn.execute(
            sa.update(quota_usage)
            .where(quota_usage.c.writer == writer, quota_usage.c.day == day)
            .values(writes=writes + 1, chars=used + chars)
        )


class QuotaTally:
    """Many writes of one writer on one day, counted as :func:`charge` counts each (same checks,
    same refusals, in order), with the counter read once and written once (a batch)."""

    def __init__(self, conn: sa.Connection, *, writer: str, day: str, limits: DailyLimits) -> None:
        self._writer, self._day, self._limits = writer, day, limits
        row = conn.execute(
            sa.select(quota_usage.c.writes, quota_usage.c.chars).where(
                quota_usage.c.writer == writer, quota_usage.c.day == day
            )
        ).first()
        self._stored: tuple[int, int] | None = None if row is None else (int(row.writes), int(row.chars))
        self.writes, self.chars = self._stored or (0, 0)

    def add(self, chars: int) -> None:
        """Count one write of ``chars`` characters, or raise (as :func:`charge`) without counting it."""
        _check(self._writer, self._day, self.writes, self.chars, chars, self._limits)
        self.writes += 1
        self.chars += chars

    def save(self, conn: sa.Connection) -> None:
        """Write the counter (nothing when nothing was counted)."""
        if self._stored is None:
            if self.writes:
                conn.execute(
                    sa.insert(quota_usage).values(
                        writer=self._writer, day=self._day, writes=self.writes, chars=self.chars
                    )
                )
        elif (self.writes, self.chars) != self._stored:
            conn.execute(
                sa.update(quota_usage)
                .where(quota_usage.c.writer == self._writer, quota_usage.c.day == self._day)
                .values(writes=self.writes, chars=self.chars)
            )


def usage(conn: sa.Connection, *, writer: str, day: str) -> tuple[int, int]:
    """Writes and characters counted for ``writer`` on ``day``."""
    row = conn.execute(
        sa.select(quota_usage.c.writes, quota_usage.c.chars).where(
            quota_usage.c.writer == writer, quota_usage.c.day == day
        )
    ).first()
    return (row.writes, row.chars) if row else (0, 0)
