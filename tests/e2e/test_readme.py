"""The README's "A first session" and "Using it from Python" run verbatim on a fresh vault.

The blocks are read from ``README.md`` itself, so the
README cannot drift from what works. They run as a person would run them: the shell block with
``bash`` from the repository root (so ``. .venv/bin/activate`` and ``examples/…`` resolve), the
Python block with this interpreter, both with ``NOTOCHORD_DATA_DIR`` naming a new temporary vault
and no other ``NOTOCHORD_*`` setting. In the shell block a comment that starts with ``{`` or ``[``
is the output the README promises for its command and is checked; other comments are prose.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MARK = "@@notochord-readme-exit"


def readme_block(heading: str, language: str) -> str:
    """The first ``language`` code block under the ``## heading`` of the README."""
    text = README.read_text(encoding="utf-8")
    section = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, flags=re.MULTILINE | re.DOTALL)
    assert section is not None, f"the README has no section {heading!r}"
    block = re.search(rf"^```{language}\n(.*?)^```", section.group(1), flags=re.MULTILINE | re.DOTALL)
    assert block is not None, f"the section {heading!r} has no {language} block"
    return block.group(1)


@dataclass(frozen=True)
class Step:
    command: str
    promised: str | None


def shell_steps(block: str) -> list[Step]:
    steps = []
    for line in block.splitlines():
        if not line.strip():
            continue
        command, _, comment = line.partition("  #")
        comment = comment.strip()
        steps.append(Step(command.strip(), comment if comment[:1] in {"{", "["} else None))
    return steps


@pytest.fixture
def fresh_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
    env["NOTOCHORD_DATA_DIR"] = str(tmp_path / "vault")
    return env


def test_the_first_session_runs_verbatim_and_prints_what_the_readme_promises(
    fresh_env: dict[str, str], tmp_path: Path
) -> None:
    """Every command exits 0; weather first answers the error, then Utrecht."""
    steps = shell_steps(readme_block("A first session", "sh"))
    assert steps[0].command == ". .venv/bin/activate"
    # Each command's output is followed by a marker line with its exit code, in one shell, so that
    # the activation holds for the commands after it.
    script = "".join(f"{s.command}\nprintf '\\n{MARK} %d\\n' $?\n" for s in steps)
    (tmp_path / "first-session.sh").write_text(script, encoding="utf-8")
    ran = subprocess.run(
        ["bash", str(tmp_path / "first-session.sh")],
        cwd=REPO,
        env=fresh_env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    outputs = ran.stdout.split(f"\n{MARK} ")
    assert len(outputs) == len(steps) + 1, ran.stdout + ran.stderr
    for index, step in enumerate(steps):
        code = int(outputs[index + 1].split("\n", 1)[0]) if index + 1 < len(outputs) else None
        printed = outputs[index].split("\n", 1)[1] if index else outputs[0]
        assert code == 0, f"{step.command} exited {code}\n{printed}\n{ran.stderr}"
        if step.promised is None:
            continue
        if step.promised.startswith("{"):
            assert json.loads(printed) == json.loads(step.promised), step.command
        else:
            assert " ".join(step.promised.split()) in " ".join(printed.split()), step.command
    assert (tmp_path / "vault" / "master.key").is_file()


def test_using_it_from_python_runs_verbatim(fresh_env: dict[str, str], tmp_path: Path) -> None:
    """The README's Python block runs as written on a fresh vault."""
    block = readme_block("Using it from Python", "python")
    assert "notochord.open()" in block
    had_a_local_vault = (REPO / ".notochord").exists()
    ran = subprocess.run(
        [sys.executable, "-c", block],
        cwd=REPO,
        env=fresh_env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "vault" / "spaces" / "personal.db").is_file()
    assert (REPO / ".notochord").exists() == had_a_local_vault  # the default is no longer ./.notochord
