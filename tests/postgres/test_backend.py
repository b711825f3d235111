"""The PostgreSQL backend: one database per space, the same schema, the same full-text ranking.

Every test here runs against a real PostgreSQL server (``tests/postgres_server.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from psycopg import sql

import notochord
from notochord.clock import FixedClock
from notochord.db import postgres
from notochord.db.migrate import head_revision, migrate
from notochord.db.schema import built_on, metadata
from notochord.errors import ConfigurationError, ReadOnlyStoreError, SpaceNotFoundError, StorageError
from notochord.settings import Settings

pytestmark = pytest.mark.postgresql

DOCUMENTS = [
    ("Beef stew", "Brown the beef, add tomato and simmer the stew for two hours. Tomato stew keeps well."),
    ("Tomato soup", "Roast tomatoes with garlic; blend the tomatoes into a soup. Serve the soup hot."),
    ("Garden notes", "The tomato plants need water every morning; the beans climb the fence."),
    ("北京烤鸭", "烤鸭是北京的名菜。鸭皮要烤得很脆，配上薄饼和甜面酱。"),
    ("上海菜", "红烧肉是上海的家常菜，糖和酱油慢慢炖。"),
    ("River trip", "A boat trip on the Yangtze river: three gorges, steep cliffs, and stewed fish on board."),
]
QUERIES = ["tomato stew", "soup", "烤鸭", "鸭", "上海 红烧肉", "river boat fish", "the beans", "nothing-matches-this"]


def _open(tmp_path: Path, clock: FixedClock, name: str, url: str | None) -> notochord.Notochord:
    settings = Settings(data_dir=tmp_path / name, index_in_background=False, database_url=url)
    return notochord.open(tmp_path / name, settings, clock=clock, embedder=None)


@pytest.fixture
def pg(tmp_path: Path, clock: FixedClock, database_url: str) -> Iterator[notochord.Notochord]:
    with _open(tmp_path, clock, "pg", database_url) as opened:
        yield opened


def _databases(server: str) -> set[str]:
    with psycopg.connect(server, autocommit=True) as conn:
        return {str(r[0]) for r in conn.execute("SELECT datname FROM pg_database")}


def test_database_url_must_name_a_postgresql_server() -> None:
    """Any other URL is refused when the settings are read, saying what to use."""
    with pytest.raises(ConfigurationError, match=r"postgresql://"):
        Settings.load(environ={"NOTOCHORD_DATABASE_URL": "mysql://db/notochord"})
    assert Settings.load(environ={"NOTOCHORD_DATABASE_URL": "postgresql://db/acme"}).database_url == (
        "postgresql://db/acme"
    )


def test_every_space_is_its_own_database_made_where_a_space_is_made(
    pg: notochord.Notochord, database_url: str, postgres_server_url: str, tmp_path: Path
) -> None:
    """K-STORE: one physically separate store per space: the personal space and each
    organization get a database of their own; an organization nobody created is refused, not made."""
    pg.personal.user.facts.put(subject="self", predicate="pref.food.like", value="soup")
    with pytest.raises(SpaceNotFoundError, match="init --org acme"):
        pg.org("acme")
    assert pg.spaces() == ["personal"]

    acme = pg.org("acme", create=True)
    assert pg.spaces() == ["org:acme", "personal"]
    assert acme.user.facts.lookup("self", "pref.food") == []
    assert {postgres.database_name(database_url, "personal"), postgres.database_name(database_url, "org:acme")} <= (
        _databases(postgres_server_url)
    )
    # the master key and everything else of the vault stay in the data directory; no space file is made
    assert (tmp_path / "pg" / "master.key").is_file()
    assert list((tmp_path / "pg" / "spaces").glob("*.db")) == []
    assert postgres.database_name(database_url, "org:acme") in str(acme.status()["path"])


def test_long_organization_ids_never_share_a_database() -> None:
    """Names past PostgreSQL's 63 bytes end in a hash of the whole name."""
    url = "postgresql://db/prefix"
    first, second = "a" * 62 + "1", "a" * 62 + "2"
    names = {postgres.database_name(url, f"org:{first}"), postgres.database_name(url, f"org:{second}")}
    assert len(names) == 2
    assert all(len(n.encode()) <= 63 for n in names)


def test_the_migrations_build_the_schema_the_code_is_written_against(database_url: str) -> None:
    """The same Alembic migrations run on PostgreSQL; migrating twice changes nothing."""
    postgres.create_database(database_url, "personal")
    engine = postgres.create_postgresql_engine(database_url, "personal")
    try:
        migrate(engine)
        migrate(engine)
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn,
                opts={
                    "compare_type": False,
                    # the full-text tables and the embedding queue's leases are the backend's own,
                    # made by the migration only
                    "include_name": lambda name, type_, _parents: (
                        not (
                            type_ == "table"
                            and name is not None
                            and (name.startswith("chunks_fts") or name == "chunk_vector_claims")
                        )
                    ),
                    # an index built on SQLite only is none of the server's
                    "include_object": lambda _item, name, type_, _reflected, _compare_to: (
                        type_ != "index" or built_on(name, "postgresql")
                    ),
                },
            )
            differences = compare_metadata(context, metadata)
            version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one()
    finally:
        engine.dispose()
    assert differences == []
    assert version == head_revision()


