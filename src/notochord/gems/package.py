"""The gem folder an installation keeps a copy of: checked before anything is recorded, copied safely.

A tool may read its installed code (and nothing else of the machine, where the kernel allows), so
the copy must hold only what is inside the gem folder:

- A symbolic link is never followed out of the folder. One whose target (followed to the end) is a
  file or folder of the gem is kept as a relative link into the copy; one that leads outside the
  folder, to nothing, into a loop, or to something that is neither a file nor a folder is refused.
- Named pipes, devices and sockets are refused: reading one may never end.
- ``.git``, ``__pycache__`` and ``.venv`` folders (at any depth) are left out of the copy.

:func:`check_package` lists every such problem at once, before the installation records anything.
:func:`stage_package` copies into a fresh folder beside the installed code without following any
link (what it finds is checked again: the folder may change between the two), and
:func:`swap_in` puts a staged copy in place of the installed one.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from notochord.errors import GemError

__all__ = ["LEFT_OUT", "check_package", "stage_package", "swap_in"]

LEFT_OUT: Final = frozenset({".git", "__pycache__", ".venv"})
"""Folder names never copied into an installation."""

_KINDS: Final = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a file or folder")


def _walk(root: Path) -> Iterator[tuple[Path, os.stat_result | OSError]]:
    """Every entry below ``root`` with its own ``lstat`` (or why it failed), links never followed."""
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            yield folder, exc
            continue
        for name in names:
            path = folder / name
            try:
                info = path.lstat()
            except OSError as exc:
                yield path, exc
                continue
            if stat.S_ISDIR(info.st_mode):
                if name in LEFT_OUT:
                    continue
                pending.append(path)
            yield path, info


def _link_problem(root: Path, path: Path) -> tuple[Path | None, str | None]:
    """Where the link ``path`` leads inside ``root``, or why it cannot be kept."""
    try:
        target = path.resolve(strict=True)
    except FileNotFoundError:
        return None, "leads to nothing"
    except (OSError, RuntimeError):
        return None, "is a loop of links"
    if not target.is_relative_to(root):
        return None, f"links to {target}, outside the gem folder; replace the link with the file"
    try:
        mode = target.stat().st_mode
    except OSError as exc:
        return None, f"cannot be read: {(exc.strerror or 'the system refused').lower()}"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return None, f"links to {_kind(mode)}; remove it"
    return target, None


def _problems(root: Path) -> Iterator[tuple[Path, str]]:
    for path, info in _walk(root):
        if isinstance(info, OSError):
            yield path, f"cannot be read: {(info.strerror or 'the system refused').lower()}; check that you may read it"
        elif stat.S_ISLNK(info.st_mode):
            _, problem = _link_problem(root, path)
            if problem is not None:
                yield path, problem
        elif not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            yield path, f"is {_kind(info.st_mode)}, which a gem cannot ship; remove it"


def _refusal(folder: Path, problems: list[tuple[Path, str]]) -> GemError:
    lines = "\n".join(f"  - {path.relative_to(folder)} {problem}" for path, problem in problems)
    return GemError(f"the gem folder {folder} cannot be installed; nothing was installed:\n{lines}")


def check_package(folder: Path) -> None:
    """Refuse ``folder`` unless everything in it can be copied into an installation.

    Raises:
        GemError: naming every link, pipe, device, socket or unreadable entry, and what to do.
    """
    root = folder.resolve()
    problems = list(_problems(root))
    if problems:
        raise _refusal(root, problems)


def _copy(root: Path, staged: Path) -> None:
    problems: list[tuple[Path, str]] = []
    for path, info in _walk(root):
        copy = staged / path.relative_to(root)
        if isinstance(info, OSError):
            problems.append((path, "cannot be read"))
        elif stat.S_ISDIR(info.st_mode):
            copy.mkdir()
        elif stat.S_ISLNK(info.st_mode):
            target, problem = _link_problem(root, path)
            if target is None:
                problems.append((path, problem or "cannot be kept"))
            else:
                os.symlink(os.path.relpath(target, path.parent), copy)
        elif stat.S_ISREG(info.st_mode):
            # O_NOFOLLOW: a file swapped for a link since it was looked at is not followed out
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as source:
                if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
                    problems.append((path, "is no longer a file"))
                    continue
                with copy.open("xb") as sink:
                    shutil.copyfileobj(source, sink)
            shutil.copystat(path, copy, follow_symlinks=False)
        else:
            problems.append((path, f"is {_kind(info.st_mode)}, which a gem cannot ship; remove it"))
    if problems:
        raise _refusal(root, problems)


def stage_package(folder: Path, target: Path) -> Path:
    """Copy ``folder`` into a new folder beside ``target`` and return it (for :func:`swap_in`).

    Raises:
        GemError: the folder holds something that cannot be installed, or cannot be copied; nothing
            is left behind.
    """
    root = folder.resolve()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # a fresh name per call: two installs of one gem at once never share a half-made copy
        staged = Path(tempfile.mkdtemp(prefix=f"{target.name}.new-", dir=target.parent))
    except OSError as exc:
        raise GemError(f"cannot keep the code of the gem in {target.parent}: {exc.strerror or exc}") from exc
    try:
        _copy(root, staged)
    except BaseException as exc:
        shutil.rmtree(staged, ignore_errors=True)
        if isinstance(exc, OSError):
            raise GemError(f"cannot copy the gem folder {root}: {exc.strerror or exc}; nothing was installed") from exc
        raise
    return staged


def swap_in(staged: Path, target: Path) -> None:
    """Put ``staged`` where ``target`` is, then remove the copy it replaced.

    Raises:
        GemError: the staged copy could not be moved in; ``target`` is as it was and ``staged`` is gone.
    """
    old = target.with_name(f"{target.name}.old-{secrets.token_hex(4)}")
    try:
        had_old = target.exists()
        if had_old:
            target.rename(old)
        try:
            staged.rename(target)
        except OSError:
            if had_old:
                old.rename(target)
            raise
    except OSError as exc:
        shutil.rmtree(staged, ignore_errors=True)
        raise GemError(f"cannot put the gem's code in place at {target}: {exc.strerror or exc}") from exc
    shutil.rmtree(old, ignore_errors=True)
