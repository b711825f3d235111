"""What the store refuses as the reader's mistake, said in the reader's language beside the field
the reader typed into (K-UI-07, K-UI-11, K-UI-12, K-UI-09).

The store's English sentence is what the command line, the REST service and MCP show, and the
English console shows it as it is. The Chinese console used to show that English sentence too; it
now words each refusal from the reason code and values the refusal carries, names the field
(the collection name, the value, the entity's name, the search words), and the refused request
changes nothing.
"""

from __future__ import annotations

import fcntl
import html
import io
import os
import re
import string
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from console_harness import ALERT, WEATHER, ConsoleServer, element_pattern, shown_text

import notochord
from notochord.console.i18n import LABELS
from notochord.console.refusal_words import refusal
from notochord.console.undo_words import undo_refusal
from notochord.errors import KnowledgeValidationError, ServiceContentError
from notochord.gems.run_leases import RunLeases

WORDED = [code for code in KnowledgeValidationError.REASONS if code != "other"]
FIELD_VALUES = {"field"}


def _placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _chinese(console: ConsoleServer, path: str) -> tuple[httpx.Client, str]:
    client, token = console.signed_in(path)
    client.headers["Accept-Language"] = "zh-CN,zh;q=0.9"
    return client, token


def _shown(answer: httpx.Response, element_id: str) -> str:
    """The text of the element ``element_id`` of the answer."""
    return shown_text(answer, element_pattern(element_id))


def _alert(answer: httpx.Response) -> str:
    return shown_text(answer, ALERT)


def _field_error(answer: httpx.Response) -> str:
    return shown_text(answer, r'<p class="field-error" id="[^"]*" role="alert">(.*?)</p>')


def _tree(space: notochord.Space) -> dict[str, int | None]:
    return {c.name: c.parent_id for c in space.user.collections.list()}


# ------------------------------------------------------------------ the words themselves


@pytest.mark.parametrize("code", WORDED)
def test_every_reason_code_has_words_in_both_languages(code: str) -> None:
    """K-UI-11, K-UI-12: every reason the store gives has the console's words in both languages."""
    english, chinese = LABELS[f"refused_{code}"]
    assert english and chinese
    # the Chinese words take only the refusal's values, and the field the page names
    assert _placeholders(chinese) - FIELD_VALUES <= _placeholders(english) | {"what"}


@pytest.mark.parametrize(
    "error",
    [
        KnowledgeValidationError("a refusal of a newer store", reason="a_newer_code"),
        KnowledgeValidationError("changes of type x cannot be reverted", reason="not_revertible", values={}),
        KnowledgeValidationError("something else entirely"),
        ServiceContentError("cannot write there"),
    ],
    ids=["unknown-code", "missing-values", "other", "service-without-kb"],
)
def test_a_refusal_without_words_of_the_console_keeps_its_english_sentence(error: Exception) -> None:
    """A reason is never blank or a crash: without words of its own, the store's sentence stays."""
    assert refusal(error, "zh") == str(error)


def test_the_english_console_shows_the_store_s_own_sentence() -> None:
    """K-UI-12: English readers read what the command line says; Chinese readers the same reason."""
    error = KnowledgeValidationError(
        "collection name exceeds limit of 1000 characters (got 1001); shorten it",
        reason="too_long",
        values={"what": "collection name", "limit": "1000", "got": "1001"},
    )
    assert refusal(error, "en", field="refused_field_collection_name") == str(error)
    assert refusal(error, "zh", field="refused_field_collection_name") == (
        "知识库名称太长了:最多 1000 个字符,这里有 1001 个;请缩短后再试"
    )


def test_a_change_of_a_type_that_cannot_be_undone_is_said_in_chinese() -> None:
    """K-UI-11: every op of today's store can be undone, so this refusal is only met from a newer
    store's changes; its words still name the type."""
    error = KnowledgeValidationError(
        "changes of type gems.rename cannot be reverted", reason="not_revertible", values={"op": "gems.rename"}
    )
    assert undo_refusal(error, "zh") == "gems.rename 类型的改动不能撤销"
    assert undo_refusal(error, "en") == str(error)


