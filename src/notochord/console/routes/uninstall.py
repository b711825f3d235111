"""Uninstalling a gem (K-UI-13, K-UNINST-01/02/09): the dialog with the counts of what the gem wrote,
"Keep" (the default) or "Delete them too", and afterwards an undo of the deletion."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from notochord.console.routes.common import Form, PageDep, field
from notochord.errors import BusyError, GemError, NotochordError, StorageError

__all__ = ["router"]

router = APIRouter()


@router.get("/gems/{gem_id}/uninstall")
def dialog(page: PageDep, gem_id: str) -> Response:
    try:
        gem = page.space.gems.get(gem_id)
        counts = page.space.gems.contributions(gem_id)
    except GemError:
        return page.not_found()
    return page.render("uninstall.html", gem=gem, counts=counts)


@router.post("/gems/{gem_id}/uninstall")
def uninstall(page: PageDep, form: Form, gem_id: str) -> Response:
    choice = field(form, "choice")
    if choice not in ("keep", "delete"):
        return page.not_found()
    try:
        name = page.space.gems.get(gem_id).name
        report = page.space.gems.uninstall(gem_id, delete_data=choice == "delete")
    except GemError:
        return page.not_found()
    except BusyError:
        # a run of the gem holds its code: nothing was changed, and the same choice works once it ends
        busy = page.t("uninstall_busy", name=gem_id)
        return page.render("uninstall_done.html", name=gem_id, report=None, error=busy, status_code=409)
    except StorageError:
        raise
    except NotochordError as error:
        return page.render("uninstall_done.html", name=gem_id, report=None, error=str(error), status_code=422)
    return page.render("uninstall_done.html", name=name, report=report, error=None)
