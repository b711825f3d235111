"""``notochord facts``: write, read, retract and pin facts as the user."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, asked_for, emit, open_space, printable
from notochord.cli.numbers import ID

app = typer.Typer(help="Facts about you and the people you know.", no_args_is_help=True)

_SEE_THEM = "see them with: notochord facts lookup"


def _subject(text: str) -> str | int:
    if text == "self":
        return "self"
    if text.isascii() and text.isdigit():
        return ID(text)
    raise typer.BadParameter("use 'self' or an entity id (a number)")


def _value(text: str) -> Any:
    """JSON when the text is JSON that notochord can store; otherwise the text itself."""
    try:
        value = json.loads(text)
        json.dumps(value, allow_nan=False)
    except ValueError:
        return text
    return value


@app.command("put")
def put(
    predicate: Annotated[str, typer.Argument(help="Full predicate, e.g. location.home.city.")],
    value: Annotated[str, typer.Argument(help="JSON value; text that is not JSON is taken as a string.")],
    subject: Annotated[str, typer.Option(help="'self' or an entity id.")] = "self",
    object_id: Annotated[int | None, typer.Option("--object", help="Entity id the value points to.", parser=ID)] = None,
    pin: Annotated[bool | None, typer.Option("--pin/--no-pin", help="Pin to the standing profile.")] = None,
    as_assistant: Annotated[bool, typer.Option("--as-assistant", help="Write as the assistant.")] = False,
    run_id: Annotated[str | None, typer.Option("--run", help="Group this write in a run.")] = None,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Write a fact (as said by you, unless --as-assistant)."""
    with open_space(data_dir, org) as space:
        writer = space.as_assistant if as_assistant else space.user
        result = writer.facts.put(
            predicate=predicate,
            value=_value(value),
            subject=_subject(subject),
            object=object_id,
            pin=pin,
            run_id=run_id,
        )
    emit(result, as_json=as_json, text=f"{result.status}: fact {result.id} ({printable(result.predicate)})")


@app.command("lookup")
def lookup(
    subject: Annotated[str, typer.Argument(help="'self' or an entity id.")] = "self",
    prefix: Annotated[str | None, typer.Argument(help="Whole-level prefix, e.g. location.home.")] = None,
    pinned: Annotated[bool, typer.Option("--pinned", help="Only the standing profile.")] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """List the current facts of a subject."""
    with open_space(data_dir, org) as space:
        found = space.user.facts.profile(prefix) if pinned else space.user.facts.lookup(_subject(subject), prefix)
    if as_json:
        emit(found, as_json=True)
        return
    lines = [
        f"{f.id:>6}  {printable(f.predicate):<32} {printable(json.dumps(f.value, ensure_ascii=False))}"
        + (f"  -> entity {f.object}" if f.object else "")
        + ("  [pinned]" if f.pinned else "")
        + f"  ({printable(f.origin)})"
        for f in found
    ]
    emit(None, as_json=False, text="\n".join(lines) or "(no facts)")


@app.command("retract")
def retract(
    fact_id: Annotated[int, typer.Argument(help="The fact's id.", parser=ID)],
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Expire a fact (it stays in the history and the retraction can be reverted)."""
    with open_space(data_dir, org) as space, asked_for("fact", fact_id, _SEE_THEM):
        result = space.user.facts.retract(fact_id)
    emit(result, as_json=as_json, text=f"{result.status}: fact {fact_id}")


@app.command("pin")
def pin(
    fact_id: Annotated[int, typer.Argument(help="The fact's id.", parser=ID)],
    unpin: Annotated[bool, typer.Option("--unpin", help="Remove it from the standing profile.")] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Pin a fact to the standing profile (or --unpin it)."""
    with open_space(data_dir, org) as space, asked_for("fact", fact_id, _SEE_THEM):
        result = space.user.facts.pin(fact_id, not unpin)
    emit(result, as_json=as_json, text=f"fact {fact_id} {'pinned' if result.pinned else 'unpinned'}")


__all__ = ["app"]