def test_undoing_a_change_of_the_rest_service_s_knowledge_base_is_said_in_chinese() -> None:
    """K-UI-11: an organization's changes page lists the service's uploads; undoing one is refused."""
    error = ServiceContentError(
        "cannot undo change 4: it belongs to knowledge base kb_1 of the REST service, whose documents only "
        "the service writes; add, replace or delete them through /api/knowledge/kb/kb_1/documents",
        kb="kb_1",
    )
    assert undo_refusal(error, "zh") == (
        "它属于 REST 服务的知识库 kb_1,那里的文档只能由该服务写入;"
        "请通过 /api/knowledge/kb/kb_1/documents 添加、替换或删除它们"
    )
    assert error.code == "E_PERMISSION"


# ------------------------------------------------------------------ the changes page


def _conflict(space: notochord.Space) -> int:
    space.user.facts.put(predicate="location.home.city", value="Leiden")
    proposed = space.as_assistant.facts.put(predicate="location.home.city", value="Paris")
    assert proposed.change_id is not None
    assert space.changes.get(proposed.change_id).status == "conflict"
    return proposed.change_id


def test_k_ui_11_settling_a_conflict_already_settled_says_why_in_chinese(console: ConsoleServer) -> None:
    """K-UI-11: a second "Keep mine" (a second tab, a double click) is refused in Chinese, naming the
    change and its status in the page's own words, and nothing changes."""
    conflict = _conflict(console.space)
    client, token = _chinese(console, "/changes")
    assert client.post(f"/changes/{conflict}/resolve", data={"csrf": token, "take": "mine"}).status_code == 200
    status = console.space.changes.get(conflict).status
    changes_before = len(console.space.changes.list())
    status_word = {"applied": "已生效", "reverted": "已撤销"}[status]

    answer = client.post(f"/changes/{conflict}/resolve", data={"csrf": token, "take": "mine"})

    assert answer.status_code == 422
    assert _alert(answer) == (
        f"无法处理这个冲突:改动 {conflict} 已经不是待处理的冲突(它现在的状态是“{status_word}”);"
        "只有状态为“冲突”的改动才能处理"
    )
    assert "open conflict" not in answer.text
    assert len(console.space.changes.list()) == changes_before
    assert [f.value for f in console.space.user.facts.lookup("self", "location.home.city")] == ["Leiden"]


def test_k_ui_11_a_resolution_that_is_neither_choice_is_refused_in_chinese(console: ConsoleServer) -> None:
    """K-UI-11: a hand-made choice is refused in Chinese and the conflict stays open."""
    conflict = _conflict(console.space)
    client, token = _chinese(console, "/changes")

    answer = client.post(f"/changes/{conflict}/resolve", data={"csrf": token, "take": "both"})

    assert answer.status_code == 422
    assert _alert(answer) == "无法处理这个冲突:只能选择“保留我的”或“采用 gem 的”,而不是 'both'"
    assert console.space.changes.get(conflict).status == "conflict"


def test_k_ui_11_undoing_an_undo_is_refused_in_chinese(console: ConsoleServer) -> None:
    """K-UI-11: a revert is made again, not undone; the page says so in Chinese and nothing changes."""
    put = console.space.user.facts.put(predicate="location.home.city", value="Leiden")
    assert put.change_id is not None
    console.space.changes.revert(put.change_id)
    [revert] = [c for c in console.space.changes.list() if c.op == "changes.revert"]
    client, token = _chinese(console, "/changes")

    answer = client.post(f"/changes/{revert.id}/undo", data={"csrf": token})

    assert answer.status_code == 422
    assert _alert(answer) == "无法撤销:撤销本身不能再被撤销;请重新做一次那项改动"
    assert console.space.changes.get(revert.id).status == "applied"
    assert console.space.user.facts.lookup("self", "location.home.city") == []


def test_k_ui_11_a_changes_filter_holding_a_nul_is_refused_in_chinese(console: ConsoleServer) -> None:
    """K-UI-11: the filter is named as what to fix, and the list is shown without it."""
    console.space.user.facts.put(predicate="location.home.city", value="Leiden")
    client, _ = _chinese(console, "/changes")

    answer = client.get("/changes?run=a%00b")

    assert answer.status_code == 422
    assert _alert(answer) == "筛选条件包含一个任何已保存的文字都不会有的字符(U+0000),所以什么也找不到;请删除它后再试"
    assert "Leiden" in answer.text


# ------------------------------------------------------------------ collections and documents


