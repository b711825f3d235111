"""The ``notochord`` command line, end to end, against a real data directory.

Commands run in-process through typer's ``CliRunner``; one test runs the installed console script in
a subprocess to prove the entry point. Covered: ``init`` and ``status``, where the data directory
comes from, ``facts``, ``entities`` and ``changes`` (K-FACT, K-ENT, K-CHG), separate organization
spaces (K-CON-08), the daily quota (K-QUOTA-05) and the documented exit codes (README "Exit codes"):
0 success, 1 unexpected, 2 bad usage or invalid input, 3 not found, 5 quota, 6 revert refused.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_harness import Cli

import notochord
from notochord.cli import app
from notochord.knowledge.quotas import DAILY_WRITES


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "vault"


def _cli(data_dir: Path) -> Cli:
    """The command line on ``data_dir``, in the test's own environment (the default embedder)."""
    return Cli(data_dir, env={}, init_first=True)


@pytest.fixture
def cli(data_dir: Path) -> Cli:
    return _cli(data_dir)


def _command_paths() -> Iterator[tuple[str, ...]]:
    """Every group and command of the CLI, walked from the real command tree."""

    def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from walk(sub, (*path, name))

    yield from walk(typer.main.get_command(app), ())


# ---------------------------------------------------------------- init, status, the data directory


def test_init_creates_an_owner_only_master_key_and_the_personal_space_and_is_idempotent(
    cli: Cli, data_dir: Path
) -> None:
    """OD-K47: the data directory holds master.key (0600) and spaces/personal.db."""
    first = cli.json("init")
    key = (data_dir / "master.key").read_bytes()
    assert len(key) == 32
    assert stat.S_IMODE((data_dir / "master.key").stat().st_mode) == 0o600
    assert (data_dir / "spaces" / "personal.db").is_file()
    assert first["spaces"] == ["personal"]

    cli.run("facts", "put", "location.home.city", "Utrecht")
    again = cli.run("init")
    assert "ready" in again.stdout
    assert (data_dir / "master.key").read_bytes() == key
    assert cli.values("self", "location") == ["Utrecht"]


def test_status_counts_current_facts_live_entities_and_every_change(cli: Cli) -> None:
    """K-CHG-06: every write is a change; retracted facts and merged entities are not counted."""
    cli.run("init")
    [empty] = cli.json("status")["spaces"]
    assert (empty["space"], empty["facts"], empty["entities"], empty["changes"]) == ("personal", 0, 0, 0)
    assert Path(empty["path"]) == cli.data_dir.resolve() / "spaces" / "personal.db"

    kept = cli.json("facts", "put", "pref.food.like", "stew")
    cli.run("facts", "put", "pref.food.like", "noodles")
    cli.run("facts", "retract", str(kept["id"]))
    first = cli.json("entities", "resolve", "--email", "a@example.org", "--create")
    second = cli.json("entities", "resolve", "--email", "b@example.org", "--create")
    cli.run("entities", "merge", str(first["id"]), str(second["id"]))

    status = cli.json("status")
    assert Path(status["dataDir"]) == cli.data_dir.resolve()
    [personal] = status["spaces"]
    assert (personal["facts"], personal["entities"], personal["changes"]) == (1, 1, 6)
    text = cli.run("status").stdout
    assert "personal" in text
    assert re.search(r"personal\s.*\bfacts\s+1\b.*\bentities\s+1\b.*\bchanges\s+6\b", text)


