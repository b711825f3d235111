"""``notochord serve`` and ``notochord token``: the development secret, minted tokens, the server."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import jwt
import pytest
import typer
from kb_harness import free_port
from typer.testing import CliRunner

import notochord
from notochord.cli import serve_cmd
from notochord.settings import Settings


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    app.command("token")(serve_cmd.token)
    app.command("serve")(serve_cmd.serve)
    return app


@pytest.fixture(autouse=True)
def _no_inherited_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("NOTOCHORD_"):
            monkeypatch.delenv(key)


def test_token_creates_the_secret_once_and_mints_a_verifiable_token(cli: typer.Typer, tmp_path: Path) -> None:
    data = tmp_path / "data"
    notochord.open(data, Settings(data_dir=data, index_in_background=False), embedder=None).close()
    args = ["--user", "alice", "--org", "acme", "--role", "member", "--email", "a@example.org", "--data-dir", str(data)]
    result = CliRunner().invoke(cli, ["token", *args])
    assert result.exit_code == 0, result.output
    secret = (data / "jwt.secret").read_text().strip()
    assert (data / "jwt.secret").stat().st_mode & 0o777 == 0o600
    claims = jwt.decode(result.stdout.strip(), secret, algorithms=["HS256"])
    assert {k: claims[k] for k in ("sub", "org", "org_role", "email")} == {
        "sub": "alice",
        "org": "acme",
        "org_role": "member",
        "email": "a@example.org",
    }
    assert claims["exp"] - claims["iat"] == 3600
    again = CliRunner().invoke(cli, ["token", *args, "--superadmin", "--ttl", "60"])
    claims = jwt.decode(again.stdout.strip(), secret, algorithms=["HS256"])
    assert claims["platform_role"] == "superadmin" and claims["exp"] - claims["iat"] == 60


def test_token_without_a_vault_says_so_and_creates_nothing(cli: typer.Typer, tmp_path: Path) -> None:
    """KB-AUTH: the development secret lives in a vault; a folder without one is left as it was."""
    data = tmp_path / "nowhere"
    result = CliRunner().invoke(
        cli, ["token", "--user", "a", "--org", "acme", "--role", "member", "--data-dir", str(data)]
    )
    assert result.exit_code == 3
    # the command that makes the vault names the folder, so that it is made there and not at the default
    assert "no vault at" in result.output and f"notochord --data-dir {data} init" in result.output
    assert not data.exists()


def test_token_refuses_an_unknown_role(cli: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["token", "--user", "a", "--org", "acme", "--role", "god", "--data-dir", str(tmp_path)]
    )
    assert result.exit_code == 2


def test_built_server_serves_the_api_with_the_development_secret(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data, index_in_background=False)
    with notochord.open(data, settings, embedder=None) as nc:
        server = serve_cmd.build_server(nc, settings, host="127.0.0.1", port=free_port())
        server.config.log_level = "critical"
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            secret = (data / "jwt.secret").read_text().strip()
            token = jwt.encode({"sub": "u", "org": "acme", "org_role": "member", "exp": int(time.time()) + 60}, secret)
            url = f"http://127.0.0.1:{server.config.port}/api/knowledge/kb"
            response = httpx.post(url, json={"name": "first"}, headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 201
        finally:
            server.should_exit = True
            thread.join(timeout=20)
    assert not thread.is_alive()
