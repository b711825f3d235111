"""``notochord console-url``: print a fresh one-time sign-in link to the console.

The link is signed with the console's secret in the data directory, so only someone who can read
that directory can make one; the running server accepts each link once, within a day.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from notochord.cli.common import DataDir, JsonFlag, emit, fail, resolve_data_dir
from notochord.cli.numbers import PORT
from notochord.errors import NotochordError, SpaceNotFoundError
from notochord.settings import Settings

__all__ = ["console_url"]


def console_url(
    host: Annotated[str, typer.Option("--host", help="The address notochord serve listens on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port notochord serve listens on.", parser=PORT)] = 8420,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Print a one-time link that signs this browser in to the console (valid for a day)."""
    from notochord.app import is_vault
    from notochord.console.auth import ConsoleKeys

    try:
        directory: Path = resolve_data_dir(data_dir) or Settings.load().data_dir
        if not is_vault(directory):
            # a link's secret belongs beside a vault; minting one elsewhere leaves a stray folder
            raise SpaceNotFoundError.no_vault(os.path.abspath(directory))
        keys = ConsoleKeys(directory)
        url = console_base_url(host, port) + f"/login?token={keys.mint_login_token()}"
    except NotochordError as error:
        fail(error)
    if as_json:
        emit({"url": url}, as_json=True)
    else:
        sys.stdout.write(url + "\n")


def console_base_url(host: str, port: int) -> str:
    """``http://host:port`` as a browser would need it (IPv6 in brackets; any-address as loopback)."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    shown = f"[{shown}]" if ":" in shown else shown
    return f"http://{shown}:{port}"
