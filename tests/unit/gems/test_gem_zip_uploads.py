"""A gem ``.zip`` uploaded in the console is held to the rules of a gem folder install, at upload.

Covers K-UI-02 and K-UI-03 (installing from an uploaded packaged file shows the install screen
first) and P-KVAL-06 (a refused package installs nothing and keeps nothing): an upload is refused in
words on the Gems page, before it is unpacked, when it could not be installed as a folder either,
so the person never reviews a package that the install then refuses with a staging path in its
message.

- The limits are the folder install's own: at most ``MAX_ENTRIES`` files and folders (counting the
  folders the entries imply) and ``MAX_TOTAL_BYTES`` bytes, said in the same unit.
- An entry name held twice is refused by name: unpacking would keep the last one without a word.
- Two names that differ only in case are refused by name: on a disk whose names ignore case one
  would overwrite the other while unpacking, before the install's own check could see both.
"""

from __future__ import annotations

import html
import io
import json
import socket
import threading
import time
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn

import notochord
from notochord.cli.serve_cmd import build_server
from notochord.console.auth import ConsoleKeys
from notochord.gems.package import MAX_ENTRIES, MAX_TOTAL_BYTES
from notochord.settings import Settings

SECRET = "gem-followups-uploads-jwt-secret-0123456789-abcdefghij"
MANIFEST = json.dumps({"id": "probe", "name": "probe", "version": "1.0.0"}).encode()
_CSRF = 'name="csrf" value="'


@dataclass
class Console:
    """A real ``notochord serve`` on 127.0.0.1 over a fresh data directory, and a signed-in client."""

    nc: notochord.Notochord
    client: httpx.Client
    csrf: str

    def upload(self, data: bytes, filename: str = "probe.zip") -> httpx.Response:
        """Upload ``data`` as the gem package on the Gems page (the install screen's first step)."""
        return self.client.post(
            "/gems/review",
            data={"csrf": self.csrf, "path": ""},
            files={"package": (filename, data, "application/zip")},
        )

    def staged(self) -> list[Path]:
        """What the console still keeps of uploads."""
        root = self.nc.data_dir / "console-uploads"
        return sorted(root.iterdir()) if root.is_dir() else []


