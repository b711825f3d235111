"""Files are no permission: the gem's page never lists them, and an upgrade that starts using them
asks for nothing (P-FILE-32).

A gem reads and writes the conversation folder (``workspace:``) and its run folder with ``ctx.files``
without any switch: those folders are the person's own choice of what to share in the conversation,
and every change there is recorded and can be rolled back. So the page's "What it can do" shows the
tools and the files the gem downloads, and the switches are those of knowledge and network only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from console_harness import ConsoleServer

PERMISSION = "facts.read:self:pref.food.*"
NO_FILES = "def run(input, ctx):\n    return 'nothing written'\n"
WRITES_FILES = (
    "def run(input, ctx):\n"
    "    ctx.files.write('workspace:notes/today.md', 'written by the gem')\n"
    "    return 'written'\n"
)


def _gem(folder: Path, *, version: str, code: str) -> Path:
    folder.mkdir(parents=True)
    manifest = {
        "id": "scribe",
        "name": "Scribe",
        "version": version,
        "description": "Keeps notes for you.",
        "permissions": {"knowledge": {"permissions": [PERMISSION], "reason": "To know what you like."}},
        "tools": [{"name": "note", "entry": "note.py"}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "note.py").write_text(code, encoding="utf-8")
    return folder


def _what_it_can_do(page: str) -> str:
    section = page.split('aria-labelledby="what">', 1)[1].split("</section>", 1)[0]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section)).strip()


def _switches(page: str) -> list[str]:
    return re.findall(r'name="permission" value="([^"]+)"', page)


def test_p_file_32_files_never_appear_under_what_it_can_do_and_an_upgrade_to_use_them_asks_nothing(
    console: ConsoleServer, tmp_path: Path
) -> None:
    space = console.space
    space.gems.install(_gem(tmp_path / "v1", version="1.0.0", code=NO_FILES))
    space.gems.set_permission("scribe", PERMISSION, True)
    before = console.client().get("/gems/scribe").text

    upgraded = space.gems.upgrade(_gem(tmp_path / "v2", version="2.0.0", code=WRITES_FILES))
    after = console.client().get("/gems/scribe").text

    assert upgraded.version == "2.0.0"
    for page in (before, after):
        what = _what_it_can_do(page)
        assert what.startswith("What it can do Tools note"), what
        assert not re.search(r"file|folder|workspace", what.replace("additional files", ""), re.IGNORECASE), what
        assert _switches(page) == [PERMISSION], "knowledge is the only thing this gem switches on"
    switches = {s.permission: s.on for s in space.gems.permissions("scribe")}
    assert switches == {PERMISSION: True}, "the upgrade kept the switch as the person left it, asking nothing"
