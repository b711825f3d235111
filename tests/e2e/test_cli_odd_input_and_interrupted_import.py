"""The command line against input nobody should type but scripts and odd terminals produce: numbers
of thousands of digits, empty paths from unset shell variables, file names that are not UTF-8,
output streams that are not UTF-8, a ``COLUMNS`` of zero, claims the service would refuse, Ctrl-C in
the middle of an import. Each is answered with one plain message and the documented exit code, and
changes nothing it should not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import Cli, initialised

from notochord.cli import docs_cmd

THOUSANDS_OF_DIGITS = "9" * 5000


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


def _script_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_") and k != "COLUMNS"}
    return {**env, "NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_INDEX_IN_BACKGROUND": "false", **extra}


def _script(data_dir: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """The installed ``notochord`` in its own process: its own streams, encodings and terminal width."""
    script = Path(sys.executable).parent / "notochord"
    return subprocess.run(
        [str(script), "--data-dir", str(data_dir), *args], capture_output=True, env=env, timeout=120, check=False
    )


def _said(output: str) -> str:
    """``output`` with the frame and line breaks of a message box taken out, as one line of words."""
    return " ".join(output.replace("│", " ").split())


def _changes(cli: Cli) -> str:
    return cli.run("changes", "list", "--json").stdout


# ---------------------------------------------------------------- numbers of thousands of digits


@pytest.mark.parametrize(
    "command",
    [
        ["facts", "retract", THOUSANDS_OF_DIGITS],
        ["facts", "retract", "--", "-" + THOUSANDS_OF_DIGITS],
        ["facts", "lookup", THOUSANDS_OF_DIGITS],
        ["changes", "list", "--limit", THOUSANDS_OF_DIGITS],
        ["docs", "show", "1", "--range", f"0:{THOUSANDS_OF_DIGITS}"],
    ],
    ids=["an id", "a negative id", "a subject", "a limit", "a chunk range"],
)
def test_a_number_of_thousands_of_digits_is_too_large_in_plain_words(cli: Cli, command: list[str]) -> None:
    before = _changes(cli)
    result = cli.run(*command, code=2)
    said = _said(result.output)
    assert "a number is too large: ids and whole numbers here are at most 9223372036854775807" in said
    assert "set_int_max_str_digits" not in result.output and "Exceeds the limit" not in result.output
    assert THOUSANDS_OF_DIGITS not in result.output
    assert _changes(cli) == before


def test_an_id_of_leading_zeros_still_names_its_object(cli: Cli) -> None:
    put = cli.json("facts", "put", "x.note", "kept")
    retracted = cli.run("facts", "retract", "0" * 5000 + str(put["id"]))
    assert "retracted" in retracted.stdout


@pytest.mark.parametrize(
    "command",
    [["docs", "list", THOUSANDS_OF_DIGITS], ["collections", "move", THOUSANDS_OF_DIGITS, "--top"]],
    ids=["docs list", "collections move"],
)
def test_a_collection_id_of_thousands_of_digits_is_not_found_without_a_traceback(cli: Cli, command: list[str]) -> None:
    before = _changes(cli)
    result = cli.run(*command, code=3)
    assert "no collection" in result.stderr
    assert "notochord collections list" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert THOUSANDS_OF_DIGITS not in result.output
    assert _changes(cli) == before


def test_importing_into_a_collection_id_of_thousands_of_digits_imports_nothing(cli: Cli, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nbody\n")
    result = cli.run("docs", "import", str(note), "--collection", THOUSANDS_OF_DIGITS, code=3)
    assert "no collection" in result.stderr
    assert cli.json("docs", "list") == []


# ---------------------------------------------------------------- empty paths from unset variables


def test_an_empty_data_dir_is_bad_usage_and_no_vault_appears_in_the_working_folder(tmp_path: Path) -> None:
    """``--data-dir "$UNSET"`` is ``--data-dir ""``, which Python reads as the current folder."""
    cli = Cli(tmp_path / "unused")
    for args in (["--data-dir", "", "init"], ["init", "--data-dir", "  "]):
        result = cli.run(*args, code=2, with_data_dir=False)
        assert "the path is empty; name a file or folder" in _said(result.output)
    assert list(Path.cwd().iterdir()) == []


def test_an_empty_notochord_data_dir_is_refused_instead_of_meaning_the_working_folder(tmp_path: Path) -> None:
    cli = Cli(tmp_path / "unused")
    refused = cli.run("init", code=2, env={"NOTOCHORD_DATA_DIR": ""}, with_data_dir=False)
    assert "setting data_dir: the path is empty" in refused.stderr
    assert "Traceback" not in refused.output
    as_json = cli.run("status", "--json", code=2, env={"NOTOCHORD_DATA_DIR": ""}, with_data_dir=False)
    assert json.loads(as_json.stderr)["error"]["code"] == "E_CONFIG"
    assert list(Path.cwd().iterdir()) == []


def test_importing_an_empty_path_imports_nothing_rather_than_the_working_folder(cli: Cli) -> None:
    Path("private.md").write_text("# Private\n\nnot meant for the vault\n")
    result = cli.run("docs", "import", "", code=2)
    assert "the path is empty; name a file or folder" in _said(result.output)
    assert cli.json("docs", "list") == []
    as_json = cli.run("docs", "import", "", "--json", code=2)
    assert json.loads(as_json.stderr)["error"]["code"] == "E_USAGE"


@pytest.mark.parametrize(
    "command",
    [["backup", ""], ["restore", " "], ["files", "history", ""], ["gem", "install", ""]],
    ids=["backup", "restore", "files history", "gem install"],
)
def test_an_empty_path_argument_is_bad_usage_and_writes_nothing(cli: Cli, command: list[str]) -> None:
    before = _changes(cli)
    result = cli.run(*command, code=2)
    assert "the path is empty; name a file or folder" in _said(result.output)
    assert list(Path.cwd().iterdir()) == []
    assert _changes(cli) == before


# ---------------------------------------------------------------- names and streams that are not UTF-8


def test_a_file_whose_name_is_not_utf8_fails_alone_with_a_reason_a_person_can_act_on(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / os.fsdecode(b"caf\xe9.md")).write_text("# Cafe\n\nLatin-1 name\n")
    (folder / "plain.md").write_text("# Plain\n\nfine\n")
    result = cli.run("docs", "import", str(folder), code=2)
    failed = [line for line in result.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1
    assert "caf\\udce9.md" in failed[0]
    assert "not UTF-8" in failed[0] and "rename it" in failed[0]
    assert "meta" not in failed[0] and "write again" not in failed[0]
    assert [d["title"] for d in cli.json("docs", "list")] == ["Plain"]


def test_json_naming_a_file_that_is_not_utf8_is_valid_json_on_a_strict_utf8_stdout(tmp_path: Path) -> None:
    """A strict UTF-8 stdout (PYTHONIOENCODING=utf-8, as under an en_US.UTF-8 locale) cannot carry
    the lone surrogate a Latin-1 byte becomes: the JSON escapes it."""
    data_dir = tmp_path / "vault"
    env = _script_env(PYTHONIOENCODING="utf-8")
    assert _script(data_dir, "init", env=env).returncode == 0
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / os.fsdecode(b"caf\xe9.md")).write_text("# Cafe\n\nLatin-1 name\n")
    result = _script(data_dir, "docs", "import", str(folder), "--json", env=env)
    assert result.returncode == 2, result.stderr.decode(errors="replace")
    assert b"Traceback" not in result.stderr
    summary = json.loads(result.stdout.decode("utf-8"))
    assert summary["failures"][0]["path"] == str(folder / os.fsdecode(b"caf\xe9.md"))


def test_json_with_non_ascii_text_stays_valid_and_exact_on_an_ascii_stdout(tmp_path: Path) -> None:
    data_dir = tmp_path / "vault"
    env = _script_env(PYTHONIOENCODING="ascii")
    assert _script(data_dir, "init", env=env).returncode == 0
    put = _script(data_dir, "facts", "put", "x.name", "Zoë 日本 😀", "--json", env=env)
    assert put.returncode == 0, put.stderr.decode(errors="replace")
    assert b"Traceback" not in put.stderr
    assert json.loads(put.stdout.decode("ascii"))["status"] == "applied"
    looked_up = _script(data_dir, "facts", "lookup", "self", "x.name", "--json", env=env)
    assert looked_up.returncode == 0
    assert [f["value"] for f in json.loads(looked_up.stdout.decode("ascii"))] == ["Zoë 日本 😀"]


def test_a_json_error_quoting_non_ascii_text_is_valid_json_on_an_ascii_stderr(tmp_path: Path) -> None:
    data_dir = tmp_path / "vault"
    env = _script_env(PYTHONIOENCODING="ascii")
    assert _script(data_dir, "init", env=env).returncode == 0
    result = _script(data_dir, "docs", "list", "Zoë", "--json", env=env)
    assert result.returncode == 3
    error = json.loads(result.stderr.decode("ascii"))["error"]
    assert error["code"] == "E_NOT_FOUND"
    assert "'Zoë'" in error["message"]


# ---------------------------------------------------------------- terminal width


@pytest.mark.parametrize("columns", ["0", "3", "99999999", THOUSANDS_OF_DIGITS])
def test_an_unusable_columns_still_shows_every_error(tmp_path: Path, columns: str) -> None:
    """rich lays output out in ``COLUMNS``: at 0 it printed nothing, so an error exited without a word;
    at millions it padded for minutes; at thousands of digits it stopped on Python's int limit."""
    data_dir = tmp_path / "vault"
    env = _script_env(COLUMNS=columns)
    assert _script(data_dir, "init", env=env).returncode == 0
    missing = _script(data_dir, "facts", "retract", "999", env=env)
    assert missing.returncode == 3
    assert b"no fact" in missing.stderr
    bad = _script(data_dir, "facts", "retract", "abc", env=env)
    assert bad.returncode == 2
    assert b"is not a whole number" in bad.stderr
    assert b"Traceback" not in bad.stderr + missing.stderr
    assert b"notochord" in _script(data_dir, "--help", env=env).stdout


