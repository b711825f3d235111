"""Why an undo was refused, said in the reader's language on the changes page, a run's page and a
collection's page (K-UI-11, K-UI-12, K-CHG-03, OD-K44).

The store refuses an undo that would overwrite later work, and its English sentence is what the
command line, the REST service and MCP show. The Chinese console used to show that English
sentence as it was; it now says each reason in Chinese, with the values that make it specific
(the later change and who made it, the key, the old parent, the depth limit), and the refused undo
changes nothing.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from console_harness import ALERT, ConsoleServer, shown_text
from runs_gem import installed, run_once

import notochord
from notochord.console.i18n import LABELS
from notochord.console.undo_words import undo_refusal
from notochord.errors import KnowledgeValidationError, RevertError

WORDED = [code for code in RevertError.REASONS if code != "other"]
ENGLISH_WORDS = ("cannot revert change", "superseded", "revert that one first", "undo that", "move that one out")


def _placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


@pytest.mark.parametrize("code", WORDED)
def test_every_refusal_code_has_words_in_both_languages_with_the_same_values(code: str) -> None:
    english, chinese = LABELS[f"revert_{code}"]
    assert english and chinese
    assert _placeholders(english) == _placeholders(chinese)


@pytest.mark.parametrize(
    "error",
    [
        RevertError("cannot revert change 3: superseded"),
        RevertError("cannot revert change 3: a reason from a newer store", reason="a_newer_code"),
        RevertError("cannot revert change 3: superseded by the later change 4", reason="superseded", values={}),
        KnowledgeValidationError("a revert cannot itself be reverted; make the change again instead"),
    ],
    ids=["other", "unknown-code", "missing-values", "not-a-revert-error"],
)
def test_a_refusal_without_words_of_the_console_keeps_its_english_sentence(error: Exception) -> None:
    """A code the console has no words for is never shown blank or as a crash."""
    assert isinstance(error, RevertError | KnowledgeValidationError)
    assert undo_refusal(error, "zh") == re.sub(r"^cannot revert change \d+: ", "", str(error))


# ------------------------------------------------------------------ each refusal through the console


@dataclass(frozen=True)
class Refused:
    """An undo the store refuses: the change to undo, the reason the page must give in English and
    in Chinese, and what the space must still hold afterwards (nothing changed)."""

    change_id: int
    english: str
    chinese: str
    state: Callable[[], object]


def _top(space: notochord.Space) -> dict[str, int | None]:
    """Each of the user's collections with its parent."""
    return {c.name: c.parent_id for c in space.user.collections.list() if c.builtin is None}


def _creation(space: notochord.Space, collection_id: int) -> int:
    [created] = [c for c in space.changes.list() if c.op == "collections.create" and c.target_id == collection_id]
    return created.id


def _superseded(space: notochord.Space) -> Refused:
    first = space.as_assistant.facts.put(predicate="location.home.city", value="Paris")
    later = space.user.facts.put(predicate="location.home.city", value="Leiden")
    assert first.change_id is not None and later.change_id is not None
    summary = space.changes.get(later.change_id).summary
    return Refused(
        first.change_id,
        f"superseded by the later change {later.change_id}, made by you ({summary}); "
        "revert that one first (or the whole run), or edit the value directly",
        f"之后的改动 {later.change_id}({summary},来自你)已经取代了它;请先撤销那项改动(或整次运行),或者直接修改这个值",
        lambda: [f.value for f in space.user.facts.lookup("self", "location.home.city")],
    )


def _entity_deleted(space: notochord.Space) -> Refused:
    cat = space.user.entities.resolve(name="Cat", create=True)
    assert cat
    relation = space.user.facts.put(predicate="relation.colleague", object=cat.id)
    retraction = space.user.facts.retract(relation.id)
    space.user.entities.delete(cat.id)
    assert retraction.change_id is not None
    return Refused(
        retraction.change_id,
        "superseded, the entity relation.colleague points at was deleted since; undo that deletion first",
        "relation.colleague 指向的实体之后被删除了;请先撤销那次删除",
        lambda: space.user.facts.lookup("self", "relation"),
    )


