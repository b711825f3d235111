"""What the command line leaves on a terminal, in a log and in a pipe.

- The progress bar of ``docs import`` and ``reindex`` is drawn on a terminal and cleared when it
  stops; off a terminal (stderr sent to a file, a pipe, a test's capture) it writes nothing at all
  (before: rich wrote an empty line there when the bar stopped).
- Every command's ``--help`` names its values as a person reads them: no placeholder after a flag,
  ``TEXT``, ``N``, ``PATH`` after an option, ``GEM_ID`` / ``[SUBJECT]`` / ``PATHS...`` for arguments
  (before: typer's ``<bool>``, ``<str>``, ``<list[Path]>`` and ``{gem_id}``).
- An error reads as a sentence: the code a gem's file errors start with (``E_NOT_FOUND: …``) is not
  repeated in it, since the CLI gives the code on its own (``--json``) and as the exit code.
- A command whose reader stops reading (``| head``) exits 141 (128 + SIGPIPE, as ``cat`` or ``grep``
  would) without a word on stderr; what it did stays done, and a command that failed keeps its own
  exit code (before: exit 1, the code of an unexpected error).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer._click import Context
from typer.testing import CliRunner

import notochord
from notochord.cli import app
from notochord.cli.progress import progress_bar
from notochord.settings import Settings
from pseudo_terminal import on_a_terminal

OUTPUT_CLOSED = 141  # 128 + SIGPIPE, as the README's table of exit codes says
ENV = {"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_INDEX_IN_BACKGROUND": "false", "COLUMNS": "100", "TERM": "xterm"}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A vault with one fact and 40 documents: enough JSON to fill a pipe's buffer."""
    data = tmp_path / "vault"
    settings = Settings(data_dir=data, index_in_background=False, embedder="none")
    with notochord.open(data, settings, embedder=None) as nc:
        nc.personal.user.facts.put(predicate="work.title", value="baker")
        for n in range(40):
            nc.personal.user.documents.upsert(collection="keep", title=f"note {n}", body="word " * 400)
    return data


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(3):
        (folder / f"n{n}.md").write_text(f"# note {n}\n\nsome text {n}\n")
    return folder


def _command(data: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "notochord", "--data-dir", str(data), *args]


# ---------------------------------------------------------------- the progress bar


def test_the_progress_bar_off_a_terminal_writes_not_even_an_empty_line(vault: Path, notes: Path) -> None:
    """K-DOC-02: an import's progress bar writes nothing where it cannot be drawn (before: stderr
    held one empty line, left when the bar stopped)."""
    result = CliRunner().invoke(app, ["--data-dir", str(vault), "docs", "import", str(notes)], env=ENV)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout.splitlines()[-1] == "imported 3 files into keep: 3 created, 0 updated, 0 unchanged"
    assert "" not in result.stdout.splitlines()
    with contextlib.redirect_stderr(io.StringIO()):  # stderr a file, whatever runs the tests
        assert progress_bar(hidden=False).disable, "no terminal: no bar (docs import's, and reindex's)"


def _screen(output: str, rows: int = 24, columns: int = 100) -> list[str]:
    """What a VT100-like terminal of ``rows`` lines shows after ``output``: the few controls rich
    uses (carriage return, line feed, cursor up, erase line, colours, cursor visibility)."""
    screen = [""] * rows
    row = column = 0
    for token in re.findall(r"\x1b\[\??[0-9;]*[A-Za-z]|[\r\n]|[^\x1b\r\n]+", output):
        if token == "\r":
            column = 0
        elif token == "\n":
            row += 1
            if row == rows:
                screen, row = [*screen[1:], ""], rows - 1
        elif token.endswith("A") and token.startswith("\x1b["):
            row = max(0, row - int(token[2:-1] or 1))
        elif token == "\x1b[2K":
            screen[row] = ""
        elif token.startswith("\x1b"):
            continue  # colours, cursor shown or hidden
        else:
            line = screen[row].ljust(column)
            screen[row] = line[:column] + token + line[column + len(token) :]
            column += len(token)
    return [line.rstrip() for line in screen]


