"""What a gem requests in its manifest: the knowledge section and the other permission keys.

Where the knowledge section sits depends on the form: the gem-level ``knowledge`` of a draft
``manifest.json``, ``permissions.knowledge`` of a packaged ``notochord.json``; a knowledge section in
the other form's place is a problem, never silently read or ignored. Paths in problems are those of
the form being read (``knowledge.permissions[1]`` in a draft, ``permissions.knowledge.permissions[1]``
when packaged).

- Each permission string must parse (P-KVAL-02/03/05, OD-K13); repeated strings are kept once; each
  ``facts.write`` must be covered by a single ``facts.read`` with the same subject (P-KVAL-04,
  OD-K12).
- Predicate declarations (K-MAN-10…12, OD-K50): a well-formed predicate of two or more levels with a
  valid first level, ``cardinality`` ``one`` or ``many``, a ``description`` of 1–200 characters, and
  optional ``aliases``: a list of strings of at most 1000 characters each. Whether a declaration
  clashes with the existing vocabulary is decided at install by the registry, not here.
- Unknown keys inside the knowledge section and its declarations are problems, since a misspelt key
  there silently drops a request; so is a ``permissions`` key that is no permission (P-GEN-01/02).
- The network section is read by :mod:`notochord.net.hosts`, which owns the host rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, get_args

from notochord.access.permissions import CollectionsPermission, FactsPermission, Permission
from notochord.errors import KnowledgeValidationError
from notochord.gems.manifest_fields import Form, Problems, optional_str, required_text
from notochord.knowledge.predicates import Cardinality, predicate_problem

if TYPE_CHECKING:
    from notochord.net.hosts import NetworkPermission

__all__ = [
    "MAX_ALIAS",
    "MAX_DESCRIPTION",
    "KnowledgeSection",
    "PredicateDeclaration",
    "parse_requests",
]

MAX_DESCRIPTION: Final = 200
MAX_ALIAS: Final = 1000

_KNOWLEDGE_KEYS: Final = ("permissions", "predicates", "reason")
_DECLARATION_KEYS: Final = ("predicate", "cardinality", "description", "aliases")
# P-GEN-01: what a gem may request; files, storage and extraction are not permissions (P-GEN-02)
_PERMISSION_KEYS: Final = frozenset({"network", "knowledge", "providers", "llm", "email", "connections"})

_CARDINALITIES: Final[tuple[Cardinality, ...]] = get_args(Cardinality)


@dataclass(frozen=True)
class PredicateDeclaration:
    """A predicate the gem adds to the vocabulary (K-MAN-08…13). Declaring grants nothing (K-MAN-09)."""

    predicate: str
    cardinality: Cardinality
    description: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class KnowledgeSection:
    """The knowledge permissions a gem requests, its declared predicates and the reason it gives."""

    permissions: tuple[Permission, ...] = ()
    predicates: tuple[PredicateDeclaration, ...] = ()
    reason: str | None = None

    def permission_strings(self) -> tuple[str, ...]:
        """The requested permissions as canonical strings, in manifest order."""
        return tuple(str(p) for p in self.permissions)

    def asks_for_chosen_collections(self) -> bool:
        """Whether a ``user-selected`` collections permission is requested: the only thing the
        collections the user ticks for the gem can open (K-PERM-13)."""
        return any(isinstance(p, CollectionsPermission) and p.target == "user-selected" for p in self.permissions)

    def describe_predicate(self, predicate: str) -> str | None:
        """The declared description of ``predicate``, or ``None``; fits ``sentence(describe_predicate=)``."""
        return next((d.description for d in self.predicates if d.predicate == predicate), None)


def _permissions(raw: object, path: str, problems: Problems) -> tuple[Permission, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(path, "must be a list of permission strings")
        return ()
    parsed: list[Permission] = []
    first_index: dict[Permission, int] = {}
    found: dict[int, str] = {}  # reported in list order, whichever check found them
    for index, item in enumerate(raw):
        if not isinstance(item, str):
            found[index] = "must be a permission string"
            continue
        try:
            permission = Permission.parse(item)
        except KnowledgeValidationError as exc:
            found[index] = exc.message
            continue
        if permission not in first_index:
            first_index[permission] = index
            parsed.append(permission)
    reads = [p for p in parsed if isinstance(p, FactsPermission) and p.action == "read"]
    for permission in parsed:
        uncovered = (
            isinstance(permission, FactsPermission)
            and permission.action == "write"
            and not any(read.covers_facts(permission) for read in reads)
        )
        if uncovered:
            found[first_index[permission]] = f"{permission} is not covered by any facts.read"
    for index in sorted(found):
        problems.add(f"{path}[{index}]", found[index])
    return tuple(parsed)


def _aliases(raw: object, path: str, problems: Problems) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(path, "must be a list of strings")
        return ()
    aliases: list[str] = []
    for index, alias in enumerate(raw):
        if not isinstance(alias, str):
            problems.add(f"{path}[{index}]", "must be a string")
        elif not alias.strip():
            problems.add(f"{path}[{index}]", "must not be blank")
        elif len(alias) > MAX_ALIAS:
            problems.add(f"{path}[{index}]", f"is {len(alias)} characters; the limit is {MAX_ALIAS}")
        else:
            aliases.append(alias)
    return tuple(dict.fromkeys(aliases))


def _declaration(raw: object, path: str, problems: Problems) -> PredicateDeclaration | None:
    if not isinstance(raw, dict):
        problems.add(path, "must be an object with predicate, cardinality, description and optional aliases")
        return None
    before = len(problems.items)
    for key in raw:
        if key not in _DECLARATION_KEYS:
            problems.add(f"{path}.{key}", f"unknown key (expected {', '.join(_DECLARATION_KEYS)})")
    predicate = required_text(raw, "predicate", f"{path}.predicate", problems)
    if predicate is not None:
        problem = predicate_problem(predicate)
        if problem is not None:
            problems.add(f"{path}.predicate", problem)
    cardinality = raw.get("cardinality")
    if cardinality is None:
        problems.add(f"{path}.cardinality", "is required: one or many")
    elif cardinality not in _CARDINALITIES:
        problems.add(f"{path}.cardinality", f"must be one or many (got {cardinality!r})")
    description = required_text(raw, "description", f"{path}.description", problems)
    if description is not None and len(description) > MAX_DESCRIPTION:
        problems.add(f"{path}.description", f"is {len(description)} characters; the limit is {MAX_DESCRIPTION}")
    aliases = _aliases(raw.get("aliases"), f"{path}.aliases", problems)
    if len(problems.items) > before or predicate is None or description is None:
        return None
    return PredicateDeclaration(predicate, cardinality, description, aliases)  # type: ignore[arg-type]


def _declarations(raw: object, path: str, problems: Problems) -> tuple[PredicateDeclaration, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(path, "must be a list of predicate declarations")
        return ()
    declared: list[PredicateDeclaration] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(raw):
        item_path = f"{path}[{index}]"
        declaration = _declaration(item, item_path, problems)
        if declaration is None:
            continue
        if declaration.predicate in seen:
            problems.add(
                f"{item_path}.predicate",
                f"{declaration.predicate} is already declared at {path}[{seen[declaration.predicate]}]",
            )
            continue
        seen[declaration.predicate] = index
        declared.append(declaration)
    return tuple(declared)


def _knowledge(raw: object, path: str, problems: Problems) -> KnowledgeSection:
    if raw is None:
        return KnowledgeSection()
    if not isinstance(raw, dict):
        problems.add(path, "must be an object with permissions, predicates and reason")
        return KnowledgeSection()
    for key in raw:
        if key not in _KNOWLEDGE_KEYS:
            problems.add(f"{path}.{key}", f"unknown key (expected {', '.join(_KNOWLEDGE_KEYS)})")
    permissions = _permissions(raw.get("permissions"), f"{path}.permissions", problems)
    predicates = _declarations(raw.get("predicates"), f"{path}.predicates", problems)
    reason = optional_str(raw, "reason", f"{path}.reason", problems)
    return KnowledgeSection(permissions, predicates, reason if reason and reason.strip() else None)


def _network(raw: object, form: Form, problems: Problems) -> NetworkPermission | None:
    # Imported here: the network module pulls in httpx and idna, which manifest users may not need.
    from notochord.net.hosts import parse_network_section

    network, found = parse_network_section(raw, path="permissions.network", draft=form == "draft")
    problems.items.extend(found)
    return network


def parse_requests(
    data: Mapping[str, object], form: Form, problems: Problems
) -> tuple[KnowledgeSection, NetworkPermission | None]:
    """The knowledge section and network permission of a manifest in ``form``; problems go to ``problems``."""
    raw_permissions = data.get("permissions")
    permissions: Mapping[str, object] = raw_permissions if isinstance(raw_permissions, dict) else {}
    if raw_permissions is not None and not isinstance(raw_permissions, dict):
        problems.add("permissions", "must be an object")
    if form == "draft":
        if "knowledge" in permissions:
            problems.add(
                "permissions.knowledge",
                "a Gem Studio manifest.json keeps knowledge permissions in the gem-level knowledge field",
            )
        knowledge = _knowledge(data.get("knowledge"), "knowledge", problems)
    else:
        if "knowledge" in data:
            problems.add("knowledge", "in notochord.json the knowledge section goes under permissions.knowledge")
        knowledge = _knowledge(permissions.get("knowledge"), "permissions.knowledge", problems)

    for key in permissions:
        if key not in _PERMISSION_KEYS:
            problems.add(
                f"permissions.{key}",
                f"is not a permission a gem requests (known: {', '.join(sorted(_PERMISSION_KEYS))}); "
                "files, storage and document extraction need no permission",
            )
    return knowledge, _network(permissions.get("network"), form, problems)
