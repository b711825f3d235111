"""Rendering: one Jinja2 environment over the package's templates, escaping everything by default."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from notochord.access.sentences import Lang
from notochord.console.i18n import text

__all__ = ["NO_STORE", "POLICY_HEADERS", "render_page"]

_TEMPLATES: Final = Path(__file__).parent / "templates"
_ENV: Final = jinja2.Environment(
    loader=jinja2.FileSystemLoader(_TEMPLATES),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
POLICY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; connect-src 'self'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
"""What every answer of the console carries, a page, a redirect or a static file alike: no other
site frames it, nothing is read as another type than it says, nothing loads from elsewhere, and no
address of the console leaves in a Referer. The guard adds them to answers not rendered here."""
NO_STORE: Final = {"Cache-Control": "no-store"}
"""Pages change with every write; a browser or proxy must never show a stale or another's copy."""
_HEADERS: Final = {**NO_STORE, **POLICY_HEADERS}


def render_page(
    request: Request, template: str, context: dict[str, Any], *, status_code: int = 200, after: str = ""
) -> HTMLResponse:
    """``template`` rendered with ``context``; ``t(key, **values)`` gives labels in ``context["lang"]``.

    ``after`` is the console's own markup appended as it is (never anything a visitor sent).
    """
    lang: Lang = context["lang"]

    def t(key: str, /, **values: object) -> str:
        return text(key, lang, **values)

    body = _ENV.get_template(template).render({"t": t, "request_path": request.url.path, **context})
    return HTMLResponse(body + after, status_code=status_code, headers=_HEADERS)
