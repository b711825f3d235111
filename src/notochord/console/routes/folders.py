"""A gem's "Settings › Working folder": choose or clear the ``workspace:`` of its scheduled and
event-triggered SOPs (P-FILE-29…31). A refused folder is named with the rule it breaks, next to the
field and in the reader's language, and the choice stays as it was."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from notochord.console.forms import FieldValueError
from notochord.console.routes.common import Form, Page, PageDep, field, redirect, typed_path
from notochord.console.routes.gems import gem_page_answer
from notochord.console.views.folders import folders_of, working_folder
from notochord.errors import FileError, FileNotFoundInWorkspaceError, GemError

__all__ = ["router"]

router = APIRouter()

FIELD = "working_folder"


def _offered(page: Page, gem_id: str) -> bool:
    try:
        manifest = page.space.gems.get(gem_id).manifest
    except GemError:
        return False
    return working_folder(page.space, gem_id, manifest) is not None


@router.post("/gems/{gem_id}/working-folder")
def choose(page: PageDep, form: Form, gem_id: str) -> Response:
    if not _offered(page, gem_id):
        return page.not_found()
    typed = field(form, "path")
    if not typed:
        return gem_page_answer(page, gem_id, errors={FIELD: page.t("folder_err_empty")}, values={FIELD: typed})
    try:
        path = typed_path(typed)
    except FieldValueError as problem:
        return gem_page_answer(page, gem_id, errors={FIELD: page.problem(problem)}, values={FIELD: typed})
    if not path.is_absolute():
        message = page.t("folder_err_relative", path=typed)
        return gem_page_answer(page, gem_id, errors={FIELD: message}, values={FIELD: typed})
    try:
        folders_of(page.space).set_working_folder(gem_id, path, core=page.space.core)
    except FileNotFoundInWorkspaceError as error:
        # its class says it all: the folder typed here does not exist
        missing = str(error) if page.lang == "en" else page.t("folder_err_missing", path=error.path or typed)
        return gem_page_answer(page, gem_id, errors={FIELD: missing}, values={FIELD: typed})
    except FileError as error:
        return gem_page_answer(page, gem_id, errors={FIELD: page.problem(error)}, values={FIELD: typed})
    return redirect(f"/gems/{gem_id}#working-folder")


@router.post("/gems/{gem_id}/working-folder/clear")
def clear(page: PageDep, gem_id: str) -> Response:
    if not _offered(page, gem_id):
        return page.not_found()
    folders_of(page.space).set_working_folder(gem_id, None, core=page.space.core)
    return redirect(f"/gems/{gem_id}#working-folder")
