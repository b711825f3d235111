"""The ``notochord`` command line (typer). Importing :mod:`notochord` never imports this."""

from __future__ import annotations

from notochord.cli.main import app, main

__all__ = ["app", "main"]
