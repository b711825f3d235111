"""``notochord serve`` and ``notochord token``: run the knowledge-base service and mint dev tokens.

``serve`` runs one uvicorn process (``127.0.0.1:8420`` by default) that stops gracefully on Ctrl-C
or SIGTERM: requests in flight finish, then every space is closed. Without a configured
``NOTOCHORD_JWT_SECRET`` (or public key) it creates a random development secret in
``<data_dir>/jwt.secret`` (mode 0600) on first start; ``token`` signs with the same secret.
``serve`` binds its port before it opens the vault or prints anything, so a port in use is one
clear error (exit 2), never a "service on http://…" line followed by a failure.

Stopped, it says so in one line on stdout once every space is closed: Ctrl-C (SIGINT) exits 130,
as every command stopped by Ctrl-C does; SIGTERM, the way a service manager stops a service, exits
0. Ctrl-C before the service has started is reported like any interrupted command.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import errno
import os
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

import notochord
from notochord.cli.common import INTERRUPTED, DataDir, JsonFlag, emit, fail, interrupted, resolve_data_dir
from notochord.cli.numbers import LIFETIME, PORT
from notochord.errors import ConfigurationError, NotochordError, ReadOnlyStoreError, SpaceNotFoundError
from notochord.settings import Settings

if TYPE_CHECKING:
    import uvicorn

# The web stack loads only when a command needs it: every other command starts faster.
PREFIX = "/api/knowledge"

__all__ = ["build_server", "serve", "token"]

ROLES = ("owner", "admin", "member", "viewer")
_MAX_REQUEST_HEAD = 32 * 1024
"""Bytes of request line and headers accepted (a token with many claims fits; a header flood does not)."""


def _settings_and_dir(data_dir: Path | None) -> tuple[Settings, Path]:
    try:
        settings = Settings.load()
    except NotochordError as error:
        fail(error)
    return settings, resolve_data_dir(data_dir) or settings.data_dir


def _accepted_by_the_service(user: str, org: str, email: str | None) -> None:
    """Refuse claims the service would refuse (an empty user, ``ACME`` for an organization…), so
    that no token is minted only to be answered 401 by every request.

    Raises:
        ConfigurationError: what the service would answer, and nothing is minted.
    """
    from notochord.kbservice.actors import actor_from_claims
    from notochord.kbservice.errors import KbAuthenticationError

    try:
        actor_from_claims({"sub": user, "org": org, "email": email})
    except KbAuthenticationError as refused:
        raise ConfigurationError(f"the service would refuse this token: {refused.message}") from None


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, so a port in use is reported before anything is announced.

    Raises:
        ConfigurationError: the host cannot be resolved, or the port is taken or not permitted.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigurationError(f"cannot listen on {host!r}: not an address or a known host name ({exc})") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigurationError(
                f"port {port} is in use on {host}; stop the other service or choose another port with --port"
            ) from exc
        if exc.errno in {errno.EACCES, errno.EPERM}:
            raise ConfigurationError(
                f"port {port} needs privileges on this machine; choose a port above 1023 with --port"
            ) from exc
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def build_server(nc: notochord.Notochord, settings: Settings, *, host: str, port: int) -> uvicorn.Server:
    """A uvicorn server for the service over ``nc`` (one process, no reload, no websockets).

    Hostile or broken clients are bounded by the ``http_*`` settings: a request head must arrive
    within ``http_header_timeout`` seconds, a body may pause ``http_body_timeout`` seconds at most, an
    idle kept-alive connection closes after ``http_keepalive_timeout`` seconds, and at most
    ``http_max_connections`` connections are open at once (more are answered 503 and closed).

    Raises:
        ConfigurationError: a timeout or the connection cap is not a positive number.
    """
    import uvicorn

    from notochord.server.app import create_app
    from notochord.server.auth import load_or_create_secret
    from notochord.server.http_protocol import protocol_class

    bounds = {
        "http_header_timeout": settings.http_header_timeout,
        "http_body_timeout": settings.http_body_timeout,
        "http_keepalive_timeout": settings.http_keepalive_timeout,
        "http_max_connections": settings.http_max_connections,
    }
    for name, value in bounds.items():
        if value <= 0:
            raise ConfigurationError(f"{name} must be a positive whole number, not {value}")
    if not settings.jwt_secret and not settings.jwt_public_key:
        settings = dataclasses.replace(settings, jwt_secret=load_or_create_secret(nc.data_dir))
    app = create_app(nc, settings)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        ws="none",
        http=protocol_class(
            header_timeout=settings.http_header_timeout,
            body_timeout=settings.http_body_timeout,
            max_connections=settings.http_max_connections,
        ),
        log_level="info",
        log_config=_log_config(uvicorn.config.LOGGING_CONFIG),
        timeout_graceful_shutdown=30,
        timeout_keep_alive=settings.http_keepalive_timeout,
        # the protocol refuses connections past the cap itself; uvicorn's own limit (503 when the
        # open connections or running requests reach it) then only ever bounds running requests
        limit_concurrency=settings.http_max_connections + 1,
        h11_max_incomplete_event_size=_MAX_REQUEST_HEAD,
    )
    return uvicorn.Server(config)


def _log_config(base: dict[str, Any]) -> dict[str, Any]:
    """uvicorn's logging, with the service's own lines (refused or closed connections, clients
    that went away, unexpected errors) on the same stream in the same format."""
    config = copy.deepcopy(base)
    config["loggers"]["notochord"] = {"handlers": ["default"], "level": "WARNING", "propagate": False}
    config["loggers"]["notochord.server"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on (1-65535).", parser=PORT)] = 8420,
    data_dir: DataDir = None,
) -> None:
    """Run the console, the knowledge-base REST service (OpenAPI at /docs) and MCP over HTTP until Ctrl-C."""
    settings, directory = _settings_and_dir(data_dir)
    try:
        stopped = _run_service(host, port, data_dir, settings, directory)
    except NotochordError as error:
        fail(error)
    except KeyboardInterrupt:
        interrupted("the service was stopped before it started; nothing was served")
    if stopped is not None:
        said = "Ctrl-C" if stopped.signal == signal.SIGINT else signal.Signals(stopped.signal).name
        requests = "requests in flight were cut off" if stopped.forced else "requests in flight were finished"
        typer.echo(f"notochord stopped ({said}): {requests} and every space was closed")
        raise typer.Exit(INTERRUPTED if stopped.signal == signal.SIGINT else 0)


@dataclasses.dataclass(frozen=True)
class _Stopped:
    signal: int
    """The first stop signal received."""
    forced: bool
    """A second Ctrl-C cut the graceful shutdown short."""


def _run_service(host: str, port: int, data_dir: Path | None, settings: Settings, directory: Path) -> _Stopped | None:
    """Serve until stopped; what stopped the service, once every space is closed."""
    listening = _listen(host, port)
    with contextlib.closing(listening), notochord.open(directory, settings, create=False) as nc:
        # Opened now so that a store which cannot be used fails here, not on every request.
        if nc.personal.read_only or not os.access(nc.data_dir, os.W_OK):
            raise ReadOnlyStoreError(
                f"the data directory {nc.data_dir} is read-only: the service writes (uploads, tokens, "
                "the embedding queue), so make it writable; the other commands can read it as it is"
            )
        server = build_server(nc, settings, host=host, port=port)
        with _stop_signals(server) as received:
            shown = f"[{host}]" if ":" in host else host
            typer.echo(f"console (one-time sign-in link): {_console_link(nc, host, port)}")
            typer.echo(f"notochord knowledge-base service on http://{shown}:{port}{PREFIX}")
            typer.echo(f"API documentation: http://{shown}:{port}/docs")
            typer.echo(
                "get a development token with: notochord token --user USER --org ORG --role member"
                + (f" --data-dir {directory}" if data_dir is not None else "")
            )
            server.run(sockets=[listening])
    return _Stopped(received[0], server.force_exit) if received else None


@contextlib.contextmanager
def _stop_signals(server: uvicorn.Server) -> Iterator[list[int]]:
    """Note SIGINT and SIGTERM (in the order received) instead of letting them end the process.

    uvicorn answers them while it runs, then restores the handlers it found and raises each signal
    it caught again: with Python's own handlers that is a ``KeyboardInterrupt`` (exit 130 without a
    word) or a death by SIGTERM before the vault is closed. A signal that comes before uvicorn
    listens for it (while it starts) stops the server as soon as it has started.
    """
    received: list[int] = []

    def note(sig: int, frame: FrameType | None) -> None:  # noqa: ARG001  (the signal module passes it)
        received.append(sig)
        server.should_exit = True

    previous = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _console_link(nc: notochord.Notochord, host: str, port: int) -> str:
    from notochord.cli.console_cmd import console_base_url
    from notochord.console.auth import ConsoleKeys

    return f"{console_base_url(host, port)}/login?token={ConsoleKeys(nc.data_dir).mint_login_token()}"


def token(
    user: Annotated[str, typer.Option("--user", help="The user id (claim sub).")],
    org: Annotated[str, typer.Option("--org", help="The organization id (claim org).")],
    role: Annotated[str, typer.Option("--role", help="Organization role: owner, admin, member or viewer.")],
    superadmin: Annotated[bool, typer.Option("--superadmin", help="Add platform_role=superadmin.")] = False,
    ttl: Annotated[int, typer.Option("--ttl", help="Lifetime in seconds (at most a year).", parser=LIFETIME)] = 3600,
    email: Annotated[str | None, typer.Option("--email", help="The email claim.")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Print an HS256 development token signed with the service's secret."""
    settings, directory = _settings_and_dir(data_dir)
    try:
        if role not in ROLES:
            raise ConfigurationError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
        _accepted_by_the_service(user, org, email)
        if 0 < settings.jwt_max_ttl < ttl:
            raise ConfigurationError(
                f"the service refuses tokens that live longer than jwt_max_ttl: ask for --ttl at most "
                f"{settings.jwt_max_ttl} seconds, not {ttl}"
            )
        secret = settings.jwt_secret
        if secret is None:
            if settings.jwt_public_key:
                raise ConfigurationError(
                    "the service verifies tokens with a public key; mint tokens with the matching private key"
                )
            from notochord.app import is_vault

            if not is_vault(directory):
                # The secret belongs to a service's data directory; minting one into a folder that
                # holds no vault would leave a stray directory with nothing that verifies it.
                raise SpaceNotFoundError.no_vault(os.path.abspath(directory))
            from notochord.server.auth import load_or_create_secret

            secret = load_or_create_secret(directory)
        from notochord.server.auth import mint_token

        minted = mint_token(
            secret=secret,
            user=user,
            org=org,
            role=role,
            superadmin=superadmin,
            ttl=ttl,
            email=email,
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
        )
    except NotochordError as error:
        fail(error)
    if as_json:
        emit({"token": minted}, as_json=True)
    else:
        sys.stdout.write(minted + "\n")