def test_data_dir_is_accepted_before_the_sub_command_and_on_the_sub_command(tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    runner = _cli(before)
    _cli(after).run("init")
    runner.run("facts", "put", "work.company", "Before Co")
    runner.run("facts", "put", "work.company", "After Co", "--data-dir", str(after), with_data_dir=False)

    assert _cli(before).values("self", "work") == ["Before Co"]
    assert _cli(after).values("self", "work") == ["After Co"]


def test_the_sub_command_data_dir_wins_over_the_one_before_it(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "inner"
    _cli(inner).run("init")
    _cli(outer).run("facts", "put", "work.company", "Inner Co", "--data-dir", str(inner))
    assert _cli(inner).values("self", "work") == ["Inner Co"]
    assert not (outer / "spaces" / "personal.db").exists()


def test_notochord_data_dir_environment_variable_names_the_data_directory(tmp_path: Path) -> None:
    from_env, from_option = tmp_path / "env", tmp_path / "option"
    runner = _cli(from_env)
    runner.run("init")
    _cli(from_option).run("init")
    env = {"NOTOCHORD_DATA_DIR": str(from_env)}
    runner.run("facts", "put", "work.company", "Env Co", env=env, with_data_dir=False)
    listed = runner.run("facts", "lookup", "self", "work", "--json", env=env, with_data_dir=False)
    assert [f["value"] for f in json.loads(listed.stdout)] == ["Env Co"]

    runner.run(
        "facts",
        "put",
        "work.company",
        "Option Co",
        "--data-dir",
        str(from_option),
        env=env,
        with_data_dir=False,
    )
    assert _cli(from_option).values("self", "work") == ["Option Co"]
    assert _cli(from_env).values("self", "work") == ["Env Co"]


def test_without_any_data_dir_the_default_is_the_per_user_data_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """One vault per user, whatever the working directory."""
    home_data = Path.cwd().parent / "xdg"
    monkeypatch.setenv("XDG_DATA_HOME", str(home_data))
    _cli(Path("unused")).run("init", with_data_dir=False)
    assert (home_data / "notochord" / "master.key").is_file()
    assert (home_data / "notochord" / "spaces" / "personal.db").is_file()
    assert not (Path.cwd() / ".notochord").exists()


# ---------------------------------------------------------------- facts


def test_put_and_lookup_in_text_and_json(cli: Cli) -> None:
    """K-FACT-05, K-FACT-11, K-FACT-27: a fact the user states about themself is pinned."""
    put = cli.run("facts", "put", "location.home.city", '"Utrecht"')
    assert put.stdout.startswith("applied: fact ")
    assert "(location.home.city)" in put.stdout

    text = cli.run("facts", "lookup", "self", "location").stdout
    assert "location.home.city" in text
    assert '"Utrecht"' in text
    assert "[pinned]" in text
    assert "(user)" in text

    [fact] = cli.json("facts", "lookup", "self", "location")
    assert (fact["predicate"], fact["value"], fact["origin"], fact["pinned"]) == (
        "location.home.city",
        "Utrecht",
        "user",
        True,
    )
    assert fact["validTo"] is None


def test_putting_an_identical_value_again_is_a_duplicate(cli: Cli) -> None:
    """K-FACT-21."""
    first = cli.json("facts", "put", "pref.food.like", "stew")
    again = cli.json("facts", "put", "pref.food.like", '"stew"')
    assert (first["status"], again["status"]) == ("applied", "duplicate")
    assert again["id"] == first["id"]
    assert again["changeId"] is None


@pytest.mark.parametrize(
    ("argument", "stored"),
    [
        pytest.param('"Utrecht"', "Utrecht", id="json-string"),
        pytest.param("Utrecht", "Utrecht", id="bare-word-is-a-string"),
        pytest.param("Zhang San", "Zhang San", id="words-are-a-string"),
        pytest.param("北京", "北京", id="non-ascii-text"),
        pytest.param("[1, 2", "[1, 2", id="broken-json-is-a-string"),
        pytest.param("NaN", "NaN", id="nan-is-text"),
        pytest.param("1e999", "1e999", id="infinity-is-text"),
        pytest.param("42", 42, id="number"),
        pytest.param("true", True, id="boolean"),
        pytest.param('{"b": [1, 2], "a": null}', {"a": None, "b": [1, 2]}, id="object"),
    ],
)
def test_a_value_is_parsed_as_json_and_text_that_is_not_json_is_taken_as_a_string(
    cli: Cli, argument: str, stored: object
) -> None:
    cli.run("facts", "put", "x.sample", argument)
    assert cli.values("self", "x.sample") == [stored]


def test_lookup_prefix_matches_whole_levels_only(cli: Cli) -> None:
    """K-FACT-03, OD-K11: location.home does not match location.homepage."""
    cli.run("facts", "put", "location.home.city", "Utrecht")
    cli.run("facts", "put", "location.homepage", "https://example.org")
    assert cli.values("self", "location.home") == ["Utrecht"]
    assert sorted(cli.values("self", "location")) == ["Utrecht", "https://example.org"]
    assert cli.run("facts", "lookup", "self", "health").stdout.strip() == "(no facts)"


def test_retract_expires_a_fact_and_a_second_retract_reports_already_retracted(cli: Cli) -> None:
    """K-FACT-29, K-FACT-30, K-FACT-32, and the retraction itself is revertible."""
    fact = cli.json("facts", "put", "pref.food.dislike", "olives")
    retracted = cli.run("facts", "retract", str(fact["id"]))
    assert retracted.stdout.strip() == f"retracted: fact {fact['id']}"
    assert cli.values("self", "pref.food") == []
    assert cli.json("facts", "retract", str(fact["id"])) == {"status": "already_retracted", "changeId": None}

    [change] = cli.json("changes", "list", "--limit", "1")
    assert change["op"] == "facts.retract"
    cli.run("changes", "revert", str(change["id"]))
    assert cli.values("self", "pref.food") == ["olives"]


def test_pin_and_unpin_move_a_fact_in_and_out_of_the_standing_profile(cli: Cli) -> None:
    """K-FACT-01, OD-K15."""
    fact = cli.json("facts", "put", "pref.food.cuisine", "Sichuan", "--no-pin")
    assert fact["status"] == "applied"
    assert cli.json("facts", "lookup", "--pinned") == []

    assert cli.run("facts", "pin", str(fact["id"])).stdout.strip() == f"fact {fact['id']} pinned"
    assert [f["value"] for f in cli.json("facts", "lookup", "--pinned")] == ["Sichuan"]

    unpinned = cli.json("facts", "pin", str(fact["id"]), "--unpin")
    assert unpinned["pinned"] is False
    assert cli.json("facts", "lookup", "--pinned") == []
    assert cli.values("self", "pref") == ["Sichuan"]


def test_a_fact_about_an_entity_with_an_object_is_listed_under_that_entity(cli: Cli) -> None:
    """K-FACT-12, K-FACT-15."""
    colleague = cli.json("entities", "resolve", "--name", "Li Wei", "--create")
    employer = cli.json("entities", "resolve", "--domain", "acme.nl", "--name", "Acme", "--kind", "org", "--create")
    cli.run(
        "facts",
        "put",
        "work.company",
        "Acme",
        "--subject",
        str(colleague["id"]),
        "--object",
        str(employer["id"]),
    )

    [fact] = cli.json("facts", "lookup", str(colleague["id"]))
    assert (fact["predicate"], fact["object"], fact["pinned"]) == ("work.company", employer["id"], False)
    assert f"-> entity {employer['id']}" in cli.run("facts", "lookup", str(colleague["id"])).stdout
    assert cli.values("self", "work") == []


# ---------------------------------------------------------------- conflicts and undo


def test_an_assistant_write_over_a_user_value_is_listed_as_a_conflict_and_can_be_dismissed(cli: Cli) -> None:
    """K-FACT-22, K-CHG-09, K-CHG-02: the user's value stays; the rejected value is the proposal."""
    user = cli.json("facts", "put", "work.company", "Acme")
    blocked = cli.json("facts", "put", "work.company", "Globex", "--as-assistant")
    assert (blocked["status"], blocked["id"]) == ("conflict", user["id"])
    assert cli.values("self", "work") == ["Acme"]

    [conflict] = cli.json("changes", "list", "--status", "conflict")
    assert (conflict["id"], conflict["actor"], conflict["proposed"], conflict["before"]) == (
        blocked["changeId"],
        "assistant",
        "Globex",
        "Acme",
    )
    listing = cli.run("changes", "list", "--status", "conflict").stdout
    assert "conflict" in listing
    assert "assistant" in listing

    cli.run("changes", "revert", str(conflict["id"]))
    assert cli.json("changes", "list", "--status", "conflict") == []
    assert cli.values("self", "work") == ["Acme"]


def test_reverting_one_change_restores_the_value_it_replaced(cli: Cli) -> None:
    """K-CHG-03, K-CHG-08, K-FACT-23."""
    cli.run("facts", "put", "work.title", "Engineer", "--as-assistant")
    later = cli.json("facts", "put", "work.title", "Lead engineer", "--as-assistant")
    assert cli.values("self", "work.title") == ["Lead engineer"]

    reverted = cli.run("changes", "revert", str(later["changeId"]))
    assert reverted.stdout.strip() == "reverted: 1 change"
    assert cli.values("self", "work.title") == ["Engineer"]
    [change] = cli.json("changes", "list", "--status", "reverted")
    assert change["id"] == later["changeId"]


def test_reverting_a_run_undoes_every_change_of_that_run_and_nothing_else(cli: Cli) -> None:
    """K-CHG-03, K-FACT-17: revert --run, and a second revert finds nothing left."""
    run = "nightly-2026-09-29"
    cli.run("facts", "put", "pref.food.like", "dumplings", "--as-assistant")
    cli.run("facts", "put", "pref.food.like", "sushi", "--as-assistant", "--run", run)
    cli.run("facts", "put", "pref.food.like", "ramen", "--as-assistant", "--run", run)
    assert len(cli.json("changes", "list", "--run", run)) == 2

    assert cli.run("changes", "revert", "--run", run).stdout.strip() == "reverted: 2 changes"
    assert cli.values("self", "pref.food") == ["dumplings"]
    assert cli.json("changes", "revert", "--run", run) == {"status": "already_reverted", "count": 0}


def test_reverting_a_change_superseded_by_another_writer_exits_6_and_changes_nothing(cli: Cli) -> None:
    """K-CHG-08, OD-K44: undo never overwrites someone else's later edit."""
    assistant = cli.json("facts", "put", "work.title", "Engineer", "--as-assistant")
    cli.run("facts", "put", "work.title", "Manager")

    refused = cli.run("changes", "revert", str(assistant["changeId"]), code=6)
    assert "superseded" in refused.stderr
    assert cli.values("self", "work.title") == ["Manager"]
    assert cli.json("changes", "list", "--status", "reverted") == []


# ---------------------------------------------------------------- entities


def test_entities_resolve_create_list_merge_and_delete(cli: Cli) -> None:
    """K-ENT-01, K-ENT-04, K-ENT-05, K-ENT-08, K-ENT-12, K-ENT-13."""
    missing = cli.run("entities", "resolve", "--email", "zhangsan@acme.nl", code=3)
    assert missing.stdout.strip() == "no matching entity"
    assert cli.run("entities", "resolve", "--email", "zhangsan@acme.nl", "--json", code=3).stdout.strip() == "null"

    zhang = cli.json("entities", "resolve", "--email", "zhangsan@acme.nl", "--name", "Zhang San", "--create")
    assert (zhang["kind"], zhang["displayName"]) == ("person", "Zhang San")
    assert {(i["type"], i["value"]) for i in zhang["identifiers"]} == {
        ("email", "zhangsan@acme.nl"),
        ("name", "Zhang San"),
    }
    assert cli.json("entities", "resolve", "--email", "zhangsan@acme.nl")["id"] == zhang["id"]
    assert "Zhang San" in cli.run("entities", "resolve", "--email", "zhangsan@acme.nl").stdout

    other = cli.json("entities", "resolve", "--email", "zs@home.example", "--name", "San Zhang", "--create")
    cli.run("entities", "resolve", "--name", "Jan de Vries", "--create")
    assert {e["id"] for e in cli.json("entities", "list", "--query", "zhang")} == {zhang["id"], other["id"]}
    assert "Jan de Vries" in cli.run("entities", "list").stdout
    assert cli.json("entities", "list", "--kind", "org") == []

    cli.run("facts", "put", "contact.phone", "+31 6 1234 5678", "--subject", str(other["id"]))
    merged = cli.run("entities", "merge", str(zhang["id"]), str(other["id"]))
    assert f"merged {other['id']} into {zhang['id']}" in merged.stdout
    assert cli.values(str(other["id"])) == ["+31 6 1234 5678"]
    assert cli.values(str(zhang["id"])) == ["+31 6 1234 5678"]
    assert other["id"] not in {e["id"] for e in cli.json("entities", "list")}

    deleted = cli.json("entities", "delete", str(zhang["id"]))
    assert isinstance(deleted["change"], int)
    gone = cli.run("facts", "lookup", str(zhang["id"]), code=3)
    assert "no entity" in gone.stderr
    assert [e["displayName"] for e in cli.json("entities", "list")] == ["Jan de Vries"]

    cli.run("changes", "revert", str(deleted["change"]))
    assert cli.values(str(zhang["id"])) == ["+31 6 1234 5678"]


# ---------------------------------------------------------------- organization spaces


def test_org_writes_land_in_a_separate_file_invisible_from_the_personal_space(cli: Cli, data_dir: Path) -> None:
    """K-CON-08, OD-K47."""
    cli.run("facts", "put", "work.company", "Personal Co")
    cli.run("init", "--org", "acme")
    cli.run("facts", "put", "work.company", "Acme", "--org", "acme")
    cli.run("entities", "resolve", "--email", "boss@acme.nl", "--create", "--org", "acme")

    assert (data_dir / "spaces" / "org-acme.db").is_file()
    assert cli.values("self", "work") == ["Personal Co"]
    org_facts = cli.json("facts", "lookup", "self", "work", "--org", "acme")
    assert [f["value"] for f in org_facts] == ["Acme"]
    assert cli.json("entities", "list") == []
    assert len(cli.json("entities", "list", "--org", "acme")) == 1
    assert len(cli.json("changes", "list")) == 1

    spaces = {s["space"]: s for s in cli.json("status")["spaces"]}
    assert set(spaces) == {"personal", "org:acme"}
    assert (spaces["org:acme"]["facts"], spaces["org:acme"]["entities"]) == (1, 1)
    assert (spaces["personal"]["facts"], spaces["personal"]["entities"]) == (1, 0)
    assert spaces["org:acme"]["path"] != spaces["personal"]["path"]


# ---------------------------------------------------------------- help and exit codes


@pytest.mark.parametrize("path", list(_command_paths()), ids=lambda p: " ".join(p) or "notochord")
def test_every_command_answers_help_with_exit_code_0(cli: Cli, path: tuple[str, ...]) -> None:
    result = cli.run(*path, "--help", with_data_dir=False)
    assert "Usage" in result.stdout
    assert not cli.data_dir.exists()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        pytest.param(("facts", "retract", "999"), 3, "no fact", id="retract-unknown-fact"),
        pytest.param(("facts", "pin", "999"), 3, "no fact", id="pin-unknown-fact"),
        pytest.param(("facts", "lookup", "999"), 3, "no entity", id="lookup-unknown-entity"),
        pytest.param(("facts", "put", "work.company", "X", "--subject", "999"), 3, "no entity", id="put-on-unknown"),
        pytest.param(("entities", "delete", "999"), 3, "no entity", id="delete-unknown-entity"),
        pytest.param(("entities", "merge", "998", "999"), 3, "no entity", id="merge-unknown-entity"),
        pytest.param(("changes", "revert", "999"), 3, "no change", id="revert-unknown-change"),
        pytest.param(("facts", "put", "Location.home", "X"), 2, "malformed level", id="uppercase-predicate"),
        pytest.param(("facts", "put", "location", "X"), 2, "at least 2", id="one-level-predicate"),
        pytest.param(("facts", "put", "hobby.chess", "X"), 2, "must start with", id="unknown-first-level"),
        pytest.param(("facts", "lookup", "self", "location.Home"), 2, "prefix", id="malformed-prefix"),
        pytest.param(("facts", "lookup", "me"), 2, "entity id", id="subject-not-self-or-id"),
        pytest.param(("facts", "put", "location.home.city"), 2, "Missing argument", id="missing-value"),
        pytest.param(("facts", "put", "x.a", "1", "--colour"), 2, "No such option", id="unknown-option"),
        pytest.param(("entities", "resolve"), 2, "at least one of", id="resolve-without-identifiers"),
        pytest.param(("changes", "revert"), 2, "change id or --run", id="revert-without-target"),
        pytest.param(("changes", "revert", "1", "--run", "r"), 2, "change id or --run", id="revert-both"),
        pytest.param(("changes", "list", "--status", "pending"), 2, "status", id="unknown-status"),
        pytest.param(("facts", "lookup", "--org", "Acme Corp"), 2, "organization id", id="malformed-org"),
        pytest.param(("launch",), 2, "No such command", id="unknown-command"),
        pytest.param(("facts", "put", "x.[/a]", "1"), 2, "x.[/a]", id="markup-in-message"),
    ],
)
def test_documented_exit_codes_with_a_message_and_no_traceback(
    cli: Cli, args: tuple[str, ...], code: int, message: str
) -> None:
    cli.run("init")
    result = cli.run(*args, code=code)
    assert message in " ".join(result.stderr.split())
    assert "Traceback" not in result.output


