"""What the network settings, a gem's working folder and a run's file history refuse, said in the
reader's language next to the field or on the page (K-UI-07, K-UI-12, P-NET-12, P-NET-14,
P-NET-16, P-FILE-21, P-FILE-25, P-FILE-31).

The Chinese console used to show these refusals in the English the command line prints. Each now
carries a reason code and the values its words need; the Chinese console words it from them, naming
the list or folder and what to do, while the English message stays word for word what the command
line, the REST service and MCP show. A refused request changes nothing.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from console_harness import ALERT, ConsoleServer, csrf_of, element_pattern, shown_text
from runs_gem import GEM, installed, run_once, write_gem

from notochord.console.i18n import LABELS
from notochord.console.refusal_words import refusal, worded
from notochord.db.engine import write_tx
from notochord.db.schema import space_meta
from notochord.errors import (
    ConfigurationError,
    FileError,
    FilePermissionError,
    KnowledgeValidationError,
    NotochordError,
)
from notochord.files.working_folders import check_working_folder
from notochord.gems.folders import GemFolders, history_dir
from notochord.net.user_rules import RULES_KEY

NETWORK = "/settings/network"
CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}
ENGLISH = {"Accept-Language": "en"}
CODED: list[tuple[str, tuple[str, ...]]] = [
    ("ConfigurationError", ConfigurationError.REASONS),
    ("FileError", FileError.REASONS),
]


def _placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _field_error(answer: httpx.Response, name: str) -> str:
    return shown_text(answer, rf'<small class="field-error" id="err-{re.escape(name)}">(.*?)</small>')


def _element(answer: httpx.Response, element_id: str) -> str:
    return shown_text(answer, element_pattern(element_id))


def _damaged(answer: httpx.Response) -> str:
    return shown_text(answer, ALERT)


def _refused_by_store(call: Callable[[], object]) -> NotochordError:
    """The error ``call`` raises: what the command line and REST show for the same request."""
    with pytest.raises(NotochordError) as caught:
        call()
    return caught.value


# ------------------------------------------------------------------ the words themselves


@pytest.mark.parametrize(
    "code",
    [code for _, codes in CODED for code in codes if code != "other"],
)
def test_every_reason_code_has_words_in_both_languages(code: str) -> None:
    """K-UI-12: every reason of the network rules, the working folders and the file history is worded
    in both languages, the Chinese words taking only the refusal's own values."""
    english, chinese = LABELS[f"refused_{code}"]
    assert english and chinese
    assert _placeholders(chinese) <= _placeholders(english)
    assert re.search(r"[\u4e00-\u9fff]", chinese)


def test_the_codes_of_the_coded_errors_never_share_a_name() -> None:
    """One label per code: a code of two classes would be said with the words of the other."""
    seen = [*KnowledgeValidationError.REASONS, *ConfigurationError.REASONS, *FileError.REASONS]
    shared = {code for code in seen if seen.count(code) > 1}
    assert shared == {"other"}
    assert "refused_other" not in LABELS


@pytest.mark.parametrize(
    "error",
    [
        ConfigurationError("a refusal of a newer store", reason="net_a_newer_code"),
        ConfigurationError("list too long", reason="net_too_many", values={"list": "local"}),
        ConfigurationError("the console secret is damaged; delete it"),
        FileError("something else entirely"),
    ],
    ids=["unknown-code", "missing-values", "other-configuration", "other-file"],
)
def test_a_refusal_without_words_of_the_console_keeps_its_english_sentence(error: Exception) -> None:
    """A reason is never blank or a crash: without words of its own, the store's sentence stays."""
    assert refusal(error, "zh") == str(error)


def test_refusals_the_console_s_forms_check_first_are_worded_all_the_same(console: ConsoleServer) -> None:
    """P-NET-12: the console asks for a mode and an entry before the store does, so these are met
    only through the command line and the host API; their words are there all the same."""
    rules = console.space.network
    cases = {
        "net_open_no_list_hint": lambda: rules.set_external("open", ["api.example.com"]),
        "net_open_no_list": lambda: rules.add_external("open", ["api.example.com"]),
        "net_no_host": lambda: rules.add_external("blocklist", []),
        "net_unknown_mode": lambda: rules.set_external("sometimes"),
        "net_entry_empty": lambda: rules.add_local("   "),
    }
    said = {}
    for code, call in cases.items():
        error = _refused_by_store(call)
        assert isinstance(error, ConfigurationError) and error.reason == code
        assert worded(error, "en") == str(error), "the English words are the store's sentence"
        said[code] = refusal(error, "zh")
    assert said["net_open_no_list"] == "开放模式允许所有外部主机,不需要主机列表;要列出主机,请先选择允许列表或阻止列表"
    assert said["net_no_host"] == "请至少填写一个要加入阻止列表的主机"
    assert said["net_unknown_mode"] == "网络访问模式 'sometimes' 无效;请选择开放、允许列表或阻止列表"
    assert said["net_entry_empty"] == "'   ' 不能加入本机和内部网络列表:请填写主机名或地址,可以带 :端口"


