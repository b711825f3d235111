"""``ctx`` across the process boundary is the same ``ctx`` as in-process (DESIGN §4, EX-03…EX-13).

A Python tool and a JavaScript tool each run one script of calls covering every method family of
``ctx.knowledge`` (profile, facts, entities, documents, collections, search, changes), including
calls that fail. The same script runs in-process through ``space.gems.context(...)`` on an exact
copy of the data directory (same master key, same rows, same fixed clock, same run id), so every
result — refs, timestamps, statuses, error messages — must be identical: the in-process result as
``model_dump(by_alias=True)``, the tool's as the JSON it returned.

Errors arrive as the same Python class (``except notochord.KnowledgePermissionError``) and as a
JavaScript ``Error`` with ``.code``. Files: a run that leaves files in its run folder returns
``{"output", "folder"}`` (P-FILE-12), one that leaves none passes its output through (P-FILE-13),
``tmp/`` goes after success and stays after failure (P-FILE-09), an empty run folder goes
(P-FILE-11), and undoing the run restores the conversation's files (P-FILE-25).
"""

from __future__ import annotations

import asyncio
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import notochord
from notochord.clock import FixedClock
from notochord.errors import NotochordError
from notochord.settings import Settings

GEM = "toolbox"
RUN_ID = "run-boundary-check"

PERMISSIONS = [
    "facts.read:self:pref.food.*",
    "facts.write:self:pref.food.*",
    "facts.read:self:location.home.*",
    "entities.resolve:person",
    "entities.read:person",
    "entities.write:person",
    "facts.read:person:work.company",
    "facts.write:person:work.company",
    "collections.read:diary",
    "collections.write:diary",
    "collections.create",
    "changes.manage",
]
GRANTED = [p for p in PERMISSIONS if p != "collections.create"]
"""Every permission but ``collections.create`` is switched on, so that call fails on purpose."""

