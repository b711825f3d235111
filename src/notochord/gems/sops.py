"""The SOPs a manifest declares, as far as the host needs them: their names and how they start.

``"sops": [{"name": "daily-digest", "trigger": "schedule"}, …]`` at the top level of either form.
``trigger`` is ``chat`` (called from a conversation, the default), ``schedule`` or ``event``. Only
whether a gem has a scheduled or event-triggered SOP matters to the host: such a gem's page offers
"Settings › Working folder", the ``workspace:`` those runs see (P-FILE-29, P-FILE-30). Other keys
of a SOP are the SOP's own business and are tolerated, like unknown keys of tools.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, get_args

__all__ = ["BACKGROUND_TRIGGERS", "SopSpec", "Trigger", "parse_sops"]

Trigger = Literal["chat", "schedule", "event"]
BACKGROUND_TRIGGERS: Final[frozenset[str]] = frozenset({"schedule", "event"})
"""Triggers that start a SOP without a conversation."""
_TRIGGERS: Final[tuple[str, ...]] = get_args(Trigger)


@dataclass(frozen=True)
class SopSpec:
    name: str
    trigger: Trigger = "chat"

    @property
    def background(self) -> bool:
        """Whether it runs without a conversation (scheduled or event-triggered)."""
        return self.trigger in BACKGROUND_TRIGGERS


def parse_sops(raw: object, problem: Callable[[str, str], None]) -> tuple[SopSpec, ...]:
    """The ``sops`` list; each mistake goes to ``problem(json path, what is wrong)``."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problem("sops", "must be a list of SOPs")
        return ()
    found: list[SopSpec] = []
    for index, item in enumerate(raw):
        path = f"sops[{index}]"
        if not isinstance(item, dict):
            problem(path, 'must be an object such as {"name": "daily-digest", "trigger": "schedule"}')
            continue
        name, trigger = item.get("name"), item.get("trigger", "chat")
        if not isinstance(name, str) or not name.strip():
            problem(f"{path}.name", "is required: a non-blank string")
            continue
        if trigger not in _TRIGGERS:
            problem(f"{path}.trigger", f"{trigger!r} is not one of {', '.join(_TRIGGERS)}")
            continue
        found.append(SopSpec(name=name, trigger=trigger))
    return tuple(found)
