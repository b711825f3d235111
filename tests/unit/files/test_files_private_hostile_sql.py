"""A hostile or careless gem's SQL meets refusals in the gem's own words (P-STOR-02, P-STOR-08,
P-STOR-09, K-NS-03).

Every refusal is a notochord error that says what was refused and what to do instead; none carries
the SQL engine's own refusal wording ("not authorized", "database is locked", "string or blob too
big"), and none is a Python ``TypeError``/``ValueError``/``OverflowError`` or driver warning. Each
refused call changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from notochord.errors import BusyError, FileError
from notochord.files.private import GemStore

KEY = bytes(range(32))
FOREIGN_WORDING = ("not authorized", "authorization denied", "database is locked", "too big", "probably unsupported")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GemStore]:
    with GemStore(tmp_path / "gem", key=KEY) as opened:
        opened.sql.execute("CREATE TABLE t (x)")
        opened.sql.execute("INSERT INTO t VALUES (1)")
        yield opened


def _refusal(call: Any) -> str:
    with pytest.raises(FileError) as caught:
        call()
    message = str(caught.value)
    assert not any(words in message for words in FOREIGN_WORDING), message
    return message


@pytest.mark.parametrize(
    "statement",
    [
        "ATTACH DATABASE '{folder}/kv.db' AS stolen",
        "ATTACH DATABASE 'file:{folder}/../other/sql.db' AS stolen",
        "ATTACH DATABASE 'file::memory:?cache=shared' AS shared",
        "VACUUM INTO '{folder}/../copy.db'",
    ],
)
def test_attaching_or_copying_to_another_file_is_refused_in_words(store: GemStore, statement: str) -> None:
    """K-NS-03, P-STOR-08: the gem's SQL reaches its own file only, and is told so."""
    message = _refusal(lambda: store.sql.execute(statement.format(folder=store.folder)))
    assert "only its own database" in message
    assert "ATTACH" in message and ":memory:" in message
    assert not (store.folder.parent / "copy.db").exists()
    assert store.sql.query("SELECT x FROM t") == [{"x": 1}]


@pytest.mark.parametrize(
    ("statement", "pragma"),
    [
        ("PRAGMA key = 'other'", "key"),
        ("PRAGMA rekey = 'known'", "rekey"),
        ("PRAGMA cipher_compatibility = 3", "cipher_compatibility"),
        ("PRAGMA writable_schema = ON", "writable_schema"),
        ("PRAGMA journal_mode = OFF", "journal_mode"),
        ("PRAGMA synchronous = OFF", "synchronous"),
        ("PRAGMA temp_store_directory = '/tmp'", "temp_store_directory"),
        ("PRAGMA hard_heap_limit = 0", "hard_heap_limit"),
        ("SELECT * FROM pragma_database_list", "database_list"),
    ],
)
def test_a_pragma_outside_the_allowed_list_is_refused_naming_it_and_the_allowed_ones(
    store: GemStore, statement: str, pragma: str
) -> None:
    """P-STOR-09: the key, the journal and the file's safety are not the gem's to change."""
    message = _refusal(lambda: store.sql.execute(statement))
    assert f"PRAGMA {pragma} is not allowed" in message
    assert "table_info" in message and "user_version" in message
    assert store.sql.query("PRAGMA integrity_check") == [{"integrity_check": "ok"}]


@pytest.mark.parametrize("function", ["load_extension", "fts3_tokenizer"])
def test_a_denied_function_is_refused_naming_it(store: GemStore, function: str) -> None:
    message = _refusal(lambda: store.sql.query(f"SELECT {function}('x')"))
    assert f"the function {function}() is not allowed" in message


def test_editing_the_schema_table_directly_is_refused(store: GemStore) -> None:
    _refusal(lambda: store.sql.execute("UPDATE sqlite_master SET sql = 'x'"))
    assert store.sql.query("SELECT x FROM t") == [{"x": 1}]


@pytest.mark.parametrize("statement", ["SELECT zeroblob(2000000000)", "SELECT randomblob(2e9)"])
def test_a_value_past_the_largest_one_value_may_be_is_refused_in_words(store: GemStore, statement: str) -> None:
    """P-STOR-02: a gigabyte value is stopped with a sentence that says what to do."""
    message = _refusal(lambda: store.sql.query(statement))
    assert "larger than one value may be" in message and "blobs" in message
    assert store.sql.query("SELECT x FROM t") == [{"x": 1}]