@pytest.mark.parametrize(
    ("make", "code", "chinese"),
    [
        (lambda tmp: Path("reports"), "folder_not_absolute", "reports 不是完整路径"),
        (lambda tmp: Path("/tmp/a\x00b"), "folder_nul", "'/tmp/a\\x00b' 含有空字符(NUL)"),
        (lambda tmp: tmp / "Tool.app" / "data", "folder_app_bundle", "它在一个应用程序包里面"),
    ],
    ids=["relative", "nul", "app-bundle"],
)
def test_working_folder_refusals_the_console_checks_first_are_worded_all_the_same(
    tmp_path: Path, make: Callable[[Path], Path], code: str, chinese: str
) -> None:
    """P-FILE-31: a relative path or NUL the console's own field check refuses before the rules do;
    an application bundle is a macOS folder. Their words are there all the same."""
    (tmp_path / "Tool.app" / "data").mkdir(parents=True)
    error = _refused_by_store(
        lambda: check_working_folder(make(tmp_path), home=tmp_path / "h", data_dir=tmp_path / "d")
    )
    assert isinstance(error, FileError) and error.reason == code
    assert worded(error, "en") == str(error)
    assert chinese in refusal(error, "zh")


# ------------------------------------------------------------------ the network settings


def _allowlist(console: ConsoleServer, hosts: list[str] | None = None) -> None:
    console.space.network.set_external("allowlist", hosts or ["api.example.com"])


