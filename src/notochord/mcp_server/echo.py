"""What a refusal repeats of the client's own input: enough to recognise it, never all of it.

The client already has what it sent, and the model reading the error pays for every character, so
a uri, a header or a key is shown up to :data:`MAX_ECHOED` characters and cut with an ellipsis.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_ECHOED", "echoed"]

MAX_ECHOED: Final = 200


def echoed(text: str, limit: int = MAX_ECHOED) -> str:
    """``text`` as a refusal repeats it: its first ``limit`` characters, and ``…`` when there were more."""
    return text if len(text) <= limit else f"{text[:limit]}…"
