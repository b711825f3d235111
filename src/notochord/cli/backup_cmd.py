"""``notochord backup PATH`` and ``notochord restore PATH``: the whole vault in one file, and back.

Backing up needs no pause: other commands and ``notochord serve`` may keep writing meanwhile. The
file holds the master key, so it is created readable by its owner only.

Both show a progress bar on stderr while they work, in megabytes of the vault with the time left, on
a terminal only and never with ``--json``, like the bars of ``docs import`` and ``reindex``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import DownloadColumn, TaskID

from notochord.cli.common import (
    DataDir,
    JsonFlag,
    emit,
    given_path,
    interrupted,
    printable,
    reporting,
    resolve_data_dir,
)
from notochord.cli.progress import progress_bar
from notochord.knowledge.arguments import counted
from notochord.settings import Settings

if TYPE_CHECKING:
    from notochord.backup import Progress as Told

__all__ = ["backup", "restore"]

# what each stage of the work is called on the bar
_STAGES = {"copying": "copying the vault", "compressing": "compressing", "unpacking": "unpacking"}


def _data_dir(data_dir: Path | None) -> Path:
    with reporting():
        return resolve_data_dir(data_dir) or Settings.load().data_dir


@contextlib.contextmanager
def _stopped_by_ctrl_c(message: str) -> Iterator[None]:
    """After Ctrl-C: say so, and what is left, instead of exiting 130 without a word. Both commands
    work in a folder of their own and remove it when stopped, so nothing is left half-written."""
    try:
        yield
    except KeyboardInterrupt:
        interrupted(message)


@contextlib.contextmanager
def _progress_bar(*, hidden: bool) -> Iterator[Told]:
    """A bar per stage, in bytes of the vault, with the time that stage has left at its own speed;
    drawn on a terminal only and cleared when it stops, like the bar of ``docs import``."""
    bar = progress_bar(hidden=hidden, amount=DownloadColumn())
    tasks: dict[str, TaskID] = {}

    def tell(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            for earlier in tasks.values():
                bar.update(earlier, visible=False)
            tasks[stage] = bar.add_task(_STAGES.get(stage, stage), total=total)
        bar.update(tasks[stage], completed=done, total=total)

    with bar:
        yield tell


def _backup_path(value: str | Path) -> Path:
    """The backup file or folder named on the command line.

    A trailing slash names a folder, which ``Path`` forgets: ``backup /mnt/usb/`` with nothing
    mounted there would otherwise write a file named ``usb`` beside the mount point.
    """
    path = given_path(value)
    if isinstance(value, str) and value.endswith(("/", os.sep)) and not path.expanduser().is_dir():
        raise typer.BadParameter(f"the folder {path} does not exist; create it or name another one")
    return path


def backup(
    path: Annotated[
        Path,
        typer.Argument(help="The backup file to write (or an existing folder to write it in).", parser=_backup_path),
    ],
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Write a consistent snapshot of the whole vault, even while it is in use."""
    from notochord.backup import backup as take_backup

    source = _data_dir(data_dir)
    stopped = f"no backup was written to {printable(path)} and nothing of it is left; run notochord backup again"
    with reporting(), _stopped_by_ctrl_c(stopped), _progress_bar(hidden=as_json) as tell:
        summary = take_backup(source, path, progress=tell)
    text = (
        f"backed up {counted(summary.files, 'file')}, {summary.bytes} bytes, "
        f"spaces {', '.join(summary.spaces) or 'none'}, to {summary.path}\n"
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

    target = _data_dir(data_dir)
    stopped = f"nothing was restored into {printable(target)}; run notochord restore again"
    with reporting(), _stopped_by_ctrl_c(stopped), _progress_bar(hidden=as_json) as tell:
        summary = bring_back(path, target, progress=tell)
    text = (
        f"restored {counted(summary.files, 'file')}, spaces {', '.join(summary.spaces) or 'none'}, "
        f"from the backup of {summary.created} into {summary.path}"
    )
    emit(summary.as_dict(), as_json=as_json, text=text)
