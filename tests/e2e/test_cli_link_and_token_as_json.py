"""``notochord console-url`` and ``notochord token`` print their result as JSON with ``--json``, as
every other command that prints data does; a refusal after ``--json`` is JSON on stderr too.

``console-url`` gives ``{"url": …}``, a one-time sign-in link (K-UI-12: the console's sign-in);
``token`` gives ``{"token": …}``, a development JWT the service verifies (KB-GEN-03).
"""

from __future__ import annotations

import json
from pathlib import Path

import jwt
import pytest
from cli_harness import Cli, initialised


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


def test_console_url_as_json_is_the_sign_in_link_K_UI_12(cli: Cli) -> None:
    printed = cli.json("console-url", "--port", "8421")
    assert list(printed) == ["url"]
    assert printed["url"].startswith("http://127.0.0.1:8421/login?token=")
    plain = cli.run("console-url", "--port", "8421").stdout
    assert plain.startswith("http://127.0.0.1:8421/login?token=") and plain.count("\n") == 1


def test_token_as_json_is_a_token_the_service_verifies_KB_GEN_03(cli: Cli, tmp_path: Path) -> None:
    printed = cli.json("token", "--user", "u1", "--org", "acme", "--role", "member", "--ttl", "60")
    assert list(printed) == ["token"]
    secret = (tmp_path / "vault" / "jwt.secret").read_text().strip()
    claims = jwt.decode(printed["token"], secret, algorithms=["HS256"])
    assert (claims["sub"], claims["org"], claims["exp"] - claims["iat"]) == ("u1", "acme", 60)


@pytest.mark.parametrize(
    "args",
    [
        ("console-url",),
        ("token", "--user", "u1", "--org", "acme", "--role", "member"),
    ],
    ids=["console-url", "token"],
)
def test_a_refusal_after_json_is_json_on_stderr(tmp_path: Path, args: tuple[str, ...]) -> None:
    """No vault in the data directory: not found (exit code 3), said as the JSON error shape."""
    result = Cli(tmp_path / "nothing here").run(*args, "--json", code=3)
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["exitCode"] == 3 and "no vault" in error["message"]
