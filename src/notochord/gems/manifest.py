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
:class:`Manifest`.

- ``name`` is required. The gem id is ``id`` when given, else derived from ``name`` as a slug
  ``[a-z0-9][a-z0-9-]*`` (at most 64 characters). The id names folders of the installation (its
  code, its resources, its private storage), so it is never a name Windows reserves for a device
  (``con``, ``prn``, ``aux``, ``nul``, ``com0``-``com9``, ``lpt0``-``lpt9``): a vault or backup
  carried to Windows could not hold those folders.
- ``version`` is optional: when given, not blank and at most 100 characters. No name, tool name or
  version holds a control character (a terminal showing it would obey it); a name or tool name is
  at most 200 characters.
- A manifest file is UTF-8 JSON of at most 4 MiB; a leading byte order mark is ignored, and ``NaN`` and
  ``Infinity``, which Python's JSON reader would take, are refused, as are keys given twice.
- Unknown keys are tolerated at the top level. Wrong JSON types are problems everywhere.
- What the gem requests (the knowledge section, its predicate declarations, the network section and
  the other permission keys) is read by :mod:`notochord.gems.manifest_permissions`; its tools and
  resources by :mod:`notochord.gems.manifest_tools`; its SOPs by :mod:`notochord.gems.sops`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from notochord.errors import ManifestError
from notochord.gems.manifest_fields import (
    CONTROL_PROBLEM,
    Form,
    Problems,
    has_control_characters,
    name_problem,
    optional_str,
    required_text,
)
from notochord.gems.manifest_permissions import KnowledgeSection, PredicateDeclaration, parse_requests
from notochord.gems.manifest_tools import ResourceSpec, ToolSpec, parse_resources, parse_tools
from notochord.gems.sops import SopSpec, parse_sops

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

DRAFT_FILE: Final = "manifest.json"
PACKAGED_FILE: Final = "notochord.json"
ASSISTANT_KIND: Final = "assistant"
"""The ``kind`` of the gem an assistant connects as over MCP: no tools, only its switches."""

MAX_ID: Final = 64
MAX_VERSION: Final = 100
MAX_MANIFEST_BYTES: Final = 4 * 1024 * 1024
"""The largest manifest file read."""

_ID_RE: Final = re.compile(r"[a-z0-9][a-z0-9-]*", re.ASCII)
# COM0 and LPT0 too: some Windows versions refuse them as well, and no gem needs them
_DEVICE_RE: Final = re.compile(r"con|prn|aux|nul|com[0-9]|lpt[0-9]", re.ASCII)
_DEVICE_PROBLEM: Final = "is a name Windows reserves for a device, so its folders could not be kept there"


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


def _gem_id(data: Mapping[str, object], name: str | None, problems: Problems) -> str:
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
        elif _DEVICE_RE.fullmatch(given):
            problems.add("id", f"{given!r} {_DEVICE_PROBLEM}; choose another id")
        else:
            return given
        return ""
    if name is None:
        return ""
    slug = _slug(name)
    if not slug:
        problems.add("name", f'cannot derive a gem id from {name!r}; add an "id" of lowercase letters, digits and -')
    elif _DEVICE_RE.fullmatch(slug):
        problems.add("name", f'the gem id derived from it, {slug!r}, {_DEVICE_PROBLEM}; add an "id" such as {slug}-gem')
        return ""
    return slug


def _version(data: Mapping[str, object], problems: Problems) -> str | None:
    version = optional_str(data, "version", "version", problems)
    if version is None:
        return None
    if not version.strip():
        problems.add("version", "must not be blank; leave it out or write one such as 1.0.0")
    elif len(version) > MAX_VERSION:
        problems.add("version", f"is {len(version)} characters; the limit is {MAX_VERSION}")
    elif has_control_characters(version):
        problems.add("version", CONTROL_PROBLEM)
    return version


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
    problems = Problems()

    name = required_text(data, "name", "name", problems)
    named = None if name is None else name_problem(name)
    if named is not None:
        problems.add("name", named)
    gem_id = _gem_id(data, name, problems)
    version = _version(data, problems)
    description = optional_str(data, "description", "description", problems)
    kind = optional_str(data, "kind", "kind", problems)

    knowledge, network = parse_requests(data, resolved, problems)
    tools = parse_tools(data, resolved, problems)
    resources = parse_resources(data.get("resources"), problems)
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


_NOT_JSON: Final = "$: the manifest is not valid JSON"
_FEW_KILOBYTES: Final = "a manifest is a few kilobytes"