def _fill(nc: notochord.Notochord) -> dict[int, str]:
    titles = {}
    for title, text in DOCUMENTS:
        outcome = nc.personal.user.documents.upsert(collection="diary", title=title, body=text)
        titles[outcome.id] = title
    return titles


def _ranking(nc: notochord.Notochord, query: str, titles: dict[int, str]) -> list[tuple[str, int, float]]:
    return [(titles[h.document_id], h.chunk, round(h.score, 12)) for h in nc.personal.search(query, limit=20)]


def test_full_text_rankings_are_identical_on_both_backends(
    pg: notochord.Notochord, tmp_path: Path, clock: FixedClock
) -> None:
    """The same documents give the same hits in the same order with the same scores,
    CJK bigrams and single characters included, on SQLite and on PostgreSQL; edits and deletions too."""
    with _open(tmp_path, clock, "sqlite", None) as lite:
        pg_titles, lite_titles = _fill(pg), _fill(lite)
        for query in QUERIES:
            assert _ranking(pg, query, pg_titles) == _ranking(lite, query, lite_titles), query
        assert [t for t, _, _ in _ranking(pg, "烤鸭", pg_titles)][:1] == ["北京烤鸭"]
        assert all(_ranking(pg, q, pg_titles) for q in QUERIES[:-1]), "every query but the last finds something"

        for nc, titles in ((pg, pg_titles), (lite, lite_titles)):
            by_title = {t: i for i, t in titles.items()}
            nc.personal.user.documents.upsert(id=by_title["Tomato soup"], body="Chilled cucumber soup, no tomato.")
            nc.personal.user.documents.delete(by_title["Garden notes"])
        for query in QUERIES:
            assert _ranking(pg, query, pg_titles) == _ranking(lite, query, lite_titles), query
        assert "Garden notes" not in {t for t, _, _ in _ranking(pg, "tomato", pg_titles)}


def _set_read_only(server: str, database: str, on: bool) -> None:
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER DATABASE {} SET default_transaction_read_only = {}").format(
                sql.Identifier(database), sql.SQL("on" if on else "off")
            )
        )


def test_a_server_that_refuses_writes_is_a_read_only_store_and_nothing_changes(
    pg: notochord.Notochord, database_url: str, postgres_server_url: str
) -> None:
    """PostgreSQL's errors map into the exception tree (a standby, or a read-only
    database, is :class:`ReadOnlyStoreError`), never a driver exception."""
    space = pg.personal
    space.user.facts.put(subject="self", predicate="pref.food.like", value="soup")
    _set_read_only(postgres_server_url, postgres.database_name(database_url, "personal"), True)
    try:
        space.core.store.engine.dispose()  # new sessions pick up the database's setting
        with pytest.raises(ReadOnlyStoreError, match="only reads"):
            space.user.facts.put(subject="self", predicate="pref.food.like", value="stew")
        assert [f.value for f in space.user.facts.lookup("self", "pref.food")] == ["soup"]
    finally:
        _set_read_only(postgres_server_url, postgres.database_name(database_url, "personal"), False)


def test_an_unreachable_server_is_a_storage_error_naming_it(tmp_path: Path, clock: FixedClock) -> None:
    """No psycopg exception escapes; the message names the server and what to check."""
    url = f"postgresql://nobody@/notochord?host={tmp_path / 'no-server-here'}"
    with pytest.raises(StorageError, match="cannot connect to the PostgreSQL server") as caught:
        _open(tmp_path, clock, "data", url).personal  # noqa: B018 - opening the space is the act under test
    assert not isinstance(caught.value.__cause__, StorageError)


def test_a_data_directory_without_the_master_key_is_refused_when_the_server_has_spaces(
    pg: notochord.Notochord, database_url: str, tmp_path: Path, clock: FixedClock
) -> None:
    """The master key stays on local disk; a second data directory pointed at the same
    spaces without it would mint a fresh key and orphan every gem's refs, so it is refused, naming the key."""
    pg.personal.user.facts.put(subject="self", predicate="pref.food.like", value="soup")
    with pytest.raises(StorageError, match=r"master key .* missing"):
        _open(tmp_path, clock, "second", database_url)
    assert not (tmp_path / "second" / "master.key").exists()

    (tmp_path / "second").mkdir(exist_ok=True)
    (tmp_path / "second" / "master.key").write_bytes((tmp_path / "pg" / "master.key").read_bytes())
    with _open(tmp_path, clock, "second", database_url) as replica:
        assert [f.value for f in replica.personal.user.facts.lookup("self", "pref.food")] == ["soup"]
