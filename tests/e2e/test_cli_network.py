"""``notochord network``: the user's network rules from the command line, end to end.

The commands run in-process through typer's ``CliRunner`` against a real data directory. The last
test proves the point of the rules: a change made from the command line applies to the very next
request of a gem whose ``ctx`` was opened before it (P-NET-12, P-NET-16, P-NET-19), against a real
server on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

import notochord
from notochord.cli import network_cmd
from notochord.errors import ConfigurationError, NetworkPermissionError
from notochord.gems.api.http import make_http
from notochord.net.user_rules import NetworkRulesStore

root = typer.Typer(no_args_is_help=True)
root.add_typer(network_cmd.app, name="network")


@root.callback()
def _root() -> None:
    """Stands in for the ``notochord`` root command."""


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "vault"


def run(data_dir: Path, *args: str, code: int = 0) -> Result:
    if not data_dir.exists():
        notochord.open(data_dir, embedder=None).close()  # the vault `notochord init` makes
    result = CliRunner().invoke(root, ["network", *args, "--data-dir", str(data_dir)])
    assert result.exit_code == code, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result


def as_json(data_dir: Path, *args: str) -> Any:
    return json.loads(run(data_dir, *args, "--json").stdout)


def test_show_starts_open_with_no_local_address(data_dir: Path) -> None:
    """P-NET-14 (open by default), P-NET-16 (nothing local by default)."""
    assert as_json(data_dir, "show") == {"external": {"mode": "open", "hosts": []}, "local": []}
    text = run(data_dir, "show").stdout
    assert "external network: open" in text
    assert "no local address can be reached" in text


def test_mode_sets_the_external_list_and_open_clears_it(data_dir: Path) -> None:
    shown = as_json(data_dir, "mode", "blocklist", "ads.example.com", "*.Tracker.example")
    assert shown["external"] == {"mode": "blocklist", "hosts": ["ads.example.com", "*.tracker.example"]}
    assert as_json(data_dir, "show")["external"]["mode"] == "blocklist"
    assert "ads.example.com" in run(data_dir, "show").stdout
    assert as_json(data_dir, "mode", "open")["external"] == {"mode": "open", "hosts": []}


def test_allow_local_and_remove_local_edit_the_local_list(data_dir: Path) -> None:
    run(data_dir, "allow-local", "localhost:5173")
    assert as_json(data_dir, "allow-local", "192.168.1.20")["local"] == ["localhost:5173", "192.168.1.20"]
    assert as_json(data_dir, "remove-local", "localhost:5173")["local"] == ["192.168.1.20"]
    assert as_json(data_dir, "reset") == {"external": {"mode": "open", "hosts": []}, "local": []}


def test_allow_switches_to_allowlist_and_adds_to_it(data_dir: Path) -> None:
    """P-NET-14: ``allow`` chooses allowlist mode; a second ``allow`` adds to the same list."""
    shown = as_json(data_dir, "allow", "api.example.com", "*.Tiles.example")
    assert shown["external"] == {"mode": "allowlist", "hosts": ["api.example.com", "*.tiles.example"]}
    shown = as_json(data_dir, "allow", "api.example.com", "maps.example.com:8443")
    assert shown["external"]["hosts"] == ["api.example.com", "*.tiles.example", "maps.example.com:8443"]
    assert "external network: allowlist (only the listed external hosts)" in run(data_dir, "show").stdout


def test_block_switches_to_blocklist_and_never_carries_the_allowlist_over(data_dir: Path) -> None:
    """P-NET-14: an allowed host must not silently become a blocked one when the mode flips."""
    run(data_dir, "allow", "api.example.com")
    shown = as_json(data_dir, "block", "ads.example.com")
    assert shown["external"] == {"mode": "blocklist", "hosts": ["ads.example.com"]}
    shown = as_json(data_dir, "block", "tracker.example.com")
    assert shown["external"] == {"mode": "blocklist", "hosts": ["ads.example.com", "tracker.example.com"]}
    assert as_json(data_dir, "allow", "api.example.com")["external"] == {
        "mode": "allowlist",
        "hosts": ["api.example.com"],
    }


def test_allow_and_block_keep_the_local_list(data_dir: Path) -> None:
    run(data_dir, "local", "add", "localhost:5173")
    assert as_json(data_dir, "allow", "api.example.com")["local"] == ["localhost:5173"]
    assert as_json(data_dir, "block", "ads.example.com")["local"] == ["localhost:5173"]


def test_local_add_and_remove_edit_the_local_list(data_dir: Path) -> None:
    """P-NET-16, P-NET-19, P-NET-21: ``local add|remove`` is the user's local machine list."""
    assert as_json(data_dir, "local", "add", "localhost:5173")["local"] == ["localhost:5173"]
    assert as_json(data_dir, "local", "add", "[::1]:8080")["local"] == ["localhost:5173", "[::1]:8080"]
    assert as_json(data_dir, "local", "add", "LOCALHOST:5173")["local"] == ["localhost:5173", "[::1]:8080"]
    assert as_json(data_dir, "local", "remove", "localhost:5173")["local"] == ["[::1]:8080"]
    assert "  [::1]:8080" in run(data_dir, "show").stdout
    assert as_json(data_dir, "show")["external"] == {"mode": "open", "hosts": []}


