"""Gem manifests: the Gem Studio draft ``manifest.json`` and the packaged ``notochord.json``, parsed
into one typed, frozen :class:`Manifest`.

The two forms (K-MAN-01…06, EX-01, EX-02):

=============================  ===================================  ====================================
                               draft ``manifest.json``              packaged ``notochord.json``
=============================  ===================================  ====================================
knowledge section              gem-level ``knowledge``              ``permissions.knowledge``
network section                ``permissions.network``,             ``permissions.network``,
                               flag ``allow_local_network``         flag ``allowLocalNetwork``
tool gets ``ctx.knowledge``    no ``permissions`` list, or a list   ``permissions: {"knowledge": true}``
                               containing ``"knowledge"``
single tool                    gem-level ``entry`` without          (none)
                               ``tools``: one tool named after
                               the entry file's stem
=============================  ===================================  ====================================

Validation rules: every problem is collected and reported at once as ``<json path>: <problem>`` in
one :class:`~notochord.errors.ManifestError` (OD-P10); a manifest with any problem yields no
:class:`Manifest`. Paths are those of the form being read (``knowledge.permissions[1]`` in a draft,
``permissions.knowledge.permissions[1]`` when packaged).

- ``name`` is required. The gem id is ``id`` when given, else derived from ``name`` as a slug
  ``[a-z0-9][a-z0-9-]*`` (at most 64 characters).
- Each permission string must parse (P-KVAL-02/03/05, OD-K13); repeated strings are kept once; each
  ``facts.write`` must be covered by a single ``facts.read`` with the same subject (P-KVAL-04,
  OD-K12).
- Predicate declarations (K-MAN-10…12, OD-K50): a well-formed predicate of two or more levels with a
  valid first level, ``cardinality`` ``one`` or ``many``, a ``description`` of 1–200 characters, and
  optional ``aliases``: a list of strings of at most 1000 characters each. Whether a declaration
  clashes with the existing vocabulary is decided at install by the registry, not here.
- Unknown keys are tolerated at the top level and in tools and resources (manifests carry more than
  this module reads); inside the knowledge section and its declarations they are problems, since a
  misspelt key there silently drops a request. Wrong JSON types are problems everywhere.
- A knowledge section in the other form's place is a problem, never silently read or ignored.
- Resources (OD-P09): ``url`` (http or https), ``sha256`` written ``sha256:<64 hex digits>``,
  ``description``, optional ``size`` in bytes.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Final, Literal, get_args
from urllib.parse import urlsplit

from notochord.access.permissions import FactsPermission, Permission
from notochord.errors import KnowledgeValidationError, ManifestError
from notochord.gems.sops import SopSpec, parse_sops
from notochord.knowledge.predicates import Cardinality, predicate_problem

if TYPE_CHECKING:
    from notochord.net.hosts import NetworkPermission

__all__ = [
    "ASSISTANT_KIND",
    "DRAFT_FILE",
    "PACKAGED_FILE",
    "Form",
    "KnowledgeSection",
    "Manifest",
    "PredicateDeclaration",
    "ResourceSpec",
    "ToolSpec",
    "load_manifest",
    "parse_manifest",
    "read_manifest",
]

Form = Literal["draft", "packaged"]

DRAFT_FILE: Final = "manifest.json"
PACKAGED_FILE: Final = "notochord.json"
ASSISTANT_KIND: Final = "assistant"
"""The ``kind`` of the gem an assistant connects as over MCP: no tools, only its switches."""

MAX_DESCRIPTION: Final = 200
MAX_ALIAS: Final = 1000
MAX_ID: Final = 64

_ID_RE: Final = re.compile(r"[a-z0-9][a-z0-9-]*", re.ASCII)
_SHA256_RE: Final = re.compile(r"sha256:([0-9a-fA-F]{64})", re.ASCII)
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

    def describe_predicate(self, predicate: str) -> str | None:
        """The declared description of ``predicate``, or ``None``; fits ``sentence(describe_predicate=)``."""
        return next((d.description for d in self.predicates if d.predicate == predicate), None)


@dataclass(frozen=True)
class ToolSpec:
    """One tool. ``knowledge`` says whether it gets ``ctx.knowledge`` (K-MAN-02/05/06, OD-K49);
    ``capabilities`` lists the names in its ``permissions`` (draft list, or packaged keys set)."""

    name: str
    entry: str | None
    knowledge: bool
    capabilities: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResourceSpec:
    """A file downloaded at install from a fixed URL and checked against ``sha256`` (P-RES, OD-P09)."""

    url: str
    sha256: str  # lowercase hex digest, without the "sha256:" label
    description: str
    size: int | None = None


@dataclass(frozen=True)
class Manifest:
    """A validated gem manifest, whichever form it was read from."""

    id: str
    name: str
    version: str | None
    description: str | None
    kind: str | None
    tools: tuple[ToolSpec, ...]
    knowledge: KnowledgeSection
    network: NetworkPermission | None
    resources: tuple[ResourceSpec, ...]
    form: Form
    source: str | None = None
    sops: tuple[SopSpec, ...] = ()
    """The SOPs it declares (:mod:`notochord.gems.sops`)."""

    def knowledge_tools(self) -> tuple[str, ...]:
        """Names of the tools that get ``ctx.knowledge``."""
        return tuple(t.name for t in self.tools if t.knowledge)


class _Problems:
    """Collects ``<json path>: <problem>`` lines in the order they are found."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, problem: str) -> None:
        self.items.append(f"{path}: {problem}")


