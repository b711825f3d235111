"""The header's space switch, and the command that prints a sign-in link."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from console_harness import RECIPES, SECRET, WEATHER, ConsoleServer, csrf_of, free_port


def test_the_header_switches_between_the_personal_and_an_organization_space(console: ConsoleServer) -> None:
    """Each space has its own gems; the switch chooses which one the pages show."""
    console.space.gems.install(WEATHER)
    console.nc.org("acme", create=True).gems.install(RECIPES)
    client = console.client()
    personal = client.get("/gems").text
    assert "Organization acme" in personal
    assert "/gems/weather" in personal
    assert "/gems/recipes" not in personal
    client.post("/prefs/space", data={"csrf": csrf_of(personal), "space": "org:acme"})
    org = client.get("/gems").text
    assert "/gems/recipes" in org
    assert "/gems/weather" not in org
    assert client.get("/gems/weather").status_code == 404


def test_a_space_that_does_not_exist_is_never_created_by_the_switch(console: ConsoleServer) -> None:
    """Only existing spaces can be chosen; anything else stays on the personal space."""
    client = console.client()
    client.post("/prefs/space", data={"csrf": csrf_of(client.get("/gems").text), "space": "org:ghost"})
    client.cookies.set("space", "org:other")
    assert client.get("/gems").status_code == 200
    assert console.nc.spaces() == ["personal"]


def test_the_language_switch_is_kept_in_a_cookie(console: ConsoleServer) -> None:
    """The switch wins over Accept-Language on later pages."""
    client = console.client()
    english = client.get("/gems", headers={"Accept-Language": "en"}).text
    client.post("/prefs/lang", data={"csrf": csrf_of(english), "lang": "zh", "next": "/changes"})
    assert "查看改动" in client.get("/changes", headers={"Accept-Language": "en"}).text


def test_a_switch_never_redirects_off_the_console(console: ConsoleServer) -> None:
    """The "next" page of the language switch is a path of this console only."""
    client, token = console.signed_in("/gems")
    for target in ("https://evil.example/", "//evil.example/", "/\\evil.example"):
        answer = client.post("/prefs/lang", data={"csrf": token, "lang": "en", "next": target})
        assert answer.headers["location"] == "/"


def test_console_url_prints_a_fresh_link_that_signs_in_once(console: ConsoleServer) -> None:
    """``notochord console-url`` signs with the data directory's secret."""
    command = [sys.executable, "-m", "notochord", "--data-dir", str(console.nc.data_dir), "console-url"]
    printed = subprocess.run(
        [*command, "--port", str(console.port)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()
    assert printed.startswith(f"{console.url}/login?token=")
    with httpx.Client(timeout=30) as browser:
        assert browser.get(printed).status_code == 303
        assert browser.get(f"{console.url}/gems").status_code == 200
    assert httpx.get(printed).status_code == 401


def test_notochord_serve_prints_a_sign_in_link_first_and_serves_the_console_at_the_root(tmp_path: Path) -> None:
    """The first line of ``notochord serve`` is the console's one-time link."""
    port = free_port()
    env = {**os.environ, "NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_JWT_SECRET": SECRET}
    base = [sys.executable, "-m", "notochord", "--data-dir", str(tmp_path / "data")]
    subprocess.run([*base, "init"], check=True, capture_output=True, env=env, timeout=120)
    command = [*base, "serve", "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert server.stdout is not None
        first = server.stdout.readline().strip()
        assert first.startswith(f"console (one-time sign-in link): http://127.0.0.1:{port}/login?token=")
        link = first.split(": ", 1)[1]
        deadline = time.monotonic() + 60
        with httpx.Client(timeout=30) as browser:
            while True:
                try:
                    answer = browser.get(link)
                    break
                except httpx.ConnectError:
                    assert time.monotonic() < deadline, "notochord serve did not start listening"
                    time.sleep(0.1)
            assert answer.status_code == 303
            assert "Install a gem" in browser.get(f"http://127.0.0.1:{port}/gems").text
    finally:
        server.terminate()
        server.wait(timeout=60)
        if server.stdout is not None:
            server.stdout.close()


def test_console_url_signs_for_the_data_directory_typed_over_the_one_in_the_environment(
    console: ConsoleServer, tmp_path: Path
) -> None:
    """``--data-dir`` before the command wins over ``NOTOCHORD_DATA_DIR``, as for every other command."""
    elsewhere, port = tmp_path / "elsewhere", console.port
    printed = subprocess.run(
        [sys.executable, "-m", "notochord", "--data-dir", str(console.nc.data_dir), "console-url", "--port", str(port)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "NOTOCHORD_DATA_DIR": str(elsewhere)},
    ).stdout.strip()
    with httpx.Client(timeout=30) as browser:
        assert browser.get(printed).status_code == 303
    assert not elsewhere.exists()


def test_console_url_without_a_vault_says_so_and_creates_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "no-vault"
    answer = subprocess.run(
        [sys.executable, "-m", "notochord", "console-url", "--data-dir", str(empty)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert answer.returncode == 3
    assert f"no vault at {empty}; create it with `notochord --data-dir {empty} init`" in answer.stderr
    assert not empty.exists()
