"""Listing a gem's documents and blobs stops at what one answer may carry, as ``kv.list`` does
(P-STOR-02, P-STOR-09, P-STOR-10).

Both lists used to build every name in memory, however many there were, and only the tool
channel's own bound said no afterwards. Now a list is refused, in words, as soon as its names pass
the bound of one answer, and a prefix lists a part of them. The bound is given to the store here, so
the tests cross it with a few hundred names instead of gigabytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from notochord.errors import FileError
from notochord.files.private import GemStore

KEY = bytes(range(32))
BOUND = 1024
"""The most bytes of names one listing may hold in these tests."""
MANY = 120
"""Enough names of about twenty characters each to pass :data:`BOUND` twice over."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GemStore]:
    with GemStore(tmp_path / "gem", key=KEY, list_bytes=BOUND) as opened:
        yield opened


def _fill_documents(store: GemStore) -> None:
    for i in range(MANY):
        store.documents.write(f"bulk/note-{i:04d}.md", "x")
    store.documents.write("other/a.md", "a")


def _fill_blobs(store: GemStore) -> None:
    for i in range(MANY):
        store.blobs.put(f"bulk/blob-{i:04d}.bin", b"x")
    store.blobs.put("other/a.bin", b"a")


def _refusal(call: Callable[[], object]) -> str:
    with pytest.raises(FileError) as caught:
        call()
    return str(caught.value)


class _CountingScans:
    """Stands in for ``os.scandir`` and counts the directory entries a listing reads."""

    def __init__(self) -> None:
        self.read = 0
        self._real = os.scandir

    def __call__(self, path: Any = ".") -> Any:
        counter = self
        real = self._real(path)

        class Counted:
            def __enter__(self) -> Counted:
                return self

            def __exit__(self, *_exc: object) -> None:
                real.close()

            def __iter__(self) -> Iterator[os.DirEntry[str]]:
                for entry in real:
                    counter.read += 1
                    yield entry

            def close(self) -> None:
                real.close()

        return Counted()


# -- documents ---------------------------------------------------------------------------------


def test_listing_more_document_names_than_one_answer_may_carry_is_refused_in_words(store: GemStore) -> None:
    """P-STOR-10: the refusal says what is wrong and how to list instead; a longer prefix lists."""
    _fill_documents(store)

    message = _refusal(store.documents.list)
    assert "more than one answer may carry" in message and "longer prefix" in message
    assert f"{BOUND} bytes" in message

    assert store.documents.list("bulk/note-001") == [f"bulk/note-{i:04d}.md" for i in range(10, 20)]
    assert store.documents.list("other/") == ["other/a.md"]


def test_a_document_listing_stops_reading_once_past_the_bound(store: GemStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """P-STOR-10: the names are not all gathered first and measured afterwards."""
    _fill_documents(store)
    scans = _CountingScans()
    monkeypatch.setattr(os, "scandir", scans)

    _refusal(store.documents.list)

    assert 0 < scans.read < MANY // 2, f"read {scans.read} entries of {MANY + 2}"


def test_a_document_prefix_reaches_into_folders_and_only_the_names_it_starts(store: GemStore) -> None:
    """P-STOR-10: a prefix is the start of a name, folders and all, as for ``kv.list``."""
    for name in ("notes/2025.md", "notes/2026-01.md", "notes/2026/march.txt", "notes2026.md", "todo.txt"):
        store.documents.write(name, "x")

    assert store.documents.list("notes/2026") == ["notes/2026-01.md", "notes/2026/march.txt"]
    assert store.documents.list("notes") == [
        "notes/2025.md",
        "notes/2026-01.md",
        "notes/2026/march.txt",
        "notes2026.md",
    ]
    assert store.documents.list("") == store.documents.list() != []
    assert store.documents.list("nothing/") == []


def test_a_document_prefix_never_reaches_outside_the_documents(store: GemStore) -> None:
    """P-STOR-08: a prefix only selects among the gem's own documents' names."""
    store.documents.write("a.md", "x")
    (store.folder / "outside.md").write_text("not a document")

    assert store.documents.list("../") == []
    assert store.documents.list("/") == []
    assert store.documents.list("a") == ["a.md"]


def test_a_document_prefix_that_is_not_text_is_refused(store: GemStore) -> None:
    assert "prefix" in _refusal(lambda: store.documents.list(5))  # type: ignore[arg-type]


def test_a_listing_within_the_bound_is_whole_and_sorted(store: GemStore) -> None:
    """P-STOR-10: nothing changes for a listing the bound does not reach."""
    for name in ("b/z.md", "a.txt", "b/a.md", ".hidden.md", "b/.hidden/x.md", "c.pdf"):
        (store.folder / "documents" / name).parent.mkdir(parents=True, exist_ok=True)
        (store.folder / "documents" / name).write_text("x")

    assert store.documents.list() == ["a.txt", "b/a.md", "b/z.md"]


# -- blobs -------------------------------------------------------------------------------------


def test_listing_more_blob_names_than_one_answer_may_carry_is_refused_in_words(store: GemStore) -> None:
    """P-STOR-09: the same bound and the same way out as for documents and keys."""
    _fill_blobs(store)

    message = _refusal(store.blobs.list)
    assert "more than one answer may carry" in message and "longer prefix" in message

    assert store.blobs.list("bulk/blob-011") == [f"bulk/blob-{i:04d}.bin" for i in range(110, 120)]
    assert store.blobs.list("other") == ["other/a.bin"]
    assert store.blobs.get("other/a.bin") == b"a"


def test_a_blob_listing_stops_reading_once_past_the_bound(store: GemStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """P-STOR-09: the names are not all gathered first and measured afterwards."""
    _fill_blobs(store)
    scans = _CountingScans()
    monkeypatch.setattr(os, "scandir", scans)

    _refusal(store.blobs.list)

    assert 0 < scans.read < MANY // 2, f"read {scans.read} entries of {MANY + 2}"


def test_a_blob_prefix_that_is_not_text_is_refused(store: GemStore) -> None:
    assert "prefix" in _refusal(lambda: store.blobs.list(["a"]))  # type: ignore[arg-type]


def test_the_default_bound_is_what_one_answer_may_carry(tmp_path: Path) -> None:
    """P-STOR-02: without a bound of its own, a store lists up to the answer's 32 MB, as ``kv.list``."""
    with GemStore(tmp_path / "gem", key=KEY) as opened:
        for i in range(MANY):
            opened.documents.write(f"bulk/note-{i:04d}.md", "x")
        assert len(opened.documents.list()) == MANY
