"""What every command shares: the data directory option, output, and exit codes.

Exit codes mean the same in every command:

    0  success            3  not found              5  quota reached
    1  unexpected error   4  permission refused     6  revert refused (superseded, not empty)
    2  bad usage or invalid input (validation, manifest, configuration), or a read-only data directory
    8  the disk is full (nothing was written; free some space and retry)
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

import notochord
from notochord import errors
from notochord.settings import Settings

__all__ = ["DataDir", "JsonFlag", "emit", "exit_code_for", "fail", "open_space", "opened", "reporting"]

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        envvar="NOTOCHORD_DATA_DIR",
        help="The data directory (default ./.notochord).",
        show_default=False,
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
OrgOption = Annotated[
    str | None, typer.Option("--org", help="Use this organization's space instead of the personal one.")
]

_EXIT_CODES: tuple[tuple[type[errors.NotochordError], int], ...] = (
    (errors.KnowledgeNotFoundError, 3),
    (errors.FileNotFoundInWorkspaceError, 3),
    (errors.KnowledgePermissionError, 4),
    (errors.NetworkPermissionError, 4),
    (errors.FilePermissionError, 4),
    (errors.KnowledgeQuotaError, 5),
    (errors.RevertError, 6),
    (errors.KnowledgeValidationError, 2),
    (errors.ManifestError, 2),
    (errors.ConfigurationError, 2),
    (errors.GemError, 2),
    (errors.StorageFullError, 8),
    (errors.ReadOnlyStoreError, 2),
)

console = Console(stderr=True)


def exit_code_for(error: errors.NotochordError) -> int:
    for cls, code in _EXIT_CODES:
        if isinstance(error, cls):
            return code
    return 1


class State:
    data_dir: Path | None = None


state = State()


def _resolve_dir(data_dir: Path | None) -> Path | None:
    return data_dir or state.data_dir


def fail(error: errors.NotochordError) -> NoReturn:
    """Print ``error`` (its text, never read as markup) and exit with its code."""
    console.print(f"[red]error:[/red] {escape(error.message)}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(exit_code_for(error)) from None


@contextlib.contextmanager
def reporting() -> Iterator[None]:
    """Turn notochord errors raised inside into a message and an exit code."""
    try:
        yield
    except errors.NotochordError as error:
        fail(error)


@contextlib.contextmanager
def opened(data_dir: Path | None) -> Iterator[notochord.Notochord]:
    """Open the data directory; turn notochord errors into a message and an exit code.

    Commands are short-lived, so they embed nothing in the background: a batch started on the way
    would only delay the exit. ``notochord reindex`` embeds what is pending; ``serve`` embeds as it goes.
    """
    with reporting():
        settings = Settings.load(index_in_background=False)
        with notochord.open(_resolve_dir(data_dir), settings) as nc:
            yield nc


@contextlib.contextmanager
def open_space(data_dir: Path | None, org: str | None = None) -> Iterator[notochord.Space]:
    with opened(data_dir) as nc:
        yield nc.org(org) if org else nc.personal


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def emit(value: Any, *, as_json: bool, text: str | None = None) -> None:
    """Print ``value`` as JSON, or ``text`` (default: a readable rendering) for people."""
    if as_json:
        sys.stdout.write(json.dumps(_plain(value), ensure_ascii=False, indent=2) + "\n")
        return
    if text is not None:
        typer.echo(text)
        return
    plain = _plain(value)
    if isinstance(plain, list):
        for item in plain:
            typer.echo(_line(item))
        if not plain:
            typer.echo("(none)")
    else:
        typer.echo(_line(plain))


def _line(item: Any) -> str:
    if isinstance(item, dict):
        return "  ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in item.items() if v is not None)
    return str(item)