def test_two_statements_in_one_call_are_refused_in_words(store: GemStore) -> None:
    message = _refusal(lambda: store.sql.execute("INSERT INTO t VALUES (2); DROP TABLE t"))
    assert "one statement per call" in message
    assert store.sql.query("SELECT x FROM t") == [{"x": 1}]


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("SELECT 1\x00; DROP TABLE t", "NUL character"),
        (b"SELECT 1", "must be text"),
        (None, "must be text"),
    ],
)
def test_a_statement_that_is_not_plain_text_is_refused_in_words(store: GemStore, sql: Any, words: str) -> None:
    assert words in _refusal(lambda: store.sql.execute(sql))
    assert words in _refusal(lambda: store.sql.query(sql))
    assert store.sql.query("SELECT x FROM t") == [{"x": 1}]


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ([2**70], "beyond the 64 bits"),
        ([-(2**63) - 1], "beyond the 64 bits"),
        ([float("nan")], "NaN"),
        ([[1, 2]], "must be text, a number, bytes"),
        ([{"a": 1}], "must be text, a number, bytes"),
        ({"a": object()}, "must be text, a number, bytes"),
        (None, "a list or an object"),
        (5, "a list or an object"),
        ("abc", "a list or an object"),
    ],
)
def test_parameters_sqlite_cannot_bind_faithfully_are_refused_naming_which(
    store: GemStore, params: Any, words: str
) -> None:
    """A NaN used to be stored as NULL without a word; a huge number escaped as an OverflowError."""
    assert words in _refusal(lambda: store.sql.execute("INSERT INTO t VALUES (?)", params))
    assert words in _refusal(lambda: store.sql.executemany("INSERT INTO t VALUES (?)", [[2], params]))
    assert store.sql.query("SELECT x FROM t") == [{"x": 1}]


def test_the_edges_of_what_binds_are_kept_exactly(store: GemStore) -> None:
    edges: list[Any] = [2**63 - 1, -(2**63), float("inf"), b"\x00raw", "", True, None]
    store.sql.executemany("INSERT INTO t VALUES (?)", [[value] for value in edges])
    assert [row[0] for row in store.sql.query_rows("SELECT x FROM t WHERE rowid > 1 ORDER BY rowid")] == [
        2**63 - 1,
        -(2**63),
        float("inf"),
        b"\x00raw",
        "",
        1,
        None,
    ]


def test_parameters_that_do_not_fit_the_statement_are_said_in_words(store: GemStore) -> None:
    message = _refusal(lambda: store.sql.execute("INSERT INTO t VALUES (?)", [1, 2]))
    assert "needs 1 parameter" in message and "2 were given" in message
    message = _refusal(lambda: store.sql.query("SELECT :a, :b", {"a": 1}))
    assert "has no value" in message and "every :name" in message
    assert "not an object" in _refusal(lambda: store.sql.query("SELECT ?", {"a": 1}))
    assert store.sql.query("SELECT x FROM t") == [{"x": 1}]


def test_executemany_of_a_query_is_pointed_to_query(store: GemStore) -> None:
    assert "run a query with query" in _refusal(lambda: store.sql.executemany("SELECT ?", [[1]]))


def test_rows_that_are_not_a_list_of_parameter_rows_are_refused(store: GemStore) -> None:
    assert "a list of parameter rows" in _refusal(lambda: store.sql.executemany("INSERT INTO t VALUES (?)", 5))  # type: ignore[arg-type]
    assert store.sql.query("SELECT count(*) AS n FROM t") == [{"n": 1}]


def test_a_write_while_another_process_of_the_gem_holds_the_database_is_busy_in_words(tmp_path: Path) -> None:
    """Two tool processes of one gem: the second is told to retry, and nothing is torn."""
    with GemStore(tmp_path / "gem", key=KEY) as first, GemStore(tmp_path / "gem", key=KEY) as second:
        first.sql.execute("CREATE TABLE t (x)")
        first.sql.execute("BEGIN IMMEDIATE")
        first.sql.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(BusyError) as caught:
            second.sql.execute("INSERT INTO t VALUES (2)")
        message = str(caught.value)
        assert "in use by another run of this gem" in message and "try again" in message
        assert "locked" not in message
        assert caught.value.retry_after >= 1
        first.sql.execute("COMMIT")
        second.sql.execute("INSERT INTO t VALUES (2)")
        assert second.sql.query_rows("SELECT x FROM t ORDER BY x") == [[1], [2]]
        assert second.sql.query("PRAGMA integrity_check") == [{"integrity_check": "ok"}]