@pytest.mark.parametrize(
    ("route", "name", "typed", "code", "chinese"),
    [
        (
            "external/add",
            "host",
            "https://news.example.com/feed",
            "net_entry_scheme_or_path",
            "'https://news.example.com/feed' 不能加入外部网络列表:只填写主机名或地址,"
            "不要带 http:// 这样的协议,也不要带 / 和后面的路径",
        ),
        (
            "external/add",
            "host",
            "192.168.1.5",
            "net_entry_local_address",
            "'192.168.1.5' 不能加入外部网络列表:192.168.1.5 属于本机或内部网络;请把它加到下面的“本机和内部网络”列表",
        ),
        (
            "external/add",
            "host",
            "localhost",
            "net_entry_localhost_external",
            "'localhost' 不能加入外部网络列表:localhost 这类名称指向本机;请把它加到下面的“本机和内部网络”列表",
        ),
        (
            "external/add",
            "host",
            "-bad-.example.com",
            "net_entry_bad_name",
            "'-bad-.example.com' 不能加入外部网络列表:这不是有效的主机名;"
            "主机名只能由字母、数字、连字符和点组成,且最后一段不能全是数字",
        ),
        (
            "external/add",
            "host",
            "api.example.com:99999",
            "net_entry_malformed",
            "'api.example.com:99999' 不能加入外部网络列表:请写成 host、host:port 或 [IPv6]:port;"
            "端口是 1 到 65535 之间的数字,通配符只能写在最前面(*.example.com)",
        ),
        (
            "local/add",
            "entry",
            "*.lan",
            "net_entry_wildcard_local",
            "'*.lan' 不能加入本机和内部网络列表:这个列表不能用通配符 *;请逐个填写主机或地址",
        ),
        (
            "local/add",
            "entry",
            "8.8.8.8",
            "net_entry_external_address",
            "'8.8.8.8' 不能加入本机和内部网络列表:8.8.8.8 是外部地址,这个列表只放本机和内部网络的地址;"
            "外部主机请用上面的外部网络模式设置",
        ),
        (
            "local/remove",
            "entry",
            "10.0.0.9",
            "net_not_listed_empty",
            "'10.0.0.9' 不在本机和内部网络列表中:这个列表是空的,没有可以移除的条目",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) and value.startswith("net_") else None,
)
def test_a_refused_network_entry_is_said_in_chinese_beside_its_field(
    console: ConsoleServer, route: str, name: str, typed: str, code: str, chinese: str
) -> None:
    """P-NET-12, P-NET-14, P-NET-16, K-UI-12: the entry, the list and what to do, in Chinese; the
    rules stay as they were, and the English message is the command line's, unchanged."""
    _allowlist(console)
    before = console.space.network.stored()
    client, token = console.signed_in(NETWORK)
    answer = client.post(f"{NETWORK}/{route}", data={"csrf": token, name: typed}, headers=CHINESE)
    assert answer.status_code == 422, answer.text
    assert _field_error(answer, name) == chinese
    assert console.space.network.stored() == before
    kind = "external" if route.startswith("external") else "local"
    store = console.space.network
    call = {
        "external/add": lambda: store.add_external("allowlist", [typed]),
        "local/add": lambda: store.add_local(typed),
        "local/remove": lambda: store.remove_local(typed),
    }[route]
    error = _refused_by_store(call)
    assert isinstance(error, ConfigurationError) and error.reason == code and error.values["list"] == kind
    english = client.post(f"{NETWORK}/{route}", data={"csrf": token, name: typed}, headers=ENGLISH)
    assert _field_error(english, name) == str(error) == worded(error, "en")
    assert console.space.network.stored() == before


def test_removing_an_address_not_on_the_local_list_names_what_is_there(console: ConsoleServer) -> None:
    """P-NET-16: the list's entries are named, so the reader sees what may be removed."""
    console.space.network.add_local("10.0.0.1")
    client, token = console.signed_in(NETWORK)
    answer = client.post(f"{NETWORK}/local/remove", data={"csrf": token, "entry": "10.0.0.9"}, headers=CHINESE)
    assert answer.status_code == 422
    assert _field_error(answer, "entry") == (
        "'10.0.0.9' 不在本机和内部网络列表中(列表里有:10.0.0.1);请从列表中选择要移除的条目"
    )
    assert console.space.network.list_local() == ["10.0.0.1"]
    english = client.post(f"{NETWORK}/local/remove", data={"csrf": token, "entry": "10.0.0.9"}, headers=ENGLISH)
    assert _field_error(english, "entry") == (
        "'10.0.0.9' is not in the local machine and internal network list (10.0.0.1)"
    )


def test_a_full_allowlist_is_said_in_chinese(console: ConsoleServer) -> None:
    """P-NET-12: a list holds at most 1000 entries; the one more is refused and nothing is stored."""
    hosts = [f"h{number}.example.com" for number in range(1000)]
    _allowlist(console, hosts)
    before = console.space.network.stored()
    client, token = console.signed_in(NETWORK)
    data = {"csrf": token, "host": "one-more.example.com"}
    answer = client.post(f"{NETWORK}/external/add", data=data, headers=CHINESE)
    assert answer.status_code == 422
    assert _field_error(answer, "host") == "外部网络列表最多只能有 1000 项;请先移除不再需要的条目"
    assert console.space.network.stored() == before
    english = client.post(f"{NETWORK}/external/add", data=data, headers=ENGLISH)
    assert _field_error(english, "host") == "the external network list may hold at most 1000 entries"


def _store_rules(console: ConsoleServer, value: str) -> None:
    with write_tx(console.space.core.store.engine) as conn:
        conn.execute(sa.delete(space_meta).where(space_meta.c.key == RULES_KEY))
        conn.execute(sa.insert(space_meta).values(key=RULES_KEY, value=value))


def _rules(mode: object = "open", local: tuple[object, ...] = ()) -> str:
    return json.dumps({"format": 1, "external": {"mode": mode, "hosts": []}, "local": list(local)})


@pytest.mark.parametrize(
    ("stored", "chinese", "english"),
    [
        (
            "{not json",
            "保存的网络规则已损坏,无法读取;请在命令行运行 notochord network reset 恢复默认设置"
            "(开放,不允许任何本地地址),然后重新设置",
            "the stored network rules are damaged (not JSON: ",
        ),
        (
            _rules(mode="sometimes"),
            "网络访问模式 'sometimes' 无效;请选择开放、允许列表或阻止列表",
            "network access mode 'sometimes' is not one of open, allowlist, blocklist",
        ),
        (
            _rules(local=(5,)),
            "本机和内部网络列表里的 5 不是主机名或地址,保存的规则已损坏;"
            "请在命令行运行 notochord network reset 恢复默认设置,然后重新设置",
            "the local machine and internal network list holds 5; every entry must be a string",
        ),
    ],
    ids=["not-json", "unknown-mode", "entry-not-text"],
)
def test_damaged_stored_rules_are_said_in_chinese_with_what_to_do(
    console: ConsoleServer, stored: str, chinese: str, english: str
) -> None:
    """P-NET-12: rules that cannot be read are never "open"; the page says so and how to reset."""
    _store_rules(console, stored)
    client = console.client()
    answer = client.get(NETWORK, headers=CHINESE)
    assert answer.status_code == 409
    assert _damaged(answer) == chinese
    error = _refused_by_store(console.space.network.stored)
    assert str(error).startswith(english)
    assert _damaged(client.get(NETWORK, headers=ENGLISH)) == str(error) == worded(error, "en")
    token = csrf_of(answer.text)
    refused = client.post(f"{NETWORK}/local/add", data={"csrf": token, "entry": "10.0.0.1"}, headers=CHINESE)
    assert _damaged(refused) == chinese
    with write_tx(console.space.core.store.engine) as conn:
        kept = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == RULES_KEY)).scalar_one()
    assert kept == stored, "a refused change leaves the stored rules as they were"


