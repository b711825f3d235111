"""``notochord backup PATH`` and ``notochord restore PATH``: the whole vault in one file, and back.

Backing up needs no pause: other commands and ``notochord serve`` may keep writing meanwhile. The
file holds the master key, so it is created readable by its owner only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from notochord.cli.common import DataDir, JsonFlag, emit, given_path, reporting, resolve_data_dir
from notochord.settings import Settings

__all__ = ["backup", "restore"]


def _data_dir(data_dir: Path | None) -> Path:
    with reporting():
        return resolve_data_dir(data_dir) or Settings.load().data_dir


def backup(
    path: Annotated[
        Path, typer.Argument(help="The backup file to write (or an existing folder to write it in).", parser=given_path)
    ],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Write a consistent snapshot of the whole vault, even while it is in use."""
    from notochord.backup import backup as take_backup

    with reporting():
        summary = take_backup(_data_dir(data_dir), path)
    text = (
        f"backed up {summary.files} file(s), {summary.bytes} bytes, spaces {', '.join(summary.spaces) or 'none'}, "
        f"to {summary.path}\n"
        "the backup holds the master key: keep it as safe as the vault itself"
    )
    emit(summary.as_dict(), as_json=as_json, text=text)


def restore(
    path: Annotated[Path, typer.Argument(help="The backup file written by `notochord backup`.", parser=given_path)],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Bring a backup back into an empty data directory."""
    from notochord.backup import restore as bring_back

    with reporting():
        summary = bring_back(path, _data_dir(data_dir))
    text = (
        f"restored {summary.files} file(s), spaces {', '.join(summary.spaces) or 'none'}, "
        f"from the backup of {summary.created} into {summary.path}"
    )
    emit(summary.as_dict(), as_json=as_json, text=text)