def _on_a_terminal(argv: list[str]) -> tuple[int, str]:
    """Run ``argv`` with its output on a pseudo-terminal; its exit code and all it wrote."""
    return on_a_terminal(argv, ENV, timeout=60)


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")
def test_the_progress_bar_on_a_terminal_is_drawn_then_leaves_the_screen_clean(vault: Path, notes: Path) -> None:
    """K-DOC-02: on a terminal the bar shows while files are imported, then nothing of it is left:
    no bar, no empty line between the command and its summary, and the prompt comes right after."""
    code, output = _on_a_terminal(_command(vault, "docs", "import", str(notes)))
    assert code == 0, output
    assert "importing" in output or "n0.md" in output.split("created")[0], "the bar was drawn"
    shown = _screen("$ notochord docs import notes\r\n" + output + "$ ")
    assert [line for line in shown if line] == [
        "$ notochord docs import notes",
        f"created   {notes / 'n0.md'}",
        f"created   {notes / 'n1.md'}",
        f"created   {notes / 'n2.md'}",
        "imported 3 files into keep: 3 created, 0 updated, 0 unchanged",
        "$",
    ]
    assert shown[: shown.index("$") + 1] == [line for line in shown if line], "no empty line in between"


# ---------------------------------------------------------------- --help of every command


def _command_paths() -> Iterator[list[str]]:
    root = typer.main.get_command(app)

    def walk(command: Any, path: list[str]) -> Iterator[list[str]]:
        yield path
        commands = getattr(command, "commands", None) or {}
        for name in list(commands):
            yield from walk(commands[name], [*path, name])

    yield from walk(root, [])


# a Python type as typer 0.29 shows one: <bool>, <str>, <int>, <float>, <Path>, <list[Path]>, <int range>…
_TYPE_PLACEHOLDER = re.compile(r"<(?:bool|str|int|float|Path|datetime|UUID|list\[\w+\]|\w+ range)>")
_BRACED = re.compile(r"\{\w+\}")


def _help(path: list[str]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={**ENV, "COLUMNS": "200"})
    assert result.exit_code == 0, (path, result.output)
    return result.output


def test_every_command_s_help_names_its_values_in_words() -> None:
    """No --help shows a Python type or a braced name where a value goes (before: every one did)."""
    paths = list(_command_paths())
    assert len(paths) > 60  # the whole tree, lazily loaded groups included
    for path in paths:
        shown = _help(path)
        usage = next(line for line in shown.splitlines() if "Usage:" in line)
        assert _TYPE_PLACEHOLDER.findall(shown) == [], path
        assert _BRACED.findall(usage) == [], (path, usage)
        for flag in ("--help", "--json"):
            for line in shown.splitlines():
                if re.search(rf"│ {flag}\s", line):
                    words = line.split("│")[1].split()
                    assert words[1] in {"Show", "Print"}, (path, line)  # the help text, no placeholder


@pytest.mark.parametrize(
    ("path", "usage", "rows"),
    [
        (["docs", "import"], "docs import [OPTIONS] PATHS...", [r"PATHS\.\.\.\s+PATH\s", r"--collection\s+-c\s+TEXT"]),
        (["facts", "lookup"], "facts lookup [OPTIONS] [SUBJECT] [PREFIX]", [r"--pinned\s+Only", r"--data-dir\s+PATH"]),
        (["gem", "grant"], "gem grant [OPTIONS] GEM_ID PERMISSION...", [r"GEM_ID\s+TEXT", r"PERMISSION\.\.\.\s+TEXT"]),
        (["search"], "search [OPTIONS] [QUERY]", [r"--limit\s+-n\s+N\s", r"--all\s+Also"]),
        ([], "[OPTIONS] COMMAND [ARGS]...", [r"--data-dir\s+PATH"]),
    ],
)
def test_help_shows_click_style_names(path: list[str], usage: str, rows: list[str]) -> None:
    """Values read as TEXT, N, PATH; arguments by their names, optional ones in brackets."""
    shown = _help(path)
    assert f"Usage: notochord {usage}" in " ".join(shown.split())
    for row in rows:
        assert re.search(row, shown), (path, row)


