"""Gem Studio › Knowledge (K-UI-14): paste or edit a manifest and see its mistakes as you type."""

from __future__ import annotations

from typing import Final, Literal

from fastapi import APIRouter
from starlette.responses import Response

from notochord.console.routes.common import Form, Page, PageDep, field
from notochord.console.views.studio import check_draft

__all__ = ["router"]

router = APIRouter()

EXAMPLE: Final = """{
  "name": "recipes",
  "description": "Save recipes the user has rated",
  "entry": "tools/rate.js",
  "knowledge": {
    "permissions": ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*", "collections.create"],
    "reason": "Remember the dishes you like, and save recipes into your knowledge base"
  }
}
"""


def _form_of(value: str) -> Literal["draft", "packaged"]:
    return "packaged" if value == "packaged" else "draft"


def _studio(page: Page, text: str, form: Literal["draft", "packaged"]) -> Response:
    return page.render("studio.html", text=text, form=form, check=check_draft(text, form=form, lang=page.lang))


@router.get("/studio")
def studio(page: PageDep) -> Response:
    return _studio(page, EXAMPLE, "draft")


@router.post("/studio/check")
def check(page: PageDep, form: Form) -> Response:
    """The mistakes of the submitted manifest; htmx swaps just the list as the user types."""
    raw = form.get("manifest")
    text = raw if isinstance(raw, str) else ""
    kind = _form_of(field(form, "form"))
    if page.htmx:
        return page.render("_studio_result.html", check=check_draft(text, form=kind, lang=page.lang))
    return _studio(page, text, kind)
