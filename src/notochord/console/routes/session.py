"""Signing in with a one-time link, signing out, and the header's space and language switches."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from notochord.console.auth import SESSION_LIFETIME, ConsoleKeys
from notochord.console.forms import SIGN_IN_PATH, ConsoleRefusal, shown
from notochord.console.guard import SESSION_COOKIE, from_another_site
from notochord.console.i18n import LANG_NAMES, LANGS, choose_lang, text
from notochord.console.render import render_page
from notochord.console.routes.common import SPACE_COOKIE, Form, PageDep, field, redirect

__all__ = ["router"]

router = APIRouter()

_YEAR = 365 * 24 * 3600


def _cookie(response: Response, name: str, value: str, *, max_age: int) -> None:
    response.set_cookie(name, value, max_age=max_age, path="/", httponly=True, samesite="strict")


def _link_refused(request: Request) -> Response:
    lang = choose_lang(request.cookies.get("lang"), request.headers.get("accept-language"))
    return render_page(
        request,
        "refused.html",
        {"lang": lang, "title": text("signin_title", lang), "message": text("signin_link_used", lang)},
        status_code=401,
    )


def _no_link(request: Request) -> Response:
    """/login opened without a link's token, as signing out leads to: who is still signed in goes
    on to the console; anybody else is told how to get a link (there is none to call used).

    Opened from another site, the answer is the same whoever asks, so that it tells that site
    nothing about a session, and the console's pages would refuse it anyway.
    """
    lang = choose_lang(request.cookies.get("lang"), request.headers.get("accept-language"))
    message = "signin_needed"
    if not from_another_site(request.headers):
        keys: ConsoleKeys = request.app.state.console_keys
        if keys.session(request.cookies.get(SESSION_COOKIE)) is not None:
            return RedirectResponse("/", status_code=303)
        message = "signed_out"
    page = {"lang": lang, "title": text("signin_title", lang), "message": text(message, lang)}
    # 401 like every page asking to sign in first (the guard's): nobody is signed in by it
    return render_page(request, "refused.html", page, status_code=401)


def _signed_in() -> Response:
    response = RedirectResponse("/", status_code=303)
    # the token must not linger in the history or in a Referer
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def _ask_first(request: Request, token: str) -> Response:
    """The page a link opened from another site gets: one button that posts the token from here."""
    lang = choose_lang(request.cookies.get("lang"), request.headers.get("accept-language"))
    # The pages' own Referrer-Policy, same-origin, keeps the link from leaving the console; no-referrer
    # would make the browser post the form with "Origin: null", which the guard refuses.
    return render_page(request, "signin.html", {"lang": lang, "title": text("signin_title", lang), "token": token})


def _sign_in(request: Request, token: str) -> Response:
    keys: ConsoleKeys = request.app.state.console_keys
    if not keys.redeem_login_token(token):
        return _link_refused(request)
    # a new sign-in starts afresh: a copy of the cookie this browser held before is worth nothing
    keys.end_session(request.cookies.get(SESSION_COOKIE))
    response = _signed_in()
    _cookie(response, SESSION_COOKIE, keys.new_session(), max_age=SESSION_LIFETIME)
    return response


@router.get(SIGN_IN_PATH)
def login(request: Request, token: str = "") -> Response:
    """Trade a one-time token for a session cookie, then go to the console's first page.

    Opened from another site (a chat, a web mail), the link only asks: signing in then takes a
    click on the console's own page, so a page that opens the link by itself signs nobody in, and
    the session cookie, strictly same-site, is set by a request from the console.
    """
    if not token:
        return _no_link(request)
    if from_another_site(request.headers):
        keys: ConsoleKeys = request.app.state.console_keys
        return _ask_first(request, token) if keys.login_token_usable(token) else _link_refused(request)
    return _sign_in(request, token)


@router.head(SIGN_IN_PATH)
def login_head(request: Request, token: str = "") -> Response:
    """The answer GET would give now, without using the link up or starting a session: a link
    checker or a mail scanner asking about a sign-in link must not spend it."""
    if not token:
        return _no_link(request)
    keys: ConsoleKeys = request.app.state.console_keys
    if not keys.login_token_usable(token):
        return _link_refused(request)
    return _ask_first(request, token) if from_another_site(request.headers) else _signed_in()


@router.post(SIGN_IN_PATH)
def login_confirmed(request: Request, form: Form) -> Response:
    """The sign-in page's button: spend the token it carries."""
    return _sign_in(request, field(form, "token"))


@router.post("/logout")
def logout(request: Request) -> Response:
    keys: ConsoleKeys = request.app.state.console_keys
    keys.end_session(request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


@router.get("/")
def home() -> Response:
    return redirect("/gems")


@router.post("/prefs/lang")
def set_lang(form: Form) -> Response:
    """Keep the chosen language in a cookie; one the console does not speak is refused, so the
    switch never seems to work while changing nothing."""
    lang = field(form, "lang")
    offered = ", ".join(f"{code} ({LANG_NAMES[code]})" for code in LANGS)
    if not lang:
        raise ConsoleRefusal(400, "refused_lang_missing", langs=offered)
    if lang not in LANGS:
        raise ConsoleRefusal(400, "refused_lang", value=shown(lang), langs=offered)
    response = redirect(field(form, "next") or "/")
    _cookie(response, "lang", lang, max_age=_YEAR)
    return response


@router.post("/prefs/space")
def set_space(page: PageDep, form: Form) -> Response:
    """Keep the chosen space in a cookie; only one of the person's existing spaces can be chosen,
    and choosing never creates one."""
    name = field(form, "space")
    theirs = ", ".join(page.space_label(space) for space in page.spaces)
    if not name:
        raise ConsoleRefusal(400, "refused_space_missing", spaces=theirs)
    if name not in page.spaces:
        raise ConsoleRefusal(400, "refused_space", value=shown(name), spaces=theirs)
    # a page of one space (a gem's page) may not exist in the other one: start from the top
    response = redirect("/")
    _cookie(response, SPACE_COOKIE, name, max_age=_YEAR)
    return response
