"""The console's pure parts: link and session lifetimes, the Host rule, the language choice, and
unpacking uploaded gem packages."""

from __future__ import annotations

import io
import stat
import time
import zipfile
from pathlib import Path

import pytest

from notochord.console.auth import LINK_LIFETIME, SESSION_LIFETIME, ConsoleKeys
from notochord.console.guard import host_allowed
from notochord.console.i18n import LABELS, choose_lang, text
from notochord.console.uploads import Uploads
from notochord.errors import ConfigurationError, GemError


def test_a_link_expires_after_a_day_and_is_spent_across_restarts(tmp_path: Path) -> None:
    """A used link stays used when the server is started again."""
    keys = ConsoleKeys(tmp_path)
    now = time.time()
    old = keys.mint_login_token(now=now - LINK_LIFETIME - 1)
    assert not keys.redeem_login_token(old, now=now)
    fresh = keys.mint_login_token(now=now)
    assert keys.redeem_login_token(fresh, now=now)
    restarted = ConsoleKeys(tmp_path)
    assert not restarted.redeem_login_token(fresh, now=now)


def test_a_session_expires_and_a_new_secret_signs_everyone_out(tmp_path: Path) -> None:
    """Deleting console.secret voids every session."""
    keys = ConsoleKeys(tmp_path)
    now = time.time()
    cookie = keys.new_session(now=now)
    assert keys.session(cookie, now=now) is not None
    assert keys.session(cookie, now=now + SESSION_LIFETIME + 1) is None
    (tmp_path / "console.secret").unlink()
    assert ConsoleKeys(tmp_path).session(cookie, now=now) is None


def test_a_damaged_secret_is_a_configuration_error_naming_the_fix(tmp_path: Path) -> None:
    (tmp_path / "console.secret").write_bytes(b"short")
    with pytest.raises(ConfigurationError, match="delete it"):
        ConsoleKeys(tmp_path)


@pytest.mark.parametrize(
    ("host", "server", "allowed"),
    [
        ("127.0.0.1:8420", ("127.0.0.1", 8420), True),
        ("localhost:8420", ("127.0.0.1", 8420), True),
        ("[::1]:8420", ("::1", 8420), True),
        ("192.168.1.5:8420", ("192.168.1.5", 8420), True),
        ("192.168.1.5:8420", ("127.0.0.1", 8420), False),
        ("evil.example:8420", ("127.0.0.1", 8420), False),
        ("localhost:9999", ("127.0.0.1", 8420), False),
        ("localhost", ("127.0.0.1", 80), True),
        ("localhost", ("127.0.0.1", 8420), False),
        ("LOCALHOST:8420", ("127.0.0.1", 8420), True),
        ("localhost:8420:1", ("127.0.0.1", 8420), False),
        ("localhost:x", ("127.0.0.1", 8420), False),
        (None, ("127.0.0.1", 8420), False),
        ("localhost:8420", None, False),
    ],
)
def test_the_host_header_must_name_this_server(host: str | None, server: tuple[str, int] | None, allowed: bool) -> None:
    """The bound address and the loopback names, on the bound port only."""
    assert host_allowed(host, server) is allowed


@pytest.mark.parametrize(
    ("cookie", "header", "lang"),
    [
        (None, None, "en"),
        (None, "zh-CN,zh;q=0.9,en;q=0.8", "zh"),
        (None, "en-US,en;q=0.9,zh;q=0.8", "en"),
        (None, "fr-FR,zh-TW;q=0.5", "zh"),
        (None, "zh;q=0.2,en;q=0.7", "en"),
        (None, "zh;q=0", "en"),
        ("zh", "en-US", "zh"),
        ("en", "zh-CN", "en"),
        ("de", "zh-CN", "zh"),
    ],
)
def test_the_language_is_the_switch_else_accept_language(cookie: str | None, header: str | None, lang: str) -> None:
    """Accept-Language chooses, the header's switch (a cookie) overrides."""
    assert choose_lang(cookie, header) == lang


def test_the_seed_labels_are_used_word_for_word() -> None:
    """SPEC §23, §24 D-16: the fixed UI labels in both languages."""
    assert LABELS["settings_knowledge"] == ("Settings › Knowledge", "设置 › 知识库")
    assert LABELS["nav_changes"] == ("View changes", "查看改动")
    assert LABELS["added_by_gem"] == ("Added by this gem", "这个 gem 新加的")
    assert LABELS["gem_what"][0] == "What it can do"
    assert LABELS["gem_resources"][0] == "Download additional files"