@pytest.fixture
def console(tmp_path: Path) -> Iterator[Console]:
    data_dir = tmp_path / "data"
    settings = Settings(data_dir=data_dir, index_in_background=False, jwt_secret=SECRET)
    nc = notochord.open(data_dir, settings, embedder=None)
    nc.personal  # noqa: B018  (the personal space exists before the first page)
    server, port = _serve(nc, settings)
    thread = threading.Thread(target=server.run, name="gem-uploads-console", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the console did not start"
        time.sleep(0.01)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
    try:
        signed_in = client.get(f"/login?token={ConsoleKeys(nc.data_dir).mint_login_token()}")
        assert signed_in.status_code == 303, signed_in.text
        page = client.get("/gems").text
        yield Console(nc=nc, client=client, csrf=page.split(_CSRF)[1].split('"')[0])
    finally:
        client.close()
        server.should_exit = True
        thread.join(timeout=20)
        nc.close()


def _serve(nc: notochord.Notochord, settings: Settings) -> tuple[uvicorn.Server, int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return build_server(nc, settings, host="127.0.0.1", port=port), port


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    """A .zip holding ``entries`` in this order, names exactly as given (twice if given twice)."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # zipfile warns about a name written twice, which is what some tests need
        warnings.simplefilter("ignore", UserWarning)
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in entries:
                archive.writestr(name, data)
    return buffer.getvalue()


def _refusal(answer: httpx.Response) -> str:
    """The words of the refusal shown on the Gems page, as the person reads them."""
    assert answer.status_code == 422, answer.text
    assert 'id="install-errors"' in answer.text
    shown = answer.text.split('id="install-errors">')[1].split("</div>")[0]
    return " ".join(html.unescape(shown).replace("<li>", " ").replace("</li>", " ").replace("<ul>", "").split())


def _assert_nothing_kept(console: Console) -> None:
    assert console.staged() == []
    assert console.nc.personal.gems.list() == []


# ---------------------------------------------------------------- the limits of a folder install


def test_k_ui_02_a_zip_over_the_folder_install_s_count_of_files_and_folders_is_refused_at_upload(
    console: Console,
) -> None:
    """P-KVAL-06: the folders its entries imply count, as they do for a folder install; otherwise
    the install screen would show a package the install then refuses."""
    entries = [("probe/notochord.json", MANIFEST)]
    # no entry of its own for probe/lib/: unpacking makes that folder all the same
    entries += [(f"probe/lib/{index}.txt", b"") for index in range(MAX_ENTRIES - 1)]
    message = _refusal(console.upload(_zip(entries)))
    assert f"more than {MAX_ENTRIES} files and folders" in message
    assert "console-uploads" not in message
    _assert_nothing_kept(console)


def test_k_ui_02_a_zip_at_the_folder_install_s_count_is_reviewed_and_installs(console: Console) -> None:
    """The one top folder a package is wrapped in is not part of the gem, as for a folder install."""
    entries = [("probe/notochord.json", MANIFEST)]
    entries += [(f"probe/{index}.txt", b"") for index in range(MAX_ENTRIES - 1)]
    review = console.upload(_zip(entries))
    assert review.status_code == 200, review.text
    token = review.text.split('name="upload" value="')[1].split('"')[0]
    done = console.client.post("/gems/install", data={"csrf": console.csrf, "upload": token, "path": ""})
    assert done.status_code == 303, done.text
    assert [g.id for g in console.nc.personal.gems.list()] == ["probe"]


def test_k_ui_02_a_zip_over_the_folder_install_s_size_is_refused_in_the_same_unit(console: Console) -> None:
    """The limit is said as the folder install says it, in MiB (a mebibyte is what is counted)."""
    zeros = b"\0" * (MAX_TOTAL_BYTES + 1)
    message = _refusal(console.upload(_zip([("notochord.json", MANIFEST), ("data.bin", zeros)])))
    assert f"more than {MAX_TOTAL_BYTES // (1024 * 1024)} MiB" in message
    _assert_nothing_kept(console)


# ---------------------------------------------------------------- names


def test_k_ui_02_a_zip_holding_one_name_twice_is_refused_naming_it(console: Console) -> None:
    """Unpacking would keep the last copy without a word; which one the gem was meant to ship is
    not known, so the package is refused and nothing is kept."""
    entries = [("notochord.json", MANIFEST), ("tool.py", b"first"), ("tool.py", b"second")]
    message = _refusal(console.upload(_zip(entries)))
    assert "tool.py" in message and "twice" in message
    assert "pack the gem's folder again" in message
    _assert_nothing_kept(console)


@pytest.mark.parametrize(
    ("first", "second", "named"),
    [
        ("lib/util.py", "lib/Util.py", ("lib/util.py", "lib/Util.py")),
        ("Lib/a.py", "lib/b.py", ("Lib", "lib")),
        ("caf\u00e9.py", "cafe\u0301.py", ("caf\u00e9.py", "cafe\u0301.py")),
    ],
    ids=["files", "folders", "unicode-form"],
)
def test_k_ui_02_names_that_differ_only_in_case_are_refused_at_upload_naming_both(
    console: Console, first: str, second: str, named: tuple[str, str]
) -> None:
    """On a disk whose names ignore case the second would overwrite the first (or land in its
    folder) while unpacking, before the install's own check saw both: refused as a folder is."""
    entries = [("notochord.json", MANIFEST), (first, b"one"), (second, b"two")]
    message = _refusal(console.upload(_zip(entries)))
    assert all(name in message for name in named), message
    assert "differ only in case" in message
    assert "rename one" in message
    _assert_nothing_kept(console)


# ---------------------------------------------------------------- clutter left out of an upload


def test_k_ui_02_the_install_screen_says_what_the_upload_left_out(console: Console) -> None:
    """A .zip packed from a developer's folder (a ``.git`` over the count a gem may
    hold, what macOS adds) is reviewed and installed without them, and the screen says so."""
    entries = [("probe/notochord.json", MANIFEST), ("probe/.git/HEAD", b"ref: refs/heads/main\n")]
    entries += [(f"probe/.git/objects/{index}", b"") for index in range(MAX_ENTRIES + 1)]
    entries += [("__MACOSX/probe/._notochord.json", b"\0")]
    review = console.upload(_zip(entries))
    assert review.status_code == 200, review.text
    told = html.unescape(review.text.split('id="left-out">')[1].split("</p>")[0])
    assert told == "Left out of the package, as never part of a gem: .git (1), __MACOSX (1)."
    token = review.text.split('name="upload" value="')[1].split('"')[0]
    done = console.client.post("/gems/install", data={"csrf": console.csrf, "upload": token, "path": ""})
    assert done.status_code == 303, done.text
    code = console.nc.personal.gems.runner.code_dir("probe")
    assert sorted(p.name for p in code.iterdir()) == ["notochord.json"]
