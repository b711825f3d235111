"""The Knowledge pages' entities and the contacts page as data (K-UI-12, K-UI-09, K-ENT, OD-K52).

The contacts page shows facts about people, one set per person: every entity of kind ``person``
(the user is never one of them), each with the contact predicates under the app's own names and
every other predicate the person already has a value for. A page of people costs two host calls
(the people with their identifiers, then their facts), whatever its length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from notochord.access.sentences import Lang
from notochord.app import Space
from notochord.console.views.facts import FactRow, FactValue, value_text
from notochord.knowledge.browse import EntitySummary, RelatedFact
from notochord.knowledge.predicates import CORE_PREDICATES, Cardinality
from notochord.knowledge.records import Entity

__all__ = [
    "CONTACT_PREDICATES",
    "ENTITIES_PER_PAGE",
    "PEOPLE_PER_PAGE",
    "ContactCard",
    "ContactsPage",
    "EntitiesPage",
    "EntityFact",
    "EntityPage",
    "FactRow",
    "FactValue",
    "contact_card",
    "contact_rows",
    "contacts_page",
    "entities_page",
    "entity_page",
    "label_of",
]

ENTITIES_PER_PAGE: Final = 50
PEOPLE_PER_PAGE: Final = 20
CONTACT_PREDICATES: Final = (
    "contact.email",
    "contact.phone",
    "contact.address",
    "work.company",
    "work.title",
    "location.home.city",
    "identity.birthday",
)
"""What the contacts page offers to fill in for every person, in this order."""

_CORE = {p.name: p for p in CORE_PREDICATES}


def label_of(predicate: str, lang: Lang) -> str:
    """The app's own name for a core predicate; other predicates show as they are named."""
    core = _CORE.get(predicate)
    if core is None:
        return predicate
    return core.display_zh if lang == "zh" else core.display_en


def _cardinality(predicate: str) -> Cardinality:
    core = _CORE.get(predicate)
    return core.cardinality if core is not None else "many"


@dataclass(frozen=True)
class EntitiesPage:
    entities: list[EntitySummary]
    total: int
    page: int
    has_more: bool
    kinds: list[str]
    kind: str
    query: str


def entities_page(space: Space, *, kind: str, query: str, page: int) -> EntitiesPage:
    """One page of entities, filtered by kind (blank: every kind) and by name or identifier.

    Raises:
        KnowledgeValidationError: the kind is malformed.
    """
    found = space.user.entities.page(
        kind=kind or None,
        query=query or None,
        offset=(page - 1) * ENTITIES_PER_PAGE,
        limit=ENTITIES_PER_PAGE,
    )
    return EntitiesPage(
        entities=found.items,
        total=found.total,
        page=page,
        has_more=found.has_more,
        kinds=space.user.entities.kinds(),
        kind=kind,
        query=query,
    )


@dataclass(frozen=True)
class EntityFact:
    id: int
    predicate: str
    label: str
    value: str
    object_name: str | None
    writer: str


@dataclass(frozen=True)
class EntityPage:
    entity: Entity
    facts: list[EntityFact]


def entity_page(space: Space, entity_id: int, lang: Lang) -> EntityPage:
    """An entity with its identifiers and current facts.

    Raises:
        KnowledgeNotFoundError: no live entity has that id (a merged one's id names the kept one).
    """
    entity = space.user.entities.get(entity_id)
    about = space.user.facts.about([entity.id]).get(entity.id, [])
    objects = {f.object_id for f in about if f.object_id is not None}
    names = space.user.entities.names(sorted(objects))
    return EntityPage(
        entity=entity,
        facts=[
            EntityFact(
                id=f.id,
                predicate=f.predicate,
                label=label_of(f.predicate, lang),
                value=value_text(f.value),
                object_name=names.get(f.object_id) if f.object_id is not None else None,
                writer=f.writer,
            )
            for f in about
        ],
    )


@dataclass(frozen=True)
class ContactCard:
    person: EntitySummary
    rows: list[FactRow]


@dataclass(frozen=True)
class ContactsPage:
    cards: list[ContactCard]
    total: int
    page: int
    has_more: bool
    query: str


def contact_rows(facts: list[RelatedFact], lang: Lang) -> list[FactRow]:
    """A person's set: the contact predicates, then every other predicate they have a value for."""
    values: dict[str, list[FactValue]] = {}
    for fact in facts:
        values.setdefault(fact.predicate, []).append(FactValue(fact_id=fact.id, text=value_text(fact.value)))
    names = list(CONTACT_PREDICATES) + sorted(p for p in values if p not in CONTACT_PREDICATES)
    return [
        FactRow(predicate=p, label=label_of(p, lang), cardinality=_cardinality(p), values=values.get(p, []))
        for p in names
    ]


def contacts_page(space: Space, *, query: str, page: int, lang: Lang) -> ContactsPage:
    """One page of people, each with their set of facts."""
    people = space.user.entities.page(
        kind="person", query=query or None, offset=(page - 1) * PEOPLE_PER_PAGE, limit=PEOPLE_PER_PAGE
    )
    about = space.user.facts.about([p.id for p in people.items])
    return ContactsPage(
        cards=[ContactCard(person=p, rows=contact_rows(about.get(p.id, []), lang)) for p in people.items],
        total=people.total,
        page=page,
        has_more=people.has_more,
        query=query,
    )


def contact_card(space: Space, person_id: int, lang: Lang) -> ContactCard | None:
    """One person's card, or ``None`` when the id names no live person."""
    entity = space.user.entities.get(person_id)
    if entity.kind != "person":
        return None
    summary = EntitySummary(
        id=entity.id,
        kind=entity.kind,
        display_name=entity.display_name,
        identifiers=entity.identifiers,
        created_by=entity.created_by,
        created_at=entity.created_at,
    )
    return ContactCard(person=summary, rows=contact_rows(space.user.facts.about([entity.id]).get(entity.id, []), lang))