def _key_taken(space: notochord.Space) -> Refused:
    old = space.user.documents.upsert(collection="keep", key="menu", title="Old menu", body="soup")
    deletion = space.user.documents.delete(old.id)
    space.user.documents.upsert(collection="keep", key="menu", title="New menu", body="stew")
    return Refused(
        deletion,
        "superseded, another document now has the key menu",
        "另一篇文档现在用着键 menu",
        lambda: sorted(d.title for d in space.user.documents.list("keep")),
    )


def _collection_not_empty(space: notochord.Space) -> Refused:
    recipes = space.user.collections.create("Recipes")
    space.user.documents.upsert(collection=recipes.id, title="Stew", body="Tomato beef stew")
    return Refused(
        _creation(space, recipes.id),
        "the collection is not empty; move or delete what is inside first",
        "这个知识库不是空的;请先移走或删除里面的内容",
        lambda: (_top(space), [d.title for d in space.user.documents.list(recipes.id)]),
    )


def _document_place_removed(space: notochord.Space) -> Refused:
    drafts = space.user.collections.create("Drafts")
    doc = space.user.documents.upsert(collection=drafts.id, title="Stew", body="Tomato beef stew")
    moved = space.user.documents.move(doc.id, collection="keep")
    space.changes.revert(_creation(space, drafts.id))
    return Refused(
        moved,
        "superseded, the collection the document was in was removed since; undo that removal first",
        "这篇文档原来所在的知识库之后被删除了;请先撤销那次删除",
        lambda: [d.id for d in space.user.documents.list("keep")],
    )


def _collection_place_removed(space: notochord.Space) -> Refused:
    parent = space.user.collections.create("Parent")
    child = space.user.collections.create("Child", parent=parent.id)
    out = space.user.collections.move(child.id, parent=None)
    space.changes.revert(_creation(space, parent.id))
    return Refused(
        out,
        "superseded, the collection it was in was removed since; undo that removal first",
        "它原来所在的上级知识库之后被删除了;请先撤销那次删除",
        lambda: _top(space),
    )


def _old_parent_inside(space: notochord.Space) -> Refused:
    k = space.user.collections.create("k")
    ell = space.user.collections.create("Lentils")
    space.user.collections.move(k.id, parent=ell.id)
    out = space.user.collections.move(k.id, parent=None)
    space.user.collections.move(ell.id, parent=k.id)
    return Refused(
        out,
        "superseded, its old parent Lentils now sits inside the collection; move that one out first",
        "它原来的上级知识库 Lentils 现在位于它里面;请先把 Lentils 移出来",
        lambda: _top(space),
    )


def _too_deep(space: notochord.Space) -> Refused:
    x = space.user.collections.create("x")
    y = space.user.collections.create("y", parent=x.id)
    out = space.user.collections.move(y.id, parent=None)
    below = y.id
    for name in ("y1", "y2", "y3", "y4"):
        below = space.user.collections.create(name, parent=below).id
    return Refused(
        out,
        "superseded, moving it back would nest collections more than 5 levels deep (the depth limit); "
        "move some of what is inside it first",
        "移回原处会让知识库嵌套超过 5 层(层数上限);请先移走它里面的一部分内容",
        lambda: _top(space),
    )


SCENARIOS: dict[str, Callable[[notochord.Space], Refused]] = {
    "superseded": _superseded,
    "entity_deleted": _entity_deleted,
    "key_taken": _key_taken,
    "collection_not_empty": _collection_not_empty,
    "document_place_removed": _document_place_removed,
    "collection_place_removed": _collection_place_removed,
    "old_parent_inside": _old_parent_inside,
    "too_deep": _too_deep,
}


def test_every_code_is_driven_through_the_console_below() -> None:
    assert sorted(SCENARIOS) == sorted(WORDED)


def _refusal(answer: httpx.Response) -> str:
    return shown_text(answer, ALERT)


def _chinese_client(console: ConsoleServer, path: str) -> tuple[httpx.Client, str]:
    client, token = console.signed_in(path)
    client.headers["Accept-Language"] = "zh-CN,zh;q=0.9"
    return client, token


@pytest.mark.parametrize("code", sorted(SCENARIOS))
def test_k_ui_11_an_undo_refused_on_the_changes_page_says_why_in_chinese_and_changes_nothing(
    console: ConsoleServer, code: str
) -> None:
    """K-UI-11, OD-K44: the reason is the console's own Chinese sentence with the refusal's values;
    no English of the store is left in it; the change stays applied and the space as it was."""
    refused = SCENARIOS[code](console.space)
    before = refused.state()
    client, token = _chinese_client(console, "/changes")

    answer = client.post(f"/changes/{refused.change_id}/undo", data={"csrf": token})

    assert answer.status_code == 422
    assert _refusal(answer) == f"无法撤销:{refused.chinese}"
    for english in ENGLISH_WORDS:
        assert english not in answer.text, english
    assert console.space.changes.get(refused.change_id).status == "applied"
    assert refused.state() == before


