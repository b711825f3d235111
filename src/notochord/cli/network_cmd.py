"""``notochord network``: the user's network rules ("Settings › System › Network access").

A gem reaches a host only if its manifest lists it AND these rules allow it (P-NET-12); local machine
and internal network targets need the gem's ``allowLocalNetwork`` AND an entry in the local list
(P-NET-16…20). A change applies to the very next request of every gem.

Commands: ``show``; ``allow HOST...`` and ``block HOST...`` (allowlist or blocklist mode with the hosts
added to that mode's own list; the other list is kept, not in force); ``mode MODE [HOST...]`` (set the
mode and replace its list); ``local add|remove ENTRY`` for the local machine and internal network list
(``allow-local`` and ``remove-local`` are the same); ``reset``. A change prints what it changed.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, open_space
from notochord.errors import ConfigurationError
from notochord.net.user_rules import NetworkRulesStore, StoredNetworkRules

app = typer.Typer(help="Choose which external hosts gems may reach, and which local addresses.", no_args_is_help=True)

Hosts = Annotated[
    list[str],
    typer.Argument(help="External hosts: host, host:port or *.example.com.", show_default=False),
]
Entry = Annotated[str, typer.Argument(help="host, host:port or [IPv6]:port, e.g. localhost:5173 or 192.168.1.20.")]

_MODE_TEXT = {
    "open": "every external host a gem's manifest lists",
    "allowlist": "only the listed external hosts",
    "blocklist": "every external host except the listed ones",
}


_SWITCH_BACK = {"allowlist": "notochord network allow HOST", "blocklist": "notochord network block HOST"}


def _render(rules: StoredNetworkRules) -> str:
    lines = [f"external network: {rules.external_mode} ({_MODE_TEXT[rules.external_mode]})"]
    lines += [f"  {host}" for host in rules.external_hosts]
    for mode, hosts in (("allowlist", rules.kept_allowlist), ("blocklist", rules.kept_blocklist)):
        if hosts:
            lines.append(f"kept, not in force: the {mode} (back in force with {_SWITCH_BACK[mode]}):")
            lines += [f"  {host}" for host in hosts]
    lines.append("local machine and internal network (only for gems with allowLocalNetwork):")
    lines += [f"  {entry}" for entry in rules.local_hosts] or ["  (none: no local address can be reached)"]
    return "\n".join(lines)


def _changes(before: StoredNetworkRules, after: StoredNetworkRules) -> str:
    """What a command changed, in words: the mode, and each list's added and removed entries."""
    lines = []
    if before.external_mode != after.external_mode:
        lines.append(f"switched from {before.external_mode} to {after.external_mode}")
    lists = [(f"the {mode}", before.hosts_of(mode), after.hosts_of(mode)) for mode in ("allowlist", "blocklist")] + [
        ("the local list", before.local_hosts, after.local_hosts)
    ]
    for name, old, new in lists:
        added = [h for h in new if h not in old]
        removed = [h for h in old if h not in new]
        if added:
            lines.append(f"added to {name}: {', '.join(added)}")
        if removed:
            lines.append(f"removed from {name}: {', '.join(removed)}")
    return "\n".join(lines or ["nothing changed"])


def _report(before: StoredNetworkRules, after: StoredNetworkRules, *, as_json: bool) -> None:
    emit(_result(after), as_json=as_json, text=f"{_changes(before, after)}\n{_render(after)}")


def _result(rules: StoredNetworkRules) -> dict[str, Any]:
    return rules.to_json()


@app.command("show")
def show(org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Show the external mode with its hosts, and the local machine and internal network list."""
    with open_space(data_dir, org) as space:
        rules = NetworkRulesStore(space.core).stored()
    emit(_result(rules), as_json=as_json, text=_render(rules))


@app.command("mode")
def mode(
    external_mode: Annotated[str, typer.Argument(metavar="MODE", help="open, allowlist or blocklist.")],
    hosts: Annotated[
        list[str] | None,
        typer.Argument(help="The hosts of the allowlist or blocklist (host, host:port, *.example.com)."),
    ] = None,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Set the external network mode and replace its host list (the other mode's list is kept)."""
    with open_space(data_dir, org) as space:
        store = NetworkRulesStore(space.core)
        before = store.stored()
        rules = store.set_external(external_mode, hosts or [])
    _report(before, rules, as_json=as_json)


@app.command("allow")
def allow(hosts: Hosts, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Allow only listed external hosts (allowlist mode), adding these hosts to the allowlist."""
    with open_space(data_dir, org) as space:
        store = NetworkRulesStore(space.core)
        before = store.stored()
        rules = store.add_external("allowlist", hosts)
    _report(before, rules, as_json=as_json)


@app.command("block")
def block(hosts: Hosts, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Allow every external host but the listed ones (blocklist mode), adding these hosts to the blocklist."""
    with open_space(data_dir, org) as space:
        store = NetworkRulesStore(space.core)
        before = store.stored()
        rules = store.add_external("blocklist", hosts)
    _report(before, rules, as_json=as_json)


local_app = typer.Typer(
    help="The local machine and internal network addresses gems with allowLocalNetwork may reach.",
    no_args_is_help=True,
)
app.add_typer(local_app, name="local")


@local_app.command("add")
def local_add(entry: Entry, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Let gems with allowLocalNetwork reach a local machine or internal network address."""
    allow_local(entry, org=org, data_dir=data_dir, as_json=as_json)


@local_app.command("remove")
def local_remove(entry: Entry, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Take an address off the local list; gems can no longer reach it from their next request."""
    remove_local(entry, org=org, data_dir=data_dir, as_json=as_json)


@app.command("allow-local")
def allow_local(entry: Entry, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Let gems with allowLocalNetwork reach a local machine or internal network address."""
    with open_space(data_dir, org) as space:
        store = NetworkRulesStore(space.core)
        before = store.stored()
        rules = store.add_local(entry)
    _report(before, rules, as_json=as_json)


@app.command("remove-local")
def remove_local(entry: Entry, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Take an address off the local list; gems can no longer reach it from their next request."""
    with open_space(data_dir, org) as space:
        store = NetworkRulesStore(space.core)
        before = store.stored()
        rules = store.remove_local(entry)
    _report(before, rules, as_json=as_json)


@app.command("reset")
def reset(org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Back to the defaults: every external host open, no local address reachable; both lists emptied."""
    with open_space(data_dir, org) as space:
        store = NetworkRulesStore(space.core)
        try:
            before = store.stored()
        except ConfigurationError:  # damaged rules: resetting them is the way out, so it must work
            before = None
        rules = store.reset()
    if before is None:
        emit(_result(rules), as_json=as_json, text=f"replaced the damaged rules with the defaults\n{_render(rules)}")
    else:
        _report(before, rules, as_json=as_json)
