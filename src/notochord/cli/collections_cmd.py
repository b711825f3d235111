"""``notochord collections``: the tree of collections, creating and moving them, and ticks for gems.

Rules:

- Wherever a command takes a collection, it accepts ``diary``, ``keep``, a collection id, or the
  name of exactly one live collection (exact first, then ignoring case). Built-in words and numbers
  win over names; a name shared by several collections is refused with their ids (exit 2), an
  unknown one is not found (exit 3). :func:`resolve_collection` is that rule, used by every command.
- ``list`` prints the tree for people and a flat list with parent ids for ``--json`` (K-COL-01 with
  internal ids). Children are listed in creation order.
- Only the user moves collections (K-COL-13); the core refuses moving a built-in, into ``diary``,
  into itself or a subfolder, or beyond five levels (OD-K56), and those refusals exit 2.
- ``tick`` goes through ``space.gems.tick_collection``, which refuses ticking for a gem that requests
  no ``user-selected`` permission (exit 2, nothing changed); unticking is always allowed.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any

import typer

import notochord
from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, open_space
from notochord.errors import KnowledgeNotFoundError, KnowledgeValidationError
from notochord.knowledge.arguments import shown
from notochord.knowledge.collections import BUILTINS, CollectionRow

__all__ = ["app", "collection_json", "resolve_collection"]

app = typer.Typer(help="Collections: the folders your documents live in.", no_args_is_help=True)

CollectionArg = Annotated[str, typer.Argument(help="diary, keep, a collection id, or a unique name.")]


_SEE_THEM = "see them with: notochord collections list"


def resolve_collection(space: notochord.Space, given: str) -> CollectionRow:
    """The live collection ``given`` names: ``diary``/``keep``, an id, or a unique name.

    Raises:
        KnowledgeNotFoundError: nothing has that id or name.
        KnowledgeValidationError: several collections share the name.
    """
    text = given.strip()
    if text in BUILTINS:
        return space.user.collections.get(text)
    rows = space.user.collections.list()
    if text.isascii() and text.isdigit():
        # compared as digits: int() refuses thousands of them, and no id is that long anyway
        digits = text.lstrip("0") or "0"
        by_id = next((r for r in rows if str(r.id) == digits), None)
        if by_id is None:
            named = shown(digits).strip("'")
            raise KnowledgeNotFoundError("collection", f"{named}; {_SEE_THEM}")
        return by_id
    # a name is the same however its accents are composed (the store keeps names composed, NFC)
    wanted = unicodedata.normalize("NFC", text)
    names = [(r, unicodedata.normalize("NFC", r.name)) for r in rows]
    matches = [r for r, name in names if name == wanted] or [
        r for r, name in names if name.casefold() == wanted.casefold()
    ]
    if not matches:
        raise KnowledgeNotFoundError("collection", f"named {text!r}; {_SEE_THEM}")
    if len(matches) > 1:
        ids = ", ".join(str(r.id) for r in matches)
        raise KnowledgeValidationError(f"several collections are named {text!r} (ids {ids}); give the id")
    return matches[0]


def collection_json(row: CollectionRow, *, documents: int | None = None) -> dict[str, Any]:
    """One collection as the CLI prints it in JSON."""
    shown: dict[str, Any] = {
        "id": row.id,
        "name": row.name,
        "builtin": row.builtin,
        "kind": row.kind,
        "parent": row.parent_id,
        "createdBy": row.created_by,
        "createdAt": row.created_at,
    }
    if documents is not None:
        shown["documents"] = documents
    return shown


def _label(row: CollectionRow, documents: int) -> str:
    notes = [f"id {row.id}"]
    if row.builtin:
        notes.append("built-in")
    elif row.kind == "gem":
        notes.append(f"made by {row.created_by}")
    notes.append(f"{documents} document{'' if documents == 1 else 's'}")
    return f"{row.name}  ({', '.join(notes)})"


def _tree_lines(rows: list[CollectionRow], counts: dict[int, int]) -> list[str]:
    by_id = {r.id: r for r in rows}
    children: dict[int | None, list[CollectionRow]] = {}
    for row in rows:
        # a parent that is no longer live would hide its children; show them at the top instead
        parent = row.parent_id if row.parent_id in by_id else None
        children.setdefault(parent, []).append(row)
    lines: list[str] = []

    def walk(row: CollectionRow, lead: str, branch: str) -> None:
        lines.append(branch + _label(row, counts[row.id]))
        below = children.get(row.id, [])
        for i, child in enumerate(below):
            last = i == len(below) - 1
            walk(child, lead + ("    " if last else "│   "), lead + ("└── " if last else "├── "))

    for root in children.get(None, []):
        walk(root, "", "")
    return lines


@app.command("list")
def list_collections(org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Show the collections as a tree (flat, with parent ids, in --json)."""
    with open_space(data_dir, org) as space:
        rows = space.user.collections.list()
        counts = {r.id: len(space.user.documents.list(r.id)) for r in rows}
    emit(
        [collection_json(r, documents=counts[r.id]) for r in rows],
        as_json=as_json,
        text="\n".join(_tree_lines(rows, counts)) or "(no collections)",
    )


@app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="The new collection's name (need not be unique).")],
    parent: Annotated[
        str | None, typer.Option("--parent", help="Create it inside this collection (keep, an id or a name).")
    ] = None,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a collection, at the top level or inside --parent (never inside diary)."""
    with open_space(data_dir, org) as space:
        inside = resolve_collection(space, parent) if parent is not None else None
        row = space.user.collections.create(name, parent=inside.id if inside else None)
    where = f" in {inside.name}" if inside else ""
    emit(collection_json(row), as_json=as_json, text=f"created collection {row.id} {row.name}{where}")


@app.command("move")
def move(
    collection: CollectionArg,
    parent: Annotated[
        str | None, typer.Option("--parent", help="The collection to move it into (keep, an id or a name).")
    ] = None,
    top: Annotated[bool, typer.Option("--top", help="Move it to the top level.")] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Move a collection into another one (--parent) or to the top level (--top)."""
    if (parent is None) == (not top):
        raise typer.BadParameter("give either --parent or --top", param_hint="--parent/--top")
    with open_space(data_dir, org) as space:
        row = resolve_collection(space, collection)
        inside = resolve_collection(space, parent) if parent is not None else None
        change_id = space.user.collections.move(row.id, parent=inside.id if inside else None)
    if change_id is None:
        where = f"in {inside.name}" if inside else "at the top level"
        done = f"collection {row.id} {row.name} is already {where}; nothing changed"
    else:
        where = f"into {inside.name}" if inside else "to the top level"
        done = f"moved collection {row.id} {row.name} {where} (change {change_id})"
    emit({"id": row.id, "parent": inside.id if inside else None, "change": change_id}, as_json=as_json, text=done)


@app.command("tick")
def tick(
    gem_id: Annotated[str, typer.Argument(help="The gem's id.")],
    collection: CollectionArg,
    off: Annotated[bool, typer.Option("--off", help="Untick it: the gem loses access.")] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Tick a collection for a gem that asks for collections you choose (user-selected), or --off to untick it."""
    with open_space(data_dir, org) as space:
        space.gems.get(gem_id)
        row = resolve_collection(space, collection)
        space.gems.tick_collection(gem_id, row.id, on=not off)
    emit(
        {"gem": gem_id, "collection": row.id, "ticked": not off},
        as_json=as_json,
        text=f"{row.name} (id {row.id}) is now {'unticked' if off else 'ticked'} for {gem_id}",
    )
