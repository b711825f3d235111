"""What every page shares: the current space and language, the CSRF token, and rendering."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Annotated, Any, Final

from fastapi import Depends
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from notochord.access.sentences import Lang
from notochord.app import Notochord, Space
from notochord.console.auth import ConsoleKeys
from notochord.console.forms import ConsoleRefusal, FieldValueError, session_of, shown, verified_form
from notochord.console.i18n import choose_lang, text
from notochord.console.refusal_words import refusal
from notochord.console.render import render_page
from notochord.console.unavailable import CLEAR_ALERT

__all__ = [
    "SPACE_COOKIE",
    "Form",
    "Page",
    "PageDep",
    "field",
    "local_path",
    "page_of",
    "redirect",
    "switch_field",
    "typed_path",
    "unreadable_path",
]

SPACE_COOKIE: Final = "space"


class Page:
    """One request's view of the console: its space, its language, and how to answer it."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.nc: Notochord = request.app.state.nc
        keys: ConsoleKeys = request.app.state.console_keys
        self.csrf = keys.csrf_token(session_of(request))
        self.lang: Lang = choose_lang(request.cookies.get("lang"), request.headers.get("accept-language"))
        existing = self.nc.spaces()
        chosen = request.cookies.get(SPACE_COOKIE, "personal")
        self.space_name = chosen if chosen in existing else "personal"
        self.spaces = existing if "personal" in existing else ["personal", *existing]

    @property
    def space(self) -> Space:
        if self.space_name == "personal":
            return self.nc.personal
        return self.nc.org(self.space_name.removeprefix("org:"))

    @property
    def htmx(self) -> bool:
        return self.request.headers.get("hx-request") == "true"

    def t(self, key: str, /, **values: object) -> str:
        return text(key, self.lang, **values)

    def problem(self, error: Exception, *, field: str = "refused_field_text") -> str:
        """The sentence of a refusal in the reader's language, where the console has words for it,
        else the error's own; ``field`` is the ``refused_field_*`` label of the field typed into."""
        return refusal(error, self.lang, field=field)

    def space_label(self, name: str) -> str:
        return self.t("space_personal") if name == "personal" else self.t("space_org", name=name.removeprefix("org:"))

    def render(self, template: str, *, status_code: int = 200, **context: Any) -> HTMLResponse:
        shared = {
            "lang": self.lang,
            "csrf": self.csrf,
            "space_name": self.space_name,
            "spaces": [(name, self.space_label(name)) for name in self.spaces],
        }
        # a part of a page (an htmx answer) also clears the alert of an earlier answer that failed
        after = CLEAR_ALERT if self.htmx and template.startswith("_") else ""
        return render_page(self.request, template, {**shared, **context}, status_code=status_code, after=after)

    def form_answer(
        self,
        template: str,
        *,
        part: str | None = None,
        notice: str | None = None,
        errors: dict[str, str] | None = None,
        **context: Any,
    ) -> HTMLResponse:
        """The page again after a form, or for htmx only ``part`` of it, the part that changed.

        ``notice`` says what was done; each refusal in ``errors`` stands beside the field it names,
        and any refusal makes the answer a 422, as the action changed nothing.
        """
        return self.render(
            part if part is not None and self.htmx else template,
            notice=notice,
            field_errors=errors or {},
            status_code=422 if errors else 200,
            **context,
        )

    def not_found(self) -> HTMLResponse:
        """The console's 404 page: what was asked for is not in this space (or never was)."""
        return self.render("not_found.html", status_code=404)


def page_of(request: Request) -> Page:
    return Page(request)


PageDep = Annotated[Page, Depends(page_of)]
Form = Annotated[FormData, Depends(verified_form)]


def field(form: FormData, name: str) -> str:
    """A text field of the form, stripped; ``""`` when absent or a file."""
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


def switch_field(form: FormData, name: str) -> bool:
    """A switch's position: ``"1"`` is on and ``"0"`` off, exactly as the console's forms send them.

    Raises:
        ConsoleRefusal: (400) the field is missing or holds anything else; reading that as "off"
            would quietly take away what the user had granted.
    """
    value = form.get(name)
    if not isinstance(value, str):
        raise ConsoleRefusal(400, "refused_switch_missing", field=name)
    if value not in ("0", "1"):
        raise ConsoleRefusal(400, "refused_switch", field=name, value=shown(value))
    return value == "1"


def typed_path(typed: str) -> Path:
    """A path as the person typed it, a leading ``~`` or ``~user`` read as that home folder.

    Raises:
        FieldValueError: it holds NUL, which no path can, or names the home of a user this computer
            does not have (``Path.expanduser`` raises ``RuntimeError`` for it).
    """
    if "\x00" in typed:
        raise FieldValueError("path_err_nul", path=shown(typed.replace("\x00", "\\0")))
    try:
        return Path(typed).expanduser()
    except RuntimeError as exc:
        raise FieldValueError("path_err_home", path=shown(typed)) from exc


def unreadable_path(typed: str, error: OSError) -> FieldValueError:
    """The refusal of a typed path the system could not look at, without the system's own words."""
    if error.errno == errno.ENAMETOOLONG:
        return FieldValueError("path_err_too_long", path=shown(typed))
    return FieldValueError("path_err_unreadable", path=shown(typed))


def local_path(target: str, default: str = "/") -> str:
    """``target`` when it is a path on this console, else ``default`` (no open redirects)."""
    if target.startswith("/") and not target.startswith("//") and "\\" not in target and "\n" not in target:
        return target
    return default


def redirect(target: str) -> Response:
    return RedirectResponse(local_path(target), status_code=303)