def test_k_ui_12_a_new_collection_s_name_too_long_is_refused_beside_the_name_in_chinese(
    console: ConsoleServer,
) -> None:
    """K-UI-12: the sentence names the field (the collection name) and what to do, even when a
    parent was chosen too; nothing is created."""
    recipes = console.space.user.collections.create("Recipes")
    before = _tree(console.space)
    client, token = _chinese(console, "/knowledge")

    answer = client.post("/knowledge/collections", data={"csrf": token, "name": "n" * 1001, "parent": str(recipes.id)})

    assert answer.status_code == 422
    assert _shown(answer, "new-name-error") == "知识库名称太长了:最多 1000 个字符,这里有 1001 个;请缩短后再试"
    assert 'id="new-parent-error"' not in answer.text
    assert _tree(console.space) == before


def test_k_ui_12_a_collection_name_holding_a_nul_is_refused_in_chinese(console: ConsoleServer) -> None:
    """K-UI-12: the name is named, with the character and what to do; nothing is created."""
    before = _tree(console.space)
    client, token = _chinese(console, "/knowledge")

    answer = client.post("/knowledge/collections", data={"csrf": token, "name": "Re\x00cipes"})

    assert answer.status_code == 422
    assert _shown(answer, "new-name-error") == "知识库名称包含一个无法保存的字符(U+0000);请删除它(或换成空格)后再试"
    assert _tree(console.space) == before


def test_k_ui_12_a_new_collection_inside_diary_is_refused_beside_the_picker_in_chinese(
    console: ConsoleServer,
) -> None:
    """K-UI-12: the refusal stands beside the parent picker, with what to choose instead."""
    diary = console.space.user.collections.get("diary")
    before = _tree(console.space)
    client, token = _chinese(console, "/knowledge")

    answer = client.post("/knowledge/collections", data={"csrf": token, "name": "Days", "parent": str(diary.id)})

    assert answer.status_code == 422
    assert _shown(answer, "new-parent-error") == "diary 知识库里不能新建或移入任何东西;请选择别的知识库"
    assert "diary collection" not in answer.text
    assert _tree(console.space) == before


def test_k_ui_12_a_collection_past_the_depth_limit_is_refused_in_chinese(console: ConsoleServer) -> None:
    """K-UI-12, K-COL-09: the depth limit is said beside the picker, with what to choose instead."""
    below: int | None = None
    for name in ("a", "b", "c", "d", "e"):
        below = console.space.user.collections.create(name, parent=below).id
    before = _tree(console.space)
    client, token = _chinese(console, "/knowledge")

    answer = client.post("/knowledge/collections", data={"csrf": token, "name": "f", "parent": str(below)})

    assert answer.status_code == 422
    assert _shown(answer, "new-parent-error") == "知识库最多嵌套 5 层,这样会超过层数上限;请选择层级更浅的位置"
    assert _tree(console.space) == before


def test_k_ui_12_renaming_to_a_name_too_long_is_refused_in_chinese(console: ConsoleServer) -> None:
    """K-UI-12, K-COL-11: the rename is refused beside the name; the collection keeps its name."""
    recipes = console.space.user.collections.create("Recipes")
    client, token = _chinese(console, f"/knowledge/collections/{recipes.id}")

    answer = client.post(f"/knowledge/collections/{recipes.id}/rename", data={"csrf": token, "name": "n" * 1200})

    assert answer.status_code == 422
    assert _shown(answer, "rename-error") == "知识库名称太长了:最多 1000 个字符,这里有 1200 个;请缩短后再试"
    assert console.space.user.collections.get(recipes.id).name == "Recipes"


def test_k_ui_12_a_built_in_collection_posted_for_renaming_or_moving_is_refused_in_chinese(
    console: ConsoleServer,
) -> None:
    """K-UI-12, OD-K56: keep stays as it is, and the refusal says so in Chinese."""
    keep = console.space.user.collections.get("keep")
    recipes = console.space.user.collections.create("Recipes")
    before = _tree(console.space)
    client, token = _chinese(console, f"/knowledge/collections/{recipes.id}")

    renamed = client.post(f"/knowledge/collections/{keep.id}/rename", data={"csrf": token, "name": "Kept"})
    moved = client.post(f"/knowledge/collections/{keep.id}/move", data={"csrf": token, "parent": str(recipes.id)})

    # a built-in collection's page has no settings to stand beside: the refusal heads the page
    assert renamed.status_code == moved.status_code == 422
    assert _alert(renamed) == "内置知识库 keep 不能改名"
    assert _alert(moved) == "内置知识库 keep 不能移动"
    assert _tree(console.space) == before


