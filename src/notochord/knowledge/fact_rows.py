"""The rows of facts: one put's validated arguments, and the statements that read a slot of
current facts, insert a fact and expire the facts it replaces (shared by :mod:`.facts` and
:mod:`.fact_batch`; the rules are in :mod:`notochord.knowledge.facts`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import sqlalchemy as sa

from notochord.db.schema import facts, not_by_user
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.arguments import flag, shown
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.quotas import check_json_size, check_length, refuse_nul, refuse_nul_in, storable
from notochord.knowledge.vocabulary import check_hint
from notochord.knowledge.writes import Actor, WriteTx

__all__ = [
    "EXPIRE_ONE",
    "INSERT_FACT",
    "MISSING",
    "PutArguments",
    "Subject",
    "expire",
    "prepare_put",
    "put_preparer",
    "short",
    "slot_rows",
    "written_by",
]

Subject = str | int
"""``"self"`` or an entity id."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


_RESERVED_ORIGINS = frozenset({"user", "assistant"})
_RESERVED_SOURCES = frozenset({"user", "inferred"})


# Built once: building a statement costs more than SQLite takes to run it.
INSERT_FACT = Prepared(sa.insert(facts).returning(facts.c.id))
_CURRENT = facts.c.valid_to.is_(None)
_SLOT_ONE_SQL = sa.select(facts).where(
    facts.c.subject_id == sa.bindparam("subject"), facts.c.predicate == sa.bindparam("predicate"), _CURRENT
)
# A slot lists its facts oldest first: after a merge the same value can be current twice, and a
# duplicate put names the older one whatever order an index would return them in.
_SLOT_ONE = Prepared(_SLOT_ONE_SQL.order_by(facts.c.id))
_SLOT_ONE_VALUE = Prepared(_SLOT_ONE_SQL.where(facts.c.value_json == sa.bindparam("value_json")).order_by(facts.c.id))
_SLOT_MANY_SQL = sa.select(facts).where(
    facts.c.subject_id.in_(sa.bindparam("subjects", expanding=True)),
    facts.c.predicate == sa.bindparam("predicate"),
    _CURRENT,
)
_SLOT_MANY = _SLOT_MANY_SQL.order_by(facts.c.id)
_SLOT_MANY_VALUE = _SLOT_MANY_SQL.where(facts.c.value_json == sa.bindparam("value_json")).order_by(facts.c.id)
EXPIRE_ONE = Prepared(
    sa.update(facts)
    .where(facts.c.id == sa.bindparam("fact_id"))
    .values(valid_to=sa.bindparam("at"), expired_by=sa.bindparam("by"))
)


class PutArguments(NamedTuple):
    """One put's arguments, validated and with the writer's defaults filled in (before any read).

    A named tuple: immutable like a frozen dataclass, and several times cheaper to build (a batch
    builds one per item)."""

    subject: Subject
    predicate: str | None
    hint: str | None
    value: Any
    value_json: str
    object_id: int | Literal["self"] | None
    description: str | None
    origin: str
    source: str
    source_ref: str | None
    pinned: bool
    sets_origin: bool
    by_ref: bool


def prepare_put(
    actor: Actor,
    *,
    subject: Subject = "self",
    predicate: str | None = None,
    hint: str | None = None,
    value: Any = MISSING,
    object_id: int | str | None = None,
    description: str | None = None,
    origin: str | None = None,
    source: str | None = None,
    source_ref: str | None = None,
    pin: bool | None = None,
    decode_ref: Callable[[object], int] | None = None,
) -> PutArguments:
    """Validate a put and apply its single-write limits (the rules of :meth:`Facts.put`)."""
    if actor.kind == "gem":
        for given, reserved, what in ((origin, _RESERVED_ORIGINS, "origin"), (source, _RESERVED_SOURCES, "source")):
            if given is not None and (not isinstance(given, str) or not given or given in reserved):
                raise KnowledgeValidationError(
                    f"{what} {shown(given)} cannot be set by a gem (reserved: {', '.join(sorted(reserved))})"
                )
    if value is MISSING and object_id is None:
        raise KnowledgeValidationError("facts.put needs a value, or an object the value points to")
    value = None if value is MISSING else value
    value_json = check_json_size("value", value)
    # the JSON escapes it, but the change's summary quotes the value as text
    refuse_nul("value", value)
    for what, text in (("description", description), ("sourceRef", source_ref)):
        if text is not None:
            if not isinstance(text, str):
                raise KnowledgeValidationError(f"{what} must be a string")
            check_length(what, text)
    if predicate is not None and hint is not None:
        raise KnowledgeValidationError("pass exactly one of predicate or predicateHint")
    if predicate is None:
        check_hint(hint)
    sets_origin = origin is not None or source is not None
    origin = origin or ("user" if actor.is_user else str(actor))
    source = source or ("user" if actor.is_user else "extracted")
    check_length("origin", origin, 200)
    check_length("source", source, 200)
    # the texts of a fact row besides its JSON value (checked as it is encoded), refused where they
    # enter: a batch writes its rows without checking them again
    if not (storable(origin) and storable(source) and storable(source_ref)):
        refuse_nul_in("facts", {"origin": origin, "source": source, "source_ref": source_ref})
    if decode_ref is not None:
        subject = "self" if subject == "self" else decode_ref(subject)
        if object_id is not None and object_id != "self":
            object_id = decode_ref(object_id)
    pointed: int | Literal["self"] | None
    if object_id is None or isinstance(object_id, int):
        pointed = object_id
    elif object_id == "self":
        pointed = "self"
    else:
        raise KnowledgeValidationError("object must be an entity or 'self'")
    # only true pins: bool("no") is true, and a caller passing the text would pin the fact
    pinned = flag("pin", pin) if pin is not None else (actor.is_user and subject == "self")
    return PutArguments(
        subject=subject,
        predicate=predicate,
        hint=hint,
        value=value,
        value_json=value_json,
        object_id=pointed,
        description=description,
        origin=origin,
        source=source,
        source_ref=source_ref,
        pinned=bool(pinned),
        sets_origin=sets_origin,
        by_ref=decode_ref is not None,
    )