def test_show_lists_both_lists_in_text(data_dir: Path) -> None:
    run(data_dir, "block", "ads.example.com")
    run(data_dir, "local", "add", "192.168.1.20")
    text = run(data_dir, "show").stdout
    assert "external network: blocklist (every external host except the listed ones)" in text
    assert "  ads.example.com" in text
    assert "  192.168.1.20" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(("allow-local", "8.8.8.8"), "'8.8.8.8' in the local machine", id="public-ip-local"),
        pytest.param(("allow-local", "*.corp.example"), "wildcards are not allowed", id="local-wildcard"),
        pytest.param(("mode", "allowlist", "127.0.0.1"), "'127.0.0.1' in the external", id="loopback-external"),
        pytest.param(("mode", "deny-all"), "not one of open, allowlist, blocklist", id="unknown-mode"),
        pytest.param(("mode", "open", "a.example.com"), "takes no host list", id="open-with-hosts"),
        pytest.param(("remove-local", "localhost:5173"), "is not in", id="remove-missing"),
        pytest.param(("allow", "127.0.0.1"), "'127.0.0.1' in the external", id="allow-loopback"),
        pytest.param(("allow", "localhost"), "localhost names are on the local machine", id="allow-localhost"),
        pytest.param(("block", "https://ads.example.com"), "without a scheme or path", id="block-url"),
        pytest.param(("block", "api.example.com", "10.0.0.1"), "'10.0.0.1' in the external", id="block-private"),
        pytest.param(("local", "add", "8.8.8.8"), "'8.8.8.8' in the local machine", id="local-add-public"),
        pytest.param(("local", "add", "*.corp.example"), "wildcards are not allowed", id="local-add-wildcard"),
        pytest.param(("local", "remove", "localhost:5173"), "is not in", id="local-remove-missing"),
    ],
)
def test_bad_input_exits_2_with_the_entry_and_the_rule(data_dir: Path, args: tuple[str, ...], message: str) -> None:
    result = run(data_dir, *args, code=2)
    assert message in " ".join(result.stderr.split())
    assert as_json(data_dir, "show") == {"external": {"mode": "open", "hosts": []}, "local": []}


def test_each_organization_space_has_rules_of_its_own(data_dir: Path) -> None:
    with notochord.open(data_dir, embedder=None) as nc:
        nc.org("acme", create=True)  # as `notochord init --org acme` makes it
    run(data_dir, "allow-local", "wiki.corp.example.com", "--org", "acme")
    assert as_json(data_dir, "show", "--org", "acme")["local"] == ["wiki.corp.example.com"]
    assert as_json(data_dir, "show")["local"] == []


class _Hello(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        body = b"hello from the dev server"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def dev_server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.mark.anyio
async def test_a_rule_changed_from_the_command_line_applies_to_the_next_request_of_an_open_ctx(
    data_dir: Path, tmp_path: Path, dev_server: ThreadingHTTPServer
) -> None:
    """P-NET-12, P-NET-16, P-NET-19, P-NET-21."""
    port = int(dev_server.server_address[1])
    folder = tmp_path / "preview-gem"
    folder.mkdir()
    manifest = {
        "id": "preview",
        "name": "Preview",
        "version": "1.0.0",
        "permissions": {"network": {"hosts": [], "allowLocalNetwork": True, "reason": "Show the dev server"}},
        "tools": [{"name": "main", "entry": "tools/main.mjs"}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "tools").mkdir()
    (folder / "tools" / "main.mjs").touch()
    with notochord.open(data_dir) as nc:
        space = nc.personal
        space.gems.factories["http"] = make_http
        space.gems.services.network_rules = NetworkRulesStore(space.core)
        space.gems.install(folder)
        ctx = space.gems.context("preview")
        url = f"http://127.0.0.1:{port}/"
        with pytest.raises(NetworkPermissionError):
            await ctx.http.fetch(url)

        run(data_dir, "allow-local", f"127.0.0.1:{port}")
        assert (await ctx.http.fetch(url)).text() == "hello from the dev server"

        run(data_dir, "remove-local", f"127.0.0.1:{port}")
        with pytest.raises(NetworkPermissionError) as refused:
            await ctx.http.fetch(url)
        assert refused.value.rule == "user-local-list"


def test_the_rules_property_reads_what_the_command_line_wrote(data_dir: Path) -> None:
    """``space.network_rules.rules``: mode, external list and local list, read afresh each time."""
    run(data_dir, "block", "ads.example.com")
    run(data_dir, "local", "add", "localhost:5173")
    with notochord.open(data_dir) as nc:
        store = nc.personal.network_rules
        rules = store.rules
        assert rules.external_mode == "blocklist"
        assert [str(e) for e in rules.external_hosts] == ["ads.example.com"]
        assert [str(e) for e in rules.local_hosts] == ["localhost:5173"]
        store.add_external("allowlist", ["api.example.com"])
        assert store.rules.external_mode == "allowlist"
        assert [str(e) for e in store.rules.external_hosts] == ["api.example.com"]


@pytest.mark.parametrize(
    ("mode", "hosts", "message"),
    [
        ("open", ["api.example.com"], "takes no host list"),
        ("allowlist", [], "name at least one host"),
        ("closed", ["api.example.com"], "not one of open, allowlist, blocklist"),
    ],
)
def test_adding_external_hosts_needs_a_list_mode_and_a_host(
    data_dir: Path, mode: str, hosts: list[str], message: str
) -> None:
    with notochord.open(data_dir) as nc:
        store = nc.personal.network_rules
        with pytest.raises(ConfigurationError, match=message):
            store.add_external(mode, hosts)
        assert store.stored().to_json() == {"external": {"mode": "open", "hosts": []}, "local": []}


@pytest.mark.parametrize("command", ["allow", "block"])
def test_allow_and_block_need_at_least_one_host(data_dir: Path, command: str) -> None:
    run(data_dir, command, code=2)
    assert as_json(data_dir, "show") == {"external": {"mode": "open", "hosts": []}, "local": []}
