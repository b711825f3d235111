"""The Knowledge pages' entities and the contacts page (K-UI-12, K-UI-09, K-ENT-11…13, K-FACT-27).

Merging and deleting go through the user's host API, so their rules and sentences are the API's;
each is one change, undone from "View changes" (the page answers with its change's Undo button).
Merging picks the other entity by name: the one entity of the same kind with exactly that name
(or, failing that, the only one whose name or identifier contains it); when several fit, the page
lists them to choose from. On the contacts page, what the user enters about a person counts as
said by the user; only the predicates the page offers for that person can be written there.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from notochord.console.forms import whole_number
from notochord.console.routes.common import Form, Page, PageDep, field, redirect
from notochord.console.views.knowledge import page_number
from notochord.console.views.knowledge_entities import (
    ContactCard,
    contact_card,
    contacts_page,
    entities_page,
    entity_page,
)
from notochord.errors import KnowledgeError, KnowledgeNotFoundError, KnowledgeValidationError
from notochord.knowledge.browse import MAX_PAGE, EntitySummary
from notochord.knowledge.records import Entity

__all__ = ["router"]

router = APIRouter()
_CANDIDATES = 10


@router.get("/knowledge/entities")
def entities(page: PageDep, kind: str = "", q: str = "", deleted: str = "") -> Response:
    """Entities a page at a time, filtered by kind and by name or identifier."""
    notice = page.t("kn_entity_deleted") if deleted else None
    undo = whole_number(deleted)
    try:
        number = page_number(page.request.query_params.get("page", ""))
        view = entities_page(page.space, kind=kind.strip(), query=q.strip(), page=number)
        refusal = None
    except KnowledgeValidationError as error:
        view = entities_page(page.space, kind="", query="", page=1)
        refusal = page.problem(error)
    template = "_entities_list.html" if page.htmx else "entities.html"
    return page.render(
        template,
        view=view,
        notice=notice,
        undo_change=undo,
        refusal=refusal,
        status_code=200 if refusal is None else 422,
    )


def _entity(
    page: Page,
    entity_id: int,
    *,
    notice: str | None = None,
    undo_change: int | None = None,
    errors: dict[str, str] | None = None,
    candidates: list[EntitySummary] | None = None,
    other: str = "",
) -> Response:
    try:
        view = entity_page(page.space, entity_id, page.lang)
    except KnowledgeNotFoundError:
        return page.not_found()
    return page.form_answer(
        "entity.html",
        part="_entity.html",
        notice=notice,
        errors=errors,
        view=view,
        undo_change=undo_change,
        candidates=candidates or [],
        other=other,
    )


@router.get("/knowledge/entities/{entity_id}")
def entity(page: PageDep, entity_id: int, merged: str = "") -> Response:
    """An entity with its identifiers and facts; an old, merged id shows the kept entity."""
    try:
        kept = page.space.user.entities.get(entity_id)
    except KnowledgeNotFoundError:
        return page.not_found()
    if kept.id != entity_id:
        return redirect(f"/knowledge/entities/{kept.id}")
    merge_change = whole_number(merged)
    if merge_change is not None:
        return _entity(page, entity_id, notice=page.t("kn_merged_done"), undo_change=merge_change)
    return _entity(page, entity_id)


def _pick_other(page: Page, kept: Entity, name: str) -> list[EntitySummary]:
    """The entities of ``kept``'s kind that ``name`` may mean, the exact names first."""
    found = page.space.user.entities.page(kind=kept.kind, query=name, limit=MAX_PAGE, exclude=kept.id).items
    wanted = " ".join(name.split()).casefold()
    exact = [e for e in found if " ".join(e.display_name.split()).casefold() == wanted]
    return exact or found