_PLAIN_ARGUMENTS = frozenset({"subject", "predicate", "value", "object_id"})


def put_preparer(actor: Actor) -> Callable[[Mapping[str, Any]], PutArguments]:
    """:func:`prepare_put` of ``actor``'s puts, for the many items of a batch.

    What depends only on the writer (its default origin and source, and their checks) is worked
    out once. An item of the usual shape (a subject, a full predicate, a value or an entity id as
    the object, nothing else) is then checked by the same functions in the same order as
    :func:`prepare_put` checks it; an item of any other shape, or one that is refused, goes through
    :func:`prepare_put` itself, so it is refused with the same error.
    """
    is_user = actor.is_user
    origin = "user" if is_user else str(actor)
    source = "user" if is_user else "extracted"
    check_length("origin", origin, 200)
    check_length("source", source, 200)
    if not (storable(origin) and storable(source)):
        refuse_nul_in("facts", {"origin": origin, "source": source})

    def prepare(arguments: Mapping[str, Any]) -> PutArguments:
        if arguments.keys() <= _PLAIN_ARGUMENTS:
            predicate = arguments.get("predicate")
            value = arguments.get("value", MISSING)
            object_id = arguments.get("object_id")
            if predicate is not None and (object_id is None or object_id.__class__ is int):
                if value is MISSING:
                    value = None if object_id is not None else MISSING
                if value is not MISSING:
                    value_json = check_json_size("value", value)
                    refuse_nul("value", value)
                    subject = arguments.get("subject", "self")
                    pinned = is_user and subject == "self"
                    return PutArguments(
                        subject,
                        predicate,
                        None,
                        value,
                        value_json,
                        object_id,
                        None,
                        origin,
                        source,
                        None,
                        pinned if pinned.__class__ is bool else bool(pinned),
                        False,
                        False,
                    )
        return prepare_put(actor, **arguments)

    return prepare


# What ``json.dumps(value, ensure_ascii=False)`` uses, built once (``dumps`` with an option builds one per call).
_SHOWN = json.JSONEncoder(ensure_ascii=False)


def short(value: Any) -> str:
    """``value`` as a change's summary shows it: its text, or its JSON, cut to 80 characters."""
    text = value if isinstance(value, str) else _SHOWN.encode(value)
    return text if len(text) <= 80 else text[:77] + "…"


def slot_rows(conn: sa.Connection, members: Sequence[int], predicate: str, *, value_json: str | None) -> list[Any]:
    """The current facts of ``members`` under ``predicate`` (only those holding ``value_json`` when given)."""
    params: dict[str, Any] = {"predicate": predicate}
    if value_json is not None:
        params["value_json"] = value_json
    if len(members) == 1:
        params["subject"] = members[0]
        return (_SLOT_ONE if value_json is None else _SLOT_ONE_VALUE).rows(conn, params)
    params["subjects"] = list(members)
    return list(conn.execute(_SLOT_MANY if value_json is None else _SLOT_MANY_VALUE, params).all())


def expire(conn: sa.Connection, rows: Sequence[Any], *, at: str, by: int) -> None:
    """End the current facts ``rows`` at ``at``, replaced by change ``by`` (its undo brings them back)."""
    if len(rows) == 1:
        EXPIRE_ONE.run(conn, {"fact_id": rows[0].id, "at": at, "by": by})
    elif rows:
        conn.execute(sa.update(facts).where(facts.c.id.in_([r.id for r in rows])).values(valid_to=at, expired_by=by))


def written_by(writer: str) -> sa.ColumnElement[bool]:
    """The facts ``writer`` wrote, in terms the partial index on ``facts.writer`` answers (it holds
    only what the user did not write)."""
    mine = facts.c.writer == writer
    return mine if writer == "user" else sa.and_(mine, not_by_user(facts.c.writer))


def record_user_conflict(
    tx: WriteTx, blocker: Any, *, name: str, object_id: int | None, source_ref: str | None, value: Any
) -> int:
    """Record that a gem's or assistant's put met the user's own value in the slot, which is kept.

    The change is a ``conflict``: its ``after`` is what resolving it in the proposal's favour writes
    besides the value, ``proposed`` the value. One put and a batch record it alike.
    """
    return tx.record(
        op="facts.put",
        target_type="fact",
        target_id=blocker.id,
        summary=f"conflict on {name}: kept the user's value",
        before=json.loads(blocker.value_json),
        after={"object": object_id, "sourceRef": source_ref},
        proposed=value,
        status="conflict",
    )
