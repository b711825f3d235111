"""The Runs pages: every run, a gem's runs, one run with its changes; undo it, roll back its files.

"Undo this run" reverts the run's knowledge changes as the user (``space.changes.revert``); "Roll
back its files" restores what it changed in its conversation's folder (``space.files.rollback``,
P-FILE-25); each file it left alone is listed with why. Each refusal is shown on the run's page as
a sentence, and nothing is changed.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from notochord.console.routes.common import Page, PageDep
from notochord.console.undo_words import undo_refusal
from notochord.console.views.runs import parse_page, run_page, runs_page, skipped_paths
from notochord.errors import GemError, KnowledgeError, KnowledgeValidationError, NotochordError, StorageError

__all__ = ["router"]

router = APIRouter()


@router.get("/runs")
def runs(page: PageDep, gem: str = "") -> Response:
    refusal = None
    try:
        number = parse_page(page.request.query_params.get("page", ""))
    except KnowledgeValidationError as error:
        number, refusal = 1, page.problem(error)
    view = runs_page(page.space, gem=gem.strip() or None, page=number)
    return page.render("runs.html", view=view, refusal=refusal, status_code=200 if refusal is None else 422)


def _run(
    page: Page,
    run_id: str,
    *,
    notice: str | None = None,
    refusal: str | None = None,
    skipped: list[tuple[str, str]] | None = None,
) -> Response:
    """The run's page; ``skipped`` lists each file a rollback left alone with why, under ``notice``."""
    try:
        view = run_page(page.space, run_id, lang=page.lang)
    except GemError:
        return page.not_found()
    status = 200 if refusal is None else 422
    return page.render("run.html", view=view, notice=notice, refusal=refusal, skipped=skipped or [], status_code=status)


@router.get("/runs/{run_id}")
def run(page: PageDep, run_id: str) -> Response:
    return _run(page, run_id)


@router.post("/runs/{run_id}/undo")
def undo_run(page: PageDep, run_id: str) -> Response:
    """Revert every knowledge change of the run, as the user (K-UI-11)."""
    try:
        page.space.gems.runner.get(run_id)
    except GemError:
        return page.not_found()
    try:
        result = page.space.changes.revert(run_id=run_id)
    except KnowledgeError as error:
        return _run(page, run_id, refusal=page.t("undo_refused", reason=undo_refusal(error, page.lang)))
    if result.status == "already_reverted":
        return _run(page, run_id, notice=page.t("already_undone"))
    if result.count == 0:  # the run recorded no change (a refused write, a tool that only read)
        return _run(page, run_id, notice=page.t("nothing_to_undo"))
    return _run(page, run_id, notice=page.t("undone", n=result.count))


@router.post("/runs/{run_id}/rollback")
def rollback_files(page: PageDep, run_id: str) -> Response:
    """Restore the files the run changed in its conversation's folder, sparing later changes (P-FILE-25)."""
    try:
        record = page.space.gems.runner.get(run_id)
    except GemError:
        return page.not_found()
    if not record.conversation:
        return _run(page, run_id, refusal=page.t("rollback_refused", reason=page.t("rollback_no_folder")))
    try:
        report = page.space.files.rollback(run_id, conversation=record.conversation)
    except StorageError:
        raise
    except NotochordError as error:
        return _run(page, run_id, refusal=page.t("rollback_refused", reason=page.problem(error)))
    if not report.restored and not report.skipped:
        return _run(page, run_id, notice=page.t("rollback_nothing"))
    notice = page.t("rollback_done", n=len(report.restored))
    if report.skipped:
        notice += " " + page.t("rollback_skipped")
    # each path with its own reason: a later run in the way is not a change made outside
    return _run(page, run_id, notice=notice, skipped=skipped_paths(report, page.lang))
