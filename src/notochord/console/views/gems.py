"""The Gems list, the install screen and a gem's page as data (K-UI-01…09, P-RES-05, OD-K52).

A gem's page lists, below its switches, the facts about the user that its ``facts.*:self:…``
permissions cover: every core predicate and every predicate the gem declared under those
permissions, and every predicate the user already has a value for there. Core predicates show the
app's own names ("City of residence"); a predicate the gem declared shows its description, labelled
"Added by this gem". Permissions about contacts (``facts.read:person:…``) add nothing here (K-UI-09).
"""

from __future__ import annotations

from dataclasses import dataclass

from notochord.access.permissions import SELF, FactsPermission
from notochord.access.sentences import Lang, sentence
from notochord.app import Space
from notochord.console.views.facts import FactRow, FactValue, value_text
from notochord.gems.manifest import Manifest
from notochord.gems.resources import describe_resources
from notochord.knowledge.predicates import CORE_PREDICATES, Cardinality

__all__ = [
    "FactRow",
    "FactValue",
    "GemListItem",
    "GemPage",
    "InstallScreen",
    "ResourceItem",
    "SwitchItem",
    "TickItem",
    "ToolItem",
    "collection_ticks",
    "gem_list",
    "gem_page",
    "install_screen",
    "self_fact_rows",
]

_CORE = {p.name: p for p in CORE_PREDICATES}
USER_SELECTED = "user-selected"


@dataclass(frozen=True)
class GemListItem:
    id: str
    name: str
    version: str | None
    description: str | None
    switched_on: int
    requested: int


@dataclass(frozen=True)
class SwitchItem:
    permission: str
    on: bool
    sentence: str


@dataclass(frozen=True)
class ToolItem:
    name: str
    knowledge: bool


@dataclass(frozen=True)
class ResourceItem:
    description: str
    size: int | None
    host: str
    when: str


@dataclass(frozen=True)
class InstallScreen:
    """What the user reads before installing (K-UI-02/03): every permission as its sentence."""

    id: str
    name: str
    version: str | None
    description: str | None
    sentences: list[str]
    knowledge_reason: str | None
    network_reason: str | None
    network_hosts: list[str]
    allow_local_network: bool
    tools: list[ToolItem]
    resources: list[ResourceItem]


@dataclass(frozen=True)
class TickItem:
    """A collection the user may tick for the gem's ``user-selected`` permissions (K-UI-10)."""

    id: int
    name: str
    ticked: bool


@dataclass(frozen=True)
class GemPage:
    id: str
    name: str
    version: str | None
    description: str | None
    tools: list[ToolItem]
    resources: list[ResourceItem]
    switches: list[SwitchItem]
    knowledge_reason: str | None
    network_reason: str | None
    network_hosts: list[str]
    allow_local_network: bool
    facts: list[FactRow]
    ticks: list[TickItem] | None
    """``None`` when the gem requests no ``user-selected`` collection permission."""


def gem_list(space: Space) -> list[GemListItem]:
    # two reads whatever the number of gems: their rows, and every switch
    states = space.gems.switches_of_all()
    items = []
    for gem in space.gems.list():
        requested = gem.manifest.knowledge.permission_strings()
        state = states.get(gem.id, {})
        items.append(
            GemListItem(
                id=gem.id,
                name=gem.name,
                version=gem.version,
                description=gem.description,
                switched_on=sum(1 for p in requested if state.get(p, False)),
                requested=len(requested),
            )
        )
    return items


def _tools(manifest: Manifest) -> list[ToolItem]:
    return [ToolItem(name=t.name, knowledge=t.knowledge) for t in manifest.tools]


def _resources(manifest: Manifest) -> list[ResourceItem]:
    return [
        ResourceItem(description=r["description"], size=r["size"], host=r["host"], when=r["when"])
        for r in describe_resources(manifest)
    ]


