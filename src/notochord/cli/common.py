"""What every command shares: the data directory option, output, and exit codes.

Exit codes mean the same in every command:

    0  success            3  not found (also: no vault,  5  quota reached
    1  unexpected error      no such organization)     6  revert refused (superseded, not empty)
    2  bad usage or invalid input (validation, manifest, configuration), a read-only data directory,
       or a space written by a newer notochord
    4  permission refused
    7  a gem run timed out
    8  the disk is full (nothing was written; free some space and retry)
    9  ``notochord check`` found problems (left after ``--repair``)
   10  busy (retry later)
   11  the database server cannot be reached or refused the login (check it and ``database_url``, retry)
  130  interrupted by Ctrl-C
  141  the output was cut off: whoever read it stopped reading (``| head``); what the command did stays done

A failure keeps its own code when nobody reads its message (``2>&1 | head``), and a standard stream
the process was started without (``>&-``) is the null device (:func:`standard_streams_opened`).

Only ``init`` (and ``restore``) create a vault: every other command opens an existing one, so a
mistyped ``--data-dir`` or ``--org`` is refused instead of answering from a new, empty vault.
With ``--json`` an error is printed to stderr as ``{"error": {"code": …, "message": …, "exitCode": …}}``:
the code of the exception tree, ``E_USAGE`` for a command line that could not be parsed, or
``E_INTERRUPTED`` for a command stopped by Ctrl-C that says what it left (exit code 130).

Human output never lets a stored string drive the terminal: names, titles, summaries and paths may
hold escape sequences (ANSI colours, window titles, screen clears), C1 controls or Unicode bidi
overrides, so every stored string is printed through :func:`printable` (one line of a listing) or
:func:`printable_text` (a body, a log), which show those characters as ``\\uXXXX`` escapes. The
same spelling as JSON's, so a string reads the same in both outputs; ``--json`` keeps it exact.

This module stays light to import (no store, no pydantic): ``notochord --help`` loads only it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

import notochord
from notochord import errors
from notochord.settings import Settings

__all__ = [
    "DataDir",
    "JsonFlag",
    "asked_for",
    "emit",
    "exit_code_for",
    "fail",
    "given_path",
    "ignore_unusable_columns",
    "interrupted",
    "json_text",
    "listed_space",
    "open_space",
    "opened",
    "output_closed_quietly",
    "printable",
    "printable_text",
    "report_usage_error",
    "reporting",
    "resolve_data_dir",
    "say_on_stderr",
    "space_status",
    "standard_streams_opened",
]


def given_path(value: str | Path) -> Path:
    """A path named on the command line; an empty or blank one is bad usage.

    ``Path("")`` is the current folder, so ``--data-dir "$UNSET"`` or ``docs import "$UNSET"`` would
    otherwise make a vault in, or import, whatever folder the command happened to start in.
    """
    if isinstance(value, Path):
        return value  # a default, already a path
    if not value.strip():
        raise typer.BadParameter("the path is empty; name a file or folder (. for the current folder)")
    return Path(value)


DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        envvar="NOTOCHORD_DATA_DIR",
        parser=given_path,
        help="The data directory (default: the per-user data folder, e.g. ~/.local/share/notochord).",
        show_default=False,
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
OrgOption = Annotated[
    str | None, typer.Option("--org", help="Use this organization's space instead of the personal one.")
]

_EXIT_CODES: tuple[tuple[type[errors.NotochordError], int], ...] = (
    (errors.SpaceNotFoundError, 3),
    (errors.KnowledgeNotFoundError, 3),
    (errors.FileNotFoundInWorkspaceError, 3),
    (errors.GemNotFoundError, 3),
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
    (errors.BusyError, 10),
    (errors.StoreLockedError, 10),
    (errors.ReadOnlyStoreError, 2),
    (errors.StoreVersionError, 2),
    (errors.StoreUnreachableError, 11),
)


_COLUMNS = re.compile(r"0*([2-9][0-9]|[1-9][0-9]{2,3})")
"""The widths output is laid out for: 20 to 9999 columns."""


def ignore_unusable_columns() -> None:
    """Forget a ``COLUMNS`` no output can be laid out in, so that the terminal's own width is used.

    rich takes ``COLUMNS=0`` as a width of zero and prints nothing at all (an error would exit with
    its code and no word of why); below 20 columns a message box has no room for its text; a width
    of millions takes minutes to pad, and one of thousands of digits stops Python's int().
    """
    if "COLUMNS" in os.environ and not _COLUMNS.fullmatch(os.environ["COLUMNS"].strip()):
        del os.environ["COLUMNS"]


ignore_unusable_columns()


def _discard(stream: Any) -> None:
    """Send the rest of ``stream``, whose reader is gone, to the null device: what it still holds
    and whatever is written to it later (Python's own flush at exit included) goes nowhere, instead
    of failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
        stream.flush()
    except (OSError, ValueError):  # not a file (a test's capture): nothing left to write
        pass


class _MessageConsole(Console):
    """The console of messages on stderr. When stderr has no reader any more, the message is lost but
    the command goes on to its own exit code: rich's own answer would be exit code 1, so that a
    "not found" piped into ``head`` would read as an unexpected error."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        _discard(sys.stderr)


console = _MessageConsole(stderr=True)


def say_on_stderr(text: str) -> None:
    """Write ``text`` (a whole message) to stderr; a stderr whose reader is gone loses it quietly."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except BrokenPipeError:
        _discard(sys.stderr)


def standard_streams_opened() -> None:
    """Give a standard stream the process was started without (``>&-``, ``2>&-``, ``<&-``) the null
    device, as if it had been redirected there.

    Python leaves ``sys.stdout`` None for a closed descriptor, which printing trips over, and the
    next file opened (a space's database, the master key) would take the free number 0, 1 or 2:
    whatever is written to "stdout" (by a gem's process, say) would then land in that file.
    """
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, os.O_RDONLY if mode == "r" else os.O_WRONLY)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False))  # noqa: SIM115  (the process's own stream)