# ---------------------------------------------------------------- development tokens


@pytest.mark.parametrize(
    ("user", "org", "why"),
    [
        ("", "acme", "names no user"),
        ("u1", "", "names no organization"),
        ("u1", "ACME", "organization id is malformed"),
        ("a\x01b", "acme", "control characters"),
        ("u" * 201, "acme", "longer than 200 characters"),
    ],
    ids=["empty user", "empty org", "uppercase org", "control character", "long user"],
)
def test_token_refuses_claims_the_service_would_refuse_and_prints_no_token(
    cli: Cli, user: str, org: str, why: str
) -> None:
    result = cli.run("token", "--user", user, "--org", org, "--role", "member", code=2)
    assert result.stdout == ""
    assert "the service would refuse this token" in result.stderr
    assert why in result.stderr


def test_token_for_plain_claims_is_still_minted(cli: Cli) -> None:
    minted = cli.run("token", "--user", "u1", "--org", "acme", "--role", "member").stdout.strip()
    assert minted.count(".") == 2


# ---------------------------------------------------------------- Ctrl-C in the middle of an import


def _interrupt_after_first_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    flush = docs_cmd._Batch.flush
    flushed: list[int] = []

    def flush_then_interrupt(batch: docs_cmd._Batch) -> None:
        flush(batch)
        flushed.append(1)
        if len(flushed) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(docs_cmd._Batch, "flush", flush_then_interrupt)
    monkeypatch.setattr(docs_cmd, "_BATCH_FILES", 2)


