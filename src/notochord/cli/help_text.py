"""Command help as the terminal should wrap it.

A command's help comes from its docstring, whose prose is wrapped at the source's line length. The
help renderer keeps those line breaks after the first paragraph and wraps again at the terminal's
width, so on an 80-column terminal every source line ends in a ragged stub. Each prose paragraph is
therefore joined into one line here; a paragraph holding a list or indented lines keeps its breaks.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Final

__all__ = ["reflow_help"]

_KEEPS_BREAKS: Final = re.compile(r"^(\s|[-*•]\s|\d+[.)]\s|\x08)")


def _reflowed(help_text: str) -> str:
    paragraphs = inspect.cleandoc(help_text).split("\n\n")
    return "\n\n".join(
        paragraph
        if any(_KEEPS_BREAKS.match(line) for line in paragraph.split("\n"))
        else " ".join(line.strip() for line in paragraph.split("\n"))
        for paragraph in paragraphs
    )


def reflow_help(command: Any) -> Any:
    """``command`` (a click command or group, with its sub-commands) with its prose help reflowed."""
    if command.help:
        command.help = _reflowed(command.help)
    for sub in (getattr(command, "commands", None) or {}).values():
        reflow_help(sub)
    return command
