"""An empty ``--org`` (``--org "$ORG"`` with the variable unset) is refused, never read as "no --org".

Each organization's data is stored apart from the personal space's: a command meant for an
organization that silently ran on the personal space instead would write the organization's data
there (or read the wrong space's). Before, every command but ``status`` did exactly that, and
``init --org ""`` said the vault was ready without making any organization's space.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import notochord
from notochord.cli import app
from notochord.settings import Settings

ENV = {"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_INDEX_IN_BACKGROUND": "false"}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    data = tmp_path / "vault"
    with notochord.open(data, Settings(data_dir=data, index_in_background=False, embedder="none"), embedder=None) as nc:
        nc.personal.user.facts.put(predicate="work.title", value="baker")
    return data


def _run(vault: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["--data-dir", str(vault), *args], env=ENV)
    return result.exit_code, result.output


def _personal_titles(vault: Path) -> list[str]:
    settings = Settings(data_dir=vault, index_in_background=False, embedder="none")
    with notochord.open(vault, settings, embedder=None, create=False) as nc:
        return [str(f.value) for f in nc.personal.user.facts.lookup("self")]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["facts", "put", "work.title", "cook"], id="a-write"),
        pytest.param(["facts", "lookup"], id="a-read"),
        pytest.param(["docs", "list"], id="a-listing"),
        pytest.param(["check"], id="check"),
        pytest.param(["files", "working-folder", "weather"], id="working-folder"),
        pytest.param(["init"], id="init"),
    ],
)
def test_an_empty_org_is_refused_and_the_personal_space_is_left_alone(vault: Path, args: list[str]) -> None:
    """K-CON-08, OD-K47: the space a command works on is the one named, or the personal one when
    none is named; an empty name names none of them (before: the personal space, exit 0)."""
    code, output = _run(vault, *args, "--org", "")
    assert code == 2, output
    assert "organization id '' is malformed" in output
    assert _personal_titles(vault) == ["baker"]
    assert sorted(p.name for p in (vault / "spaces").iterdir()) == ["personal.db"]


def test_an_empty_org_after_json_is_refused_as_json(vault: Path) -> None:
    """The refusal reaches a script in its own shape: a configuration error, exit 2."""
    result = CliRunner().invoke(
        app, ["--data-dir", str(vault), "facts", "put", "work.title", "cook", "--org", "", "--json"], env=ENV
    )
    assert result.exit_code == 2
    assert json.loads(result.stderr)["error"]["code"] == "E_CONFIG"
    assert _personal_titles(vault) == ["baker"]
