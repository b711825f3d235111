"""What ``ctx.files.list`` and ``ctx.files.stat`` tell a gem: P-FILE-17, P-FILE-19, P-FILE-20.

Every entry a gem is given is one it can use: ``kind`` is ``file`` or ``dir`` and nothing else, and
its ``name`` is text the gem can pass back and that crosses the channel to the tool process.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gemfiles_fixtures import GemSpace

from notochord.errors import FileError
from notochord.gems.bridge.protocol import encode

pytestmark = pytest.mark.anyio


async def test_stat_of_a_pipe_is_refused_and_never_answers_kind_file(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-19: a gem told ``kind: "file"`` would read or copy the pipe; it is told what it is."""
    os.mkfifo(chat / "feed")
    ctx = gem_space.ctx(gem, conversation=chat)
    with pytest.raises(FileError, match="workspace:feed is a pipe, socket or device, not a file or folder") as info:
        await ctx.files.stat("workspace:feed")
    assert info.value.code == "E_FILE"
    assert await ctx.files.list("workspace:") == []


async def test_list_leaves_out_a_name_that_is_not_text_and_still_answers_over_the_channel(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    """P-FILE-19: a name in an old encoding (Latin-1 bytes) cannot be sent as text, nor passed back,
    so it is left out like an unreachable link; the rest of the folder is still listed."""
    (chat / "notes.txt").write_text("n")
    (chat / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"latin-1 name")
    ctx = gem_space.ctx(gem, conversation=chat)
    entries = await ctx.files.list("workspace:")
    assert [e["name"] for e in entries] == ["notes.txt"]
    encode({"type": "result", "id": 1, "value": entries})


async def test_stat_through_a_link_names_the_link_the_gem_asked_about(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    """P-FILE-19: ``stat`` and ``list`` agree on an entry's name; the link's target may not even be
    text a gem could be sent."""
    target = chat / os.fsdecode(b"r\xe9sum\xe9.txt")
    target.write_bytes(b"cv")
    (chat / "cv.txt").symlink_to(target)
    ctx = gem_space.ctx(gem, conversation=chat)
    info = await ctx.files.stat("workspace:cv.txt")
    assert (info["name"], info["kind"], info["size"]) == ("cv.txt", "file", 2)
    assert [e["name"] for e in await ctx.files.list("workspace:")] == ["cv.txt"]
    encode({"type": "result", "id": 1, "value": info})
