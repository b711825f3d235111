"""The user's network rules kept in the space: defaults, validation, persistence (P-NET-12, P-NET-14,
P-NET-16, P-NET-19, OD-P03)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.db.schema import space_meta
from notochord.errors import ConfigurationError
from notochord.knowledge.writes import USER
from notochord.net.user_rules import RULES_KEY, NetworkRulesStore, parse_rule_entry
from notochord.settings import Settings


def test_default_is_open_with_no_local_address_reachable(rules: NetworkRulesStore) -> None:
    """P-NET-14 (open by default), P-NET-16 (no local address by default)."""
    current = rules.get()
    assert current.external_mode == "open"
    assert current.external_hosts == ()
    assert current.local_hosts == ()
    assert rules.list_local() == []


def test_rules_are_canonical_deduplicated_and_kept_in_the_order_given(rules: NetworkRulesStore) -> None:
    rules.set_external("blocklist", ["Ads.Example.COM", "*.tracker.example", "ads.example.com", "bücher.example"])
    rules.add_local("LocalHost:5173")
    rules.add_local("[0:0:0:0:0:0:0:1]:8080")
    rules.add_local("192.168.1.20")
    rules.add_local("localhost:5173")
    stored = rules.stored()
    assert stored.external_hosts == ("ads.example.com", "*.tracker.example", "xn--bcher-kva.example")
    assert stored.local_hosts == ("localhost:5173", "[::1]:8080", "192.168.1.20")
    assert rules.get().external_mode == "blocklist"


def test_rules_survive_closing_and_reopening_the_data_directory(tmp_path: Path, clock: FixedClock) -> None:
    data = tmp_path / "data"
    with notochord.open(data, Settings(data_dir=data), clock=clock) as nc:
        NetworkRulesStore(nc.personal.core).set_external("allowlist", ["api.example.com:8443"])
        NetworkRulesStore(nc.personal.core).add_local("wiki.corp.example.com")
    with notochord.open(data, Settings(data_dir=data), clock=clock) as nc:
        stored = NetworkRulesStore(nc.personal.core).stored()
        organization = NetworkRulesStore(nc.org("acme", create=True).core).stored()
    assert stored.to_json() == {
        "external": {"mode": "allowlist", "hosts": ["api.example.com:8443"]},
        "local": ["wiki.corp.example.com"],
    }
    assert organization.to_json() == {"external": {"mode": "open", "hosts": []}, "local": []}


def test_rules_are_stored_as_json_under_their_key(space: notochord.Space, rules: NetworkRulesStore) -> None:
    rules.add_local("localhost:5173")
    with space.core.store.read() as conn:
        value = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == RULES_KEY)).scalar_one()
    assert json.loads(value) == {
        "format": 1,
        "external": {"mode": "open", "hosts": []},
        "local": ["localhost:5173"],
    }


def test_switching_to_open_clears_the_list_and_open_takes_no_hosts(rules: NetworkRulesStore) -> None:
    rules.set_external("allowlist", ["api.example.com"])
    with pytest.raises(ConfigurationError, match="takes no host list"):
        rules.set_external("open", ["api.example.com"])
    assert rules.stored().external_hosts == ("api.example.com",)
    rules.set_external("open")
    assert rules.stored().external_hosts == ()


@pytest.mark.parametrize(
    ("kind", "entry", "message"),
    [
        pytest.param("local", "*.corp.example", "wildcards are not allowed", id="local-wildcard"),
        pytest.param("local", "8.8.8.8", "external address", id="local-public-ip"),
        pytest.param("local", "http://localhost:5173", "without a scheme or path", id="local-url"),
        pytest.param("local", "localhost:99999", "host:port", id="local-bad-port"),
        pytest.param("local", "", "host name or address", id="local-empty"),
        pytest.param("external", "127.0.0.1", "local machine or internal network", id="external-loopback"),
        pytest.param("external", "10.1.2.3:80", "local machine or internal network", id="external-private"),
        pytest.param("external", "dev.localhost", "localhost names", id="external-localhost"),
        pytest.param("external", "exa mple.com", "host:port", id="external-space"),
        pytest.param("external", "bad!name.com", "not a valid host name", id="external-bad-char"),
        pytest.param("external", "api.*.example.com", "host:port", id="external-inner-wildcard"),
    ],
)
def test_each_bad_entry_is_refused_naming_the_entry_the_list_and_the_rule(
    rules: NetworkRulesStore, kind: str, entry: str, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message) as refused:
        if kind == "local":
            rules.add_local(entry)
        else:
            rules.set_external("blocklist", ["good.example.com", entry])
    assert repr(entry) in refused.value.message
    assert ("local machine and internal network list" if kind == "local" else "external network list") in (
        refused.value.message
    )
    assert rules.stored().to_json() == {"external": {"mode": "open", "hosts": []}, "local": []}


@pytest.mark.parametrize("entry", ["1" * 5000, "a" * 400 + ".example.com"], ids=["5000-digits", "long-name"])
def test_an_entry_of_thousands_of_characters_is_refused_quoted_cut_short(rules: NetworkRulesStore, entry: str) -> None:
    """P-NET-06: the refusal names the entry, but as a line: a pasted megabyte is not sent back whole."""
    for call in (rules.add_local, rules.remove_local):
        with pytest.raises(ConfigurationError) as refused:
            call(entry)
        assert entry[:20] in refused.value.message
        assert len(refused.value.message) < 400
    assert rules.stored().to_json() == {"external": {"mode": "open", "hosts": []}, "local": []}


def test_unknown_mode_is_refused(rules: NetworkRulesStore) -> None:
    with pytest.raises(ConfigurationError, match="'deny-all' is not one of open, allowlist, blocklist"):
        rules.set_external("deny-all", [])


def test_removing_an_entry_matches_its_canonical_form_and_a_missing_one_is_named(
    rules: NetworkRulesStore,
) -> None:
    rules.add_local("localhost:5173")
    rules.add_local("192.168.1.20")
    rules.remove_local("LOCALHOST:5173")
    assert rules.list_local() == ["192.168.1.20"]
    with pytest.raises(ConfigurationError, match=r"'localhost:5173' is not in .* \(192.168.1.20\)"):
        rules.remove_local("localhost:5173")


def test_damaged_stored_rules_are_an_error_never_open(space: notochord.Space, rules: NetworkRulesStore) -> None:
    """Rules that cannot be read refuse every change (and request) until they are reset."""
    with space.core.store.write(actor=USER, run_id=None) as tx:
        tx.conn.execute(sa.insert(space_meta).values(key=RULES_KEY, value="{not json"))
    with pytest.raises(ConfigurationError, match="damaged"):
        rules.get()
    with pytest.raises(ConfigurationError, match="damaged"):
        rules.add_local("localhost")
    rules.reset()
    rules.add_local("localhost")
    assert rules.stored().to_json() == {"external": {"mode": "open", "hosts": []}, "local": ["localhost"]}


def test_a_local_ipv6_and_a_name_are_accepted_in_the_local_list() -> None:
    assert str(parse_rule_entry("[fd00::1]:8080", kind="local")) == "[fd00::1]:8080"
    assert parse_rule_entry("wiki.corp.example.com", kind="local").matches_name("wiki.corp.example.com", 443)