def test_k_ui_12_moving_a_collection_into_its_own_subfolder_is_refused_in_chinese(console: ConsoleServer) -> None:
    """K-UI-12: the move is refused beside the picker; the tree is as it was."""
    recipes = console.space.user.collections.create("Recipes")
    soups = console.space.user.collections.create("Soups", parent=recipes.id)
    before = _tree(console.space)
    client, token = _chinese(console, f"/knowledge/collections/{recipes.id}")

    answer = client.post(f"/knowledge/collections/{recipes.id}/move", data={"csrf": token, "parent": str(soups.id)})

    assert answer.status_code == 422
    assert _shown(answer, "move-error") == "知识库不能移到它自己或它的子文件夹里;请选择别的位置"
    assert _tree(console.space) == before


def test_k_ui_12_moving_a_keyed_document_or_into_diary_is_refused_in_chinese(console: ConsoleServer) -> None:
    """K-UI-12, K-DOC-19: both refusals are Chinese, and both documents stay where they were."""
    recipes = console.space.user.collections.create("Recipes")
    keyed = console.space.user.documents.upsert(collection="keep", key="menu", title="Menu", body="soup")
    loose = console.space.user.documents.upsert(collection=recipes.id, title="Stew", body="Tomato beef stew")
    diary = console.space.user.collections.get("diary")
    client, token = _chinese(console, f"/knowledge/documents/{keyed.id}")

    stays = client.post(f"/knowledge/documents/{keyed.id}/move", data={"csrf": token, "collection": str(recipes.id)})
    into_diary = client.post(f"/knowledge/documents/{loose.id}/move", data={"csrf": token, "collection": str(diary.id)})

    assert stays.status_code == into_diary.status_code == 422
    assert _shown(stays, "doc-move-error") == "用键写入的文档不能移动,它要留在它的键能找到它的地方"
    assert _shown(into_diary, "doc-move-error") == "diary 知识库里不能新建或移入任何东西;请选择别的知识库"
    assert console.space.user.documents.get(keyed.id).collection_id == console.space.user.collections.get("keep").id
    assert console.space.user.documents.get(loose.id).collection_id == recipes.id


# ------------------------------------------------------------------ entities and contacts


def test_k_ui_12_merging_entities_of_two_kinds_is_refused_naming_both_kinds_in_chinese(
    console: ConsoleServer,
) -> None:
    """K-UI-12, K-ENT-12: the kinds are the page's own words, and nothing is merged."""
    zhang = console.space.user.entities.resolve(kind="person", name="Zhang San", create=True)
    acme = console.space.user.entities.resolve(kind="organization", name="Acme", create=True)
    assert zhang is not None and acme is not None
    changes_before = len(console.space.changes.list())
    client, token = _chinese(console, f"/knowledge/entities/{acme.id}")

    answer = client.post(f"/knowledge/entities/{acme.id}/merge", data={"csrf": token, "other_id": str(zhang.id)})

    assert answer.status_code == 422
    assert _shown(answer, "merge-error") == "Zhang San 是人物,而 Acme 是组织:只有同一类型的实体才能合并"
    assert len(console.space.changes.list()) == changes_before
    assert console.space.user.entities.get(zhang.id).id == zhang.id


def test_k_ui_12_merging_an_entity_into_itself_is_refused_in_chinese(console: ConsoleServer) -> None:
    """K-UI-12: a hand-made merge of an entity with itself is refused in Chinese, nothing recorded."""
    acme = console.space.user.entities.resolve(kind="organization", name="Acme", create=True)
    assert acme is not None
    changes_before = len(console.space.changes.list())
    client, token = _chinese(console, f"/knowledge/entities/{acme.id}")

    answer = client.post(f"/knowledge/entities/{acme.id}/merge", data={"csrf": token, "other_id": str(acme.id)})

    assert answer.status_code == 422
    assert _shown(answer, "merge-error") == "不能把一个实体合并到它自己;请选择另一个实体"
    assert len(console.space.changes.list()) == changes_before


