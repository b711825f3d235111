"""``notochord entities``: resolve, list, merge and delete people, organisations and places."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, asked_for, emit, open_space, printable
from notochord.cli.numbers import ID
from notochord.errors import KnowledgeNotFoundError
from notochord.knowledge.records import Entity

app = typer.Typer(help="People, organisations and places.", no_args_is_help=True)

_SEE_THEM = "see them with: notochord entities list"


def _ident(help_text: str) -> Any:  # what typer.Option gives, for an Annotated parameter
    return typer.Option(show_default=False, help=help_text)


_Email = Annotated[str | None, _ident("An email address (case does not matter).")]
_Phone = Annotated[str | None, _ident("A phone number (only its digits and a leading + count).")]
_Domain = Annotated[str | None, _ident("A domain name, e.g. example.com (www. and case do not matter).")]
_Url = Annotated[str | None, _ident("A web address with its scheme, e.g. https://example.com/ann.")]
_Handle = Annotated[str | None, _ident("An account written platform:account, e.g. github:zhangsan.")]
_Name = Annotated[str | None, _ident("A name (case and spacing do not matter).")]


def _describe(entity: Entity) -> str:
    idents = ", ".join(f"{printable(i.type)}:{printable(i.value)}" for i in entity.identifiers)
    shown = f"{entity.id:>6}  {printable(entity.kind):<8} {printable(entity.display_name)}"
    return shown + (f"  ({idents})" if idents else "")


@app.command("resolve")
def resolve(
    email: _Email = None,
    phone: _Phone = None,
    domain: _Domain = None,
    url: _Url = None,
    handle: _Handle = None,
    name: _Name = None,
    kind: Annotated[str, typer.Option(help="Entity kind.")] = "person",
    create: Annotated[bool, typer.Option("--create", help="Create the entity when none matches.")] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Find an entity by any identifier; exit code 3 when none matches (and --create is not given)."""
    given = {
        k: v
        for k, v in {
            "email": email,
            "phone": phone,
            "domain": domain,
            "url": url,
            "handle": handle,
            "name": name,
        }.items()
        if v is not None
    }
    if not given:
        raise typer.BadParameter("give at least one of --email, --phone, --domain, --url, --handle, --name")
    with open_space(data_dir, org) as space:
        entity = space.user.entities.resolve(kind=kind, create=create, **given)
    if entity is None:
        emit(None, as_json=as_json, text="no matching entity")
        raise typer.Exit(3)
    emit(entity, as_json=as_json, text=_describe(entity))


@app.command("list")
def list_entities(
    kind: Annotated[str, typer.Option(help="Entity kind.")] = "person",
    query: Annotated[str | None, typer.Option(help="Substring of a name or identifier.")] = None,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """List entities of one kind, by name."""
    with open_space(data_dir, org) as space:
        found = space.user.entities.list(kind, query=query)
    emit(found, as_json=as_json, text="\n".join(_describe(e) for e in found) or "(no entities)")


@app.command("merge")
def merge(
    keep: Annotated[int, typer.Argument(help="The entity to keep.", parser=ID)],
    merged: Annotated[int, typer.Argument(help="The entity merged into it (its id keeps working).", parser=ID)],
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Merge one entity into another (revertible)."""
    with open_space(data_dir, org) as space:
        try:
            change_id = space.user.entities.merge(keep=keep, merge=merged)
        except KnowledgeNotFoundError:
            # the store does not say which of the two it missed: look the first one up to tell
            with asked_for("entity", keep, _SEE_THEM):
                space.user.entities.get(keep)
            with asked_for("entity", merged, _SEE_THEM):
                raise
    emit({"change": change_id}, as_json=as_json, text=f"merged {merged} into {keep} (change {change_id})")


@app.command("delete")
def delete(
    entity_id: Annotated[int, typer.Argument(help="The entity's id.", parser=ID)],
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Delete an entity and the relations to it (revertible, all together)."""
    with open_space(data_dir, org) as space, asked_for("entity", entity_id, _SEE_THEM):
        change_id = space.user.entities.delete(entity_id)
        summary = space.changes.get(change_id).summary
    emit({"change": change_id}, as_json=as_json, text=f"{printable(summary)} (change {change_id})")
