"""``notochord migrate-store --to postgresql://… [--org ID]``: copy a space from its SQLite file to PostgreSQL.

The space is read from the data directory's SQLite file (whatever ``database_url`` says) and copied
into a new database on the server (:func:`notochord.knowledge.store_copy.copy_space`): every table,
with its ids, counts checked; the full text is rebuilt there. The SQLite file is left as it was.
Afterwards, set ``database_url`` to the same URL to use the copy.

Rules:

- A ``--to`` that is not a PostgreSQL URL, or that cannot be read as one, is refused (exit 2)
  before anything is opened. No message, nor the result, ever shows the URL's password.
- A server that cannot be reached, or refuses the login, exits 11 with a message naming ``--to``.
- A space whose database on the server already holds data (a second run after one that
  succeeded, or another vault's space under the same prefix) is refused (exit 2) before anything
  on the server is changed, saying what to do. A database a run left empty (interrupted before
  its one copying transaction committed) is used as it is, and labelled if the run stopped before
  that: running the same command again after Ctrl-C is always safe.
- Ctrl-C exits 130 saying how far the copy got: before its transaction committed nothing of the
  space is on the server; after, the copy is whole. The SQLite file is unchanged either way.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, NoReturn

import sqlalchemy as sa
import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, interrupted, reporting, resolve_data_dir
from notochord.errors import ConfigurationError, SpaceNotFoundError, StoreUnreachableError
from notochord.knowledge.arguments import counted
from notochord.settings import Settings

if TYPE_CHECKING:
    import notochord

__all__ = ["migrate_store"]


def _shown(url: str | sa.URL) -> str:
    from notochord.db import postgres

    return postgres.shown_url(url)


def _readable(to: str) -> None:
    """Refuse a ``--to`` that names no PostgreSQL server notochord can read."""
    from notochord.db import postgres

    if not postgres.is_postgresql_url(to):
        raise ConfigurationError(f"--to needs a postgresql:// URL, not {_shown(to)!r}")
    try:
        postgres.database_name(to, "personal")
    except ConfigurationError as exc:
        # worded for the setting database_url, which migrate-store does not read
        detail = exc.message.removeprefix("setting database_url: ")
        raise ConfigurationError(f"--to {_shown(to)!r}: {detail}") from exc
    except ValueError as exc:
        raise ConfigurationError(
            f"--to {_shown(to)!r} cannot be read as a URL: its host or port is malformed (a port is a number, "
            "an IPv6 address is written in [brackets]); use postgresql://user:password@host:port/prefix"
        ) from exc


def _refuse_filled(to: str, space: str) -> None:
    """Refuse when the database of ``space`` on the server already holds a space's data."""
    from notochord.db import postgres
    from notochord.db.engine import read_tx
    from notochord.knowledge.store_copy import filled_tables

    if not postgres.database_exists(to, space):
        return
    engine = postgres.create_postgresql_engine(to, space)
    try:
        with read_tx(engine) as conn:
            filled = filled_tables(conn)
    finally:
        engine.dispose()
    if filled:
        name = postgres.database_name(to, space)
        raise ConfigurationError(
            f"{space} is already on the server: its database {name} at {_shown(to)} holds data "
            f"(in {', '.join(filled[:3])}), which a copy never overwrites or merges. To copy it again, drop "
            f'that database first (in psql: DROP DATABASE "{name}";) and run the same command again; '
            "or name another prefix in --to"
        )


@contextlib.contextmanager
def _server_of_to() -> Iterator[None]:
    """Name ``--to`` when its server cannot be reached: the user typed it there, not in database_url."""
    from notochord.db.engine import server_unreachable

    try:
        yield
    except StoreUnreachableError as exc:
        cause = exc.__cause__
        named = server_unreachable(cause, setting="--to") if cause is not None else None
        raise (named or exc) from cause


def _interrupted(space: str, where: str, *, copied: bool) -> NoReturn:
    if copied:
        interrupted(
            f"migrate-store was interrupted after {space} was copied to {where}: the copy is whole (every "
            "table's count was checked); the SQLite file is unchanged. To use the copy, set database_url "
            "to the URL given to --to"
        )
    interrupted(
        f"migrate-store was interrupted while copying {space} to {where}: the copy is one transaction, "
        "so nothing of it was kept on the server (an empty database may be left, which the next run fills); "
        "the SQLite file is unchanged and is still the one in use. It is safe to run the same command again"
    )


def _source(nc: notochord.Notochord, org: str | None) -> notochord.Space:
    """The space to copy, which must be in its SQLite file: opening the personal space would otherwise
    make a new, empty file, and the copy would put that emptiness on the server."""
    from notochord.app import check_org_id

    if org is not None:
        check_org_id(org)
    name = "personal" if org is None else f"org:{org}"
    if name not in dict(nc.space_stores()):
        file = nc.data_dir / "spaces" / ("personal.db" if org is None else f"org-{org}.db")
        raise SpaceNotFoundError(
            f"no SQLite file for {name} at {file}: nothing to copy. migrate-store copies a space from its "
            "SQLite file; a vault whose spaces are already on a PostgreSQL server (database_url) has none",
            path=str(file),
        )
    return nc.space(name)


def migrate_store(
    to: Annotated[str, typer.Option("--to", help="The PostgreSQL server: postgresql://user:password@host/prefix.")],
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Copy a space from its SQLite file to a PostgreSQL server, counts checked, the file untouched.

    The personal space, or with --org an organization's.
    """
    import notochord
    from notochord.db import postgres
    from notochord.db.migrate import migrate
    from notochord.knowledge.store_copy import copy_space

    with reporting():
        _readable(to)
        settings = dataclasses.replace(Settings.load(index_in_background=False), database_url=None)
        path = resolve_data_dir(data_dir) or settings.data_dir
        with notochord.open(path, settings, create=False, embedder=None) as nc:
            space = _source(nc, org)
            where = _shown(postgres.server_url(to, postgres.database_name(to, space.name)).set(drivername="postgresql"))
            counts: dict[str, int] = {}
            try:
                with _server_of_to():
                    _refuse_filled(to, space.name)
                    postgres.create_database(to, space.name)
                    target = postgres.create_postgresql_engine(to, space.name)
                    try:
                        migrate(target)
                        counts = copy_space(space.core.store.engine, target)
                    finally:
                        target.dispose()
            except KeyboardInterrupt:
                _interrupted(space.name, where, copied=bool(counts))
    result = {"space": space.name, "to": where, "rows": counts}
    copied = ", ".join(
        counted(counts.get(table, 0), noun)
        for table, noun in (("facts", "fact"), ("documents", "document"), ("chunks", "passage"), ("changes", "change"))
    )
    text = (
        f"copied {space.name} to {where}: {copied} (every table's count checked)\n"
        f"the SQLite file is unchanged; to use the copy, set database_url to the URL given to --to "
        f"({_shown(to)}, with its password)"
    )
    emit(result, as_json=as_json, text=text)