# ------------------------------------------------------------------ the working folder


@pytest.fixture
def scheduled(console: ConsoleServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ConsoleServer:
    """A gem with a scheduled SOP, so its page offers a working folder; the home folder is ``home``."""
    home = tmp_path / "home"
    (home / ".config" / "other-app").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    console.space.gems.install(write_gem(tmp_path / "src", sops=[{"name": "digest", "trigger": "schedule"}]))
    return console


def _folders(console: ConsoleServer) -> GemFolders:
    folders = console.space.gems.services.gem_folders
    assert isinstance(folders, GemFolders)
    return folders


@pytest.mark.parametrize(
    ("make", "code", "chinese"),
    [
        (
            lambda tmp: Path("/"),
            "folder_root",
            "/ 不能作为工作文件夹:它是整个磁盘的根目录,选它会让 gem 能访问整个磁盘;请选择一个专门给 gem 用的文件夹",
        ),
        (
            lambda tmp: tmp / "home",
            "folder_home",
            "{tmp}/home 不能作为工作文件夹:主文件夹和包含它的文件夹里有你所有的文件;请选择主文件夹里的一个子文件夹",
        ),
        (
            lambda tmp: tmp / "data",
            "folder_data_dir",
            "{tmp}/data 不能作为工作文件夹:它包含或位于 notochord 自己的数据目录,"
            "这些数据不能开放给 gem;请选择别的文件夹",
        ),
        (
            lambda tmp: Path("/etc"),
            "folder_system",
            "/etc 不能作为工作文件夹:/etc 属于操作系统;请选择你自己的文件夹",
        ),
        (
            lambda tmp: tmp / "home" / ".config" / "other-app",
            "folder_app_data",
            "{tmp}/home/.config/other-app 不能作为工作文件夹:~/.config 存放着其他应用程序的数据;请选择你自己的文件夹",
        ),
        (
            lambda tmp: tmp / ".hidden",
            "folder_hidden",
            "{tmp}/.hidden 不能作为工作文件夹:名称以 . 开头的文件夹是隐藏文件夹;请选择一个不隐藏的文件夹",
        ),
        (
            lambda tmp: tmp / "notes.txt",
            "folder_is_file",
            "{tmp}/notes.txt 是一个文件,不是文件夹;请选择一个文件夹",
        ),
        (
            lambda tmp: tmp / ("x" * 300),
            "folder_uncheckable",
            "系统无法查看 {tmp}/" + "x" * 300 + ";请检查路径是否写对(每一级的名称都不能太长),然后重新输入",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) and value.startswith("folder_") else None,
)
def test_a_refused_working_folder_is_said_in_chinese_beside_its_field(
    scheduled: ConsoleServer, tmp_path: Path, make: Callable[[Path], Path], code: str, chinese: str
) -> None:
    """P-FILE-31, K-UI-12: the folder, the rule it breaks and what to choose instead, in Chinese;
    nothing is chosen, and the English message is the command line's, unchanged."""
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "notes.txt").write_text("a note\n", encoding="utf-8")
    typed = str(make(tmp_path))
    client = scheduled.client()
    token = csrf_of(client.get(f"/gems/{GEM}").text)
    answer = client.post(f"/gems/{GEM}/working-folder", data={"csrf": token, "path": typed}, headers=CHINESE)
    assert answer.status_code == 422, answer.text
    assert _field_error(answer, "working-folder") == chinese.format(tmp=tmp_path)
    assert _folders(scheduled).working_folder(GEM, core=scheduled.space.core) is None
    error = _refused_by_store(lambda: _folders(scheduled).check_working_folder(Path(typed)))
    assert isinstance(error, FileError) and error.reason == code
    if code.startswith("folder_") and code not in {"folder_is_file", "folder_uncheckable"}:
        assert isinstance(error, FilePermissionError) and error.code == "E_PERM_DENIED"
    english = client.post(f"/gems/{GEM}/working-folder", data={"csrf": token, "path": typed}, headers=ENGLISH)
    assert _field_error(english, "working-folder") == str(error) == worded(error, "en")


def test_a_working_folder_that_does_not_exist_is_said_in_chinese(scheduled: ConsoleServer, tmp_path: Path) -> None:
    """P-FILE-31: the folder must exist; the reader is told to make it or check the path."""
    typed = str(tmp_path / "missing")
    client = scheduled.client()
    token = csrf_of(client.get(f"/gems/{GEM}").text)
    answer = client.post(f"/gems/{GEM}/working-folder", data={"csrf": token, "path": typed}, headers=CHINESE)
    assert answer.status_code == 422
    assert _field_error(answer, "working-folder") == f"文件夹 {typed} 不存在;请先建好这个文件夹,或检查路径是否写对"
    english = client.post(f"/gems/{GEM}/working-folder", data={"csrf": token, "path": typed}, headers=ENGLISH)
    assert _field_error(english, "working-folder") == f"E_NOT_FOUND: the folder {typed} does not exist"
    assert _folders(scheduled).working_folder(GEM, core=scheduled.space.core) is None


# ------------------------------------------------------------------ a run's file history


@pytest.fixture
def ran(console: ConsoleServer, tmp_path: Path) -> tuple[str, Path]:
    """The gem installed and run once from a conversation: ``(run id, conversation folder)``."""
    installed(console.space, tmp_path)
    conversation = tmp_path / "conversation"
    return run_once(console.space, conversation), conversation


def test_a_conversation_folder_that_became_a_file_is_said_in_chinese(
    console: ConsoleServer, ran: tuple[str, Path]
) -> None:
    """P-FILE-21, P-FILE-25: the run's page says why its file changes cannot be shown, and the
    rollback why it cannot be done, in Chinese; nothing is rolled back."""
    run_id, conversation = ran
    history = history_dir(console.nc.data_dir, conversation)
    moved = conversation.with_name("conversation-moved")
    conversation.rename(moved)
    conversation.write_text("not a folder any more\n", encoding="utf-8")
    chinese = f"{conversation} 现在是一个文件,不再是文件夹,所以无法读取或恢复它的文件历史;请把那个文件夹放回原处后再试"
    client, token = console.signed_in(f"/runs/{run_id}")
    page = client.get(f"/runs/{run_id}", headers=CHINESE)
    assert _element(page, "files-problem") == chinese
    answer = client.post(f"/runs/{run_id}/rollback", data={"csrf": token}, headers=CHINESE)
    assert answer.status_code == 422
    assert _element(answer, "refusal") == f"无法恢复它改动的文件:{chinese}"
    assert (moved / "notes" / "food.md").exists() and history.is_dir()
    error = _refused_by_store(lambda: console.space.files.rollback(run_id, conversation=conversation))
    assert isinstance(error, FileError) and error.reason == "history_folder_is_file"
    assert str(error) == f"{conversation} is a file; give the folder whose history to use" == worded(error, "en")
    english = client.post(f"/runs/{run_id}/rollback", data={"csrf": token}, headers=ENGLISH)
    assert _element(english, "refusal") == f"Its files cannot be rolled back: {error}"
    assert _element(client.get(f"/runs/{run_id}", headers=ENGLISH), "files-problem") == str(error)


def test_a_file_history_that_cannot_be_opened_is_said_in_chinese(console: ConsoleServer, ran: tuple[str, Path]) -> None:
    """P-FILE-25: a history whose database cannot be opened is named, with what to check; the
    conversation's files stay as they are."""
    run_id, conversation = ran
    history = history_dir(console.nc.data_dir, conversation)
    (history / "history.db").rename(history / "history.db.aside")
    (history / "history.db").mkdir()
    client, token = console.signed_in(f"/runs/{run_id}")
    answer = client.post(f"/runs/{run_id}/rollback", data={"csrf": token}, headers=CHINESE)
    assert answer.status_code == 422
    error = _refused_by_store(lambda: console.space.files.rollback(run_id, conversation=conversation))
    assert isinstance(error, FileError) and error.reason == "history_unopenable"
    detail = error.values["detail"]
    assert _element(answer, "refusal") == (
        f"无法恢复它改动的文件:无法打开保存在 {history} 的文件历史({detail});"
        "请检查数据目录所在的磁盘是否可以读写,然后再试"
    )
    assert _element(client.get(f"/runs/{run_id}", headers=CHINESE), "files-problem").startswith(
        f"无法打开保存在 {history} 的文件历史"
    )
    assert (conversation / "notes" / "food.md").exists()
    assert str(error) == f"cannot open the file history in {history}: {detail}" == worded(error, "en")
