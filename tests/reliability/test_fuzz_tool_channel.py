"""A tool process's calls outside ``ctx.knowledge`` are answered, or refused in notochord's words.

A tool process is code notochord does not control: every ``{"type": "call"}`` it sends names a
method and gives it any JSON, any number of positional arguments and any keyword names. The host
looks the method up and calls the run's ``ctx`` part (``files``, ``storage``, ``data``, ``http``,
``extract``). ``ctx.knowledge`` has its own property in ``test_fuzz_knowledge_api.py``.

The property, for every call of every method of the channel's table (P-FILE-01, P-FILE-17,
P-STOR-02, P-NET-10, OD-P06): it returns, or it raises a :class:`~notochord.errors.NotochordError`
whose message names the problem in notochord's words, never Python's (a missing argument, an
unknown keyword, a number where a path belongs), and the host logs no failure of its own. Before,
such a call was answered ``E_INTERNAL`` ("the host failed to complete the call") with a traceback in
notochord's log, as if notochord were broken.

The gem may reach example.com, which no URL here names, so no request leaves the machine; its
conversation folder and its storage are real and shared by the examples. The minimal examples of
the defects this found are kept as plain cases at the end.
"""

from __future__ import annotations

import base64
import json
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from foreign_words import FOREIGN_WORDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import notochord
from notochord.errors import NotochordError
from notochord.gems.bridge import host
from notochord.gems.bridge.protocol import METHODS
from notochord.gems.context import GemContext
from notochord.settings import Settings

GEM = "channel"
CHANNEL_METHODS = sorted(m for m in METHODS if not m.startswith("knowledge."))

PATHS = st.sampled_from(
    [
        "workspace:", "workspace:a.txt", "workspace:inbox/b.md", "workspace:../escape", "workspace:.env",
        "run:", "run:output/c.md", "run:tmp/x", "notes.md", "/etc/passwd", "workspace:a.txt/", "", "\x00",
        "workspace:\ud800", "a" * 300, "workspace:" + "d/" * 200 + "f",
    ]
)  # fmt: skip
SQL = st.sampled_from(
    [
        "CREATE TABLE IF NOT EXISTS t (x)", "INSERT INTO t VALUES (?)", "SELECT * FROM t", "SELECT ?",
        "SELECT :a", "DROP TABLE nope", "BEGIN", "COMMIT", "ROLLBACK", "PRAGMA key = 'x'", "not sql", "",
        "SELECT 1; SELECT 2",
    ]
)  # fmt: skip
URLS = st.sampled_from(
    ["https://example.org/", "http://127.0.0.1:1/", "file:///etc/passwd", "not a url", "", "https://[::1/"]
)
"""No URL names the host the gem may reach (example.com), so none is ever looked up or sent."""
BYTES = st.binary(max_size=64).map(lambda raw: {"$bytes": base64.b64encode(raw).decode()})
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    PATHS,
    SQL,
    URLS,
    BYTES,
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
KEYWORDS = st.dictionaries(
    st.sampled_from(["path", "data", "key", "value", "default", "sql", "params", "rows", "encoding", "url",
                     "options", "name", "prefix", "recursive", "dest", "x", "filename"]),
    JSON,
    max_size=2,
)  # fmt: skip


@pytest.fixture(scope="module")
def ctx() -> Iterator[GemContext]:
    with tempfile.TemporaryDirectory(prefix="fuzz-channel-") as folder:
        root = Path(folder)
        conversation = root / "conversation"
        (conversation / "inbox").mkdir(parents=True)
        (conversation / "a.txt").write_text("hello", encoding="utf-8")
        (conversation / "inbox" / "b.md").write_text("# B\n", encoding="utf-8")
        source = root / "gem"
        source.mkdir()
        (source / "main.py").write_text("async def run(input, ctx):\n    return None\n", encoding="utf-8")
        manifest = {
            "id": GEM,
            "name": "Channel",
            "version": "1.0.0",
            "permissions": {"network": {"hosts": ["example.com"], "reason": "Fetch pages"}},
            "tools": [{"name": "main", "entry": "main.py"}],
        }
        (source / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
        settings_ = Settings(data_dir=root / "data", index_in_background=False)
        with notochord.open(root / "data", settings_, embedder=None) as nc:
            nc.personal.gems.install(source)
            yield nc.personal.gems.context(GEM, tool="main", conversation=conversation, run_id="run-fuzz-channel")


def test_the_channel_offers_more_than_knowledge() -> None:
    assert {"files.read", "storage.sql.query", "data.blobs.put", "http.fetch", "extract.fromBytes"} <= set(
        CHANNEL_METHODS
    )


@pytest.mark.parametrize("method", CHANNEL_METHODS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.lists(JSON, max_size=3), kwargs=KEYWORDS)
def test_a_call_is_answered_or_refused_in_notochords_words(
    ctx: GemContext, method: str, args: list[Any], kwargs: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.clear()
    error: BaseException | None = None
    with caplog.at_level(logging.ERROR):
        try:
            anyio.run(host._dispatch, ctx, method, args, kwargs)
        except Exception as exc:  # the property judges every exception
            error = exc
    call = f"ctx.{method}(*{args!r:.200}, **{kwargs!r:.200})"
    if error is not None:
        assert isinstance(error, NotochordError), f"{call} let {type(error).__name__} escape: {error!r:.300}"
        message = str(error)
        assert message.strip(), f"{call} raised {type(error).__name__} without a message"
        assert not FOREIGN_WORDS.search(message), f"{call} speaks in foreign words: {message[:300]!r}"
    assert not caplog.records, f"{call} logged a failure of the host: {caplog.records[0].getMessage()[:300]}"


REFUSED = [
    # each let Python's exception escape (TypeError, OverflowError, UnicodeEncodeError, AttributeError)
    # or answered in Python's or SQLite's words ("Error binding parameter", "Out of range float")
    ("data.blobs.delete", [], {}),
    ("files.read", [], {"path": "workspace:a.txt", "x": 1}),
    ("storage.sql.executemany", ["INSERT INTO t VALUES (?)", [5]], {}),
    ("storage.sql.execute", ["SELECT ?", [2**70]], {}),
    ("storage.sql.execute", ["SELECT ?", [{"a": 1}]], {}),
    ("storage.sql.query", ["SELECT :a", {"a": [1]}], {}),
    ("storage.sql.query", ["SELECT 1", "not parameters"], {}),
    ("storage.kv.set", ["k", float("nan")], {}),
    ("storage.kv.set", ["k", {"$bytes": "AAAA"}], {}),
    ("files.write", ["workspace:b.txt", "\ud800"], {}),
    ("data.documents.write", ["x.md", "\ud800"], {}),
    ("extract.fromBytes", [{"$bytes": "AAAA"}, {"filename": 5}], {}),
    ("extract.fromBytes", [{"$bytes": "AAAA"}, "x.pdf"], {}),
    ("extract.fromBytes", [{"$bytes": "not base64!"}], {}),
    ("files.read", [1], {}),
]


@pytest.mark.parametrize(("method", "args", "kwargs"), REFUSED, ids=[f"{m}-{i}" for i, (m, _, _) in enumerate(REFUSED)])
def test_each_call_the_fuzzing_once_broke_is_refused_in_notochords_words(
    ctx: GemContext, method: str, args: list[Any], kwargs: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR), pytest.raises(NotochordError) as caught:
        anyio.run(host._dispatch, ctx, method, args, kwargs)
    assert not FOREIGN_WORDS.search(str(caught.value)), str(caught.value)
    assert not caplog.records
