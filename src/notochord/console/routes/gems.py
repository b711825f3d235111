"""The Gems pages: the list, the install screen, and a gem's page with its switches and facts."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response

from notochord.access.permissions import Permission
from notochord.console.routes.common import (
    Form,
    Page,
    PageDep,
    field,
    redirect,
    switch_field,
    typed_path,
    unreadable_path,
)
from notochord.console.uploads import UploadRefusedError, Uploads
from notochord.console.views.folders import working_folder
from notochord.console.views.gems import collection_ticks, gem_list, gem_page, install_screen, self_fact_rows
from notochord.console.views.network import gem_network
from notochord.console.views.runs import gem_runs
from notochord.errors import GemError, KnowledgeError, ManifestError, NotochordError, StorageError
from notochord.gems.manifest import Manifest, load_manifest
from notochord.gems.package import describe_left_out

__all__ = ["router"]

router = APIRouter()


def _uploads(request: Request) -> Uploads:
    uploads: Uploads = request.app.state.console_uploads
    return uploads


def _list(page: Page, *, errors: list[str] | None = None, path: str = "", status_code: int = 200) -> Response:
    return page.render(
        "gems.html",
        gems=gem_list(page.space),
        errors=errors or [],
        path_value=path,
        status_code=status_code,
    )


def _problems(page: Page, error: NotochordError) -> list[str]:
    """The lines of a refused review or install, in the reader's language where the console has
    words for them; a manifest's problems are the install checks' own (as Gem Studio shows them)."""
    if isinstance(error, ManifestError):
        return list(error.problems)
    if isinstance(error, AlreadyInstalledError):
        return [page.t("install_already", name=error.gem_id)]
    if isinstance(error, UploadRefusedError):
        return [page.t(error.key, **error.values)] + [page.t(key, **values) for key, values in error.lines]
    return [page.problem(error)]


@router.get("/gems")
def gems(page: PageDep) -> Response:
    return _list(page)


@router.post("/gems/review")
async def review(request: Request, page: PageDep, form: Form) -> Response:
    """The install screen: what the gem asks for and why, before anything is installed."""
    path = field(form, "path")
    upload = form.get("package")
    token = ""
    left_out: dict[str, int] = {}
    try:
        if isinstance(upload, UploadFile) and upload.filename:
            data = await upload.read()
            token, folder, left_out = await run_in_threadpool(_uploads(request).stage, upload.filename, data)
        elif path:
            folder = typed_path(path)
        else:
            return _list(page, errors=[page.t("install_folder_hint")], status_code=422)
        manifest = await run_in_threadpool(_read_manifest, path, folder)
        _refuse_installed(page, manifest)
    except NotochordError as error:
        if token:
            _uploads(request).discard(token)
        return _list(page, errors=_problems(page, error), path=path, status_code=422)
    return page.render(
        "install.html",
        screen=install_screen(manifest, page.lang),
        source_path="" if token else str(folder),
        upload_token=token,
        left_out=describe_left_out(left_out),
    )


def _refuse_unreadable(typed: str, error: ManifestError) -> None:
    """Raise a manifest refused because the system could not look at its path in the console's own
    translated words (which name the field to fix); return for any other refusal."""
    if isinstance(error.__cause__, OSError):
        raise unreadable_path(typed, error.__cause__) from error


def _refuse_installed(page: Page, manifest: Manifest) -> None:
    """Refuse a gem that is installed already, in the console's words, before anything is done.

    Raises:
        AlreadyInstalledError: a gem with the manifest's id is installed in this space.
    """
    if any(gem.id == manifest.id for gem in page.space.gems.list()):
        raise AlreadyInstalledError(manifest.id)


class AlreadyInstalledError(GemError):
    """The gem to install is installed already; ``gem_id`` names it for the console's words."""

    def __init__(self, gem_id: str) -> None:
        super().__init__(f"gem {gem_id} is already installed; upgrade it instead")
        self.gem_id = gem_id


def _read_manifest(typed: str, folder: Path) -> Manifest:
    """The manifest in ``folder``, the path typed as ``typed``.

    Raises:
        FieldValueError: the system could not look at the path (a name too long for it, say).
        NotochordError: the manifest is missing or invalid.
    """
    try:
        return load_manifest(folder)
    except ManifestError as error:
        _refuse_unreadable(typed, error)
        raise


@router.post("/gems/install")
def install(request: Request, page: PageDep, form: Form) -> Response:
    token = field(form, "upload")
    path = field(form, "path")
    uploads = _uploads(request)
    if not token and not path:
        return _list(page, errors=[page.t("install_nothing_chosen")], status_code=422)
    try:
        folder = uploads.folder(token) if token else typed_path(path)
        try:
            _refuse_installed(page, load_manifest(folder))
            gem = page.space.gems.install(folder)
        except ManifestError as error:
            _refuse_unreadable(path, error)
            raise
    except StorageError:
        raise
    except NotochordError as error:
        return _list(page, errors=_problems(page, error), path=path, status_code=422)
    finally:
        if token:
            uploads.discard(token)
    return redirect(f"/gems/{gem.id}?installed=1")


