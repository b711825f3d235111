"""Command help as the terminal should show it.

A command's help comes from its docstring, whose prose is wrapped at the source's line length. The
help renderer keeps those line breaks after the first paragraph and wraps again at the terminal's
width, so on an 80-column terminal every source line ends in a ragged stub. Each prose paragraph is
therefore joined into one line here; a paragraph holding a list or indented lines keeps its breaks.

The values are named as a person reads them (:func:`name_metavars`): a flag shows no placeholder,
an option the kind of value it takes (``TEXT``, ``N``, ``NUMBER``, ``PATH``, or its choices), and an
argument its own name in capitals (``GEM_ID``; ``PATHS...`` for several, ``[SUBJECT]`` in the
usage line when it may be left out), where typer would show Python's types (``<bool>``, ``<str>``,
``<list[Path]>``) and braces (``{gem_id}``).
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Final

from typer._click import Context
from typer.core import TyperArgument, TyperOption

__all__ = ["name_metavars", "readable_help", "reflow_help"]

_LABELS: Final = {"str": "TEXT", "int": "N", "float": "NUMBER", "Path": "PATH", "bool": "BOOLEAN"}

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


def _type_label(param: TyperArgument | TyperOption, ctx: Context) -> str:
    """The kind of value ``param`` takes, in words: ``TEXT``, ``N``, ``PATH``, ``[a|b]``…"""
    if param.type_descriptor.is_choice:
        choices = param.display_type(ctx).strip("<>")
        return f"[{choices.removeprefix('list[').removesuffix(']')}]"
    bare = param.bare_type()
    element = bare.removeprefix("list[").removesuffix("]") if bare.startswith("list[") else bare
    return _LABELS.get(element, element.upper())


class _Argument(TyperArgument):
    """An argument shown by its name (``GEM_ID``, ``PATHS...``) and the kind of value it takes.

    Error messages keep naming it as before (``Missing argument 'gem_id'.``): scripts may match them.
    """

    hint: str = ""

    def get_error_hint(self) -> str:
        return f"'{self.hint}'"

    def display_type_rich(self, ctx: Context) -> str | None:
        return _type_label(self, ctx)

    def get_usage_pieces(self, ctx: Context) -> list[str]:  # noqa: ARG002  (click passes it)
        name = self.display_name_raw
        return [name if self.required else f"[{name}]"]


def name_metavars(command: Any) -> Any:
    """``command`` with every parameter of its own (``--help`` included) named as the module says."""
    ctx = Context(command, info_name=command.name, **(command.context_settings or {}))
    for param in command.get_params(ctx):
        if isinstance(param, TyperOption):
            if param.metavar is None:
                param.metavar = "" if param.is_flag or param.count else _type_label(param, ctx)
        elif type(param) is TyperArgument:
            hint = param.display_name_raw
            name = param.metavar or (param.name or "value").upper()
            param.metavar = name if param.nargs == 1 or name.endswith("...") else f"{name}..."
            param.__class__ = _Argument
            assert isinstance(param, _Argument)
            param.hint = hint
    return command


def readable_help(command: Any) -> Any:
    """``command`` and its sub-commands with their help reflowed and their values named."""
    if command.help:
        command.help = _reflowed(command.help)
    name_metavars(command)
    for sub in (getattr(command, "commands", None) or {}).values():
        readable_help(sub)
    return command
