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
from pathlib import Path

import httpx
import pytest
from console_harness import ALERT, ConsoleServer, shown_text
from runs_gem import installed, run_once

from notochord.console.i18n import LABELS
from notochord.console.undo_words import undo_refusal
from notochord.errors import KnowledgeValidationError, RevertError
from refused_undos import REFUSED_UNDOS

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


# Each reason as the console words it: in English after "This cannot be undone:" (without the
# store's "cannot revert change N:" lead, naming the writer as the changes list does) and in Chinese,
# filled with the refusal's values.
WORDS: dict[str, tuple[str, str]] = {
    "superseded": (
        "superseded by the later change {later}, made by you ({summary}); "
        "revert that one first (or the whole run), or edit the value directly",
        "之后的改动 {later}({summary},来自你)已经取代了它;请先撤销那项改动(或整次运行),或者直接修改这个值",
    ),
    "entity_deleted": (
        "superseded, the entity {predicate} points at was deleted since; undo that deletion first",
        "{predicate} 指向的实体之后被删除了;请先撤销那次删除",
    ),
    "key_taken": ("superseded, another document now has the key {key}", "另一篇文档现在用着键 {key}"),
    "collection_not_empty": (
        "the collection is not empty; move or delete what is inside first",
        "这个知识库不是空的;请先移走或删除里面的内容",
    ),
    "document_place_removed": (
        "superseded, the collection the document was in was removed since; undo that removal first",
        "这篇文档原来所在的知识库之后被删除了;请先撤销那次删除",
    ),
    "collection_place_removed": (
        "superseded, the collection it was in was removed since; undo that removal first",
        "它原来所在的上级知识库之后被删除了;请先撤销那次删除",
    ),
    "old_parent_inside": (
        "superseded, its old parent {parent} now sits inside the collection; move that one out first",
        "它原来的上级知识库 {parent} 现在位于它里面;请先把 {parent} 移出来",
    ),
    "too_deep": (
        "superseded, moving it back would nest collections more than {depth} levels deep (the depth limit); "
        "move some of what is inside it first",
        "移回原处会让知识库嵌套超过 {depth} 层(层数上限);请先移走它里面的一部分内容",
    ),
}


def test_every_code_is_driven_through_the_console_below() -> None:
    assert sorted(REFUSED_UNDOS) == sorted(WORDS) == sorted(WORDED)


def _refusal(answer: httpx.Response) -> str:
    return shown_text(answer, ALERT)


def _chinese_client(console: ConsoleServer, path: str) -> tuple[httpx.Client, str]:
    client, token = console.signed_in(path)
    client.headers["Accept-Language"] = "zh-CN,zh;q=0.9"
    return client, token


@pytest.mark.parametrize("code", sorted(REFUSED_UNDOS))
def test_k_ui_11_an_undo_refused_on_the_changes_page_says_why_in_chinese_and_changes_nothing(
    console: ConsoleServer, code: str
) -> None:
    """K-UI-11, OD-K44: the reason is the console's own Chinese sentence with the refusal's values;
    no English of the store is left in it; the change stays applied and the space as it was."""
    refused = REFUSED_UNDOS[code](console.space)
    before = refused.state()
    client, token = _chinese_client(console, "/changes")

    answer = client.post(f"/changes/{refused.change_id}/undo", data={"csrf": token})

    assert answer.status_code == 422
    assert _refusal(answer) == "无法撤销:" + WORDS[code][1].format_map(refused.values)
    for english in ENGLISH_WORDS:
        assert english not in answer.text, english
    assert console.space.changes.get(refused.change_id).status == "applied"
    assert refused.state() == before


@pytest.mark.parametrize("code", sorted(REFUSED_UNDOS))
def test_k_ui_11_the_english_console_keeps_saying_each_reason_in_english(console: ConsoleServer, code: str) -> None:
    """K-UI-11: in English the page gives the store's reason after "This cannot be undone:", without
    the store's "cannot revert change N:" lead, naming the writer as the changes list does."""
    refused = REFUSED_UNDOS[code](console.space)
    before = refused.state()
    client, token = console.signed_in("/changes")

    answer = client.post(f"/changes/{refused.change_id}/undo", data={"csrf": token})

    assert answer.status_code == 422
    assert _refusal(answer) == "This cannot be undone: " + WORDS[code][0].format_map(refused.values)
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
