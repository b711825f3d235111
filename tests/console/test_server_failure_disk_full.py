"""The console on a disk that filled up while it was serving (K-UI-12).

The server runs in a child process whose data directory is a small tmpfs of its own private mount
namespace (the tests run as root, and root ignores file modes, so only a real mount proves
anything; nothing outside that child sees it). Once the person is signed in the disk is filled, and
creating a collection fails in the store. The answer is the console's own 500 page in the reader's
language: the change may not have been made, the details are in the server's log; it shows none of
the store's words or paths. The log has the exception with its traceback. Once space is freed the
same form works.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from console_harness import SECRET, csrf_of, free_port

from fault_sandbox import FILL, on_small_disk

pytestmark = pytest.mark.slow

CHILD = FILL + textwrap.dedent(
    """
    import json, os, sys, threading, time
    from pathlib import Path
    import notochord
    from notochord.cli.serve_cmd import build_server
    from notochord.console.auth import ConsoleKeys
    from notochord.settings import Settings

    disk, port, secret = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    data = disk / "data"
    settings = Settings(data_dir=data, index_in_background=False, jwt_secret=secret, embedder="none")
    nc = notochord.open(data, settings, embedder=None)
    nc.personal
    server = build_server(nc, settings, host="127.0.0.1", port=port)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    print(json.dumps({"login": f"http://127.0.0.1:{port}/login?token={ConsoleKeys(data).mint_login_token()}",
                      "data": str(data)}), flush=True)
    sys.stdin.readline()
    fill(disk / "ballast")
    print("full", flush=True)
    sys.stdin.readline()
    (disk / "ballast").unlink()
    print("freed", flush=True)
    sys.stdin.readline()
    server.should_exit = True
    thread.join(timeout=20)
    nc.close()
    """
)


@dataclass
class Child:
    """The console served from a small disk, and the way to tell it what to do next."""

    process: subprocess.Popen[str]
    login: str
    data: str

    def step(self, expected: str) -> None:
        """Let the child take its next step (fill the disk, free it) and wait until it did."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        # the server's access log shares the child's output
        for line in self.process.stdout:
            if line.strip() == expected:
                return
        raise AssertionError(f"the child ended before it said {expected!r}")


@contextmanager
def console_on_a_small_disk(disk: Path) -> Iterator[tuple[Child, list[str]]]:
    """The child serving the console from a 16 MB tmpfs at ``disk``; the list holds its log once it ended."""
    port = free_port()
    process = subprocess.Popen(
        on_small_disk(disk, "16m", [sys.executable, "-c", CHILD, str(disk), str(port), SECRET]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log: list[str] = []
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("{"), process.stderr.read() if process.stderr else "the child said nothing"
        started = json.loads(line)
        yield Child(process=process, login=started["login"], data=started["data"]), log
    finally:
        try:
            _, errors = process.communicate("\n\n\n", timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, errors = process.communicate()
        log.append(errors)


def test_a_form_sent_once_the_disk_is_full_gets_the_console_s_500_page_and_works_once_space_is_freed(
    tmp_path: Path,
) -> None:
    """K-UI-12: nothing of the store's own words, the data directory or the traceback in the page;
    all of it in the server's log. No collection is made until space is freed."""
    disk = tmp_path / "disk"
    disk.mkdir()
    with console_on_a_small_disk(disk) as (child, log), httpx.Client(timeout=30) as client:
        assert client.get(child.login).status_code == 303
        base = child.login.split("/login")[0]
        token = csrf_of(client.get(f"{base}/knowledge").text)
        form = {"csrf": token, "name": "Recipes"}
        chinese = {"Accept-Language": "zh-CN", "Referer": f"{base}/knowledge"}
        child.step("full")

        answer = client.post(f"{base}/knowledge/collections", data=form, headers=chinese)

        assert answer.status_code == 500, answer.text
        assert "<title>出了点问题 · notochord</title>" in answer.text
        assert "你要求的操作可能没有完成" in answer.text and "详细信息在服务器日志中" in answer.text
        for internal in ("disk is full", "database or disk", "Traceback", "Internal Server Error", child.data):
            assert internal not in answer.text, internal
        assert "Recipes" not in client.get(f"{base}/knowledge").text

        child.step("freed")
        again = client.post(f"{base}/knowledge/collections", data=form, headers=chinese)
        assert again.status_code == 303
        assert "Recipes" in client.get(f"{base}/knowledge").text
    [errors] = log
    assert "a console request failed: POST /knowledge/collections" in errors
    assert "Traceback (most recent call last)" in errors
    assert "the disk is full" in errors
