"""Settings › System › Network access, and a gem's network access on its page, over HTTP against a
real server (P-NET-09, P-NET-12, P-NET-14, P-NET-16, P-NET-18)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from console_harness import WEATHER, ConsoleServer, csrf_of

SETTINGS = "/settings/network"


def _post(client: httpx.Client, action: str, **data: str) -> httpx.Response:
    token = csrf_of(client.get(SETTINGS).text)
    return client.post(f"{SETTINGS}/{action}", data={"csrf": token, **data})


def _gem(root: Path, gem_id: str, network: dict[str, object]) -> Path:
    folder = root / gem_id
    folder.mkdir()
    manifest = {"id": gem_id, "name": gem_id, "version": "1.0.0", "permissions": {"network": network}, "tools": []}
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def test_the_defaults_are_open_with_no_local_address(console: ConsoleServer) -> None:
    """P-NET-14, P-NET-16: open by default, and no local address can be reached."""
    text = console.client().get(SETTINGS).text
    assert "Settings › System › Network access" in text
    assert 'value="open" checked' in text
    assert "None: no local address can be reached." in text


def test_an_allowlist_is_chosen_and_filled_as_the_cli_shows_it(console: ConsoleServer) -> None:
    """P-NET-12, P-NET-14: the mode and its list are the rules the gems' requests meet."""
    client = console.client()
    assert _post(client, "mode", mode="allowlist").status_code == 303
    assert _post(client, "external/add", host="API.Example.com").status_code == 303
    rules = console.space.network.stored()
    assert (rules.external_mode, rules.external_hosts) == ("allowlist", ("api.example.com",))
    text = client.get(SETTINGS, params={"done": "net_saved"}).text
    assert "<code>api.example.com</code>" in text
    assert "Saved. It applies to the very next request of every gem." in text
    assert _post(client, "external/remove", host="api.example.com").status_code == 303
    assert console.space.network.stored().external_hosts == ()


def test_a_bad_host_is_refused_next_to_its_field_and_nothing_is_stored(console: ConsoleServer) -> None:
    """The store's own validation message, beside the field; the rules stay."""
    client = console.client()
    _post(client, "mode", mode="blocklist")
    before = console.space.network.stored()
    answer = _post(client, "external/add", host="https://ads.example.com/x")
    assert answer.status_code == 422
    assert 'id="err-host"' in answer.text and 'aria-invalid="true"' in answer.text
    assert 'value="https://ads.example.com/x"' in answer.text, "the typed entry stays in the field"
    assert console.space.network.stored() == before
    missing = _post(client, "external/remove", host="never.example.com")
    assert missing.status_code == 422 and "never.example.com is not on the list." in missing.text
    assert _post(client, "mode", mode="everything").status_code == 422
    assert _post(client, "external/add", host="").status_code == 422


def test_open_mode_takes_no_host_list(console: ConsoleServer) -> None:
    """P-NET-14: in open mode there is no list to add to, and the page says what to do."""
    answer = _post(console.client(), "external/add", host="api.example.com")
    assert answer.status_code == 422
    assert "choose allowlist or blocklist first" in answer.text
    assert console.space.network.stored().external_mode == "open"


def test_switching_modes_keeps_the_other_list(console: ConsoleServer) -> None:
    """P-NET-14: a list not in force is kept and comes back with its mode."""
    client = console.client()
    _post(client, "mode", mode="allowlist")
    _post(client, "external/add", host="api.example.com")
    _post(client, "mode", mode="open")
    assert "Kept, not in force" in client.get(SETTINGS).text
    _post(client, "mode", mode="allowlist")
    assert console.space.network.stored().external_hosts == ("api.example.com",)


def test_the_local_list_is_added_to_and_removed_from(console: ConsoleServer) -> None:
    """P-NET-16, P-NET-19, P-NET-21: the user lists what local addresses may be reached."""
    client = console.client()
    assert _post(client, "local/add", entry="localhost:5173").status_code == 303
    assert console.space.network.list_local() == ["localhost:5173"]
    bad = _post(client, "local/add", entry="8.8.8.8")
    assert bad.status_code == 422 and 'id="err-entry"' in bad.text
    assert console.space.network.list_local() == ["localhost:5173"]
    assert _post(client, "local/remove", entry="localhost:5173").status_code == 303
    assert console.space.network.list_local() == []
    gone = _post(client, "local/remove", entry="localhost:5173")
    assert gone.status_code == 422 and 'id="err-entry"' in gone.text


def test_the_rules_are_per_space(console: ConsoleServer) -> None:
    """P-NET-12: each space has its own rules; the header's switch chooses which."""
    acme = console.nc.org("acme", create=True)
    client = console.client()
    client.post("/prefs/space", data={"csrf": csrf_of(client.get(SETTINGS).text), "space": "org:acme"})
    _post(client, "local/add", entry="192.168.1.20")
    assert acme.network.list_local() == ["192.168.1.20"]
    assert console.space.network.list_local() == []
    assert "For the space Organization acme." in client.get(SETTINGS).text


def test_a_change_without_the_csrf_token_is_refused(console: ConsoleServer) -> None:
    """No change without the session's token."""
    client = console.client()
    answer = client.post(f"{SETTINGS}/local/add", data={"entry": "localhost:5173"})
    assert answer.status_code == 403
    assert console.space.network.list_local() == []


def test_a_gem_s_page_shows_its_hosts_and_reason(console: ConsoleServer, tmp_path: Path) -> None:
    """P-NET-09: the hosts it may reach and why; a gem without allowLocalNetwork says
    nothing about local addresses, even ones the user listed (P-NET-20)."""
    console.space.network.add_local("localhost:5173")
    console.space.gems.install(
        _gem(tmp_path, "forecast", {"hosts": ["api.weather.example"], "reason": "Fetch the forecast"})
    )
    text = console.client().get("/gems/forecast").text
    assert "<code>api.weather.example</code>" in text
    assert "Fetch the forecast" in text
    assert 'id="gem-local"' not in text and "localhost:5173" not in text
    assert 'href="/settings/network"' in text


def test_an_allow_local_network_gem_s_page_lists_what_it_may_reach(console: ConsoleServer, tmp_path: Path) -> None:
    """P-NET-18, P-NET-19: the page says it reaches the local addresses the user listed."""
    console.space.gems.install(
        _gem(tmp_path, "devtools", {"hosts": [], "allowLocalNetwork": True, "reason": "Open your dev server"})
    )
    client = console.client()
    text = client.get("/gems/devtools").text
    assert "It can also reach the local machine and internal network addresses you listed:" in text
    assert "You listed none, so it reaches no local address." in text
    console.space.network.add_local("localhost:5173")
    text = client.get("/gems/devtools").text
    assert "<code>localhost:5173</code>" in text
    assert "Open your dev server" in text


def test_a_gem_without_network_access_has_no_network_section(console: ConsoleServer) -> None:
    console.space.gems.install(WEATHER)
    assert 'id="network"' not in console.client().get("/gems/weather").text