INTERRUPTED = 130
"""The exit code of a command stopped by Ctrl-C (128 + SIGINT)."""
OUTPUT_CLOSED = 141
"""The exit code of a command whose reader closed the pipe before the output was written
(128 + SIGPIPE, what a shell shows for ``cat`` or ``grep`` in the same place)."""

# What a terminal acts on instead of showing: C0 controls (ESC starts ANSI sequences), DEL, C1
# controls (0x9B is a one-byte CSI on some terminals), and the bidi embeddings, overrides and
# isolates that make text read in another order than it is stored ("Trojan Source").
_UNSAFE = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_ONE_LINE = {code: f"\\u{code:04x}" for code in _UNSAFE}
_MULTI_LINE = {code: shown for code, shown in _ONE_LINE.items() if chr(code) not in "\n\t"}


def printable(value: object) -> str:
    """``value`` as text for one line of human output: every control character (line breaks and tabs
    included, so a name cannot forge a row) and bidi override shown as a ``\\uXXXX`` escape.

    Example: a name stored as ``Ann`` + ESC + ``[2J`` (clear the screen) prints as ``Ann\\u001b[2J``.
    """
    return str(value).translate(_ONE_LINE)


def printable_text(text: str) -> str:
    """Like :func:`printable`, for text of several lines (a document's body, a log, a whole listing):
    line breaks and tabs are kept."""
    return text.translate(_MULTI_LINE)


def exit_code_for(error: errors.NotochordError) -> int:
    for cls, code in _EXIT_CODES:
        if isinstance(error, cls):
            return code
    return 1


class State:
    data_dir: Path | None = None


state = State()


def resolve_data_dir(data_dir: Path | None) -> Path | None:
    """The data directory a command names: on its command line, else before it, else the environment.

    ``--data-dir`` is accepted before and after the sub-command and both read ``NOTOCHORD_DATA_DIR``,
    so a value typed anywhere on the command line must win over the one from the environment.

    A relative directory is made absolute here, once, so that every path printed from it (the
    spaces' files, the vault in ``status``) still names the same place when read in another folder.
    """
    from typer._click.core import ParameterSource
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    typed_here = ctx is not None and ctx.get_parameter_source("data_dir") is ParameterSource.COMMANDLINE
    chosen = data_dir if data_dir is not None and typed_here else state.data_dir or data_dir
    return None if chosen is None else _absolute(chosen)


def _absolute(path: Path) -> Path:
    """``path`` absolute, its links followed where they lead somewhere; a link loop or an unknown
    ``~user`` is left for opening the vault to name as the problem it is."""
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def _wants_json() -> bool:
    """Whether the running command was given ``--json`` (errors then go out as JSON too)."""
    # typer keeps click's context stack in its vendored copy of click; no public accessor yet.
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    while ctx is not None:
        if ctx.params.get("as_json"):
            return True
        ctx = ctx.parent
    return False


def json_text(value: Any, *, stream: Any, indent: int | None = None) -> str:
    """``value`` as JSON that ``stream`` can carry: non-ASCII text as itself where the stream's
    encoding holds it, else as ``\\uXXXX`` escapes.

    A file name of undecodable bytes reaches here as lone surrogates, which no encoding holds, and a
    stream may be ASCII or Latin-1 (``PYTHONIOENCODING``, an old locale): written as they are, those
    would stop the command with an encoding error after its work was done, or (on stderr, which
    backslash-escapes what it cannot encode) leave ``\\xe9`` in the text, which is not JSON.
    """
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return json.dumps(value, ensure_ascii=True, indent=indent)
    return text