def test_every_option_and_argument_says_what_it_is_for() -> None:
    """A new user reading --help learns what each value means (before: the six identifiers of
    ``entities resolve`` showed no words at all)."""
    root: Any = typer.main.get_command(app)
    silent = []
    for path in _command_paths():
        command = root
        for name in path:
            command = command.commands[name]
        for param in command.get_params(Context(command)):
            if not getattr(param, "hidden", False) and not (getattr(param, "help", None) or "").strip():
                silent.append(f"{' '.join(path)} {param.name}")
    assert silent == []


def test_usage_errors_still_name_an_argument_as_before() -> None:
    """Scripts may match the messages of a bad command line: they keep naming the argument as before."""
    result = CliRunner().invoke(app, ["facts", "put", "work.title", "--json"], env=ENV)
    assert result.exit_code == 2
    assert json.loads(result.stderr)["error"]["message"] == "Missing argument 'value'."
    refused = CliRunner().invoke(app, ["gem", "grant", "weather"], env=ENV)
    assert refused.exit_code == 2 and "Missing argument 'PERMISSION'" in refused.output


# ---------------------------------------------------------------- messages


def test_a_missing_folder_is_named_in_a_sentence_without_the_error_code(vault: Path, tmp_path: Path) -> None:
    """P-FILE-25: ``files history`` of a folder that does not exist says so and what to give, and
    the code stays in its own field (before: ``error: E_NOT_FOUND: the folder …``)."""
    missing = tmp_path / "no-such-folder"
    shown = CliRunner().invoke(app, ["--data-dir", str(vault), "files", "history", str(missing)], env=ENV)
    assert shown.exit_code == 3
    assert shown.output.startswith(f"error: the folder {missing} does not exist; give the conversation's folder")
    assert "E_NOT_FOUND" not in shown.output
    as_json = CliRunner().invoke(app, ["--data-dir", str(vault), "files", "history", str(missing), "--json"], env=ENV)
    error = json.loads(as_json.stderr)["error"]
    assert (error["code"], error["exitCode"]) == ("E_NOT_FOUND", 3)
    assert error["message"].startswith(f"the folder {missing} does not exist")


# ---------------------------------------------------------------- a reader that stops reading


def _into_a_closed_pipe(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with its stdout a pipe nobody reads any more (``| head -0`` that already left)."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(argv, stdout=writer, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    finally:
        os.close(writer)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["docs", "list", "--json"], id="json-larger-than-the-pipe"),
        pytest.param(["status"], id="a-few-lines"),
        pytest.param(["--help"], id="help-of-the-root"),
        pytest.param(["docs", "import", "--help"], id="help-of-a-command"),
    ],
)
def test_output_into_a_closed_pipe_exits_141_without_a_word(vault: Path, args: list[str]) -> None:
    """The reader went away: exit 128 + SIGPIPE as a shell shows for other tools, nothing on stderr
    (before: exit 1, the code of an unexpected error)."""
    result = _into_a_closed_pipe(_command(vault, *args))
    assert (result.returncode, result.stderr) == (OUTPUT_CLOSED, "")


def test_a_write_whose_output_is_cut_off_stays_done(vault: Path) -> None:
    """The write happened before its answer could be printed: it stays, and only the exit code says
    the answer was not read."""
    result = _into_a_closed_pipe(_command(vault, "facts", "put", "work.title", "cook", "--json"))
    assert (result.returncode, result.stderr) == (OUTPUT_CLOSED, "")
    looked = CliRunner().invoke(app, ["--data-dir", str(vault), "facts", "lookup", "--json"], env=ENV)
    assert [fact["value"] for fact in json.loads(looked.stdout)] == ["cook"]


def test_a_failure_keeps_its_exit_code_when_its_output_has_no_reader(vault: Path) -> None:
    """Not found stays exit 3, with its message on stderr, whoever reads stdout."""
    result = _into_a_closed_pipe(_command(vault, "docs", "show", "999999", "--json"))
    assert result.returncode == 3
    assert json.loads(result.stderr)["error"]["code"] == "E_NOT_FOUND"