# What Python's JSON reader says (the start of its message) → the same in plain words.
_JSON_PROBLEMS: Final = (
    ("Expecting value", "a value is missing or is not JSON (text goes in double quotes)"),
    ("Expecting property name", "a key in double quotes is expected here (is there a comma after the last item?)"),
    ("Illegal trailing comma", "a comma follows the last item; remove it"),
    ("Expecting ':'", "a colon is expected after the key"),
    ("Expecting ','", "a comma is expected between two items"),
    ("Unterminated string", "this text is never closed with a double quote"),
    (
        "Invalid control character",
        "text holds a raw line break, tab or other control character; write it as an escape such as \\n or \\t",
    ),
    ("Invalid \\uXXXX", "a \\u escape needs four hexadecimal digits"),
    ("Invalid \\escape", "a backslash starts no known escape; write \\\\ for a backslash"),
    ("Extra data", "more text follows the end of the manifest"),
)


def _not_json(error: json.JSONDecodeError, text: str) -> str:
    """The problem line for a manifest the JSON reader refused: where, and what is wrong there."""
    if not text.strip():
        return f"{_NOT_JSON}: the file is empty"
    problem = next((plain for said, plain in _JSON_PROBLEMS if error.msg.startswith(said)), "it stops being JSON here")
    return f"{_NOT_JSON} at line {error.lineno}, column {error.colno}: {problem}"


def _unreadable(error: OSError) -> str:
    reason = (error.strerror or "the system refused").lower()
    return f"$: the manifest file cannot be read: {reason}; check that you may read it"


def _not_utf8(raw: bytes, start: int) -> str:
    before = raw[:start]
    line = before.count(b"\n") + 1
    # the column counts characters, as an editor does, up to the byte that is not UTF-8
    column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", errors="replace")) + 1
    return (
        f"$: the manifest is not UTF-8 text: the byte 0x{raw[start]:02X} at line {line}, column {column} "
        "is not UTF-8; save the file as UTF-8"
    )


class _NotJsonNumberError(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity``: Python's JSON reader takes them, JSON does not."""

    def __init__(self, word: str) -> None:
        super().__init__(word)
        self.word = word


def _refuse_constant(word: str) -> object:
    raise _NotJsonNumberError(word)


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
        # a manifest is a few kilobytes, and a file of gigabytes must not fill memory
        too_large = path.stat().st_size > MAX_MANIFEST_BYTES
        raw = b"" if too_large else path.read_bytes()
    except OSError as exc:
        raise ManifestError([_unreadable(exc)], source=str(path)) from exc
    if too_large or len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestError(
            [f"$: the manifest file is larger than {MAX_MANIFEST_BYTES // (1024 * 1024)} MiB; {_FEW_KILOBYTES}"],
            source=str(path),
        )
    try:
        # editors that save "UTF-8 with BOM" put U+FEFF first; it is no part of the JSON
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ManifestError([_not_utf8(raw, exc.start)], source=str(path)) from exc
    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise ManifestError([_not_json(exc, text)], source=str(path)) from exc
    except _NotJsonNumberError as exc:
        raise ManifestError(
            [f"{_NOT_JSON}: {exc.word} is not a JSON number; write a number, or text in double quotes"],
            source=str(path),
        ) from exc
    except RecursionError as exc:
        raise ManifestError([f"{_NOT_JSON}: it nests lists or objects too deeply to read"], source=str(path)) from exc
    except ValueError as exc:
        # the one other refusal of the reader: an integer too long to convert
        raise ManifestError([f"{_NOT_JSON}: it holds a number too long to read"], source=str(path)) from exc
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


def _manifest_file(path: Path) -> Path:
    if path.is_dir():
        for candidate in (PACKAGED_FILE, DRAFT_FILE):
            if (path / candidate).is_file():
                return path / candidate
        raise ManifestError([f"$: no {PACKAGED_FILE} or {DRAFT_FILE} in this folder"], source=str(path))
    if not path.is_file():
        raise ManifestError(["$: no such file"], source=str(path))
    return path


def read_manifest(folder_or_file: Path) -> tuple[Manifest, dict[str, object]]:
    """:func:`load_manifest`, also returning the decoded JSON (what an install records)."""
    path = Path(folder_or_file)
    try:
        path = _manifest_file(path)
    except OSError as exc:  # a name too long for the system, a folder it may not search
        reason = (exc.strerror or "the system refused").lower()
        raise ManifestError([f"$: this path cannot be read: {reason}"], source=str(path)) from exc
    form: Form | None = {PACKAGED_FILE: "packaged", DRAFT_FILE: "draft"}.get(path.name)  # type: ignore[assignment]
    data = _decode(path)
    manifest = parse_manifest(data, form=form, source=str(path))
    assert isinstance(data, dict)
    return manifest, data