# Every call of the script, in the seed's (JavaScript) names. "$N.path" is a value taken from the
# result of call N; "$runId" is the run's id.
SCRIPT: list[tuple[str, list[Any]]] = [
    ("knowledge.profile.get", ["location.home"]),
    ("knowledge.facts.lookup", ["self", "pref.food"]),
    ("knowledge.facts.put", [{"predicateHint": "pref.food.rated", "value": "Tomato beef stew", "sourceRef": "r/1"}]),
    ("knowledge.facts.put", [{"predicateHint": "pref.food.rated", "value": "Tomato beef stew", "sourceRef": "r/1"}]),
    ("knowledge.facts.put", [{"predicateHint": "pref.health.allergy", "value": "nuts"}]),
    ("knowledge.facts.lookup", ["self", "pref.food"]),
    ("knowledge.entities.resolve", [{"email": "zhangsan@acme.nl"}]),
    ("knowledge.entities.resolve", [{"email": "li@acme.nl", "name": "Li Wei"}, {"create": True}]),
    ("knowledge.entities.get", ["$7.ref"]),
    ("knowledge.entities.addIdentifier", ["$7.ref", "phone", "+31 6 1234 5678"]),
    ("knowledge.entities.list", ["person"]),
    ("knowledge.facts.put", [{"subject": "$7.ref", "predicateHint": "work.company", "value": "Acme"}]),
    ("knowledge.facts.lookup", ["$7.ref", "work"]),
    ("knowledge.facts.retract", ["$11.ref"]),
    ("knowledge.entities.get", ["ent_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]),
    ("knowledge.collections.list", []),
    ("knowledge.collections.create", ["Notes"]),
    (
        "knowledge.documents.upsert",
        [
            {
                "collection": "diary",
                "key": "2026-09-29",
                "title": "Tuesday",
                "body": "Ate tomato beef stew with Li.",
                "meta": {"date": "2026-09-29"},
            }
        ],
    ),
    ("knowledge.documents.get", ["$17.ref"]),
    ("knowledge.documents.getByKey", ["diary", "2026-09-28"]),
    ("knowledge.documents.getByKey", ["diary", "2001-01-01"]),
    ("knowledge.documents.list", ["diary"]),
    ("knowledge.search", ["stew", {"collections": ["diary"]}]),
    ("knowledge.search", ["", {"collections": ["diary"], "timeRange": {"from": "2026-09-29", "to": "2026-09-29"}}]),
    ("knowledge.documents.upsert", [{"collection": "diary", "key": "scratch", "title": "Scratch", "body": "x"}]),
    ("knowledge.documents.delete", ["$24.ref"]),
    ("knowledge.documents.get", ["$24.ref"]),
    ("knowledge.changes.list", []),
    ("knowledge.changes.list", [{"status": "applied"}]),
    ("knowledge.changes.revert", [{"runId": "$runId"}]),
    ("knowledge.facts.lookup", ["self", "pref.food"]),
    ("knowledge.changes.list", []),
]
PYTHON_NAMES = {"getByKey": "get_by_key", "addIdentifier": "add_identifier"}

PY_SCRIPT = """
import notochord


def _value(token, results, ctx):
    if token == "$runId":
        return ctx.run_id
    index, *path = token[1:].split(".")
    value = results[int(index)]["ok"]
    for part in path:
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _resolve(value, results, ctx):
    if isinstance(value, str) and value.startswith("$"):
        return _value(value, results, ctx)
    if isinstance(value, dict):
        return {k: _resolve(v, results, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, results, ctx) for v in value]
    return value


async def run(input, ctx):
    results = []
    for method, args in input["calls"]:
        target = ctx
        for part in method.split("."):
            target = getattr(target, part)
        try:
            results.append({"ok": await target(*_resolve(args, results, ctx))})
        except notochord.NotochordError as exc:
            results.append({"error": {"name": type(exc).__name__, "code": exc.code, "message": exc.message}})
    return results
"""

JS_SCRIPT = """
const pick = (token, results, ctx) => {
  if (token === '$runId') return ctx.runId
  const [index, ...path] = token.slice(1).split('.')
  let value = results[Number(index)].ok
  for (const part of path) value = Array.isArray(value) ? value[Number(part)] : value[part]
  return value
}
const resolve = (value, results, ctx) => {
  if (typeof value === 'string' && value.startsWith('$')) return pick(value, results, ctx)
  if (Array.isArray(value)) return value.map((v) => resolve(v, results, ctx))
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, results, ctx)]))
  }
  return value
}

export default async function (input, ctx) {
  const results = []
  for (const [method, args] of input.calls) {
    let target = ctx
    for (const part of method.split('.')) target = target[part]
    try {
      results.push({ ok: (await target(...resolve(args, results, ctx))) ?? null })
    } catch (error) {
      results.push({ error: { name: error.name, code: error.code, message: error.message } })
    }
  }
  return results
}
"""

PY_ERRORS = """
import notochord


async def run(input, ctx):
    try:
        await ctx.knowledge.collections.create("Recipes")
    except notochord.KnowledgePermissionError as exc:
        return {
            "class": type(exc).__name__,
            "module": type(exc).__module__,
            "isKnowledgeError": isinstance(exc, notochord.KnowledgeError),
            "code": exc.code,
            "message": exc.message,
            "str": str(exc),
        }
    return {"class": None}
"""

PY_PERMISSION_ATTRIBUTE = """
import notochord


async def run(input, ctx):
    try:
        await ctx.knowledge.collections.create("Recipes")
    except notochord.KnowledgePermissionError as exc:
        return {"permission": getattr(exc, "permission", "(no permission attribute)")}
    return {}
"""

JS_ERRORS = """
export default async function (input, ctx) {
  try {
    await ctx.knowledge.collections.create('Recipes')
    return { thrown: false }
  } catch (error) {
    return { thrown: true, isError: error instanceof Error, name: error.name, code: error.code, message: error.message }
  }
}
"""

PY_KEYWORDS = """
async def run(input, ctx):
    put = await ctx.knowledge.facts.put(predicate_hint="pref.food.rated", value="Pancakes", source_ref="r/2")
    facts = await ctx.knowledge.facts.lookup("self", "pref.food")
    return {
        "status": put.status,
        "sameByKey": put["status"] == put.status,
        "predicate": put.predicate,
        "values": [f.value for f in facts],
        "validFrom": [f.valid_from == f.validFrom for f in facts],
    }
"""

PY_FILES_WORKSPACE = """
async def run(input, ctx):
    await ctx.files.write("workspace:out/report.md", "# Report\\n\\nAll good.\\n")
    listed = await ctx.files.list("workspace:out")
    return {"written": [e["name"] for e in listed]}
"""

PY_FILES_RUN = """
async def run(input, ctx):
    await ctx.files.write("run:tmp/scratch.txt", "intermediate")
    await ctx.files.write("run:output/report.md", "# Result\\n")
    text = await ctx.files.read_text("run:output/report.md")
    return {"report": text}
"""

PY_FILES_FAIL = """
async def run(input, ctx):
    await ctx.files.write("run:tmp/partial.txt", "half done")
    raise RuntimeError("stopped half way")
"""

JS_FILES = """
export default async function (input, ctx) {
  await ctx.files.write('workspace:out/report.md', '# Report from JavaScript\\n')
  await ctx.files.write('run:output/summary.md', '# Summary\\n')
  const stat = await ctx.files.stat('workspace:out/report.md')
  return { size: stat.size, kind: stat.kind }
}
"""

JS_READ_TEXT = """
export default async function (input, ctx) {
  await ctx.files.write('workspace:note.txt', 'hello')
  return { text: await ctx.files.readText('workspace:note.txt') }
}
"""

PY_STORAGE = """
async def run(input, ctx):
    await ctx.storage.kv.set("settings", {"units": "metric", "days": 3})
    await ctx.storage.sql.execute("CREATE TABLE IF NOT EXISTS seen (city TEXT PRIMARY KEY)")
    await ctx.storage.sql.executemany("INSERT OR IGNORE INTO seen VALUES (?)", [["Utrecht"], ["Delft"]])
    await ctx.data.documents.write("notes/today.md", "# Today\\n")
    await ctx.data.blobs.put("icon.bin", bytes(range(256)))
    blob = await ctx.data.blobs.get("icon.bin")
    return {
        "kv": await ctx.storage.kv.get("settings"),
        "keys": await ctx.storage.kv.list(),
        "rows": await ctx.storage.sql.query("SELECT city FROM seen ORDER BY city"),
        "document": await ctx.data.documents.read("notes/today.md"),
        "documents": await ctx.data.documents.list(),
        "blob": [len(blob), blob == bytes(range(256))],
        "blobs": await ctx.data.blobs.list(),
    }
"""

JS_STORAGE = """
export default async function (input, ctx) {
  await ctx.storage.kv.set('settings', { units: 'metric', days: 3 })
  await ctx.storage.sql.execute('CREATE TABLE IF NOT EXISTS seen (city TEXT PRIMARY KEY)')
  await ctx.storage.sql.executemany('INSERT OR IGNORE INTO seen VALUES (?)', [['Utrecht'], ['Delft']])
  await ctx.data.documents.write('notes/today.md', '# Today\\n')
  await ctx.data.blobs.put('icon.bin', Uint8Array.from({ length: 256 }, (_, i) => i))
  const blob = await ctx.data.blobs.get('icon.bin')
  return {
    kv: await ctx.storage.kv.get('settings'),
    keys: await ctx.storage.kv.list(),
    rows: await ctx.storage.sql.query('SELECT city FROM seen ORDER BY city'),
    document: await ctx.data.documents.read('notes/today.md'),
    documents: await ctx.data.documents.list(),
    blob: [blob.length, blob.every((b, i) => b === i)],
    blobs: await ctx.data.blobs.list(),
  }
}
"""

STORAGE_RESULT = {
    "kv": {"units": "metric", "days": 3},
    "keys": ["settings"],
    "rows": [{"city": "Delft"}, {"city": "Utrecht"}],
    "document": "# Today\n",
    "documents": ["notes/today.md"],
    "blob": [256, True],
    "blobs": ["icon.bin"],
}

PY_FETCH = """
async def run(input, ctx):
    response = await ctx.http.fetch(input["url"], {"headers": {"Accept": "text/plain"}})
    return {"status": response["status"], "ok": response["ok"]}
"""

JS_FETCH = """
export default async function (input, ctx) {
  const response = await ctx.http.fetch(input.url, { headers: { Accept: 'text/plain' } })
  return { status: response.status, ok: response.ok }
}
"""

JS_EXTRACT = """
export default async function (input, ctx) {
  const bytes = new TextEncoder().encode('# Stew\\n\\nBrown the beef.')
  const doc = await ctx.extract.fromBytes(bytes, { filename: 'stew.md' })
  return { title: doc.title, contentType: doc.contentType }
}
"""


# ---------------------------------------------------------------------------------------- building blocks


def _write_gem(root: Path, tools: dict[str, tuple[str, str]], *, gem_id: str = GEM) -> Path:
    folder = root / f"{gem_id}-source"
    folder.mkdir(parents=True)
    manifest: dict[str, Any] = {
        "id": gem_id,
        "name": gem_id,
        "version": "1.0.0",
        "permissions": {
            "knowledge": {
                "permissions": PERMISSIONS,
                "predicates": [
                    {"predicate": "pref.food.rated", "cardinality": "many", "description": "Dishes you rated highly"}
                ],
                "reason": "Check the boundary",
            }
        },
        "tools": [],
    }
    for name, (entry, source) in tools.items():
        (folder / entry).write_text(source, encoding="utf-8")
        manifest["tools"].append({"name": name, "entry": entry, "permissions": {"knowledge": True}})
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def _open(data_dir: Path, clock: FixedClock) -> notochord.Notochord:
    return notochord.open(data_dir, Settings(data_dir=data_dir, index_in_background=False), clock=clock, embedder=None)


def _prepare(space: notochord.Space, source: Path) -> None:
    """The user's own knowledge, and the gem installed with every permission but one switched on."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    space.user.facts.put(predicate="pref.food.like", value="pancakes")
    space.user.entities.resolve(email="zhangsan@acme.nl", name="Zhang San", create=True)
    space.user.documents.upsert(
        collection="diary",
        key="2026-09-28",
        title="Monday",
        body="Cooked tomato beef stew.",
        meta={"date": "2026-09-28"},
    )
    space.gems.install(source)
    for permission in GRANTED:
        space.gems.set_permission(GEM, permission, True)


def _plain(value: Any) -> Any:
    """An in-process result in its documented JSON shape."""
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True)
    elif isinstance(value, list):
        value = [_plain(v) for v in value]
    return json.loads(json.dumps(value, default=str))


def _take(token: str, results: list[dict[str, Any]], run_id: str) -> Any:
    if token == "$runId":
        return run_id
    index, *path = token[1:].split(".")
    value = results[int(index)]["ok"]
    for part in path:
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _resolve(value: Any, results: list[dict[str, Any]], run_id: str) -> Any:
    if isinstance(value, str) and value.startswith("$"):
        return _take(value, results, run_id)
    if isinstance(value, dict):
        return {k: _resolve(v, results, run_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, results, run_id) for v in value]
    return value


async def _in_process(space: notochord.Space, script: list[tuple[str, list[Any]]]) -> list[dict[str, Any]]:
    ctx = space.gems.context(GEM, tool="script", run_id=RUN_ID)
    results: list[dict[str, Any]] = []
    for method, args in script:
        target: Any = ctx
        for part in method.split("."):
            target = getattr(target, part)
        try:
            results.append({"ok": _plain(await target(*_resolve(args, results, RUN_ID)))})
        except NotochordError as exc:
            results.append({"error": {"name": type(exc).__name__, "code": exc.code, "message": exc.message}})
    return results


def _python_script() -> list[tuple[str, list[Any]]]:
    renamed = []
    for method, args in SCRIPT:
        *head, last = method.split(".")
        renamed.append((".".join([*head, PYTHON_NAMES.get(last, last)]), args))
    return renamed


@pytest.fixture
def worlds(tmp_path: Path, clock: FixedClock) -> dict[str, Path]:
    """Three identical data directories: one for each tool and one for the in-process calls."""
    source = _write_gem(tmp_path, {"script": ("script.py", PY_SCRIPT), "script-js": ("script.mjs", JS_SCRIPT)})
    base = tmp_path / "base"
    with _open(base, clock) as nc:
        _prepare(nc.personal, source)
    copies = {name: tmp_path / name for name in ("python", "javascript", "in-process")}
    for target in copies.values():
        shutil.copytree(base, target)
    return copies


def _compare(tool: list[dict[str, Any]], expected: list[dict[str, Any]], script: list[tuple[str, list[Any]]]) -> None:
    assert len(tool) == len(expected) == len(script)
    for index, ((method, args), got, want) in enumerate(zip(script, tool, expected, strict=True)):
        assert got == want, f"call {index} {method}{tuple(args)}:\n tool:       {got}\n in-process: {want}"


# ---------------------------------------------------------------------------------------- the script


def test_every_knowledge_family_gives_the_same_results_in_a_python_tool_as_in_process(
    worlds: dict[str, Path], clock: FixedClock
) -> None:
    """Facts, entities, documents, collections, search, changes: identical JSON, errors included."""
    script = _python_script()
    with _open(worlds["python"], clock) as nc:
        record = nc.personal.gems.runner.run_sync(GEM, "script", input={"calls": script}, run_id=RUN_ID)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    with _open(worlds["in-process"], clock) as nc:
        expected = asyncio.run(_in_process(nc.personal, script))
    _compare(record.output, expected, script)
    # the script is worth comparing: it wrote, failed, found and reverted
    assert expected[2]["ok"]["status"] == "applied"
    assert expected[3]["ok"]["status"] == "duplicate"
    assert "lacks knowledge permission facts.write:self:x.pref.health.allergy" in expected[4]["error"]["message"]
    assert expected[16]["error"]["code"] == "E_PERMISSION"
    assert expected[22]["ok"], "search found nothing"
    assert expected[29]["ok"]["status"] == "reverted"


def test_every_knowledge_family_gives_the_same_results_in_a_javascript_tool_as_in_process(
    worlds: dict[str, Path], clock: FixedClock
) -> None:
    """The seed's camelCase names through the JS shim reach the same facades (EX-03…EX-13)."""
    with _open(worlds["javascript"], clock) as nc:
        record = nc.personal.gems.runner.run_sync(GEM, "script-js", input={"calls": SCRIPT}, run_id=RUN_ID)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    with _open(worlds["in-process"], clock) as nc:
        expected = asyncio.run(_in_process(nc.personal, SCRIPT))
    _compare(record.output, expected, SCRIPT)


# ---------------------------------------------------------------------------------------- errors


@pytest.fixture
def space_with_tools(tmp_path: Path, space: notochord.Space) -> notochord.Space:
    source = _write_gem(
        tmp_path,
        {
            "errors": ("errors.py", PY_ERRORS),
            "attribute": ("attribute.py", PY_PERMISSION_ATTRIBUTE),
            "errors-js": ("errors.mjs", JS_ERRORS),
            "keywords": ("keywords.py", PY_KEYWORDS),
            "workspace": ("workspace.py", PY_FILES_WORKSPACE),
            "keep": ("keep.py", PY_FILES_RUN),
            "fail": ("fail.py", PY_FILES_FAIL),
            "files-js": ("files.mjs", JS_FILES),
            "read-text-js": ("read_text.mjs", JS_READ_TEXT),
            "storage": ("storage.py", PY_STORAGE),
            "storage-js": ("storage.mjs", JS_STORAGE),
            "extract-js": ("extract.mjs", JS_EXTRACT),
        },
    )
    space.gems.install(source)
    for permission in GRANTED:
        space.gems.set_permission(GEM, permission, True)
    return space


def _in_process_error(space: notochord.Space) -> NotochordError:
    ctx = space.gems.context(GEM)
    assert ctx.knowledge is not None
    with pytest.raises(NotochordError) as raised:
        asyncio.run(ctx.knowledge.collections.create("Recipes"))
    return raised.value


def test_python_tool_catches_the_same_error_class_as_in_process(space_with_tools: notochord.Space) -> None:
    """AS-04 through the boundary: ``except notochord.KnowledgePermissionError`` works in the tool."""
    expected = _in_process_error(space_with_tools)
    record = space_with_tools.gems.runner.run_sync(GEM, "errors")
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {
        "class": "KnowledgePermissionError",
        "module": "notochord.errors",
        "isKnowledgeError": True,
        "code": "E_PERMISSION",
        "message": expected.message,
        "str": str(expected),
    }
    assert "lacks knowledge permission collections.create" in expected.message


def test_permission_error_in_a_python_tool_names_the_missing_permission(space_with_tools: notochord.Space) -> None:
    """``KnowledgePermissionError.permission`` (errors.py) survives the boundary like ``code`` and ``message``."""
    record = space_with_tools.gems.runner.run_sync(GEM, "attribute")
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {"permission": "collections.create"}


def test_javascript_tool_gets_an_error_with_the_same_message_and_a_code(space_with_tools: notochord.Space) -> None:
    expected = _in_process_error(space_with_tools)
    record = space_with_tools.gems.runner.run_sync(GEM, "errors-js")
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {
        "thrown": True,
        "isError": True,
        "name": "KnowledgePermissionError",
        "code": "E_PERMISSION",
        "message": expected.message,
    }


def test_python_tool_may_use_keywords_and_attribute_access_on_results(space_with_tools: notochord.Space) -> None:
    """DESIGN §4: snake_case keywords and attributes; the camelCase keys stay readable."""
    record = space_with_tools.gems.runner.run_sync(GEM, "keywords")
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {
        "status": "applied",
        "sameByKey": True,
        "predicate": "pref.food.rated",
        "values": ["Pancakes"],
        "validFrom": [True],
    }


# ---------------------------------------------------------------------------------------- files


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    folder = tmp_path / "conversation"
    folder.mkdir()
    return folder


def test_workspace_write_lands_in_the_conversation_and_output_passes_through(
    space_with_tools: notochord.Space, conversation: Path
) -> None:
    """P-FILE-13, P-FILE-11: nothing left in the run folder → plain output, no ``runs/`` folder."""
    record = space_with_tools.gems.runner.run_sync(GEM, "workspace", conversation=conversation)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {"written": ["report.md"]}
    assert record.folder is None
    assert (conversation / "out" / "report.md").read_text(encoding="utf-8") == "# Report\n\nAll good.\n"
    assert not (conversation / "runs").exists()


def test_undoing_a_run_restores_the_conversation_files_it_changed(
    space_with_tools: notochord.Space, conversation: Path
) -> None:
    """P-FILE-21/25: the write is in the file history under the run id, and undo takes it back."""
    record = space_with_tools.gems.runner.run_sync(GEM, "workspace", conversation=conversation)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    report = space_with_tools.gems.runner.undo(record.id)
    assert report["files"] is not None and report["files"]["skipped"] == []
    assert not (conversation / "out" / "report.md").exists()


def test_run_that_leaves_files_returns_output_and_folder(space_with_tools: notochord.Space, conversation: Path) -> None:
    """P-FILE-03/12: ``{"output", "folder": "runs/<name>-<time>"}`` relative to the conversation; P-FILE-09:
    ``tmp/`` is gone after success."""
    record = space_with_tools.gems.runner.run_sync(GEM, "keep", conversation=conversation)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    folder = record.output["folder"]
    assert record.output == {"output": {"report": "# Result\n"}, "folder": folder}
    assert folder == record.folder
    assert folder.startswith("runs/keep-20260929-")
    assert (conversation / folder / "output" / "report.md").read_text(encoding="utf-8") == "# Result\n"
    assert not (conversation / folder / "tmp").exists()


def test_failed_run_keeps_its_tmp_folder(space_with_tools: notochord.Space, conversation: Path) -> None:
    """P-FILE-09: ``tmp/`` is kept after a failure, for a look at what went wrong."""
    record = space_with_tools.gems.runner.run_sync(GEM, "fail", conversation=conversation)
    assert record.status == "failed"
    assert record.error is not None and record.error["message"] == "stopped half way"
    kept = list((conversation / "runs").glob("fail-*/tmp/partial.txt"))
    assert [p.read_text(encoding="utf-8") for p in kept] == ["half done"]


def test_javascript_tool_files_land_where_python_ones_do(space_with_tools: notochord.Space, conversation: Path) -> None:
    record = space_with_tools.gems.runner.run_sync(GEM, "files-js", conversation=conversation)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output["output"] == {"size": len("# Report from JavaScript\n"), "kind": "file"}
    assert (conversation / "out" / "report.md").is_file()
    assert (conversation / record.output["folder"] / "output" / "summary.md").is_file()


def test_javascript_tool_reads_text_with_the_seed_name(space_with_tools: notochord.Space, conversation: Path) -> None:
    """``files.readText`` is in the protocol's method table, so the JS name must reach ``read_text``."""
    record = space_with_tools.gems.runner.run_sync(GEM, "read-text-js", conversation=conversation)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {"text": "hello"}


# ---------------------------------------------------------------------------------------- storage, data, http, extract


@pytest.mark.parametrize("tool", ["storage", "storage-js"])
def test_storage_and_data_work_across_the_boundary(space_with_tools: notochord.Space, tool: str) -> None:
    """P-STOR-02: kv, sql, documents and blobs (bytes cross as ``{"$bytes": …}``) from both languages."""
    record = space_with_tools.gems.runner.run_sync(GEM, tool)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == STORAGE_RESULT


def test_javascript_tool_extracts_text_from_bytes_with_the_seed_name(space_with_tools: notochord.Space) -> None:
    """``ctx.extract.fromBytes`` exists on the facade; a tool process must be able to call it too."""
    record = space_with_tools.gems.runner.run_sync(GEM, "extract-js", timeout=30)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {"title": "Stew", "contentType": "text/markdown"}


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from 127.0.0.1"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def local_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize(("entry", "source"), [("fetch.py", PY_FETCH), ("fetch.mjs", JS_FETCH)])
def test_http_fetch_answers_a_tool_process(
    tmp_path: Path, space: notochord.Space, local_url: str, entry: str, source: str
) -> None:
    """P-NET-10/19: the request runs on the host, checked, and its response reaches the tool."""
    folder = tmp_path / "fetcher"
    folder.mkdir()
    (folder / entry).write_text(source, encoding="utf-8")
    manifest = {
        "id": "fetcher",
        "name": "fetcher",
        "version": "1.0.0",
        "permissions": {"network": {"hosts": [], "allowLocalNetwork": True, "reason": "Talk to a local service"}},
        "tools": [{"name": "fetch", "entry": entry}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    space.gems.install(folder)
    space.network_rules.add_local(local_url.removeprefix("http://").rstrip("/"))
    record = space.gems.runner.run_sync("fetcher", input={"url": local_url}, timeout=10)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {"status": 200, "ok": True}