def test_k_ui_12_a_name_to_merge_too_long_is_refused_beside_the_name_in_chinese(console: ConsoleServer) -> None:
    """The name typed to pick the other entity used to fail the whole page with the store's English."""
    acme = console.space.user.entities.resolve(kind="organization", name="Acme", create=True)
    assert acme is not None
    changes_before = len(console.space.changes.list())
    client, token = _chinese(console, f"/knowledge/entities/{acme.id}")

    answer = client.post(f"/knowledge/entities/{acme.id}/merge", data={"csrf": token, "other": "A" * 1001})

    assert answer.status_code == 422
    assert _shown(answer, "merge-error") == "填写的名称太长了:最多 1000 个字符,这里有 1001 个;请缩短后再试"
    assert "exceeds limit" not in answer.text
    assert len(console.space.changes.list()) == changes_before


def test_k_ui_09_a_contact_s_value_too_large_is_refused_beside_it_in_chinese(console: ConsoleServer) -> None:
    """K-UI-09: the value typed for a person is refused naming the value, the limit and what to do."""
    zhang = console.space.user.entities.resolve(kind="person", name="Zhang San", create=True)
    assert zhang is not None
    console.space.user.facts.put(subject=zhang.id, predicate="contact.email", value="zhang@acme.nl")
    client, token = _chinese(console, "/knowledge/contacts")

    answer = client.post(
        f"/knowledge/contacts/{zhang.id}/facts",
        data={"csrf": token, "predicate": "contact.email", "value": "x" * 70_000},
    )

    assert answer.status_code == 422
    assert _field_error(answer) == "填写的值太大了:最多 65536 字节,这里有 70002 字节;大段内容请存为文档"
    assert [f.value for f in console.space.user.facts.lookup(zhang.id, "contact.email")] == ["zhang@acme.nl"]


def test_k_ui_07_a_value_about_you_too_large_is_refused_beside_it_in_chinese(console: ConsoleServer) -> None:
    """K-UI-07: on a gem's page, the value typed about the user is refused in Chinese; none is written."""
    console.space.gems.install(WEATHER)
    client, token = _chinese(console, "/gems/weather")

    answer = client.post(
        "/gems/weather/facts", data={"csrf": token, "predicate": "location.home.city", "value": "x" * 70_000}
    )

    assert answer.status_code == 422
    assert _field_error(answer) == "填写的值太大了:最多 65536 字节,这里有 70002 字节;大段内容请存为文档"
    assert console.space.user.facts.lookup("self", "location.home.city") == []


# ------------------------------------------------------------------ search


def test_an_entity_filter_holding_a_nul_is_refused_beside_it_in_chinese(console: ConsoleServer) -> None:
    """K-SRCH-09: the entity typed as a search filter is refused naming the field, in Chinese."""
    client, _ = _chinese(console, "/search")

    answer = client.get("/search?q=stew&kind=person&entity=Zh%00ang")

    assert answer.status_code == 422
    assert _shown(answer, "err-entity") == "填写的名称包含一个无法保存的字符(U+0000);请删除它(或换成空格)后再试"


# ------------------------------------------------------------------ an uploaded gem package


