"""Settings › System › Network access: the user's network rules of the current space (P-NET-12).

Each action validates its entry first (the same rules as the ``notochord network`` commands); a bad
entry is shown next to its field, in the reader's language, and nothing is stored. Stored rules that
cannot be read are said the same way, with what to do.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from notochord.console.routes.common import Form, Page, PageDep, field, redirect
from notochord.console.views.network import MODES, network_settings
from notochord.errors import ConfigurationError

__all__ = ["router"]

router = APIRouter()

_PATH = "/settings/network"
_MAX_ENTRY = 300
"""Characters of an entry: a host name has at most 253, an address and :port far fewer, so a
longer one is a paste gone wrong, said in the reader's language before the rules are asked."""


def _too_long(page: Page, entry: str) -> str | None:
    """The refusal of an entry longer than any host name or address, else ``None``."""
    if len(entry) <= _MAX_ENTRY:
        return None
    return page.t("net_err_long", n=len(entry), max=_MAX_ENTRY)


def _page(
    page: Page, *, notice: str | None = None, errors: dict[str, str] | None = None, values: dict[str, str] | None = None
) -> Response:
    try:
        view = network_settings(page.space)
    except ConfigurationError as error:
        return page.render(
            "network.html",
            space_label=page.space_label(page.space_name),
            view=None,
            damaged=page.problem(error),
            modes=MODES,
            notice=notice,
            field_errors={},
            values={},
            status_code=409,
        )
    return page.form_answer(
        "network.html",
        notice=notice,
        errors=errors,
        space_label=page.space_label(page.space_name),
        view=view,
        damaged=None,
        modes=MODES,
        values=values or {},
    )


@router.get(_PATH)
def settings(page: PageDep, done: str = "") -> Response:
    return _page(page, notice=page.t("net_saved") if done == "net_saved" else None)


def _done(page: Page, notice_key: str) -> Response:
    if page.htmx:
        return _page(page, notice=page.t(notice_key))
    return redirect(f"{_PATH}?done={notice_key}")


@router.post(f"{_PATH}/mode")
def set_mode(page: PageDep, form: Form) -> Response:
    """Choose open, allowlist or blocklist; the chosen mode's own list comes back in force."""
    mode = field(form, "mode")
    if mode not in MODES:
        return _page(page, errors={"mode": page.t("net_err_mode")})
    try:
        rules = page.space.network.stored()
        page.space.network.set_external(mode, rules.hosts_of(mode) if mode != "open" else ())  # type: ignore[arg-type]
    except ConfigurationError as error:
        return _page(page, errors={"mode": page.problem(error)})
    return _done(page, "net_saved")


@router.post(f"{_PATH}/external/add")
def add_external(page: PageDep, form: Form) -> Response:
    host = field(form, "host")
    if not host:
        return _page(page, errors={"host": page.t("net_err_empty")})
    if (long := _too_long(page, host)) is not None:
        return _page(page, errors={"host": long})
    try:
        mode = page.space.network.stored().external_mode
        if mode == "open":
            return _page(page, errors={"host": page.t("net_err_open")}, values={"host": host})
        page.space.network.add_external(mode, [host])
    except ConfigurationError as error:
        return _page(page, errors={"host": page.problem(error)}, values={"host": host})
    return _done(page, "net_saved")


@router.post(f"{_PATH}/external/remove")
def remove_external(page: PageDep, form: Form) -> Response:
    host = field(form, "host")
    if (long := _too_long(page, host)) is not None:
        return _page(page, errors={"host": long})
    try:
        rules = page.space.network.stored()
        if rules.external_mode == "open" or host not in rules.external_hosts:
            return _page(page, errors={"host": page.t("net_err_not_listed", entry=host)})
        page.space.network.set_external(rules.external_mode, [h for h in rules.external_hosts if h != host])
    except ConfigurationError as error:
        return _page(page, errors={"host": page.problem(error)})
    return _done(page, "net_saved")


@router.post(f"{_PATH}/local/add")
def add_local(page: PageDep, form: Form) -> Response:
    entry = field(form, "entry")
    if not entry:
        return _page(page, errors={"entry": page.t("net_err_empty")})
    if (long := _too_long(page, entry)) is not None:
        return _page(page, errors={"entry": long})
    try:
        page.space.network.add_local(entry)
    except ConfigurationError as error:
        return _page(page, errors={"entry": page.problem(error)}, values={"entry": entry})
    return _done(page, "net_saved")


@router.post(f"{_PATH}/local/remove")
def remove_local(page: PageDep, form: Form) -> Response:
    entry = field(form, "entry")
    if (long := _too_long(page, entry)) is not None:
        return _page(page, errors={"entry": long})
    try:
        page.space.network.remove_local(entry)
    except ConfigurationError as error:
        return _page(page, errors={"entry": page.problem(error)})
    return _done(page, "net_saved")
