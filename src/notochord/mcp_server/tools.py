"""The MCP tools: each a thin call through the connection's ``ctx.knowledge``.

No permission logic lives here. A tool checks its arguments against its JSON schema (so a model
gets the schema's words back, K-CON-05: refs only), calls the gem API, and returns its answer as
JSON. What the gem API decides is what the assistant gets:

- a refusal (``KnowledgePermissionError``) becomes a tool error naming the permission and the
  command that switches it on, or, for one the connection never asked for, how to make it ask
  (K-PERM-04: the very next call sees a switch the person moved);
- query calls (``search``, ``profile``, ``facts_lookup``, ``collections_list``, ``changes_list``)
  leave out what the connection may not read, so a denial reads as no data (K-SRCH-03);
- other errors of the exception tree become tool errors with their message; nothing is written
  unless the whole call succeeds (K-CHG-06: every write is one recorded, undoable change).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from notochord.gems.api.knowledge import KnowledgeApi
from notochord.knowledge.arguments import shown
from notochord.knowledge.hybrid_search import MAX_LIMIT
from notochord.mcp_server.echo import echoed

__all__ = ["MAX_ARGUMENT_BYTES", "TOOLS", "ArgumentError", "ToolSpec", "check_arguments", "to_json"]

MAX_ARGUMENT_BYTES: Final = 1024 * 1024
"""Arguments of one call, as JSON: the REST service's body limit."""

_REF = "an opaque ref this connection received earlier (never an internal id)"
_COLLECTION = {"type": "string", "description": "'diary', 'keep' or a collection ref from collections_list"}
_MOMENT = "an ISO date (YYYY-MM-DD: the whole day, local time), an ISO time, or epoch milliseconds"
_TIME_RANGE = {
    "type": "object",
    "description": 'Inclusive dates or times, e.g. {"from": "2026-09-01", "to": "2026-09-30"}.',
    "properties": {
        "from": {"type": ["string", "number"], "description": f"The first moment: {_MOMENT}."},
        "to": {"type": ["string", "number"], "description": f"The last moment: {_MOMENT}."},
    },
    "additionalProperties": False,
}


