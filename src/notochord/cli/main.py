"""The root command: global options, ``init`` and ``status``, and the sub-command groups.

The sub-commands load on first use: ``notochord --help`` lists them from the table below without
importing any of them, and ``notochord facts …`` imports only the facts commands. That keeps the
store, the web stack and the model library out of every start-up that does not need them.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from typer import rich_utils
from typer._click.exceptions import ClickException, NoSuchOption
from typer.core import TyperGroup
from typer.exceptions import Abort

from notochord.cli.common import (
    INTERRUPTED,
    DataDir,
    JsonFlag,
    OrgOption,
    emit,
    ignore_unusable_columns,
    opened,
    output_closed_quietly,
    printable,
    report_usage_error,
    reporting,
    say_on_stderr,
    space_status,
    standard_streams_opened,
    state,
)
from notochord.cli.help_text import name_metavars, readable_help

__all__ = ["LAZY_COMMANDS", "app", "main"]


@dataclass(frozen=True)
class _Lazy:
    """A sub-command (``kind="group"``: a typer app; ``"command"``: a function) and its one-line help."""

    module: str
    attribute: str
    kind: str
    help: str
    hidden: bool = False  # started by the product itself, not typed by people: left out of --help


_CLI = "notochord.cli."
LAZY_COMMANDS: dict[str, _Lazy] = {
    "facts": _Lazy(_CLI + "facts_cmd", "app", "group", "Facts about you and the people you know."),
    "entities": _Lazy(_CLI + "entities_cmd", "app", "group", "People, organisations and places."),
    "changes": _Lazy(_CLI + "changes_cmd", "app", "group", "Everything written, by whom, and undo."),
    "gem": _Lazy(_CLI + "gem_cmd", "app", "group", "Install gems and switch their permissions on or off."),
    "runs": _Lazy(_CLI + "runs_cmd", "app", "group", "Runs of gem tools: list, show, undo."),
    "mcp": _Lazy(
        _CLI + "mcp_cmd", "app", "group", "Connect AI assistants over MCP, each with its own permission switches."
    ),
    "files": _Lazy(
        _CLI + "files_cmd",
        "app",
        "group",
        "See and undo what gems changed in your folders; choose a gem's working folder.",
    ),
    "network": _Lazy(
        _CLI + "network_cmd", "app", "group", "Choose which external hosts gems may reach, and which local addresses."
    ),
    "docs": _Lazy(
        _CLI + "docs_cmd", "app", "group", "Documents: import your files, then list, show, move or delete them."
    ),
    "collections": _Lazy(_CLI + "collections_cmd", "app", "group", "Collections: the folders your documents live in."),
    "search": _Lazy(
        _CLI + "search_cmd",
        "search",
        "command",
        "Search your documents by words and meaning; an empty query lists the newest documents.",
    ),
    "reindex": _Lazy(
        _CLI + "search_cmd",
        "reindex",
        "command",
        "Embed every passage not yet searchable by meaning, with a progress bar and an ETA.",
    ),
    "serve": _Lazy(
        _CLI + "serve_cmd",
        "serve",
        "command",
        "Run the console, the knowledge-base REST service (OpenAPI at /docs) and MCP over HTTP until Ctrl-C.",
    ),
    "token": _Lazy(
        _CLI + "serve_cmd", "token", "command", "Print an HS256 development token signed with the service's secret."
    ),
    "backup": _Lazy(
        _CLI + "backup_cmd",
        "backup",
        "command",
        "Write a consistent snapshot of the whole vault, even while it is in use.",
    ),
    "restore": _Lazy(_CLI + "backup_cmd", "restore", "command", "Bring a backup back into an empty data directory."),
    "migrate-store": _Lazy(
        _CLI + "migrate_store_cmd",
        "migrate_store",
        "command",
        "Copy a space from its SQLite file to a PostgreSQL server, counts checked, the file untouched.",
    ),
    "console-url": _Lazy(
        _CLI + "console_cmd",
        "console_url",
        "command",
        "Print a one-time link that signs this browser in to the console (valid for a day).",
    ),
    "embed-worker": _Lazy(
        _CLI + "embed_worker",
        "embed_worker",
        "command",
        "Embed every pending passage in the background, then exit (started by commands that write).",
        hidden=True,
    ),
    "check": _Lazy(
        _CLI + "check_cmd",
        "check_command",
        "command",
        "Check that indexes, vectors and counters agree with the documents and changes they come from.",
    ),
}


_COMPLETION_OPTIONS = ("install_completion", "show_completion")


def _load(name: str, entry: _Lazy) -> Any:
    """The click command of a lazy entry, built the way ``add_typer`` / ``command()`` would mount it."""
    target = getattr(importlib.import_module(entry.module), entry.attribute)
    if name == "gem":
        _mount_gem_run(target)
    if entry.kind == "group":
        command = typer.main.get_command(target)
        # the program offers no shell completion (add_completion=False below), so no group does
        command.params = [p for p in command.params if p.name not in _COMPLETION_OPTIONS]
    else:
        single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        single.command(name)(target)
        command = typer.main.get_command(single)
    command.name = name
    command.hidden = entry.hidden
    return readable_help(command)


def _mount_gem_run(gem_app: typer.Typer) -> None:
    # `gem run` lives with the other run commands but is spelt under `gem`, as the README shows.
    from notochord.cli import runs_cmd

    if all(info.callback is not runs_cmd.run for info in gem_app.registered_commands):
        gem_app.command("run")(runs_cmd.run)


class _Commands(MutableMapping[str, Any]):
    """The group's commands: the ones mounted directly, then the lazy ones, loaded when looked up."""

    def __init__(self, eager: Mapping[str, Any]) -> None:
        self._loaded: dict[str, Any] = {name: readable_help(command) for name, command in eager.items()}

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            entry = LAZY_COMMANDS.get(name)
            if entry is None:
                raise KeyError(name)
            self._loaded[name] = _load(name, entry)
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._loaded
        yield from (n for n in LAZY_COMMANDS if n not in self._loaded)

    def __len__(self) -> int:
        return len(set(self._loaded) | set(LAZY_COMMANDS))

    def loaded(self, name: str) -> Any | None:
        return self._loaded.get(name)