def report_usage_error(message: str, *, exit_code: int) -> NoReturn:
    """After ``--json``: a command line that could not be parsed, as JSON on stderr (code ``E_USAGE``)."""
    body = {"error": {"code": "E_USAGE", "message": message, "exitCode": exit_code}}
    say_on_stderr(json_text(body, stream=sys.stderr) + "\n")
    raise SystemExit(exit_code)


def _said(error: errors.NotochordError) -> str:
    """The sentence of ``error`` for the person at the terminal: the file errors a gem receives start
    with their code (``E_NOT_FOUND: the folder …``), which the CLI already gives on its own."""
    return error.message.removeprefix(f"{error.code}: ")


def fail(error: errors.NotochordError) -> NoReturn:
    """Print ``error`` (its text, never read as markup, or JSON after ``--json``) and exit with its code."""
    code = exit_code_for(error)
    if _wants_json():
        body = {"error": {"code": error.code, "message": _said(error), "exitCode": code}}
        say_on_stderr(json_text(body, stream=sys.stderr) + "\n")
    else:
        shown = escape(printable_text(_said(error)))
        console.print(f"[red]error:[/red] {shown}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(code) from None


def interrupted(message: str) -> NoReturn:
    """After Ctrl-C: say what stays done and how to finish or undo it, and exit 130 as shells expect
    of an interrupted command (after ``--json``, as JSON with the code ``E_INTERRUPTED``)."""
    if _wants_json():
        body = {"error": {"code": "E_INTERRUPTED", "message": message, "exitCode": INTERRUPTED}}
        say_on_stderr(json_text(body, stream=sys.stderr) + "\n")
    else:
        console.print(f"interrupted: {escape(printable_text(message))}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(INTERRUPTED) from None


def _discard_closed_output() -> bool:
    """Send the rest of each standard stream whose reader is gone to the null device, so that
    nothing (Python's own flush at exit included) writes to the closed pipe again; whether one was."""
    closed = False
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            closed = True
            _discard(stream)
        except (OSError, ValueError):
            pass
    return closed


def _succeeded(error: BaseException) -> bool:
    if isinstance(error, typer.Exit):
        return error.exit_code == 0
    return isinstance(error, SystemExit) and error.code in (0, None)


def _stdout_is_null() -> bool:
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (OSError, ValueError):
        return False


def _rich_met_a_closed_pipe(error: BaseException, *, stdout_was_null: bool) -> bool:
    """Whether rich answered a closed pipe its own way (help pages, messages): it sends stdout to
    the null device and exits 1."""
    return isinstance(error, SystemExit) and error.code == 1 and not stdout_was_null and _stdout_is_null()


@contextlib.contextmanager
def output_closed_quietly() -> Iterator[None]:
    """Exit :data:`OUTPUT_CLOSED`, without a word or a traceback, when the output's reader is gone.

    ``notochord docs list --json | head -1`` closes the pipe once ``head`` has its line: what is
    left has no reader, which is no failure of the command. Output still buffered is written
    before leaving, so a closed pipe is found here rather than by Python at exit. A command that
    fails on its own keeps its exit code, whether or not its output could be written.
    """
    stdout_was_null = _stdout_is_null()
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_closed_output()
        raise typer.Exit(OUTPUT_CLOSED) from None
    except BaseException as error:  # the command's own ending (--help shown, an error's exit code)
        closed = _discard_closed_output()
        if (closed and _succeeded(error)) or _rich_met_a_closed_pipe(error, stdout_was_null=stdout_was_null):
            raise typer.Exit(OUTPUT_CLOSED) from None
        raise


@contextlib.contextmanager
def reporting() -> Iterator[None]:
    """Turn notochord errors raised inside into a message and an exit code."""
    try:
        yield
    except errors.NotochordError as error:
        fail(error)


@contextlib.contextmanager
def asked_for(what: str, ref: object, see: str) -> Iterator[None]:
    """Name what was asked for when it is not found: ``no fact 999; see them with: …``.

    The store answers ``not found: no fact`` alone on purpose (a gem must not learn what exists
    behind a ref it cannot address); the person at the terminal owns the vault and typed the id.

    Args:
        what: the kind of object the id names, as the store says it (``fact``, ``entity``…).
        ref: the id as typed.
        see: the command that lists the ones there are (``see them with: notochord facts lookup``).
    """
    try:
        yield
    except errors.KnowledgeNotFoundError as error:
        if ref is None or error.what != what or error.ref is not None:
            raise
        raise errors.KnowledgeNotFoundError(what, f"{ref}; {see}") from None


@contextlib.contextmanager
def opened(data_dir: Path | None, *, create: bool = False) -> Iterator[notochord.Notochord]:
    """Open the vault; turn notochord errors into a message and an exit code.

    Commands are short-lived, so they embed nothing themselves: a batch started on the way would
    only delay the exit. Passages they leave pending are handed to a background worker as they exit
    (:mod:`notochord.cli.handoff`), unless ``index_in_background`` is off; ``serve`` embeds as it
    goes, and ``notochord reindex`` embeds in the foreground.

    Args:
        create: make the vault when the directory holds none (``init`` only).
    """
    with reporting():
        chosen = Settings.load()
        settings = Settings.load(index_in_background=False)
        with notochord.open(resolve_data_dir(data_dir), settings, create=create) as nc:
            yield nc
            model_id = nc.embedding_model_id
            spaces = nc.space_stores()
        if chosen.index_in_background and model_id is not None:
            from notochord.cli.handoff import hand_off

            hand_off(nc.data_dir, spaces, model_id)


def listed_space(nc: notochord.Notochord, name: str) -> notochord.Space:
    """The space ``name``, as :meth:`notochord.Notochord.spaces` lists it.

    Every ``*.db`` file in the spaces folder is listed, but only ``personal.db`` and ``org-ID.db``
    are read as spaces: another one (a copy the user made beside the real file, a sync tool's
    "conflicted copy", capitals in the id) is a :class:`~notochord.errors.StorageError` naming the
    file, which ``status`` and ``check`` show as a problem of its own instead of failing whole.
    """
    try:
        return nc.space(name)
    except (errors.SpaceNotFoundError, errors.ConfigurationError) as error:
        store = dict(nc.space_stores()).get(name)
        if not isinstance(store, Path):
            raise
        raise errors.StorageError(
            f"the file {store} is in the spaces folder, but no space reads it (a space's file is personal.db, "
            f"or org-ID.db with an ID of lowercase letters, digits, - and _): move it out of {store.parent}"
        ) from error


def space_status(nc: notochord.Notochord, name: str) -> dict[str, Any]:
    """The counts of the space ``name``, or why it cannot be read: one damaged space file must not
    hide the others (``notochord check`` then says more)."""
    try:
        return listed_space(nc, name).status()
    except (errors.StorageFullError, errors.StoreUnreachableError):
        raise  # the disk or the server, not this space: every space would say the same
    except errors.StorageError as error:
        return {"space": name, "error": {"code": error.code, "message": error.message}}


@contextlib.contextmanager
def open_space(data_dir: Path | None, org: str | None = None) -> Iterator[notochord.Space]:
    """The personal space, or the space of an organization that exists (``init --org`` makes one)."""
    with opened(data_dir) as nc:
        yield nc.org(org) if org is not None else nc.personal


def _plain(value: Any) -> Any:
    # Duck-typed so that printing never needs pydantic imported up front.
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _holds_model(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return any(_holds_model(item) for item in value)
    return callable(getattr(value, "model_dump", None)) and not isinstance(value, type)


def _json_ready(value: Any) -> Any:
    """``value`` for ``--json``: a model's field names in camelCase, as every key the CLI prints.

    Only the names of model fields are renamed: a dict's keys are left as they are, since the
    command chose them, or they are the user's own data (a fact's value, a run's output).
    """
    fields = getattr(type(value), "model_fields", None)
    if _holds_model(value) and not isinstance(value, list | tuple) and isinstance(fields, dict):
        shaped: dict[str, Any] = {}
        for key, dumped in value.model_dump(mode="json").items():
            if key not in fields:
                shaped[key] = dumped
                continue
            inner = getattr(value, key, None)
            shaped[_camel(key)] = _json_ready(inner) if _holds_model(inner) else dumped
        return shaped
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    return value


def emit(value: Any, *, as_json: bool, text: str | None = None) -> None:
    """Print ``value`` as JSON (keys in camelCase), or ``text`` (default: a readable rendering) for people.

    ``text`` should build each line from :func:`printable` fields; it is passed through
    :func:`printable_text` all the same, so a field that was missed can still break only its own
    line, never take over the terminal.
    """
    if as_json:
        sys.stdout.write(json_text(_json_ready(value), stream=sys.stdout, indent=2) + "\n")
        return
    if text is not None:
        typer.echo(printable_text(text))
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
        return printable(
            "  ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in item.items() if v is not None)
        )
    return printable(item)