class ArgumentError(Exception):
    """The arguments do not fit the tool's schema (a protocol error, not a tool error)."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    schema: dict[str, Any]
    call: Callable[[KnowledgeApi, dict[str, Any]], Awaitable[Any]]
    writes: bool = False


def _obj(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


def _pick(args: Mapping[str, Any], *names: str) -> dict[str, Any]:
    return {n: args[n] for n in names if n in args}


async def _search(k: KnowledgeApi, a: dict[str, Any]) -> Any:
    return await k.search(a.get("query", ""), _pick(a, "collections", "timeRange", "entities", "limit", "groupBy"))


async def _profile(k: KnowledgeApi, a: dict[str, Any]) -> Any:
    return await k.profile.get(a.get("prefix"))


async def _facts_lookup(k: KnowledgeApi, a: dict[str, Any]) -> Any:
    return await k.facts.lookup(a.get("subject", "self"), a.get("prefix"))


async def _facts_put(k: KnowledgeApi, a: dict[str, Any]) -> Any:
    return await k.facts.put(_pick(a, "subject", "predicateHint", "value", "object", "description", "sourceRef"))


async def _facts_retract(k: KnowledgeApi, a: dict[str, Any]) -> Any:
    return await k.facts.retract(a["ref"])


async def _entities_resolve(k: KnowledgeApi, a: dict[str, Any]) -> Any:
    return await k.entities.resolve(a["identifiers"], _pick(a, "kind", "create"))


async def _collections_list(k: KnowledgeApi, _a: dict[str, Any]) -> Any:
    return await k.collections.list()


async def _documents_get(k: KnowledgeApi, a: dict[str, Any]) -> Any:
    return await k.documents.get(a["ref"], _pick(a, "range"))


async def _documents_upsert(k: KnowledgeApi, a: dict[str, Any]) -> Any:
    return await k.documents.upsert(_pick(a, "collection", "key", "ref", "title", "body", "meta"))


async def _changes_list(k: KnowledgeApi, a: dict[str, Any]) -> Any:
    return await k.changes.list(_pick(a, "since", "status"))


TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        "search",
        "Search the person's documents by words and meaning, in the collections this connection may read. "
        "Returns passages with their document ref, title, collection ref and locator {chunk, from, to}. "
        "Collections it may not read are left out silently; [] when nothing is readable. "
        'Example: {"query": "stew recipe", "collections": ["keep"], "limit": 5}.',
        _obj(
            {
                "query": {"type": "string", "description": "Words to find; empty for the newest documents."},
                "collections": {"type": "array", "items": _COLLECTION, "maxItems": 100},
                "timeRange": _TIME_RANGE,
                "entities": {
                    "type": "array",
                    "items": {"type": "string", "description": "an entity ref from entities_resolve"},
                    "maxItems": 100,
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 10},
                "groupBy": {"type": "string", "enum": ["chunk", "document"], "default": "chunk"},
            },
        ),
        _search,
    ),
    ToolSpec(
        "profile",
        "The person's pinned facts about themselves that this connection may read, optionally under a "
        'predicate prefix. [] when none are readable. Example: {"prefix": "pref.food"}.',
        _obj({"prefix": {"type": "string", "description": "A predicate prefix such as pref.food."}}),
        _profile,
    ),
    ToolSpec(
        "facts_lookup",
        "Current facts about the person ('self') or an entity ref, under an optional predicate prefix, "
        'that this connection may read. [] when none are readable. Example: {"subject": "self", '
        '"prefix": "pref.food"}.',
        _obj(
            {
                "subject": {"type": "string", "description": f"'self' (the person) or {_REF}", "default": "self"},
                "prefix": {"type": "string", "description": "A predicate prefix such as contact.email."},
            }
        ),
        _facts_lookup,
    ),
    ToolSpec(
        "facts_put",
        "Write one fact: a predicate (dotted, e.g. pref.food.like) and a value, about 'self' or an entity "
        "ref. Needs the facts.write permission for that predicate; refused otherwise, naming it. "
        'Returns {status: applied|duplicate|conflict, ref, predicate}. Example: {"predicateHint": '
        '"pref.food.like", "value": "mushroom stew"}.',
        _obj(
            {
                "subject": {"type": "string", "description": f"'self' or {_REF}", "default": "self"},
                "predicateHint": {"type": "string", "description": "The predicate, e.g. pref.food.like."},
                "value": {"description": "The value: a string, number, boolean or small JSON object."},
                "object": {"type": "string", "description": f"An entity the fact points to: 'self' or {_REF}"},
                "description": {"type": "string", "maxLength": 1000},
                "sourceRef": {"type": "string", "description": "Where the fact came from (a URL or a note)."},
            },
            ("predicateHint",),
        ),
        _facts_put,
        writes=True,
    ),
    ToolSpec(
        "facts_retract",
        "End a fact this connection may write, by its ref (from facts_lookup or facts_put). "
        'Returns {status: retracted|already_retracted}. Example: {"ref": "fact_…"}.',
        _obj({"ref": {"type": "string", "description": f"The fact: {_REF}"}}, ("ref",)),
        _facts_retract,
        writes=True,
    ),
    ToolSpec(
        "entities_resolve",
        "Exchange identifiers (email, phone, url, …) for an entity ref. With create: true an entity is "
        "made when none matches (needs entities.write). Returns {ref, kind, displayName, created} or "
        'null when nothing matches. Example: {"identifiers": {"email": "ada@example.org"}, "kind": "person"}.',
        _obj(
            {
                "identifiers": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": 'Identifier type → value, e.g. {"email": "ada@example.org"}.',
                },
                "kind": {"type": "string", "description": "person (default), org, place, …"},
                "create": {"type": "boolean", "default": False},
            },
            ("identifiers",),
        ),
        _entities_resolve,
        writes=True,
    ),
    ToolSpec(
        "collections_list",
        "The collections (folders of documents) this connection can read or write, each with its ref, "
        "name, builtin (diary|keep|null), kind, canWrite and parent. [] when none. Example: {}.",
        _obj({}),
        _collections_list,
    ),
    ToolSpec(
        "documents_get",
        "One document by ref, with its body; with range {from, to} only the passages from…to-1. "
        'Needs read access to its collection; refused otherwise, naming the permission. Example: {"ref": "doc_…"}.',
        _obj(
            {
                "ref": {"type": "string", "description": f"The document: {_REF}"},
                "range": {
                    "type": "object",
                    "properties": {"from": {"type": "integer", "minimum": 0}, "to": {"type": "integer", "minimum": 0}},
                    "required": ["from", "to"],
                    "additionalProperties": False,
                },
            },
            ("ref",),
        ),
        _documents_get,
    ),
    ToolSpec(
        "documents_upsert",
        "Create a document in a collection (by key, so a repeat updates it) or update one by ref. "
        "Needs write access to the collection. Returns {status: created|updated|unchanged, ref}. "
        'Example: {"collection": "keep", "key": "stew", "title": "Stew", "body": "Onions first."}.',
        _obj(
            {
                "collection": _COLLECTION,
                "key": {"type": "string", "description": "Your own stable key inside the collection."},
                "ref": {"type": "string", "description": f"An existing document to update: {_REF}"},
                "title": {"type": "string"},
                "body": {"type": "string", "description": "Markdown text."},
                "meta": {"type": "object", "description": 'Small JSON metadata, e.g. {"date": "2026-09-22"}.'},
            }
        ),
        _documents_upsert,
        writes=True,
    ),
    ToolSpec(
        "changes_list",
        "What this connection has written (and, with changes.manage, others' changes within its reach), "
        "newest first: {ref, runId, actor, op, summary, status, proposed, createdAt}. "
        'Example: {"status": "applied"}.',
        _obj(
            {
                "since": {
                    "type": ["string", "number"],
                    "description": f"Only changes at or after this moment: {_MOMENT}.",
                },
                "status": {"type": "string", "enum": ["applied", "conflict", "reverted"]},
            }
        ),
        _changes_list,
    ),
)
"""Every tool, in the order ``tools/list`` shows them."""

_JSON_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}
_TYPE_WORDS: Final = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
}
_MISFIT: Final = object()


def _fits(value: Any, kind: str) -> Any:
    """``value`` as ``kind`` takes it, or ``_MISFIT``: JSON Schema counts a number with a zero
    fraction (``5.0``) an integer, so it is one, handed on as ``5`` to the gem API (which counts
    only whole numbers)."""
    if isinstance(value, bool):
        return value if kind == "boolean" else _MISFIT
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, _JSON_TYPES[kind]) else _MISFIT


def _check(value: Any, schema: Mapping[str, Any], path: str, *, optional: bool = False) -> Any:
    """``value`` as the tool receives it, when it fits ``schema``."""
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        fitted = next((f for f in (_fits(value, k) for k in kinds) if f is not _MISFIT), _MISFIT)
        if fitted is _MISFIT:
            wanted = " or ".join(_TYPE_WORDS[k] for k in kinds)
            # models often send null for an optional argument they mean to leave unset
            unset = "; to leave it unset, leave it out rather than sending null" if value is None and optional else ""
            raise ArgumentError(f"{path} must be {wanted}{unset}")
        value = fitted
    if "enum" in schema and value not in schema["enum"]:
        raise ArgumentError(f"{path} must be one of {', '.join(map(str, schema['enum']))}")
    if isinstance(value, int) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise ArgumentError(f"{path} must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise ArgumentError(f"{path} must be at most {schema['maximum']}")
    if isinstance(value, str) and "maxLength" in schema and len(value) > schema["maxLength"]:
        raise ArgumentError(f"{path} must be at most {schema['maxLength']} characters")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise ArgumentError(f"{path} holds at most {schema['maxItems']} items")
        return [_check(item, schema.get("items", {}), f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict) and kind == "object":
        properties: Mapping[str, Any] = schema.get("properties", {})
        required = schema.get("required", ())
        for name in required:
            if name not in value:
                raise ArgumentError(f"{path}.{name} is required")
        extra = schema.get("additionalProperties", True)
        checked: dict[str, Any] = {}
        for name, item in value.items():
            if name in properties:
                checked[name] = _check(item, properties[name], f"{path}.{name}", optional=name not in required)
            elif extra is False:
                known = ", ".join(properties) or "none"
                raise ArgumentError(f"{path}: unknown argument {shown(name)} (known: {known})")
            elif isinstance(extra, Mapping):
                # a name the client chose (an identifier's type): named as sent, cut short
                checked[name] = _check(item, extra, f"{path}.{echoed(name, 40)}")
            else:
                checked[name] = item
        return checked
    return value


def check_arguments(tool: ToolSpec, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments of a call when they fit the tool's schema and size limit, as the tool takes them.

    Raises:
        ArgumentError: naming the first argument that does not fit.
    """
    given = dict(arguments or {})
    try:
        size = len(json.dumps(given, ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError) as exc:
        raise ArgumentError(f"arguments are not JSON: {exc}") from exc
    if size > MAX_ARGUMENT_BYTES:
        raise ArgumentError(f"arguments of {size} bytes are over the limit of {MAX_ARGUMENT_BYTES} bytes")
    checked: dict[str, Any] = _check(given, tool.schema, "arguments")
    return checked


def to_json(value: Any) -> Any:
    """A gem API answer as the JSON the gem bridge sends (camelCase keys, refs only)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return to_json(dump(by_alias=True, mode="json"))
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value