class _Placeholder(typer.core.TyperCommand):
    """Stands for an unloaded command in the root help listing: its name and one-line help only."""


class LazyGroup(TyperGroup):
    """The root group: lists every command from the table, imports one only to run it or show its help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        name_metavars(self)  # its own options; each command's are named as it loads
        self.commands = _Commands(self.commands)
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:  # noqa: ARG002  (click passes it)
        return list(self.commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:  # noqa: ARG002  (click passes it)
        commands = self.commands
        if self._listing and isinstance(commands, _Commands) and commands.loaded(cmd_name) is None:
            entry = LAZY_COMMANDS.get(cmd_name)
            if entry is not None:
                return _Placeholder(name=cmd_name, help=entry.help, callback=None, hidden=entry.hidden)
        return commands.get(cmd_name)

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        with output_closed_quietly():  # --help is printed while the command line is read
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with output_closed_quietly():
            return super().invoke(ctx)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line; after ``--json`` a usage error is reported as JSON too.

        A command line that could not be parsed is reported here rather than by typer, so that it
        keeps its exit code when nobody reads stderr any more (typer's console would exit 1).
        """
        ignore_unusable_columns()
        argv = list(sys.argv[1:] if args is None else args)
        if not standalone_mode:
            return super().main(argv, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        as_json = "--json" in argv
        try:
            result = super().main(argv, prog_name, complete_var, False, windows_expand_args, **extra)
        except ClickException as error:
            _explain_negative_number(error, argv)
            if as_json:
                report_usage_error(error.format_message(), exit_code=error.exit_code)
            with _message_without_reader():
                rich_utils.rich_format_error(error)
            sys.exit(error.exit_code)
        except Abort:
            if as_json:
                report_usage_error("aborted", exit_code=1)
            with _message_without_reader():
                rich_utils.rich_abort_error()
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)


_NEGATIVE = re.compile(r"-[0-9]+")