def install_screen(manifest: Manifest, lang: Lang) -> InstallScreen:
    describe = manifest.knowledge.describe_predicate
    network = manifest.network
    return InstallScreen(
        id=manifest.id,
        name=manifest.name,
        version=manifest.version,
        description=manifest.description,
        sentences=[sentence(p, lang=lang, describe_predicate=describe) for p in manifest.knowledge.permissions],
        knowledge_reason=manifest.knowledge.reason,
        network_reason=network.reason if network is not None else None,
        network_hosts=[str(h) for h in network.hosts] if network is not None else [],
        allow_local_network=bool(network and network.allow_local_network),
        tools=_tools(manifest),
        resources=_resources(manifest),
    )


def self_fact_rows(space: Space, manifest: Manifest, lang: Lang) -> list[FactRow]:
    """The facts about the user the gem's ``self`` permissions cover, with their current values."""
    scopes = [p for p in manifest.knowledge.permissions if isinstance(p, FactsPermission) and p.subject == SELF]
    if not scopes:
        return []
    declared = {d.predicate: d for d in manifest.knowledge.predicates}
    names: list[str] = []
    for name in [*_CORE, *declared]:
        if any(scope.covers_predicate(name) for scope in scopes) and name not in names:
            names.append(name)
    values: dict[str, list[FactValue]] = {}
    # two scopes may overlap; a set keeps each fact once without a scan per value
    seen: set[int] = set()
    for prefix in dict.fromkeys(scope.prefix for scope in scopes):
        for fact in space.user.facts.lookup("self", prefix):
            if any(scope.covers_predicate(fact.predicate) for scope in scopes):
                shown = values.setdefault(fact.predicate, [])
                if fact.id not in seen:
                    seen.add(fact.id)
                    shown.append(FactValue(fact_id=fact.id, text=value_text(fact.value)))
                if fact.predicate not in names:
                    names.append(fact.predicate)
    rows = []
    for name in names:
        core = _CORE.get(name)
        declaration = declared.get(name)
        if core is not None:
            label = core.display_zh if lang == "zh" else core.display_en
            cardinality: Cardinality = core.cardinality
        elif declaration is not None:
            label, cardinality = declaration.description, declaration.cardinality
        else:
            label, cardinality = name, "many"
        rows.append(
            FactRow(
                predicate=name,
                label=label,
                added_by_gem=core is None and declaration is not None,
                cardinality=cardinality,
                values=values.get(name, []),
            )
        )
    return rows


def collection_ticks(space: Space, gem_id: str, manifest: Manifest) -> list[TickItem] | None:
    """The collections the user can tick for the gem, or ``None`` if it asks for no chosen collections."""
    if not manifest.knowledge.asks_for_chosen_collections():
        return None
    tree = space.core.collections.read_tree()
    ticked = space.core.collections.ticked_now(gem_id)
    return [
        TickItem(id=row.id, name=row.name, ticked=row.id in ticked)
        for row in sorted(tree.by_id.values(), key=lambda r: r.id)
        if tree.class_of(row.id) == USER_SELECTED
    ]


def gem_page(space: Space, gem_id: str, lang: Lang) -> GemPage:
    """The gem's page; raises ``GemError`` when no such gem is installed in ``space``."""
    gem = space.gems.get(gem_id)
    manifest = gem.manifest
    screen = install_screen(manifest, lang)
    switches = [
        SwitchItem(permission=s.permission, on=s.on, sentence=s.sentence_zh if lang == "zh" else s.sentence_en)
        for s in space.gems.permissions(gem_id)
    ]
    return GemPage(
        id=gem.id,
        name=gem.name,
        version=gem.version,
        description=gem.description,
        tools=screen.tools,
        resources=screen.resources,
        switches=switches,
        knowledge_reason=screen.knowledge_reason,
        network_reason=screen.network_reason,
        network_hosts=screen.network_hosts,
        allow_local_network=screen.allow_local_network,
        facts=self_fact_rows(space, manifest, lang),
        ticks=collection_ticks(space, gem_id, manifest),
    )
