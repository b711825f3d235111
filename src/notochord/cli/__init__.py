"""The ``notochord`` command line (typer). Importing :mod:`notochord` never imports this."""

from __future__ import annotations

try:
    from notochord.cli.main import app, main
except KeyboardInterrupt:
    # Ctrl-C while the command line is still loading: exit as an interrupted command does (128 +
    # SIGINT), not with a traceback through the import machinery. Nothing has been opened yet.
    raise SystemExit(130) from None

__all__ = ["app", "main"]