def _optional_str(data: Mapping[str, object], key: str, path: str, problems: _Problems) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        problems.add(path, "must be a string")
        return None
    return value


def _required_text(data: Mapping[str, object], key: str, path: str, problems: _Problems) -> str | None:
    value = data.get(key)
    if value is None:
        problems.add(path, "is required")
        return None
    if not isinstance(value, str):
        problems.add(path, "must be a string")
        return None
    if not value.strip():
        problems.add(path, "must not be blank")
        return None
    return value


def _detect_form(data: Mapping[str, object]) -> Form:
    """Guess the form of a manifest whose file name is unknown; the knowledge section decides first."""
    permissions = data.get("permissions")
    if "knowledge" in data:
        return "draft"
    if isinstance(permissions, dict):
        if "knowledge" in permissions:
            return "packaged"
        network = permissions.get("network")
        if isinstance(network, dict):
            if "allow_local_network" in network:
                return "draft"
            if "allowLocalNetwork" in network:
                return "packaged"
    tools = data.get("tools")
    if isinstance(tools, list):
        for tool in tools:
            tool_permissions = tool.get("permissions") if isinstance(tool, dict) else None
            if isinstance(tool_permissions, dict):
                return "packaged"
            if isinstance(tool_permissions, list):
                return "draft"
    if "entry" in data:
        return "draft"
    return "packaged" if "id" in data or "version" in data else "draft"


