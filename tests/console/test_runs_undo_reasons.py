"""A run's page says why "Roll back its files" left each file alone, next to that file.

Covers P-FILE-25 (files changed since by anything else are left alone and named) and K-UI-11 (a
run's page undoes it): the page used to say "because they changed since" of every file left alone,
also of one a later run changed (roll that run back first) or one whose earlier version is no
longer to be had. Each skipped path is now listed with its own reason, escaped as every other
string the page shows.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from console_harness import ConsoleServer

import notochord
from one_tool_gem import WRITES_EACH_NAME, one_tool_gem


@pytest.fixture
def chat(console: ConsoleServer, tmp_path: Path) -> Path:
    """A conversation folder, and the gem ``writer`` installed: its tool writes each name of its
    input there with the text given."""
    console.space.gems.install(one_tool_gem(tmp_path / "writer", "writer", WRITES_EACH_NAME))
    conversation = tmp_path / "chat"
    conversation.mkdir()
    return conversation


def _run(space: notochord.Space, chat: Path, run_id: str, files: dict[str, str]) -> None:
    record = space.gems.runner.run_sync("writer", "main", input=files, conversation=chat, run_id=run_id)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"


def _skipped(page: str) -> list[str]:
    """The list of files left alone, one text per file, as the person reads it."""
    assert 'id="rollback-skipped"' in page, page
    listed = page.split('id="rollback-skipped">')[1].split("</ul>")[0]
    items = [item.removesuffix("</li>") for item in listed.split("<li>")[1:]]
    return [html.unescape(re.sub(r"</?code>", "", item)) for item in items]


def test_p_file_25_each_file_left_alone_is_listed_with_its_own_reason(console: ConsoleServer, chat: Path) -> None:
    """K-UI-11: a later run in the way is named (roll that one back first); a change made outside
    is said as such; the file that could be restored is."""
    _run(console.space, chat, "run-first", {"menu.md": "first", "plan.md": "first", "notes.md": "first"})
    _run(console.space, chat, "run-later", {"plan.md": "later"})
    (chat / "menu.md").write_text("edited by me", encoding="utf-8")
    client, token = console.signed_in("/runs/run-first")

    answer = client.post("/runs/run-first/rollback", data={"csrf": token})

    assert answer.status_code == 200
    assert "Rolled back 1 file." in answer.text
    assert "because they changed since" not in answer.text
    assert sorted(_skipped(answer.text)) == [
        "workspace:menu.md: it changed since (by the user or another program), so it stays as it is",
        "workspace:plan.md: run run-later later changed workspace:plan.md; roll that run back first",
    ]
    assert not (chat / "notes.md").exists()
    assert (chat / "menu.md").read_text(encoding="utf-8") == "edited by me"
    assert (chat / "plan.md").read_text(encoding="utf-8") == "later"


def test_p_file_25_each_reason_is_said_in_the_language_of_the_console(console: ConsoleServer, chat: Path) -> None:
    """K-UI-11 in Chinese: the reason beside each file left alone is the console's own sentence in
    the reader's language, naming the later run and the path exactly as they are."""
    _run(console.space, chat, "run-first", {"menu.md": "first", "plan.md": "first", "notes.md": "first"})
    _run(console.space, chat, "run-later", {"plan.md": "later"})
    (chat / "menu.md").write_text("edited by me", encoding="utf-8")
    client, token = console.signed_in("/runs/run-first")
    client.headers["Accept-Language"] = "zh-CN"

    answer = client.post("/runs/run-first/rollback", data={"csrf": token})

    assert answer.status_code == 200
    assert "已恢复 1 个文件。" in answer.text
    assert sorted(_skipped(answer.text)) == [
        "workspace:menu.md: 之后它又被改动过(被你或其他程序),所以保持原样",
        "workspace:plan.md: 运行 run-later 后来改动了 workspace:plan.md;请先恢复那次运行",
    ]
    assert "stays as it is" not in answer.text and "roll that run back first" not in answer.text


def test_p_file_25_a_skipped_path_and_its_reason_are_shown_as_text_never_as_markup(
    console: ConsoleServer, chat: Path
) -> None:
    """A file name is the gem's to choose: ``<i>`` in it is shown as the characters it is."""
    name = "a<i>b&c.md"
    _run(console.space, chat, "run-first", {name: "first"})
    _run(console.space, chat, "run-later", {name: "later"})
    client, token = console.signed_in("/runs/run-first")

    answer = client.post("/runs/run-first/rollback", data={"csrf": token})

    assert "<i>" not in answer.text
    assert "workspace:a&lt;i&gt;b&amp;c.md" in answer.text
    assert _skipped(answer.text) == [
        f"workspace:{name}: run run-later later changed workspace:{name}; roll that run back first"
    ]
