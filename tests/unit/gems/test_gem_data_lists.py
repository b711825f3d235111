"""``ctx.data.documents.list`` and ``ctx.data.blobs.list`` take a prefix, as ``ctx.storage.kv.list``
does, so a gem whose names are too many for one answer can list them part by part (P-STOR-02,
P-STOR-09, P-STOR-10)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from notochord.errors import GemError
from notochord.gems.api.data import DataApi
from notochord.gems.api.storage import StoreAccess
from notochord.gems.bridge.arguments import check_arguments
from notochord.gems.folders import GemFolders
from notochord.gems.registry import GemRegistry

pytestmark = pytest.mark.anyio

GEM = "acme.notes"
KEY = bytes(range(32))


class _Keys:
    """The one thing the storage facades ask of the registry: the installation's storage key."""

    def key(self, gem_id: str, purpose: str) -> bytes:
        assert (gem_id, purpose) == (GEM, "storage")
        return KEY


@pytest.fixture
def data(tmp_path: Path) -> Iterator[DataApi]:
    folders = GemFolders(tmp_path / "data", "personal")
    access = StoreAccess(gem_id=GEM, run_id="run-1", registry=cast(GemRegistry, _Keys()), folders=folders)
    yield DataApi(access)
    folders.close()


async def test_documents_list_by_prefix(data: DataApi) -> None:
    """P-STOR-10: the prefix is the start of a name, folders and all."""
    for name in ("notes/2026-01.md", "notes/2026/march.txt", "notes/2025.md", "todo.txt"):
        await data.documents.write(name, "x")

    assert await data.documents.list("notes/2026") == ["notes/2026-01.md", "notes/2026/march.txt"]
    assert await data.documents.list() == ["notes/2025.md", "notes/2026-01.md", "notes/2026/march.txt", "todo.txt"]


async def test_blobs_list_by_prefix(data: DataApi) -> None:
    """P-STOR-09: the same for blobs."""
    for name in ("img/a.png", "img/b.png", "raw.bin"):
        await data.blobs.put(name, b"x")

    assert await data.blobs.list("img/") == ["img/a.png", "img/b.png"]
    assert await data.blobs.list() == ["img/a.png", "img/b.png", "raw.bin"]


def test_a_tool_may_send_a_prefix_and_nothing_else(data: DataApi) -> None:
    """P-STOR-02: the tool channel checks a call's arguments against the method: a prefix of text
    passes, a number or a second argument is refused before anything is listed."""
    for method, target in (("data.documents.list", data.documents.list), ("data.blobs.list", data.blobs.list)):
        check_arguments(method, target, ["notes/"], {})
        check_arguments(method, target, [], {})
        with pytest.raises(GemError):
            check_arguments(method, target, [5], {})
        with pytest.raises(GemError):
            check_arguments(method, target, ["a", "b"], {})
