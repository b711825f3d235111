"""Which folders a user may choose as a working folder (P-FILE-29…31).

The same rules serve "Settings › Working folder" (the ``workspace:`` of a gem's scheduled and
event-triggered SOPs) and "Chat about a folder". The chosen path is resolved first (symlinks
followed, so a link cannot smuggle in a refused folder), then checked against these rules in this
order; the first that matches names itself in the error:

1. ``filesystem root``: ``/`` or a drive root.
2. ``home folder``: the home folder itself or any folder containing it.
3. ``data directory``: notochord's data directory, anything inside it, or any folder containing it.
4. ``system folder``: ``/etc``, ``/usr``, ``/bin``, ``/sbin``, ``/lib*``, ``/var``, ``/proc``,
   ``/sys``, ``/dev``, ``/boot``, ``/opt``, ``/run``, ``/snap``, ``/root``, ``/private`` (macOS),
   ``/System``, ``/Library``, ``/Applications``, ``/Volumes`` itself, and on Windows the
   ``Windows``, ``Program Files`` and ``ProgramData`` folders; or anything inside them.
5. ``application folder``: inside an application bundle (a segment ending in ``.app``), or inside
   another application's data: ``~/.config``, ``~/.local``, ``~/snap``, ``~/Library/…`` (Application
   Support, Containers, Group Containers, Preferences, Caches and the like), ``~/AppData``.
6. ``hidden folder``: any segment starting with ``.``, in the path as given or as resolved.

A refusal is a :class:`~notochord.errors.FilePermissionError` (``E_PERM_DENIED``) whose message
names the rule. A folder that does not exist is ``E_NOT_FOUND``; a file is a plain ``FileError``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePath

from notochord.errors import FileError, FileNotFoundInWorkspaceError, FilePermissionError

__all__ = ["SYSTEM_FOLDERS", "check_working_folder"]

SYSTEM_FOLDERS: tuple[str, ...] = (
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/var",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/opt",
    "/run",
    "/snap",
    "/root",
    "/private",
    "/System",
    "/Library",
    "/Applications",
    "/cores",
    "C:/Windows",
    "C:/Program Files",
    "C:/Program Files (x86)",
    "C:/ProgramData",
)
"""Folders that, with everything inside them, belong to the operating system."""

_EXACT_ONLY = ("/Volumes", "/mnt", "/media", "/home", "/Users")
"""Folders that hold other people's or other disks' folders: refused themselves, fine inside."""

_HOME_APP_FOLDERS = (
    ".config",
    ".local",
    "snap",
    "AppData",
    "Library/Application Support",
    "Library/Containers",
    "Library/Group Containers",
    "Library/Preferences",
    "Library/Caches",
    "Library/Keychains",
    "Library/Mail",
    "Library/Messages",
    "Library/Safari",
    "Library/Cookies",
    "Library/LaunchAgents",
)


def check_working_folder(
    path: Path,
    *,
    home: Path,
    data_dir: Path,
    system_folders: Sequence[str] = SYSTEM_FOLDERS,
) -> Path:
    """Return the resolved ``path`` if it may be a working folder; raise naming the rule if not.

    Args:
        path: the folder the user chose; must be absolute.
        home: the user's home folder.
        data_dir: notochord's data directory.
        system_folders: the operating system's folders (replaceable for tests on other systems).

    Raises:
        FilePermissionError: the folder breaks a rule (the message names it).
        FileNotFoundInWorkspaceError: the folder does not exist.
        FileError: the path is not absolute or is a file.
    """
    if not path.is_absolute():
        raise FileError(
            f"{path} is not an absolute path; choose a folder by its full path",
            reason="folder_not_absolute",
            values={"path": str(path)},
        )
    if "\x00" in str(path):  # no system names a file with it; os.path refuses it with a ValueError
        raise FileError(
            f"{str(path)!r} holds a NUL character, which no folder's name can; choose the folder again",
            reason="folder_nul",
            values={"path": repr(str(path))},
        )
    try:
        resolved = Path(os.path.realpath(path))
        real_home = Path(os.path.realpath(home))
        real_data = Path(os.path.realpath(data_dir))
        exists, is_dir = resolved.exists(), resolved.is_dir()
    except OSError as exc:
        raise FileError(
            f"cannot check {path}: {exc.strerror}",
            reason="folder_uncheckable",
            values={"path": str(path), "detail": str(exc.strerror)},
        ) from exc
    if not exists:
        raise FileNotFoundInWorkspaceError(f"the folder {path} does not exist", path=str(path))
    if not is_dir:
        raise FileError(f"{path} is a file; choose a folder", reason="folder_is_file", values={"path": str(path)})

    def refuse(rule: str, why: str, reason: str, **values: str) -> FilePermissionError:
        return FilePermissionError(
            f"{path} cannot be a working folder ({rule}): {why}",
            path=str(path),
            reason=reason,
            values={"path": str(path), **values},
        )

    if resolved == Path(resolved.anchor):
        raise refuse("filesystem root", "the whole disk would be open to gems", "folder_root")
    if _within(real_home, resolved):
        raise refuse("home folder", "the home folder and the folders containing it hold all your files", "folder_home")
    if _within(resolved, real_data) or _within(real_data, resolved):
        raise refuse("data directory", "notochord's own data cannot be opened to gems", "folder_data_dir")
    for folder in (*system_folders, *_EXACT_ONLY):
        system = PurePath(folder)
        if _same(resolved, system) or (folder not in _EXACT_ONLY and _within(resolved, system)):
            raise refuse("system folder", f"{folder} belongs to the operating system", "folder_system", folder=folder)
    if any(part.lower().endswith(".app") for part in resolved.parts):
        raise refuse("application folder", "it is inside an application bundle", "folder_app_bundle")
    for app_folder in _HOME_APP_FOLDERS:
        if _within(resolved, real_home / app_folder):
            raise refuse(
                "application folder",
                f"~/{app_folder} holds other applications' data",
                "folder_app_data",
                folder=f"~/{app_folder}",
            )
    if any(part.startswith(".") for part in (*path.parts, *resolved.parts)):
        raise refuse("hidden folder", "folders whose names start with . are hidden", "folder_hidden")
    return resolved


def _fold(path: PurePath) -> tuple[str, ...]:
    # Case-insensitive: the default file systems of macOS and Windows are.
    return tuple(part.lower().rstrip("/\\") for part in path.parts)


def _same(a: PurePath, b: PurePath) -> bool:
    return _fold(a) == _fold(b)


def _within(inner: PurePath, outer: PurePath) -> bool:
    """Whether ``inner`` is ``outer`` or lies inside it."""
    a, b = _fold(inner), _fold(outer)
    return a[: len(b)] == b