def _explain_negative_number(error: ClickException, argv: Sequence[str]) -> None:
    """Say how to give a negative number the parser took for an option (``facts retract -1``).

    Such a number is read as short options: ``-12`` is reported as the unknown option ``-1``.
    """
    if not isinstance(error, NoSuchOption) or not _NEGATIVE.match(error.option_name):
        return
    options = argv[: argv.index("--")] if "--" in argv else argv
    typed = next((a for a in options if _NEGATIVE.fullmatch(a)), None)
    if typed is None:
        return
    command = error.ctx.command_path if error.ctx is not None else "notochord …"
    error.message = (
        f"No such option: {typed}; a number that starts with - is read as an option: "
        f"put -- before it ({command} -- {typed})"
    )
    error.possibilities = None


@contextlib.contextmanager
def _message_without_reader() -> Iterator[None]:
    """Print a message on stderr; when its reader is gone (rich then exits 1), go on quietly."""
    try:
        yield
    except SystemExit:
        say_on_stderr("")  # finds the closed pipe and sends the rest of stderr to the null device


# The same table as in notochord.cli.common and the README; typer prints each paragraph as one line.
_EXIT_CODES_HELP = (
    "Exit codes: 0 success, 1 unexpected error, 2 bad usage or invalid input, 3 not found (also: no vault, "
    "no such organization), 4 permission refused, 5 quota reached, 6 revert refused (later work builds on it), "
    "7 gem run timed out, 8 disk is full (nothing was written), 9 check found problems, 10 busy (retry later), "
    "11 database server unreachable or login refused, 130 interrupted by Ctrl-C, "
    "141 output was cut off (its reader stopped reading; what the command did stays done)."
    "\n\n"
    'With --json an error is printed on stderr as {"error": {"code": …, "message": …, "exitCode": …}}.'
)

app = typer.Typer(
    name="notochord",
    cls=LazyGroup,
    help="A knowledge vault you own: facts, entities, documents, and the gems allowed to use them.",
    epilog=_EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

InitOrg = Annotated[
    str | None, typer.Option("--org", help="Also create this organization's space (1-63 of a-z, 0-9, - and _).")
]


@app.callback()
def _root(data_dir: DataDir = None) -> None:
    state.data_dir = data_dir


@app.command()
def init(data_dir: DataDir = None, org: InitOrg = None, as_json: JsonFlag = False) -> None:
    """Create the data directory, its master key and the personal space, and with --org that space (idempotent)."""
    if org is not None:
        from notochord.app import check_org_id

        with reporting():
            check_org_id(org)  # before anything is made: a refused id must leave no vault behind
    with opened(data_dir, create=True) as nc:
        personal = nc.personal
        space = nc.org(org, create=True) if org is not None else personal
        result = {
            "dataDir": str(Path(nc.data_dir).resolve()),
            "spaces": nc.spaces(),
            "personal" if org is None else "space": str(space.path),
        }
    emit(result, as_json=as_json, text=f"notochord data directory ready at {printable(result['dataDir'])}")


def _status_line(row: Mapping[str, Any]) -> str:
    from notochord.cli.embedding import pending_text

    error = row.get("error")
    if isinstance(error, Mapping):
        return f"  {row['space']:<20} cannot be read: {printable(str(error['message']))}"
    return (
        f"  {row['space']:<20} facts {row['facts']:>7}   entities {row['entities']:>6}   "
        f"documents {row['documents']:>6}   collections {row['collections']:>4}   changes {row['changes']:>7}"
        + pending_text(row)
    )


@app.command()
def status(data_dir: DataDir = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Show every space (or only the organization's, with --org) with its counts of facts, entities and changes."""
    with opened(data_dir) as nc:
        if org is not None:
            rows = [nc.org(org).status()]
        else:
            nc.personal  # noqa: B018  (make sure the personal space exists before listing)
            rows = [space_status(nc, name) for name in nc.spaces()]
        data_dir_text = str(Path(nc.data_dir).resolve())
    if as_json:
        emit({"dataDir": data_dir_text, "spaces": rows}, as_json=True)
        return
    from notochord.cli.embedding import embedding_note

    lines = [f"data directory: {printable(data_dir_text)}"]
    lines += [_status_line(r) for r in rows]
    lines += embedding_note(rows, data_dir_text)
    emit(None, as_json=False, text="\n".join(lines))


def main() -> None:
    standard_streams_opened()
    try:
        app()
    except KeyboardInterrupt:  # before a command runs (the command tree still being built): no traceback
        raise SystemExit(INTERRUPTED) from None
