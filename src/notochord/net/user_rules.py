"""The user's network rules of one space ("Settings › System › Network access"), kept in the store.

Rules (P-NET-12, P-NET-14, P-NET-16, P-NET-19, OD-P03):

- External network: a mode, ``open`` (the default: every external host), ``allowlist`` (only the
  listed hosts) or ``blocklist`` (every host but the listed ones). The allowlist and the blocklist
  are two lists of their own: only the one of the mode in force applies, and the other is kept as
  it was, so switching modes back and forth never loses an entry. ``open`` takes no list and keeps
  both lists aside.
- Local machine and internal network: a list of the targets a gem with the local-network flag may
  reach. Empty by default, so no local or internal address can be reached (P-NET-16).
- Entries are ``host`` or ``host:port`` (IPv6 as ``[address]`` or ``[address]:port``); without a
  port any port matches, with one only that port. Only external entries may lead with a wildcard
  (``*.example.com``). An IP address in the local list must be a local or internal one, and one in
  the external list an external one: anything else could never match and would only mislead.
  ``localhost`` names belong to the local list only.
- Every entry is validated before anything is stored; a bad entry raises
  :class:`~notochord.errors.ConfigurationError` naming the entry and the rule it breaks, and leaves
  the stored rules unchanged. Entries are stored in canonical form (lowercase, IDNA-encoded, short
  IPv6), each once.
- The rules live as JSON in the space's ``space_meta`` table under ``network.rules``. They are read
  afresh on every request (:meth:`NetworkRulesStore.get`), so a change applies to the very next
  request. Each change is a read-modify-write inside one write transaction, so two concurrent
  changes never lose one another. Rules that cannot be read are an error, never "open": every
  request and every change is refused until :meth:`NetworkRulesStore.reset` restores the defaults.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, get_args

import sqlalchemy as sa

from notochord.db.engine import read_tx, write_tx
from notochord.db.schema import space_meta
from notochord.errors import ConfigurationError
from notochord.net.addresses import AddressClass, classify_ip, is_local_name
from notochord.net.policy import ExternalMode, UserHostEntry, UserNetworkRules

__all__ = [
    "RULES_KEY",
    "NetworkRulesStore",
    "StoredNetworkRules",
    "parse_rule_entry",
]

RULES_KEY: Final = "network.rules"
_FORMAT: Final = 1
_MODES: Final[tuple[str, ...]] = get_args(ExternalMode)
_LABEL: Final = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME: Final = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$", re.ASCII)
_MAX_NAME: Final = 253
_MAX_ENTRIES: Final = 1000

ListKind = Literal["external", "local"]

_LIST_LABEL: Final[dict[ListKind, str]] = {
    "external": "the external network list",
    "local": "the local machine and internal network list",
}


@dataclass(frozen=True)
class StoredNetworkRules:
    """The rules as the user wrote them (canonical entry strings), for display and JSON.

    ``external_hosts`` is the list in force (empty in ``open`` mode); ``kept_allowlist`` and
    ``kept_blocklist`` hold the list of a mode that is not in force, until it is chosen again.
    """

    external_mode: ExternalMode
    external_hosts: tuple[str, ...]
    local_hosts: tuple[str, ...]
    kept_allowlist: tuple[str, ...] = ()
    kept_blocklist: tuple[str, ...] = ()

    def hosts_of(self, mode: ExternalMode) -> tuple[str, ...]:
        """The list that belongs to ``mode``, whether it is in force or kept aside."""
        if mode == self.external_mode:
            return self.external_hosts
        return {"allowlist": self.kept_allowlist, "blocklist": self.kept_blocklist}.get(mode, ())

    def with_lists(
        self, mode: ExternalMode, lists: dict[str, tuple[str, ...]], local: tuple[str, ...] | None = None
    ) -> StoredNetworkRules:
        """``mode`` in force with its list from ``lists`` (``allowlist``/``blocklist``); the other kept."""
        return StoredNetworkRules(
            external_mode=mode,
            external_hosts=lists.get(mode, ()),
            local_hosts=self.local_hosts if local is None else local,
            kept_allowlist=() if mode == "allowlist" else lists.get("allowlist", ()),
            kept_blocklist=() if mode == "blocklist" else lists.get("blocklist", ()),
        )

    def lists(self) -> dict[str, tuple[str, ...]]:
        """``{"allowlist": …, "blocklist": …}``, each whether in force or kept."""
        return {"allowlist": self.hosts_of("allowlist"), "blocklist": self.hosts_of("blocklist")}

    def to_rules(self) -> UserNetworkRules:
        """The decision-ready form used by :class:`~notochord.net.policy.NetworkPolicy`."""
        return UserNetworkRules(
            external_mode=self.external_mode,
            external_hosts=tuple(parse_rule_entry(e, kind="external") for e in self.external_hosts),
            local_hosts=tuple(parse_rule_entry(e, kind="local") for e in self.local_hosts),
        )

    def to_json(self) -> dict[str, Any]:
        """``{"external": {"mode", "hosts"}, "local": [...]}``, the stored and displayed shape."""
        shape: dict[str, Any] = {
            "external": {"mode": self.external_mode, "hosts": list(self.external_hosts)},
            "local": list(self.local_hosts),
        }
        kept = {m: list(h) for m, h in (("allowlist", self.kept_allowlist), ("blocklist", self.kept_blocklist)) if h}
        if kept:
            shape["kept"] = kept
        return shape


_DEFAULT = StoredNetworkRules(external_mode="open", external_hosts=(), local_hosts=())


_QUOTE = reprlib.Repr()
_QUOTE.maxstring = 80
_QUOTE.maxother = 80


def _quoted(value: object) -> str:
    """``value`` as a refusal quotes it: a line, not the megabyte a form field may carry."""
    return _QUOTE.repr(value)


def _refuse(text: str, kind: ListKind, rule: str, reason: str, **values: str) -> ConfigurationError:
    entry = _quoted(text)
    return ConfigurationError(
        f"cannot put {entry} in {_LIST_LABEL[kind]}: {rule}",
        reason=reason,
        values={"list": kind, "entry": entry, **values},
    )


def parse_rule_entry(text: object, *, kind: ListKind) -> UserHostEntry:
    """Validate one entry of the user's external (``kind="external"``) or local list.

    Raises:
        ConfigurationError: names the entry, the list and the rule it breaks.
    """
    if not isinstance(text, str):
        raise ConfigurationError(
            f"{_LIST_LABEL[kind]} holds {_quoted(text)}; every entry must be a string",
            reason="net_entry_not_text",
            values={"list": kind, "entry": _quoted(text)},
        )
    stripped = text.strip()
    if not stripped:
        raise _refuse(text, kind, "an entry is a host name or address, optionally with :port", "net_entry_empty")
    if "://" in stripped or "/" in stripped:
        raise _refuse(
            text, kind, "an entry is a host name or address without a scheme or path", "net_entry_scheme_or_path"
        )
    try:
        entry = UserHostEntry.parse(stripped, allow_wildcard=kind == "external")
    except ConfigurationError as exc:
        if "*" in stripped and kind == "local":
            raise _refuse(
                text, kind, "wildcards are not allowed; list each host or address", "net_entry_wildcard_local"
            ) from exc
        raise _refuse(
            text,
            kind,
            f"write host, host:port or [IPv6]:port ({exc.message})",
            "net_entry_malformed",
            detail=exc.message,
        ) from exc
    if entry.address is not None:
        local = classify_ip(entry.address) is AddressClass.LOCAL
        if kind == "local" and not local:
            raise _refuse(
                text,
                kind,
                f"{entry.address} is an external address; this list holds only addresses of the local "
                "machine and internal network. External hosts follow the access mode",
                "net_entry_external_address",
                address=str(entry.address),
            )
        if kind == "external" and local:
            raise _refuse(
                text,
                kind,
                f"{entry.address} is on the local machine or internal network; add it to the local "
                "machine and internal network list instead",
                "net_entry_local_address",
                address=str(entry.address),
            )
        return entry
    name = entry.host[2:] if entry.host.startswith("*.") else entry.host
    if len(name) > _MAX_NAME or not _NAME.match(name) or name.rsplit(".", 1)[-1].isdigit():
        raise _refuse(
            text, kind, "this is not a valid host name (letters, digits, hyphens, dots)", "net_entry_bad_name"
        )
    if kind == "external" and is_local_name(name):
        raise _refuse(
            text,
            kind,
            "localhost names are on the local machine; add them to the local machine and internal network list instead",
            "net_entry_localhost_external",
        )
    return entry


def _canonical(entries: Iterable[object], *, kind: ListKind) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for text in entries:
        seen.setdefault(str(parse_rule_entry(text, kind=kind)), None)
    if len(seen) > _MAX_ENTRIES:
        raise _too_many(kind)
    return tuple(seen)


def _too_many(kind: ListKind) -> ConfigurationError:
    return ConfigurationError(
        f"{_LIST_LABEL[kind]} may hold at most {_MAX_ENTRIES} entries",
        reason="net_too_many",
        values={"list": kind, "max": str(_MAX_ENTRIES)},
    )


def _check_mode(mode: object) -> ExternalMode:
    if mode not in _MODES:
        modes = ", ".join(_MODES)
        raise ConfigurationError(
            f"network access mode {mode!r} is not one of {modes}",
            reason="net_unknown_mode",
            values={"mode": repr(mode), "modes": modes},
        )
    checked: ExternalMode = mode  # type: ignore[assignment]  # membership checked just above
    return checked


def _decode(value: str) -> StoredNetworkRules:
    def damaged(why: str) -> ConfigurationError:
        return ConfigurationError(
            f"the stored network rules are damaged ({why}); reset them to the defaults (open, no local "
            "address) with `notochord network reset`, then set them again",
            reason="net_rules_damaged",
            values={"why": why},
        )

    try:
        raw = json.loads(value)
    except ValueError as exc:
        raise damaged(f"not JSON: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("format") != _FORMAT:
        raise damaged("unknown format")
    external = raw.get("external")
    local = raw.get("local")
    if not isinstance(external, dict) or not isinstance(external.get("hosts"), list):
        raise damaged("external is not {mode, hosts}")
    if not isinstance(local, list):
        raise damaged("local is not a list")
    kept = raw.get("kept", {})
    if not isinstance(kept, dict) or not all(isinstance(kept.get(m, []), list) for m in ("allowlist", "blocklist")):
        raise damaged("kept is not {allowlist, blocklist}")
    return StoredNetworkRules(
        external_mode=_check_mode(external.get("mode")),
        external_hosts=_canonical(external["hosts"], kind="external"),
        local_hosts=_canonical(local, kind="local"),
        kept_allowlist=_canonical(kept.get("allowlist", []), kind="external"),
        kept_blocklist=_canonical(kept.get("blocklist", []), kind="external"),
    )


def _encode(rules: StoredNetworkRules) -> str:
    return json.dumps({"format": _FORMAT, **rules.to_json()}, ensure_ascii=False, sort_keys=True)


class _Database(Protocol):
    @property
    def engine(self) -> sa.Engine: ...


class _Space(Protocol):
    """A space's knowledge core (:class:`notochord.knowledge.core.KnowledgeCore`): its store's engine."""

    @property
    def store(self) -> _Database: ...


class NetworkRulesStore:
    """The user's network rules of one space; every read goes to the store (no cache).

    Example::

        rules = NetworkRulesStore(space.core)
        rules.set_external("blocklist", ["ads.example.com"])
        rules.add_local("localhost:5173")
        policy = NetworkPolicy(permission=manifest.network, user_rules=rules.get())
    """

    def __init__(self, core: _Space) -> None:
        # the rules are settings, not knowledge: plain transactions on the space database, no change record
        self._engine = core.store.engine

    def stored(self) -> StoredNetworkRules:
        """The rules as written by the user (default: open, empty lists).

        Raises:
            ConfigurationError: the stored rules are damaged.
        """
        with read_tx(self._engine) as conn:
            return self._load(conn)

    def get(self) -> UserNetworkRules:
        """The rules in force right now, for a :class:`~notochord.net.policy.NetworkPolicy`."""
        return self.stored().to_rules()

    @property
    def rules(self) -> UserNetworkRules:
        """The rules in force right now (mode, external list, local list), read from the store.

        Read-only: change them with :meth:`set_external`, :meth:`add_external`, :meth:`add_local`,
        :meth:`remove_local` or :meth:`reset`.

        Raises:
            ConfigurationError: the stored rules are damaged.
        """
        return self.get()

    def list_local(self) -> list[str]:
        """The local machine and internal network list, in the order the user added it."""
        return list(self.stored().local_hosts)

    def set_external(self, mode: str, hosts: Iterable[str] = ()) -> StoredNetworkRules:
        """Choose the external mode and replace its host list; the other mode's list is kept.

        Raises:
            ConfigurationError: an unknown mode, a list given with ``open``, or a bad entry.
        """
        checked = _check_mode(mode)
        listed = _canonical(list(hosts), kind="external")
        if checked == "open" and listed:
            raise ConfigurationError(
                "open mode allows every external host and takes no host list; use allowlist or blocklist to list hosts",
                reason="net_open_no_list_hint",
            )

        def change(rules: StoredNetworkRules) -> StoredNetworkRules:
            lists = rules.lists()
            if checked != "open":
                lists[checked] = listed
            return rules.with_lists(checked, lists)

        return self._update(change)

    def add_external(self, mode: str, hosts: Iterable[str]) -> StoredNetworkRules:
        """Switch to ``allowlist`` or ``blocklist`` with ``hosts`` added, in one write.

        The hosts join that mode's own list (each once), whether it was in force or kept aside. The
        other mode's list is kept as it is and not merged: an allowlist entry means the opposite of
        a blocklist entry, so carrying it over would turn every allowed host into a blocked one.

        Raises:
            ConfigurationError: ``mode`` is not allowlist or blocklist, no host is given, or an
                entry breaks a rule of the external list. Nothing is stored then.
        """
        checked = _check_mode(mode)
        if checked == "open":
            raise ConfigurationError(
                "open mode allows every external host and takes no host list", reason="net_open_no_list"
            )
        listed = _canonical(list(hosts), kind="external")
        if not listed:
            raise ConfigurationError(
                f"name at least one host to put on the {checked}", reason="net_no_host", values={"mode": checked}
            )

        def change(rules: StoredNetworkRules) -> StoredNetworkRules:
            lists = rules.lists()
            merged = tuple(dict.fromkeys((*lists[checked], *listed)))
            if len(merged) > _MAX_ENTRIES:
                raise _too_many("external")
            lists[checked] = merged
            return rules.with_lists(checked, lists)

        return self._update(change)

    def add_local(self, entry: str) -> StoredNetworkRules:
        """Add one entry to the local list (adding one already there changes nothing).

        Raises:
            ConfigurationError: the entry breaks a rule of the local list.
        """
        (canonical,) = _canonical([entry], kind="local")

        def change(rules: StoredNetworkRules) -> StoredNetworkRules:
            if canonical in rules.local_hosts:
                return rules
            if len(rules.local_hosts) >= _MAX_ENTRIES:
                raise _too_many("local")
            return rules.with_lists(rules.external_mode, rules.lists(), (*rules.local_hosts, canonical))

        return self._update(change)

    def remove_local(self, entry: str) -> StoredNetworkRules:
        """Remove one entry from the local list; it applies to the very next request.

        Raises:
            ConfigurationError: the entry is malformed or not in the list.
        """
        (canonical,) = _canonical([entry], kind="local")

        def change(rules: StoredNetworkRules) -> StoredNetworkRules:
            if canonical not in rules.local_hosts:
                values = {"list": "local", "entry": _quoted(entry)}
                if not rules.local_hosts:
                    raise ConfigurationError(
                        f"{_quoted(entry)} is not in {_LIST_LABEL['local']} (the list is empty)",
                        reason="net_not_listed_empty",
                        values=values,
                    )
                listed = ", ".join(rules.local_hosts)
                raise ConfigurationError(
                    f"{_quoted(entry)} is not in {_LIST_LABEL['local']} ({listed})",
                    reason="net_not_listed",
                    values={**values, "listed": listed},
                )
            kept = tuple(e for e in rules.local_hosts if e != canonical)
            return rules.with_lists(rules.external_mode, rules.lists(), kept)

        return self._update(change)

    def reset(self) -> StoredNetworkRules:
        """Back to the defaults: open, no local address. Works even when the stored rules are damaged."""
        with write_tx(self._engine) as conn:
            conn.execute(sa.delete(space_meta).where(space_meta.c.key == RULES_KEY))
        return _DEFAULT

    def _update(self, change: Callable[[StoredNetworkRules], StoredNetworkRules]) -> StoredNetworkRules:
        with write_tx(self._engine) as conn:
            current = self._load(conn)
            updated = change(current)
            if updated == current:
                return current
            encoded = _encode(updated)
            written = conn.execute(
                sa.update(space_meta).where(space_meta.c.key == RULES_KEY).values(value=encoded)
            ).rowcount
            if not written:
                conn.execute(sa.insert(space_meta).values(key=RULES_KEY, value=encoded))
            return updated

    @staticmethod
    def _load(conn: sa.Connection) -> StoredNetworkRules:
        value = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == RULES_KEY)).scalar()
        return _DEFAULT if value is None else _decode(str(value))
