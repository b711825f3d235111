"""``notochord migrate-store --to postgresql://… [--org ID]``: copy a space from its SQLite file to PostgreSQL.

The space is read from the data directory's SQLite file (whatever ``database_url`` says) and copied
into a new database on the server (:func:`notochord.knowledge.store_copy.copy_space`): every table,
with its ids, counts checked; the full text is rebuilt there. The SQLite file is left as it was.
Afterwards, set ``database_url`` to the same URL to use the copy.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, reporting, resolve_data_dir
from notochord.errors import ConfigurationError
from notochord.settings import Settings

__all__ = ["migrate_store"]


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
        if not postgres.is_postgresql_url(to):
            raise ConfigurationError(f"--to needs a postgresql:// URL, not {postgres.shown_url(to)!r}")
        settings = dataclasses.replace(Settings.load(index_in_background=False), database_url=None)
        path = resolve_data_dir(data_dir) or settings.data_dir
        with notochord.open(path, settings, create=False, embedder=None) as nc:
            space = nc.org(org) if org is not None else nc.personal
            postgres.create_database(to, space.name)
            target = postgres.create_postgresql_engine(to, space.name)
            try:
                migrate(target)
                counts = copy_space(space.core.store.engine, target)
            finally:
                target.dispose()
            where = postgres.shown_url(target.url)
    result = {"space": space.name, "to": where, "rows": counts}
    text = (
        f"copied {space.name} to {where}: {counts.get('facts', 0)} facts, {counts.get('documents', 0)} documents, "
        f"{counts.get('chunks', 0)} passages, {counts.get('changes', 0)} changes (every table's count checked)\n"
        f"the SQLite file is unchanged; set database_url={to} to use the copy"
    )
    emit(result, as_json=as_json, text=text)
