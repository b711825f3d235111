"""Permission sentences: how each knowledge permission reads to the user (K-PERM-02, K-UI-02, OD-K51).

A sentence is a per-type/action template filled with the permission's scope, in English or Chinese.
The rows of the SPEC §4 table come out word for word; other scopes read the same way.

Rendering a facts scope (``facts.<action>:<subject>:<prefix>``), first match wins:

1. a phrase for a common group (``location.home`` → "where you live" / 居住地, ``pref.food`` →
   "food preferences" / 饮食偏好, ...), whether or not the prefix ends in ``.*``;
2. the display names of the core predicate with exactly that name (``location.work.city`` →
   "your work city" / 你的工作城市);
3. the description a gem declared for that predicate, through ``describe_predicate`` (quoted, since
   it is the gem author's text);
4. for ``a.b.*``, the display names of the core predicates under it, joined;
5. the first level's group name followed by the remaining levels (``pref.music.*`` →
   "your preferences: music").

Facts about the user read "Read your …"; facts about entities of a kind read "Read facts about
people: …" (zh: 读取联系人的…). A ``collections.write`` sentence says it also reads, because the
grant does (OD-K27): a sentence must never promise less than the switch allows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from notochord.access.permissions import (
    SELF,
    CollectionsPermission,
    EntitiesPermission,
    FactsPermission,
    Permission,
    SimpleName,
    SimplePermission,
)
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.predicates import CORE_PREDICATES, CorePredicate, under_prefix

__all__ = ["DescribePredicate", "Lang", "sentence"]

Lang = Literal["en", "zh"]
DescribePredicate = Callable[[str], str | None]


@dataclass(frozen=True)
class _Phrase:
    """A facts scope as a noun phrase: about the user (en), about others (en), and in Chinese
    without the owner (the zh template adds 你的 / 联系人的)."""

    en_self: str
    en_other: str
    zh: str


@dataclass(frozen=True)
class _KindNoun:
    en_one: str  # with its article: "a contact"
    en_many: str
    en_list: str
    zh: str


# Group phrases for prefixes whose core predicates share one meaning (D-15, D-17).
_GROUP_PHRASES: Final[dict[str, _Phrase]] = {
    "location.home": _Phrase("where you live", "where they live", "居住地"),
    "location.work": _Phrase("where you work", "where they work", "工作地点"),
    "pref.food": _Phrase("your food preferences", "food preferences", "饮食偏好"),
    "pref.communication": _Phrase("how you like to communicate", "how they like to communicate", "沟通偏好"),
}

# First-level names, the last resort for scopes nothing else describes.
_FIRST_LEVEL_NAMES: Final[dict[str, tuple[str, str]]] = {
    "identity": ("identity details", "身份信息"),
    "contact": ("contact details", "联系方式"),
    "location": ("locations", "位置"),
    "relation": ("relationships", "人际关系"),
    "pref": ("preferences", "偏好"),
    "schedule": ("schedule", "日程"),
    "work": ("work", "工作"),
    "health": ("health information", "健康信息"),
    "finance": ("finances", "财务"),
    "x": ("other information", "其他信息"),
}

_KIND_NOUNS: Final[dict[str, _KindNoun]] = {
    "person": _KindNoun("a contact", "contacts", "contact", "联系人"),
    "org": _KindNoun("an organization", "organizations", "organization", "组织"),
    "place": _KindNoun("a place", "places", "place", "地点"),
}

# "people" reads better than "contacts" in "Read facts about people: …".
_KIND_SUBJECTS_EN: Final[dict[str, str]] = {"person": "people", "org": "organizations", "place": "places"}

_FACTS_VERBS: Final[dict[str, tuple[str, str]]] = {"read": ("Read", "读取"), "write": ("Record", "记录")}

_TARGETS: Final[dict[str, tuple[str, str]]] = {
    "diary": ("your diary", "你的日记"),
    "keep": ("your keepsakes", "你的留存"),
    "user-selected": ("the collections you choose", "你选定的知识库"),
}

_COLLECTIONS_VERBS: Final[dict[str, tuple[str, str]]] = {
    "read": ("Read", "读取"),
    "write": ("Read and write", "读取和写入"),
}

_ENTITIES_TEMPLATES: Final[dict[str, tuple[str, str]]] = {
    "resolve": ("Look up {one}'s name by email and the like", "根据邮箱等查询{zh}的名字"),
    "read": ("View your {list} list", "查看你的{zh}列表"),
    "write": ("Add and edit {many}", "新增和编辑{zh}"),
}

_SIMPLE: Final[dict[SimpleName, tuple[str, str]]] = {
    "collections.create": ("Create its own collections", "创建自己的知识库"),
    "collections.bulk": ("Write large amounts of text to your collections", "向你的知识库写入大量文本"),
    "changes.manage": ("View and undo all knowledge written by apps", "查看和撤销所有应用写入的知识"),
    "origin.override": ("Write data on behalf of other apps", "代表其他应用写入数据"),
}

_YOU: Final = re.compile(r"\byou\b")

_CORE_BY_NAME: Final[dict[str, CorePredicate]] = {p.name: p for p in CORE_PREDICATES}


def _lower_first(text: str) -> str:
    # Keep acronyms ("URL") intact; only a capitalised ordinary word is lowered.
    if len(text) > 1 and text[1].isupper():
        return text
    return text[:1].lower() + text[1:]


def _en_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _phrase_for(prefix: str, *, wildcard: bool, describe: DescribePredicate | None) -> _Phrase:
    group = _GROUP_PHRASES.get(prefix)
    if group is not None:
        return group
    core = _CORE_BY_NAME.get(prefix)
    if core is not None:
        noun = _lower_first(core.display_en)
        if _YOU.search(noun):
            # "Foods you like" already names its owner: "Read foods you like", "…: foods they like".
            return _Phrase(noun, _YOU.sub("they", noun), core.display_zh)
        return _Phrase(f"your {noun}", noun, core.display_zh)
    described = describe(prefix) if describe is not None else None
    if described and described.strip():
        quoted = f"“{described.strip()}”"
        return _Phrase(quoted, quoted, quoted)
    if wildcard:
        under = [p for p in CORE_PREDICATES if under_prefix(p.name, prefix)]
        if under:
            en = _en_list(_unique([_lower_first(p.display_en) for p in under]))
            zh = "、".join(_unique([p.display_zh for p in under]))
            return _Phrase(f"your {en}", en, zh)
    first, *rest = prefix.split(".")
    group_en, group_zh = _FIRST_LEVEL_NAMES.get(first, (first, first))
    detail = " ".join(segment.replace("_", " ") for segment in rest)
    return _Phrase(f"your {group_en}: {detail}", f"{detail} ({group_en})", f"{group_zh}:{detail}")


def _kind_noun(kind: str) -> _KindNoun:
    known = _KIND_NOUNS.get(kind)
    if known is not None:
        return known
    words = kind.replace("_", " ")
    article = "an" if words[:1] in "aeiou" else "a"
    return _KindNoun(f"{article} {words} entity", f"{words} entities", f"{words} entity", f"“{kind}”类实体")


def _facts_sentence(permission: FactsPermission, lang: Lang, describe: DescribePredicate | None) -> str:
    verb_en, verb_zh = _FACTS_VERBS[permission.action]
    phrase = _phrase_for(permission.prefix, wildcard=permission.wildcard, describe=describe)
    if permission.subject == SELF:
        return f"{verb_en} {phrase.en_self}" if lang == "en" else f"{verb_zh}你的{phrase.zh}"
    if lang == "en":
        about = _KIND_SUBJECTS_EN.get(permission.subject, _kind_noun(permission.subject).en_many)
        return f"{verb_en} facts about {about}: {phrase.en_other}"
    return f"{verb_zh}{_kind_noun(permission.subject).zh}的{phrase.zh}"


def sentence(permission: Permission, *, lang: Lang, describe_predicate: DescribePredicate | None = None) -> str:
    """The user-facing sentence for ``permission`` in ``lang`` (K-PERM-02, OD-K51).

    Args:
        permission: a parsed permission.
        lang: ``"en"`` or ``"zh"``.
        describe_predicate: returns the description a gem declared for a predicate that is not a
            core predicate, or ``None``; used when a facts scope names such a predicate.

    Example::

        >>> sentence(Permission.parse("facts.read:self:location.home.*"), lang="en")
        'Read where you live'

    Raises:
        KnowledgeValidationError: ``lang`` is not ``"en"`` or ``"zh"``.
    """
    if lang not in ("en", "zh"):
        raise KnowledgeValidationError(f"unknown sentence language {lang!r} (expected en or zh)")
    pick = 0 if lang == "en" else 1
    if isinstance(permission, FactsPermission):
        return _facts_sentence(permission, lang, describe_predicate)
    if isinstance(permission, EntitiesPermission):
        noun = _kind_noun(permission.kind)
        template = _ENTITIES_TEMPLATES[permission.action][pick]
        return template.format(one=noun.en_one, many=noun.en_many, list=noun.en_list, zh=noun.zh)
    if isinstance(permission, CollectionsPermission):
        target = _TARGETS[permission.target][pick]
        verb = _COLLECTIONS_VERBS[permission.action][pick]
        return f"{verb} {target}" if lang == "en" else f"{verb}{target}"
    if isinstance(permission, SimplePermission):
        return _SIMPLE[permission.name][pick]
    raise KnowledgeValidationError(f"no sentence for permission type {type(permission).__name__}")