def test_a_file_given_as_the_data_directory_is_bad_input_said_in_words(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    result = _cli(not_a_directory).run("init", code=2)
    assert "error: cannot use" in result.stderr
    said = " ".join(result.stderr.split())
    assert "as the data directory: it is a file, not a folder; choose a folder with --data-dir" in said
    assert "Errno" not in result.output and "Traceback" not in result.output
    assert not_a_directory.read_text() == ""


def _zone_at_midday() -> str:
    """A fixed-offset zone where it is now about noon, so no local date changes during a test."""
    offset = 12 - datetime.now(UTC).hour
    return f"Etc/GMT{-offset:+d}" if offset else "Etc/GMT"


def test_an_assistant_write_beyond_the_daily_quota_exits_5_and_writes_nothing(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """K-QUOTA-01, K-QUOTA-05: the quota is pre-filled through the host API in the same data dir;
    the user's own writes are never throttled."""
    monkeypatch.setenv("NOTOCHORD_TIMEZONE", _zone_at_midday())
    with notochord.open(cli.data_dir) as nc:
        for n in range(DAILY_WRITES):
            nc.personal.as_assistant.facts.put(predicate="pref.food.like", value=f"dish {n}")

    refused = cli.run("facts", "put", "pref.food.like", "one dish too many", "--as-assistant", code=5)
    assert "quota" in refused.stderr
    cli.run("facts", "put", "pref.food.like", "the user's own dish")

    liked = cli.values("self", "pref.food.like")
    assert len(liked) == DAILY_WRITES + 1
    assert "one dish too many" not in liked
    assert "the user's own dish" in liked


# ---------------------------------------------------------------- the installed entry point


def test_the_installed_console_script_runs_commands_and_returns_their_exit_codes(data_dir: Path) -> None:
    script = Path(sys.executable).parent / "notochord"
    assert script.is_file(), f"the console script is not installed next to {sys.executable}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(script), "--data-dir", str(data_dir), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    assert run("init").returncode == 0
    put = run("facts", "put", "location.home.city", "Utrecht", "--json")
    assert put.returncode == 0, put.stderr
    assert json.loads(put.stdout)["status"] == "applied"
    status = run("status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["spaces"][0]["facts"] == 1
    missing = run("facts", "retract", "999")
    assert (missing.returncode, missing.stdout) == (3, "")
    assert "no fact" in missing.stderr
