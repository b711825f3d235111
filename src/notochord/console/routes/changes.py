"""The "View changes" page (K-UI-11): the filtered list, undoing one change or a whole run, settling a conflict."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.datastructures import FormData
from starlette.responses import Response

from notochord.console.routes.common import Form, Page, PageDep, field
from notochord.console.undo_words import undo_refusal
from notochord.console.views.changes import STATUSES, Filters, changes_page
from notochord.errors import KnowledgeError, KnowledgeValidationError

__all__ = ["router"]

router = APIRouter()


def _page(page: Page, filters: Filters, *, notice: str | None = None, refusal: str | None = None) -> Response:
    try:
        view = changes_page(page.space, filters)
    except KnowledgeValidationError as error:
        view = changes_page(page.space, Filters())
        refusal = page.problem(error, field="refused_field_filter")
    return page.render(
        "changes.html",
        view=view,
        statuses=STATUSES,
        notice=notice,
        refusal=refusal,
        status_code=200 if refusal is None else 422,
    )


@router.get("/changes")
def changes(page: PageDep) -> Response:
    try:
        filters = Filters.parse(dict(page.request.query_params))
    except KnowledgeValidationError as error:
        return _page(page, Filters(), refusal=page.problem(error, field="refused_field_filter"))
    return _page(page, filters)


def _filters_from(form_filters: dict[str, str]) -> Filters:
    try:
        return Filters.parse(form_filters)
    except KnowledgeValidationError:
        return Filters()


def _undo(page: Page, *, change_id: int | None, run_id: str | None, filters: Filters) -> Response:
    try:
        result = page.space.changes.revert(change_id, run_id=run_id)
    except KnowledgeError as error:
        return _page(page, filters, refusal=page.t("undo_refused", reason=undo_refusal(error, page.lang)))
    if result.status == "already_reverted":
        return _page(page, filters, notice=page.t("already_undone"))
    return _page(page, filters, notice=page.t("undone", n=result.count))


def _kept_filters(form: dict[str, str]) -> Filters:
    return _filters_from({k: form.get(f"f_{k}", "") for k in ("gem", "status", "run", "since", "page")})


def _texts(form: FormData) -> dict[str, str]:
    return {key: field(form, key) for key in form}


@router.post("/changes/{change_id}/undo")
def undo_change(page: PageDep, form: Form, change_id: int) -> Response:
    return _undo(page, change_id=change_id, run_id=None, filters=_kept_filters(_texts(form)))


@router.post("/changes/{change_id}/resolve")
def resolve_conflict(page: PageDep, form: Form, change_id: int) -> Response:
    """Settle a conflict as the user: keep the current value, or take the one the gem proposed."""
    texts = _texts(form)
    filters = _kept_filters(texts)
    take = texts.get("take", "")
    try:
        page.space.changes.resolve(change_id, take=take)
    except KnowledgeError as error:
        return _page(page, filters, refusal=page.t("conflict_not_resolved", reason=page.problem(error)))
    return _page(
        page, filters, notice=page.t("conflict_resolved_theirs" if take == "theirs" else "conflict_resolved_mine")
    )


@router.post("/changes/undo-run")
def undo_run(page: PageDep, form: Form) -> Response:
    texts = _texts(form)
    filters = _kept_filters(texts)
    run_id = texts.get("run", "")
    if not run_id:
        return _page(page, filters, refusal=page.t("undo_refused", reason=page.t("undo_no_run")))
    return _undo(page, change_id=None, run_id=run_id, filters=filters)