def _gem_page(
    page: Page,
    gem_id: str,
    *,
    notice: str | None = None,
    errors: dict[str, str] | None = None,
    values: dict[str, str] | None = None,
) -> Response:
    try:
        view = gem_page(page.space, gem_id, page.lang)
        manifest = page.space.gems.get(gem_id).manifest
    except GemError:
        return page.not_found()
    return page.form_answer(
        "gem.html",
        notice=notice,
        errors=errors,
        gem=view,
        gem_runs=gem_runs(page.space, gem_id),
        net=gem_network(page.space, manifest),
        folder=working_folder(page.space, gem_id, manifest),
        field_values=values or {},
    )


gem_page_answer = _gem_page


@router.get("/gems/{gem_id}")
def gem(page: PageDep, gem_id: str, installed: str = "") -> Response:
    return _gem_page(page, gem_id, notice=page.t("installed", name=gem_id) if installed else None)


@router.post("/gems/{gem_id}/permissions")
def switch(page: PageDep, form: Form, gem_id: str) -> Response:
    """Turn one requested permission on or off; the gem's next call sees it (K-UI-01, P-KVAL-09)."""
    permission = field(form, "permission")
    on = switch_field(form, "on")
    try:
        page.space.gems.set_permission(gem_id, permission, on)
        view = gem_page(page.space, gem_id, page.lang)
    except StorageError:
        raise
    except NotochordError:
        return page.not_found()
    if page.htmx:
        canonical = str(Permission.parse(permission))
        item = next(s for s in view.switches if s.permission == canonical)
        return page.render("_switch.html", gem=view, s=item)
    return redirect(f"/gems/{gem_id}#knowledge")


def _facts_answer(page: Page, gem_id: str, *, notice: str | None, errors: dict[str, str] | None = None) -> Response:
    if page.htmx:
        try:
            view = gem_page(page.space, gem_id, page.lang)
        except GemError:
            return page.not_found()
        return page.form_answer("_facts.html", notice=notice, errors=errors, gem=view)
    if errors:
        return _gem_page(page, gem_id, errors=errors)
    return redirect(f"/gems/{gem_id}#facts")


@router.post("/gems/{gem_id}/facts")
def put_fact(page: PageDep, form: Form, gem_id: str) -> Response:
    """Fill in or change one of the listed facts about the user, as the user (K-UI-07)."""
    predicate = field(form, "predicate")
    value = field(form, "value")
    try:
        manifest = page.space.gems.get(gem_id).manifest
    except GemError:
        return page.not_found()
    rows = {r.predicate: r for r in self_fact_rows(page.space, manifest, page.lang)}
    row = rows.get(predicate)
    if row is None:
        return page.not_found()
    if not value:
        return _facts_answer(page, gem_id, notice=None, errors={predicate: page.t("fact_value_needed")})
    try:
        page.space.user.facts.put(predicate=predicate, value=value)
    except KnowledgeError as error:
        problem = page.problem(error, field="refused_field_value")
        return _facts_answer(page, gem_id, notice=None, errors={predicate: problem})
    return _facts_answer(page, gem_id, notice=page.t("fact_saved"))


@router.post("/gems/{gem_id}/facts/{fact_id}/delete")
def delete_fact(page: PageDep, gem_id: str, fact_id: int) -> Response:
    """Delete one listed value; only facts about the user that the gem's page shows (K-UI-07/09)."""
    try:
        manifest = page.space.gems.get(gem_id).manifest
    except GemError:
        return page.not_found()
    shown = {v.fact_id for r in self_fact_rows(page.space, manifest, page.lang) for v in r.values}
    if fact_id not in shown:
        return page.not_found()
    try:
        page.space.user.facts.retract(fact_id)
    except KnowledgeError as error:
        return _facts_answer(page, gem_id, notice=None, errors={"_": page.problem(error)})
    return _facts_answer(page, gem_id, notice=page.t("fact_deleted"))


@router.post("/gems/{gem_id}/ticks")
def tick(page: PageDep, form: Form, gem_id: str) -> Response:
    """Tick or untick one collection for the gem's ``user-selected`` permissions (K-UI-10)."""
    on = switch_field(form, "on")
    try:
        manifest = page.space.gems.get(gem_id).manifest
        ticks = collection_ticks(page.space, gem_id, manifest) or []
        chosen = next((t for t in ticks if str(t.id) == field(form, "collection")), None)
        if chosen is None:
            return page.not_found()
        page.space.gems.tick_collection(gem_id, chosen.id, on=on)
        view = gem_page(page.space, gem_id, page.lang)
    except StorageError:
        raise
    except NotochordError:
        return page.not_found()
    if page.htmx:
        item = next(t for t in view.ticks or [] if t.id == chosen.id)
        return page.render("_tick.html", gem=view, c=item)
    return redirect(f"/gems/{gem_id}#collections")
