"""``notochord network``: the user's network rules ("Settings › System › Network access").

A gem reaches a host only if its manifest lists it AND these rules allow it (P-NET-12); local machine
and internal network targets need the gem's ``allowLocalNetwork`` AND an entry in the local list
(P-NET-16…20). A change applies to the very next request of every gem.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, open_space
from notochord.gems.network_rules import NetworkRulesStore, StoredNetworkRules

app = typer.Typer(help="Choose which external hosts gems may reach, and which local addresses.", no_args_is_help=True)

Entry = Annotated[str, typer.Argument(help="host, host:port or [IPv6]:port, e.g. localhost:5173 or 192.168.1.20.")]

_MODE_TEXT = {
    "open": "every external host a gem's manifest lists",
    "allowlist": "only the listed external hosts",
    "blocklist": "every external host except the listed ones",
}


def _render(rules: StoredNetworkRules) -> str:
    lines = [f"external network: {rules.external_mode} ({_MODE_TEXT[rules.external_mode]})"]
    lines += [f"  {host}" for host in rules.external_hosts]
    lines.append("local machine and internal network (only for gems with allowLocalNetwork):")
    lines += [f"  {entry}" for entry in rules.local_hosts] or ["  (none: no local address can be reached)"]
    return "\n".join(lines)


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
    """Set the external network mode and its host list (the list replaces the previous one)."""
    with open_space(data_dir, org) as space:
        rules = NetworkRulesStore(space.core).set_external(external_mode, hosts or [])
    emit(_result(rules), as_json=as_json, text=_render(rules))


@app.command("allow-local")
def allow_local(entry: Entry, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Let gems with allowLocalNetwork reach a local machine or internal network address."""
    with open_space(data_dir, org) as space:
        rules = NetworkRulesStore(space.core).add_local(entry)
    emit(_result(rules), as_json=as_json, text=_render(rules))


@app.command("remove-local")
def remove_local(entry: Entry, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Take an address off the local list; gems can no longer reach it from their next request."""
    with open_space(data_dir, org) as space:
        rules = NetworkRulesStore(space.core).remove_local(entry)
    emit(_result(rules), as_json=as_json, text=_render(rules))


@app.command("reset")
def reset(org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Back to the defaults: every external host open, no local address reachable."""
    with open_space(data_dir, org) as space:
        rules = NetworkRulesStore(space.core).reset()
    emit(_result(rules), as_json=as_json, text=_render(rules))