@router.post("/knowledge/entities/{entity_id}/merge")
def merge(page: PageDep, form: Form, entity_id: int) -> Response:
    """Merge another entity into this one; the other's id keeps working and names this one (K-ENT-12)."""
    name = field(form, "other")
    chosen = field(form, "other_id")
    try:
        kept = page.space.user.entities.get(entity_id)
    except KnowledgeNotFoundError:
        return page.not_found()
    if chosen:
        picked = whole_number(chosen)
        if picked is None:
            return page.not_found()
        other_id = picked
    else:
        if not name:
            return _entity(page, kept.id, errors={"other": page.t("kn_other_needed")})
        try:
            candidates = _pick_other(page, kept, name)
        except KnowledgeValidationError as error:
            problem = page.problem(error, field="refused_field_entity")
            return _entity(page, kept.id, errors={"other": problem}, other=name)
        if not candidates:
            return _entity(page, kept.id, errors={"other": page.t("kn_other_none", name=name)}, other=name)
        if len(candidates) > 1:
            return _entity(
                page,
                kept.id,
                errors={"other": page.t("kn_other_several", name=name)},
                candidates=candidates[:_CANDIDATES],
                other=name,
            )
        other_id = candidates[0].id
    try:
        other = page.space.user.entities.get(other_id)
        change_id = page.space.user.entities.merge(keep=kept.id, merge=other.id)
    except KnowledgeNotFoundError:
        return _entity(page, kept.id, errors={"other": page.t("kn_other_none", name=name or chosen)}, other=name)
    except KnowledgeError as error:
        return _entity(page, kept.id, errors={"other": page.problem(error)}, other=name)
    notice = page.t("kn_merged", other=other.display_name, kept=kept.display_name)
    if page.htmx:
        return _entity(page, kept.id, notice=notice, undo_change=change_id)
    return redirect(f"/knowledge/entities/{kept.id}?merged={change_id}")


@router.post("/knowledge/entities/{entity_id}/delete")
def delete(page: PageDep, entity_id: int) -> Response:
    """Delete an entity; the facts relating others to it end with it, in the same change (K-ENT-13)."""
    try:
        page.space.user.entities.get(entity_id)
        change_id = page.space.user.entities.delete(entity_id)
    except KnowledgeNotFoundError:
        return page.not_found()
    except KnowledgeError as error:
        return _entity(page, entity_id, errors={"delete": page.problem(error)})
    return redirect(f"/knowledge/entities?deleted={change_id}")


@router.get("/knowledge/contacts")
def contacts(page: PageDep, q: str = "") -> Response:
    """Facts about people, one set per person (K-UI-09)."""
    try:
        number = page_number(page.request.query_params.get("page", ""))
        refusal = None
    except KnowledgeValidationError as error:
        number, refusal = 1, page.problem(error)
    view = contacts_page(page.space, query=q.strip(), page=number, lang=page.lang)
    return page.render(
        "contacts.html",
        view=view,
        refusal=refusal,
        notice=None,
        field_errors={},
        status_code=200 if refusal is None else 422,
    )


def _card(page: Page, person_id: int) -> ContactCard | None:
    """The person's card, or ``None`` when ``person_id`` is no person in this space."""
    try:
        return contact_card(page.space, person_id, page.lang)
    except KnowledgeNotFoundError:
        return None


def _card_answer(page: Page, person_id: int, *, notice: str | None, errors: dict[str, str] | None = None) -> Response:
    if not page.htmx and not errors:
        return redirect(f"/knowledge/contacts#person-{person_id}")
    card = _card(page, person_id)
    if card is None:
        return page.not_found()
    return page.form_answer(
        "contacts_person.html", part="_contacts_person.html", notice=notice, errors=errors, card=card
    )


@router.post("/knowledge/contacts/{person_id}/facts")
def put_contact_fact(page: PageDep, form: Form, person_id: int) -> Response:
    """Fill in or change a fact about a person, as the user (K-FACT-27)."""
    predicate = field(form, "predicate")
    value = field(form, "value")
    card = _card(page, person_id)
    if card is None or predicate not in {r.predicate for r in card.rows}:
        return page.not_found()
    if not value:
        return _card_answer(page, person_id, notice=None, errors={predicate: page.t("fact_value_needed")})
    try:
        page.space.user.facts.put(subject=person_id, predicate=predicate, value=value)
    except KnowledgeError as error:
        problem = page.problem(error, field="refused_field_value")
        return _card_answer(page, person_id, notice=None, errors={predicate: problem})
    return _card_answer(page, person_id, notice=page.t("fact_saved"))


@router.post("/knowledge/contacts/{person_id}/facts/{fact_id}/delete")
def delete_contact_fact(page: PageDep, person_id: int, fact_id: int) -> Response:
    """Delete one value from a person's set; only a fact the person's card shows."""
    card = _card(page, person_id)
    if card is None or fact_id not in {v.fact_id for r in card.rows for v in r.values}:
        return page.not_found()
    try:
        page.space.user.facts.retract(fact_id)
    except KnowledgeError as error:
        return _card_answer(page, person_id, notice=None, errors={"_": page.problem(error)})
    return _card_answer(page, person_id, notice=page.t("fact_deleted"))