def _notes(tmp_path: Path, count: int) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(count):
        (folder / f"n{n}.md").write_text(f"# Note {n}\n\nbody {n}\n")
    return folder


def test_an_interrupted_import_exits_130_naming_the_run_that_undoes_what_it_wrote_K_CHG_03(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _notes(tmp_path, 5)
    _interrupt_after_first_batch(monkeypatch)
    result = cli.run("docs", "import", str(folder), code=130)
    assert result.stderr.lstrip().startswith("interrupted: ")
    run_id = next(word.rstrip(";") for word in result.stderr.split() if word.startswith("import-"))
    assert f"notochord changes revert --run {run_id}" in result.stderr
    assert "import the same files again" in result.stderr
    assert "Traceback" not in result.output
    assert sorted(d["title"] for d in cli.json("docs", "list")) == ["Note 0", "Note 1"]
    assert "consistent" in cli.run("check").stdout

    cli.run("changes", "revert", "--run", run_id)
    assert cli.json("docs", "list") == []


def test_an_interrupted_import_resumed_imports_the_rest_once(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _notes(tmp_path, 5)
    with monkeypatch.context() as patched:
        _interrupt_after_first_batch(patched)
        cli.run("docs", "import", str(folder), code=130)
    again = cli.json("docs", "import", str(folder))
    assert (again["created"], again["unchanged"]) == (3, 2)
    assert len(cli.json("docs", "list")) == 5


def test_an_interrupted_import_with_json_reports_e_interrupted_on_stderr(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _notes(tmp_path, 5)
    _interrupt_after_first_batch(monkeypatch)
    result = cli.run("docs", "import", str(folder), "--as-new", "--json", code=130)
    error = json.loads(result.stderr)["error"]
    assert (error["code"], error["exitCode"]) == ("E_INTERRUPTED", 130)
    assert "changes revert --run import-" in error["message"]
    # --as-new creates copies on every import: importing again would not finish, it would duplicate
    assert "import the same files again" not in error["message"]
    assert result.stdout == ""