@pytest.mark.parametrize("code", sorted(SCENARIOS))
def test_k_ui_11_the_english_console_keeps_saying_each_reason_in_english(console: ConsoleServer, code: str) -> None:
    """K-UI-11: in English the page gives the store's reason after "This cannot be undone:", without
    the store's "cannot revert change N:" lead, naming the writer as the changes list does."""
    refused = SCENARIOS[code](console.space)
    before = refused.state()
    client, token = console.signed_in("/changes")

    answer = client.post(f"/changes/{refused.change_id}/undo", data={"csrf": token})

    assert answer.status_code == 422
    assert _refusal(answer) == f"This cannot be undone: {refused.english}"
    assert console.space.changes.get(refused.change_id).status == "applied"
    assert refused.state() == before


def test_k_ui_11_undoing_a_run_on_its_page_says_in_chinese_who_changed_it_since(
    console: ConsoleServer, tmp_path: Path
) -> None:
    """K-UI-11, K-CHG-03: the gem's run wrote a food the user deleted since; undoing the run is
    refused, in Chinese, naming the user's later change, and the run's change stays applied."""
    installed(console.space, tmp_path)
    run_id = run_once(console.space, tmp_path / "conversation")
    [fact] = console.space.user.facts.lookup("self", "pref.food.like")
    retraction = console.space.user.facts.retract(fact.id)
    assert retraction.change_id is not None
    summary = console.space.changes.get(retraction.change_id).summary
    client, token = _chinese_client(console, f"/runs/{run_id}")

    answer = client.post(f"/runs/{run_id}/undo", data={"csrf": token})

    assert answer.status_code == 422
    assert _refusal(answer) == (
        f"无法撤销:之后的改动 {retraction.change_id}({summary},来自你)已经取代了它;"
        "请先撤销那项改动(或整次运行),或者直接修改这个值"
    )
    assert "superseded" not in answer.text
    assert [c.status for c in console.space.changes.list(run_id=run_id)] == ["applied"]
    assert console.space.user.facts.lookup("self", "pref.food.like") == []


def test_k_ui_11_a_later_change_by_a_gem_is_named_as_that_gem_in_chinese(console: ConsoleServer) -> None:
    """OD-K44: the refusal says which writer's change is in the way, as the changes list names it."""
    mine = console.space.user.facts.put(predicate="pref.food.like", value="soup")
    retraction = console.space.user.facts.retract(mine.id)
    console.space.as_assistant.facts.put(predicate="pref.food.like", value="soup")
    assert retraction.change_id is not None
    client, token = _chinese_client(console, "/changes")

    answer = client.post(f"/changes/{retraction.change_id}/undo", data={"csrf": token})

    assert answer.status_code == 422
    assert ",来自助手)已经取代了它" in _refusal(answer)


def test_k_ui_12_restoring_a_document_whose_key_was_taken_since_says_why_in_chinese(console: ConsoleServer) -> None:
    """K-UI-12, K-DOC-16: Restore is the undo of the deletion; another document took the key since,
    so it is refused beside the list, in Chinese, and the document stays deleted."""
    old = console.space.user.documents.upsert(collection="keep", key="menu", title="Old menu", body="soup")
    console.space.user.documents.delete(old.id)
    console.space.user.documents.upsert(collection="keep", key="menu", title="New menu", body="stew")
    keep = console.space.user.collections.get("keep").id
    client, token = _chinese_client(console, f"/knowledge/collections/{keep}")

    answer = client.post(f"/knowledge/documents/{old.id}/restore", data={"csrf": token})

    assert answer.status_code == 422
    assert _refusal(answer) == "无法恢复:另一篇文档现在用着键 menu"
    assert "superseded" not in answer.text and "cannot revert" not in answer.text
    assert console.space.user.documents.deleted_one(old.id) is not None
    assert [d.title for d in console.space.user.documents.list("keep")] == ["New menu"]
