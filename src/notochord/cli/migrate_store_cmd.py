"""``notochord migrate-store --to postgresql://… [--org ID]``: copy a space from its SQLite file to PostgreSQL.

The space is read from the data directory's SQLite file (whatever ``database_url`` says) and copied
into a new database on the server (:func:`notochord.knowledge.store_copy.copy_space`): every table,
with its ids, counts checked; the full text is rebuilt there. The SQLite file is left as it was.
Afterwards, set ``database_url`` to the same URL to use the copy.

Rules:

- A ``--to`` that is not a PostgreSQL URL, or that cannot be read as one, is refused (exit 2)
  before anything is opened. No message, nor the result, ever shows the URL's password.
- A space whose database on the server already holds data (a second run after one that
  succeeded, or another vault's space under the same prefix) is refused (exit 2) before anything
  on the server is changed, saying what to do. A database a run left empty (interrupted before
  its one copying transaction committed) is used as it is.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, reporting, resolve_data_dir
from notochord.errors import ConfigurationError
from notochord.knowledge.arguments import counted
from notochord.settings import Settings

__all__ = ["migrate_store"]


def _shown(url: str) -> str:
    from notochord.db import postgres

    return postgres.shown_url(url)


def _readable(to: str) -> None:
    """Refuse a ``--to`` that names no PostgreSQL server notochord can read."""
    from notochord.db import postgres

    if not postgres.is_postgresql_url(to):
        raise ConfigurationError(f"--to needs a postgresql:// URL, not {_shown(to)!r}")
    try:
        postgres.database_name(to, "personal")
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
        raise ConfigurationError(
            f"{space} is already on the server: its database {postgres.database_name(to, space)} at "
            f"{_shown(to)} holds data (in {', '.join(filled[:3])}), which a copy never overwrites or merges. "
            "To copy it again, drop that database first; or name another prefix in --to"
        )


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
            space = nc.org(org) if org is not None else nc.personal
            _refuse_filled(to, space.name)
            postgres.create_database(to, space.name)
            target = postgres.create_postgresql_engine(to, space.name)
            try:
                migrate(target)
                counts = copy_space(space.core.store.engine, target)
            finally:
                target.dispose()
            where = postgres.shown_url(target.url)
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
