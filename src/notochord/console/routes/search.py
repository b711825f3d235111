"""The Search page: the vault searched as the user, with the API's filters (K-SRCH-01…10)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from notochord.console.routes.common import PageDep
from notochord.console.views.search import KINDS, SearchForm, search_page

__all__ = ["router"]

router = APIRouter()


@router.get("/search")
def search(page: PageDep) -> Response:
    params = page.request.query_params
    form = SearchForm.parse(
        {k: params.get(k, "") for k in ("q", "from", "to", "kind", "entity")}, params.getlist("collection")
    )
    view = search_page(page.space, form, page.lang)
    return page.render("search.html", view=view, kinds=KINDS, status_code=422 if view.form.errors else 200)
