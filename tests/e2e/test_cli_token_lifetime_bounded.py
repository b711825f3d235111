"""``notochord token --ttl`` mints tokens that live at most a year, and no longer than the service
accepts (KB-GEN-03: every request carries a valid JWT; ``jwt_max_ttl`` is the service's ceiling).

A lifetime beyond the ceiling is bad usage (exit code 2) whose message names the limit; nothing is
printed on stdout and no token is minted.
"""

from __future__ import annotations

import time
from pathlib import Path

import jwt
import pytest
from cli_harness import Cli, initialised

from notochord.cli.numbers import LONGEST_TOKEN_LIFETIME

_CLAIMS = ("token", "--user", "u1", "--org", "acme", "--role", "member")


def _said(stderr: str) -> str:
    """The message as one line, without the frame the terminal's error box draws around it."""
    return " ".join(stderr.replace("│", " ").split())


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


def test_the_longest_token_lifetime_is_a_year() -> None:
    assert LONGEST_TOKEN_LIFETIME == 365 * 24 * 3600


@pytest.mark.parametrize(
    "ttl",
    [str(LONGEST_TOKEN_LIFETIME + 1), "99999999999999", "9" * 40],
    ids=["a second over a year", "millions of years", "forty digits"],
)
def test_a_lifetime_beyond_a_year_is_bad_usage_naming_the_limit_KB_GEN_03(cli: Cli, ttl: str) -> None:
    result = cli.run(*_CLAIMS, "--ttl", ttl, code=2)
    assert result.stdout == ""
    said = _said(result.stderr)
    assert "--ttl" in said
    assert f"a lifetime is at most {LONGEST_TOKEN_LIFETIME} seconds (a year)" in said, said
    assert "Traceback" not in said


def test_a_lifetime_of_exactly_a_year_is_minted_KB_GEN_03(cli: Cli, tmp_path: Path) -> None:
    before = int(time.time())
    minted = cli.run(*_CLAIMS, "--ttl", str(LONGEST_TOKEN_LIFETIME)).stdout.strip()
    secret = (tmp_path / "vault" / "jwt.secret").read_text().strip()
    claims = jwt.decode(minted, secret, algorithms=["HS256"])
    assert claims["exp"] - claims["iat"] == LONGEST_TOKEN_LIFETIME
    assert claims["iat"] >= before


def test_a_lifetime_beyond_the_service_s_jwt_max_ttl_is_refused_naming_it_KB_GEN_03(cli: Cli) -> None:
    """The service would answer 401 to every request with such a token: none is minted."""
    ceiling = {"NOTOCHORD_JWT_MAX_TTL": "600"}
    refused = cli.run(*_CLAIMS, "--ttl", "601", code=2, env=ceiling)
    assert refused.stdout == ""
    said = _said(refused.stderr)
    assert "jwt_max_ttl" in said and "at most 600 seconds" in said, said
    assert cli.run(*_CLAIMS, "--ttl", "600", env=ceiling).stdout.count(".") == 2