def _zip(files: dict[str, bytes], *, link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        if link is not None:
            info = zipfile.ZipInfo(link)
            info.external_attr = 0o120777 << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def _install_errors(answer: httpx.Response) -> list[str]:
    found = re.search(r'id="install-errors">\s*<ul>(.*?)</ul>', answer.text, re.S)
    assert found is not None, answer.text
    return [html.unescape(item) for item in re.findall(r"<li>(.*?)</li>", found.group(1), re.S)]


@pytest.mark.parametrize(
    ("name", "data", "chinese"),
    [
        ("gem.txt", b"not a zip at all", "gem.txt 不是 gem 安装包:请上传 .zip 文件或 notochord.json"),
        (
            "gem.zip",
            _zip({"notochord.json": b"{}"}, link="tools/evil"),
            "安装包里有一个链接,gem 不能带链接:tools/evil",
        ),
        (
            "gem.zip",
            _zip({"readme.txt": b"hello"}),
            "安装包的最上层没有 notochord.json 或 manifest.json;请打包放着它的那个文件夹",
        ),
    ],
    ids=["not-a-package", "a-link", "no-manifest"],
)
def test_k_ui_01_an_uploaded_package_refused_says_why_in_chinese(
    console: ConsoleServer, name: str, data: bytes, chinese: str
) -> None:
    """K-UI-01: the install screen is never reached, the reason is Chinese, nothing is installed."""
    client, token = _chinese(console, "/gems")

    answer = client.post("/gems/review", data={"csrf": token}, files={"package": (name, data)})

    assert answer.status_code == 422
    assert _install_errors(answer) == [chinese]
    assert console.space.gems.list() == []


def test_k_ui_01_a_package_holding_names_that_differ_only_in_case_lists_each_in_chinese(
    console: ConsoleServer,
) -> None:
    """K-UI-01: every problem of the package is listed, each in Chinese."""
    client, token = _chinese(console, "/gems")
    data = _zip({"notochord.json": b"{}", "Tool.mjs": b"", "tool.mjs": b""})

    answer = client.post("/gems/review", data={"csrf": token}, files={"package": ("gem.zip", data)})

    assert answer.status_code == 422
    assert _install_errors(answer) == [
        "这个安装包无法安装:",
        "Tool.mjs 和 tool.mjs 只有大小写不同;不区分大小写的系统只会保留其中一个:请给其中一个改名",
    ]


def test_k_ui_01_installing_an_upload_that_is_gone_says_so_in_chinese(console: ConsoleServer) -> None:
    """K-UI-01: an upload that expired (or another tab installed) is named, with what to do."""
    client, token = _chinese(console, "/gems")

    answer = client.post("/gems/install", data={"csrf": token, "upload": "x" * 32, "path": ""})

    assert answer.status_code == 422
    assert _install_errors(answer) == ["那次上传的文件已经不在了;请重新选择文件"]


@pytest.mark.parametrize("route", ["/gems/review", "/gems/install"])
def test_k_ui_01_a_gem_installed_already_is_refused_in_chinese_before_its_review(
    console: ConsoleServer, route: str
) -> None:
    """K-UI-01: installing a gem a second time is refused on the Gems page, saying how to upgrade it
    instead; the installed gem and its switches are as they were."""
    console.space.gems.install(WEATHER)
    console.space.gems.set_permission("weather", "facts.read:self:location.home.*", True)
    client, token = _chinese(console, "/gems")

    answer = client.post(route, data={"csrf": token, "path": str(WEATHER)})

    assert answer.status_code == 422
    assert _install_errors(answer) == ["gem weather 已经安装了;要换成这个版本,请升级它(notochord gem upgrade 文件夹)"]
    assert "already installed" not in answer.text
    assert [s.on for s in console.space.gems.permissions("weather")] == [True]


# ------------------------------------------------------------------ uninstalling a running gem


@contextmanager
def _code_in_use(space: notochord.Space, gem_id: str) -> Iterator[None]:
    """The gem's code lock, shared as a run of it shares it while it runs."""
    leases = RunLeases(space.gems.runner.code_root.parents[1] / "run-leases" / "personal")
    fd = os.open(leases.code_lock_path(gem_id), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def test_k_ui_13_uninstalling_a_gem_while_it_runs_says_so_in_chinese(console: ConsoleServer) -> None:
    """K-UI-13: the gem stays installed, with its switches, and the page says to try again later."""
    console.space.gems.install(WEATHER)
    client, token = _chinese(console, "/gems/weather/uninstall")

    with _code_in_use(console.space, "weather"):
        answer = client.post("/gems/weather/uninstall", data={"csrf": token, "choice": "keep"})

    assert answer.status_code == 409
    assert (
        _alert(answer)
        == "weather 正在运行,运行中的工具所用的代码不能被移除,所以没有做任何改动。请等这次运行结束后再试。"
    )
    assert [g.id for g in console.space.gems.list()] == ["weather"]


def test_k_ui_13_the_english_console_says_the_same_in_english(console: ConsoleServer) -> None:
    """K-UI-13: the same refusal in English, the gem still installed."""
    console.space.gems.install(WEATHER)
    client, token = console.signed_in("/gems/weather/uninstall")

    with _code_in_use(console.space, "weather"):
        answer = client.post("/gems/weather/uninstall", data={"csrf": token, "choice": "keep"})

    assert answer.status_code == 409
    assert _alert(answer).startswith("weather is running right now")
    assert [g.id for g in console.space.gems.list()] == ["weather"]