def _zip(entries: dict[str, bytes], *, link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        if link is not None:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_a_zipped_gem_folder_is_staged_and_found_inside_one_top_folder(tmp_path: Path) -> None:
    """The packaged file of a gem is a .zip of its folder."""
    uploads = Uploads(tmp_path)
    token, folder, _ = uploads.stage("weather.zip", _zip({"weather/notochord.json": b"{}", "weather/tools/a.mjs": b""}))
    assert (folder / "notochord.json").is_file()
    assert uploads.folder(token) == folder
    uploads.discard(token)
    with pytest.raises(GemError, match="choose the file again"):
        uploads.folder(token)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (_zip({"../outside.txt": b"x", "notochord.json": b"{}"}), "outside its folder"),
        (_zip({"/abs/notochord.json": b"{}"}), "outside its folder"),
        (_zip({"notochord.json": b"{}"}, link="tools/evil"), "link"),
        (_zip({"readme.txt": b"hello"}), "no notochord.json"),
        (b"not a zip at all", "not a gem package"),
    ],
)
def test_a_hostile_or_foreign_package_is_refused_and_nothing_is_kept(tmp_path: Path, data: bytes, problem: str) -> None:
    """Unpacking never writes outside the staging folder."""
    uploads = Uploads(tmp_path)
    with pytest.raises(GemError, match=problem):
        uploads.stage("gem.zip", data)
    assert not (tmp_path / "outside.txt").exists()
    assert list((tmp_path / "console-uploads").iterdir()) == []


def _damaged_zip(method: int) -> bytes:
    """A gem package whose compressed bytes were changed on the way (its headers are intact)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("notochord.json", b'{"name": "x"}' + bytes(range(256)) * 64)
    data = bytearray(buffer.getvalue())
    start = 30 + len("notochord.json")  # the local header, then the compressed stream
    for offset in range(start + 2, start + 40):
        data[offset] ^= 0x5A
    return bytes(data)


@pytest.mark.parametrize(
    "method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA], ids=["deflate", "bzip2", "lzma"]
)
def test_a_package_whose_compressed_data_is_damaged_is_refused_in_words(tmp_path: Path, method: int) -> None:
    """K-UI-01: what a damaged download or a crafted file raises inside the decompressor is said as a
    damaged package, never as an error of the console's own."""
    uploads = Uploads(tmp_path)
    with pytest.raises(GemError, match=r"gem\.zip is a damaged \.zip"):
        uploads.stage("gem.zip", _damaged_zip(method))
    assert list((tmp_path / "console-uploads").iterdir()) == []


def test_the_upload_token_cannot_name_a_path(tmp_path: Path) -> None:
    with pytest.raises(GemError):
        Uploads(tmp_path).folder("../../etc")


def test_a_lone_manifest_file_keeps_its_form_from_its_name(tmp_path: Path) -> None:
    """An uploaded manifest.json is read as Studio's draft, any other .json as packaged."""
    uploads = Uploads(tmp_path)
    _, draft, _ = uploads.stage("manifest.json", b"{}")
    _, packaged, _ = uploads.stage("weather.json", b"{}")
    assert (draft / "manifest.json").is_file()
    assert (packaged / "notochord.json").is_file()


@pytest.mark.parametrize(
    ("key", "one", "many"),
    [
        ("search_count", "1 passage found.", "3 passages found."),
        ("kn_doc_count", "1 document", "3 documents"),
        ("undone", "Undone: 1 change.", "Undone: 3 changes."),
        ("rollback_done", "Rolled back 1 file.", "Rolled back 3 files."),
        ("kn_more_passages", "1 more passage is not shown.", "3 more passages are not shown."),
        ("studio_mistakes", "1 mistake would stop the install:", "3 mistakes would stop the install:"),
        ("counted_facts", "1 fact", "3 facts"),
        ("count_collections", "collection", "collections"),
    ],
)
def test_counts_are_said_in_the_singular_or_the_plural_as_english_says_them(key: str, one: str, many: str) -> None:
    """A count reads as a sentence, never as "passage(s)"; Chinese has one form for every count."""
    assert text(key, "en", n=1) == one
    assert text(key, "en", n=3) == many
    assert text(key, "en", n=0) == many.replace("3", "0")
    assert text(key, "zh", n=1).replace("1", "3") == text(key, "zh", n=3)


def test_no_english_label_says_a_count_with_an_s_in_brackets() -> None:
    assert [key for key, (en, _) in LABELS.items() if "(s)" in en] == []


def test_an_uninstall_says_each_count_with_its_own_noun() -> None:
    """K-UI-13: "Deleted 1 fact, 0 documents and 1 collection.", never "1 facts"."""
    counts = {
        "facts": text("counted_facts", "en", n=1),
        "documents": text("counted_documents", "en", n=0),
        "collections": text("counted_collections", "en", n=1),
    }
    assert text("uninstalled_deleted", "en", **counts) == "Deleted 1 fact, 0 documents and 1 collection."