def _slug(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return slug[:MAX_ID].rstrip("-")


def _gem_id(data: Mapping[str, object], name: str | None, problems: _Problems) -> str:
    given = data.get("id")
    if given is not None:
        if not isinstance(given, str):
            problems.add("id", "must be a string")
        elif len(given) > MAX_ID or not _ID_RE.fullmatch(given):
            problems.add(
                "id",
                f"{given!r} must be lowercase letters, digits and -, starting with a letter or digit, "
                f"at most {MAX_ID} characters",
            )
        else:
            return given
        return ""
    if name is None:
        return ""
    slug = _slug(name)
    if not slug:
        problems.add("name", f'cannot derive a gem id from {name!r}; add an "id" of lowercase letters, digits and -')
    return slug


def _permissions(raw: object, path: str, problems: _Problems) -> tuple[Permission, ...]:
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


def _aliases(raw: object, path: str, problems: _Problems) -> tuple[str, ...]:
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


def _declaration(raw: object, path: str, problems: _Problems) -> PredicateDeclaration | None:
    if not isinstance(raw, dict):
        problems.add(path, "must be an object with predicate, cardinality, description and optional aliases")
        return None
    before = len(problems.items)
    for key in raw:
        if key not in _DECLARATION_KEYS:
            problems.add(f"{path}.{key}", f"unknown key (expected {', '.join(_DECLARATION_KEYS)})")
    predicate = _required_text(raw, "predicate", f"{path}.predicate", problems)
    if predicate is not None:
        problem = predicate_problem(predicate)
        if problem is not None:
            problems.add(f"{path}.predicate", problem)
    cardinality = raw.get("cardinality")
    if cardinality is None:
        problems.add(f"{path}.cardinality", "is required: one or many")
    elif cardinality not in _CARDINALITIES:
        problems.add(f"{path}.cardinality", f"must be one or many (got {cardinality!r})")
    description = _required_text(raw, "description", f"{path}.description", problems)
    if description is not None and len(description) > MAX_DESCRIPTION:
        problems.add(f"{path}.description", f"is {len(description)} characters; the limit is {MAX_DESCRIPTION}")
    aliases = _aliases(raw.get("aliases"), f"{path}.aliases", problems)
    if len(problems.items) > before or predicate is None or description is None:
        return None
    return PredicateDeclaration(predicate, cardinality, description, aliases)  # type: ignore[arg-type]


def _declarations(raw: object, path: str, problems: _Problems) -> tuple[PredicateDeclaration, ...]:
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


def _knowledge(raw: object, path: str, problems: _Problems) -> KnowledgeSection:
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
    reason = _optional_str(raw, "reason", f"{path}.reason", problems)
    return KnowledgeSection(permissions, predicates, reason if reason and reason.strip() else None)


def _tool_capabilities(raw: object, path: str, form: Form, problems: _Problems) -> tuple[bool, tuple[str, ...]]:
    """``(knowledge, capabilities)`` of one tool's ``permissions`` field (OD-K49)."""
    if form == "draft":
        if raw is None:
            return True, ()
        if not isinstance(raw, list):
            problems.add(path, 'must be a list in manifest.json (for example ["knowledge", "network"])')
            return False, ()
        names: list[str] = []
        for index, item in enumerate(raw):
            if isinstance(item, str):
                names.append(item)
            else:
                problems.add(f"{path}[{index}]", "must be a string")
        return "knowledge" in names, tuple(dict.fromkeys(names))
    if raw is None:
        return False, ()
    if not isinstance(raw, dict):
        problems.add(path, 'must be an object in notochord.json (for example {"knowledge": true})')
        return False, ()
    flag = raw.get("knowledge", False)
    if not isinstance(flag, bool):
        problems.add(f"{path}.knowledge", "must be true or false")
        flag = False
    return flag, tuple(key for key, value in raw.items() if value is not False and value is not None)


def _tools(data: Mapping[str, object], form: Form, problems: _Problems) -> tuple[ToolSpec, ...]:
    raw = data.get("tools")
    entry = _optional_str(data, "entry", "entry", problems) if form == "draft" else None
    if raw is None:
        if entry is None:
            return ()
        stem = PurePosixPath(entry).stem
        if not stem:
            problems.add("entry", f"cannot name a tool after {entry!r}; give a file path such as tools/rate.js")
            return ()
        return (ToolSpec(stem, entry, True),)
    if not isinstance(raw, list):
        problems.add("tools", "must be a list of tools")
        return ()
    tools: list[ToolSpec] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(raw):
        path = f"tools[{index}]"
        if not isinstance(item, dict):
            problems.add(path, "must be an object with name and entry")
            continue
        name = _required_text(item, "name", f"{path}.name", problems)
        tool_entry = _optional_str(item, "entry", f"{path}.entry", problems)
        knowledge, capabilities = _tool_capabilities(item.get("permissions"), f"{path}.permissions", form, problems)
        if name is None:
            continue
        if name in seen:
            problems.add(f"{path}.name", f"duplicate tool name {name!r} (first at tools[{seen[name]}])")
            continue
        seen[name] = index
        tools.append(ToolSpec(name, tool_entry, knowledge, capabilities))
    return tuple(tools)


def _resource(raw: object, path: str, problems: _Problems) -> ResourceSpec | None:
    if not isinstance(raw, dict):
        problems.add(path, "must be an object with url, sha256 and description")
        return None
    before = len(problems.items)
    url = _required_text(raw, "url", f"{path}.url", problems)
    if url is not None:
        try:
            parts = urlsplit(url)
            host = parts.hostname
        except ValueError:
            parts, host = None, None
        if parts is None or parts.scheme not in ("http", "https") or not host:
            problems.add(f"{path}.url", f"{url!r} must be an http or https URL with a host")
    digest: str | None = None
    checksum = _required_text(raw, "sha256", f"{path}.sha256", problems)
    if checksum is not None:
        match = _SHA256_RE.fullmatch(checksum)
        if match is None:
            problems.add(f"{path}.sha256", "must be written sha256:<64 hexadecimal digits>")
        else:
            digest = match.group(1).lower()
    description = _required_text(raw, "description", f"{path}.description", problems)
    size = raw.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        problems.add(f"{path}.size", "must be a whole number of bytes")
        size = None
    if len(problems.items) > before or url is None or digest is None or description is None:
        return None
    return ResourceSpec(url, digest, description, size)


def _resources(raw: object, problems: _Problems) -> tuple[ResourceSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add("resources", "must be a list of resources")
        return ()
    found = (_resource(item, f"resources[{index}]", problems) for index, item in enumerate(raw))
    return tuple(r for r in found if r is not None)


def _network(raw: object, form: Form, problems: _Problems) -> NetworkPermission | None:
    # Imported here: the network module pulls in httpx and idna, which manifest users may not need.
    from notochord.net.hosts import parse_network_section

    network, found = parse_network_section(raw, path="permissions.network", draft=form == "draft")
    problems.items.extend(found)
    return network


def parse_manifest(data: object, *, form: Form | None = None, source: str | None = None) -> Manifest:
    """Validate decoded manifest JSON and return the typed model.

    Args:
        data: the decoded JSON document.
        form: ``"draft"`` (``manifest.json``) or ``"packaged"`` (``notochord.json``); ``None`` guesses
            from the content (where the knowledge section sits, the network flag's spelling, the
            shape of tool permissions).
        source: where the data came from, named in the error.

    Raises:
        ManifestError: listing every problem as ``<json path>: <problem>``.
    """
    if not isinstance(data, dict):
        raise ManifestError(["$: a manifest must be a JSON object"], source=source)
    if form not in (None, "draft", "packaged"):
        raise ManifestError([f"$: unknown manifest form {form!r} (expected draft or packaged)"], source=source)
    resolved: Form = form if form is not None else _detect_form(data)
    problems = _Problems()

    name = _required_text(data, "name", "name", problems)
    gem_id = _gem_id(data, name, problems)
    version = _optional_str(data, "version", "version", problems)
    description = _optional_str(data, "description", "description", problems)
    kind = _optional_str(data, "kind", "kind", problems)

    raw_permissions = data.get("permissions")
    permissions: Mapping[str, object] = raw_permissions if isinstance(raw_permissions, dict) else {}
    if raw_permissions is not None and not isinstance(raw_permissions, dict):
        problems.add("permissions", "must be an object")
    if resolved == "draft":
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
    network = _network(permissions.get("network"), resolved, problems)
    tools = _tools(data, resolved, problems)
    resources = _resources(data.get("resources"), problems)
    sops = parse_sops(data.get("sops"), problems.add)

    if problems.items or name is None:
        raise ManifestError(problems.items, source=source)
    return Manifest(
        id=gem_id,
        name=name,
        version=version,
        description=description,
        kind=kind,
        tools=tools,
        knowledge=knowledge,
        network=network,
        resources=resources,
        form=resolved,
        source=source,
        sops=sops,
    )


def _decode(path: Path) -> object:
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        result: dict[str, object] = {}
        for key, value in items:
            if key in result:
                duplicates.append(key)
            result[key] = value
        return result

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError([f"$: cannot read the file ({exc})"], source=str(path)) from exc
    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise ManifestError(
            [f"$: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"], source=str(path)
        ) from exc
    if duplicates:
        # Two values for one key would leave it to the JSON reader which request counts.
        raise ManifestError(
            [f'$: key "{key}" appears twice in one object' for key in dict.fromkeys(duplicates)],
            source=str(path),
        )
    return data


def load_manifest(folder_or_file: Path) -> Manifest:
    """Read and validate a manifest from a gem folder or a manifest file.

    A folder is searched for ``notochord.json`` first, then ``manifest.json``. The file name decides
    the form; any other file name is read with the form guessed from its content.

    Raises:
        ManifestError: the file is missing, unreadable or not JSON, or the manifest is invalid.
    """
    return read_manifest(folder_or_file)[0]


def read_manifest(folder_or_file: Path) -> tuple[Manifest, dict[str, object]]:
    """:func:`load_manifest`, also returning the decoded JSON (what an install records)."""
    path = Path(folder_or_file)
    if path.is_dir():
        for candidate in (PACKAGED_FILE, DRAFT_FILE):
            if (path / candidate).is_file():
                path = path / candidate
                break
        else:
            raise ManifestError([f"$: no {PACKAGED_FILE} or {DRAFT_FILE} in this folder"], source=str(path))
    elif not path.is_file():
        raise ManifestError(["$: no such file"], source=str(path))
    form: Form | None = {PACKAGED_FILE: "packaged", DRAFT_FILE: "draft"}.get(path.name)  # type: ignore[assignment]
    data = _decode(path)
    manifest = parse_manifest(data, form=form, source=str(path))
    assert isinstance(data, dict)
    return manifest, data
