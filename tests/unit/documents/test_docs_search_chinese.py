"""Chinese and mixed Chinese/English search (OD-K38, DESIGN §5: full text over CJK bigrams).

Two-character words (香菜 coriander, 咖啡 coffee, 长江 the Yangtze), a person's name (张伟) and mixed
text must find the documents that contain them and not the ones that merely share a character or
hold the same characters in another order. The exact sets are full-text properties, shown on
``text_space``; with both legs running (``space``) the right documents rank first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_fixtures import dump, gem, titles

from notochord import Space
from notochord.gems.api.knowledge import KnowledgeApi

pytestmark = pytest.mark.anyio

DOCUMENTS = {
    "coriander": "我不吃香菜,香菜的味道太冲了。",
    "kitchen smell": "厨房里飘着菜香和饭香。",
    "coffee": "早上喝一杯咖啡,下午喝茶。",
    "curry": "晚饭做了咖喱鸡,很好吃。",
    "yangtze": "我们沿着长江坐船旅行了三天。",
    "great wall": "长城很长,江水很宽。",
    "name": "张伟下周来阿姆斯特丹开会。",
    "teacher": "伟大的张老师退休了。",
    "mixed": "明天和 Zhang Wei 在 Starbucks 喝咖啡,讨论 roadmap。",
    "english": "Coffee with the team about the roadmap.",
}


async def _corpus(space: Space, gems_root: Path) -> KnowledgeApi:
    for title, body in DOCUMENTS.items():
        space.user.documents.upsert(collection="keep", title=title, body=body)
    space.index.wait()
    return gem(space, gems_root, "g", ["collections.read:keep"])


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("香菜", {"coriander"}),
        ("咖啡", {"coffee", "mixed"}),
        ("长江", {"yangtze"}),
        ("张伟", {"name"}),
        ("长江旅行", {"yangtze"}),
        ("Starbucks", {"mixed"}),
        ("roadmap", {"mixed", "english"}),
        ("咖喱鸡", {"curry"}),
    ],
)
async def test_full_text_finds_chinese_words_and_nothing_else(
    text_space: Space, gems_root: Path, query: str, expected: set[str]
) -> None:
    """OD-K38: 香菜 does not match 菜香, 咖啡 not 咖喱, 长江 not 长城…江水, 张伟 not 伟大的张."""
    api = await _corpus(text_space, gems_root)
    assert set(titles(await api.search(query))) == expected


async def test_mixed_query_ranks_the_document_matching_both_scripts_first(text_space: Space, gems_root: Path) -> None:
    """OD-K38: ``Zhang Wei 咖啡`` matches the mixed note on every term, and the other coffee note on one."""
    api = await _corpus(text_space, gems_root)
    assert titles(await api.search("Zhang Wei 咖啡")) == ["mixed", "coffee"]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("香菜", "coriander"),
        ("长江", "yangtze"),
        ("张伟", "name"),
        ("咖啡 Starbucks", "mixed"),
        ("我不吃香菜", "coriander"),
    ],
)
async def test_hybrid_search_ranks_the_right_chinese_document_first(
    space: Space, gems_root: Path, query: str, first: str
) -> None:
    """K-SRCH-02: with both legs, the document holding the words comes first."""
    api = await _corpus(space, gems_root)
    assert titles(await api.search(query))[0] == first


async def test_chinese_text_is_chunked_at_sentence_ends(text_space: Space, gems_root: Path) -> None:
    """OD-K36, OD-K40: a long Chinese body without spaces is cut into passages whose locator offsets
    cut them out of the body exactly."""
    sentence = "今天在长江边散步,看到很多船。"
    body = sentence * 120
    api = gem(text_space, gems_root, "g", ["collections.read:keep", "collections.write:keep"])
    created = await api.documents.upsert({"collection": "keep", "title": "散步", "body": body})
    fetched = await api.documents.get(created.ref)
    assert fetched.chunk_count >= 2
    hits = await api.search("长江", {"limit": 100})
    assert {h.document for h in hits} == {created.ref}
    for hit in hits:
        assert body[hit.locator["from"] : hit.locator["to"]] == hit.text
        assert hit.text.endswith("。")


async def test_a_chinese_name_in_running_text_is_a_mention(space: Space, gems_root: Path) -> None:
    """K-CON-20, OD-K41, K-SRCH-09: Chinese is written without spaces, so a contact's name inside a
    sentence (张伟下周来…) is a mention just like one set off by spaces; a different name that shares
    a character (伟大的张老师) is not."""
    zhang = space.user.entities.resolve(name="张伟", create=True)
    assert zhang is not None
    await _corpus(space, gems_root)
    hits = space.user.search("", entities=[zhang.id])
    assert sorted(titles(hits)) == ["name"]


ONE_CHARACTER = {
    "duck": "今天我和张伟在北京吃了烤鸭",
    "park": "明天去公园散步。",
    "teacher": "伟大的张老师退休了。",
}


@pytest.mark.parametrize(
    ("query", "expected"),
    [("鸭", {"duck"}), ("京", {"duck"}), ("张", {"duck", "teacher"}), ("园", {"park"}), ("猫", set())],
)
async def test_one_chinese_character_is_found_by_full_text(
    text_space: Space, gems_root: Path, query: str, expected: set[str]
) -> None:
    """OD-K38: a surname or a one-character word matches every document that
    holds it, even inside a longer run, and nothing else."""
    for title, body in ONE_CHARACTER.items():
        text_space.user.documents.upsert(collection="keep", title=title, body=body)
    api = gem(text_space, gems_root, "g", ["collections.read:keep"])
    assert set(titles(await api.search(query))) == expected
    assert {h.title for h in text_space.user.search(query)} == expected


async def test_hidden_documents_full_of_one_character_change_nothing_in_a_gems_ranking(
    space: Space, gems_root: Path
) -> None:
    """K-SRCH-03: the unigram statistics come from the caller's candidates only."""
    for title, body in ONE_CHARACTER.items():
        space.user.documents.upsert(collection="keep", title=title, body=body)
    space.index.wait()
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    queries = ("鸭", "张", "张 鸭", "北京")
    before = [dump(await api.search(q)) for q in queries]
    private = space.user.collections.create("Private")
    for i in range(20):
        space.user.documents.upsert(collection=private.id, title=f"鸭 {i}", body="鸭鸭鸭,张张。" * (1 + i % 3))
    space.index.wait()
    assert [dump(await api.search(q)) for q in queries] == before
