"""Permission sentences shown on the install screen and the gem's page.

Covers K-PERM-02, K-UI-02, OD-K51, OD-K53, D-15 and the sentence table of SPEC §4.
"""

from __future__ import annotations

import pytest

from notochord.access.permissions import Permission
from notochord.access.sentences import sentence
from notochord.errors import KnowledgeValidationError

# The §4 table, word for word, in both languages (D-15).
TABLE: tuple[tuple[str, str, str], ...] = (
    ("facts.read:self:location.home.*", "Read where you live", "读取你的居住地"),
    ("facts.write:self:pref.food.*", "Record your food preferences", "记录你的饮食偏好"),
    (
        "entities.resolve:person",
        "Look up a contact's name by email and the like",
        "根据邮箱等查询联系人的名字",
    ),
    ("entities.read:person", "View your contact list", "查看你的联系人列表"),
    ("entities.write:person", "Add and edit contacts", "新增和编辑联系人"),
    ("collections.read:diary", "Read your diary", "读取你的日记"),
    ("collections.create", "Create its own collections", "创建自己的知识库"),
    ("changes.manage", "View and undo all knowledge written by apps", "查看和撤销所有应用写入的知识"),
    ("origin.override", "Write data on behalf of other apps", "代表其他应用写入数据"),
)


@pytest.mark.parametrize(("text", "english", "chinese"), TABLE, ids=[row[0] for row in TABLE])
def test_table_rows_come_out_exactly_in_both_languages(text: str, english: str, chinese: str) -> None:
    """K-PERM-02, OD-K51: each sample sentence of §4 is reproduced for its sample scope."""
    permission = Permission.parse(text)
    assert sentence(permission, lang="en") == english
    assert sentence(permission, lang="zh") == chinese


# Other scopes read naturally through display names and group phrases (OD-K51, OD-K53).
OTHER_SCOPES: tuple[tuple[str, str, str], ...] = (
    ("facts.read:self:location.work.city", "Read your work city", "读取你的工作城市"),
    ("facts.read:self:location.home.city", "Read your city of residence", "读取你的居住城市"),
    ("facts.read:self:pref.food.*", "Read your food preferences", "读取你的饮食偏好"),
    ("facts.write:self:location.home.*", "Record where you live", "记录你的居住地"),
    ("facts.read:self:contact.email.*", "Read your email", "读取你的联系方式"),
    ("facts.read:self:health.allergy", "Read your allergies", "读取你的过敏"),
    ("facts.read:self:pref.food.like", "Read foods you like", "读取你的饮食偏好"),
    (
        "facts.read:person:pref.food.dislike",
        "Read facts about people: foods they dislike",
        "读取联系人的饮食偏好",
    ),
    ("facts.read:person:relation.friend.*", "Read facts about people: friends", "读取联系人的人际关系"),
    ("facts.read:person:location.home.*", "Read facts about people: where they live", "读取联系人的居住地"),
    ("facts.read:org:work.company", "Read facts about organizations: company", "读取组织的公司"),
    ("facts.read:self:pref.music.*", "Read your preferences: music", "读取你的偏好:music"),
    ("collections.write:diary", "Read and write your diary", "读取和写入你的日记"),
    ("collections.read:keep", "Read your keepsakes", "读取你的留存"),
    ("collections.read:user-selected", "Read the collections you choose", "读取你选定的知识库"),
    (
        "collections.bulk",
        "Write large amounts of text to your collections",
        "向你的知识库写入大量文本",
    ),
    ("entities.read:org", "View your organization list", "查看你的组织列表"),
    ("entities.write:vehicle", "Add and edit vehicle entities", "新增和编辑“vehicle”类实体"),
)


@pytest.mark.parametrize(("text", "english", "chinese"), OTHER_SCOPES, ids=[row[0] for row in OTHER_SCOPES])
def test_other_scopes_are_rendered_through_the_same_templates(text: str, english: str, chinese: str) -> None:
    permission = Permission.parse(text)
    assert sentence(permission, lang="en") == english
    assert sentence(permission, lang="zh") == chinese


def test_gem_declared_predicate_is_described_by_its_declaration(describe_declared: dict[str, str]) -> None:
    """OD-K51, K-MAN-13: a predicate the gem declared reads through the gem's description."""
    permission = Permission.parse("facts.write:self:pref.food.rated")
    described = describe_declared["pref.food.rated"]
    assert sentence(permission, lang="en", describe_predicate=describe_declared.get) == f"Record “{described}”"
    assert sentence(permission, lang="zh", describe_predicate=describe_declared.get) == f"记录你的“{described}”"


def test_core_display_names_win_over_a_declared_description() -> None:
    """A gem cannot relabel a core predicate the user already knows by name."""
    permission = Permission.parse("facts.read:self:location.home.city")
    assert sentence(permission, lang="en", describe_predicate=lambda _: "Anything") == ("Read your city of residence")


def test_a_blank_description_falls_back_to_the_level_names() -> None:
    permission = Permission.parse("facts.read:self:x.opening_hours")
    assert sentence(permission, lang="en", describe_predicate=lambda _: "  ") == (
        "Read your other information: opening hours"
    )


def test_every_valid_permission_renders_a_sentence_in_both_languages(valid_permission_text: str) -> None:
    """K-UI-02: every requestable permission has a sentence, never an empty one."""
    permission = Permission.parse(valid_permission_text)
    english = sentence(permission, lang="en")
    chinese = sentence(permission, lang="zh")
    assert english.strip()
    assert english[0].isupper()
    assert chinese.strip()
    assert english != chinese


def test_unknown_language_is_refused() -> None:
    with pytest.raises(KnowledgeValidationError, match="unknown sentence language"):
        sentence(Permission.parse("collections.create"), lang="fr")  # type: ignore[arg-type]
