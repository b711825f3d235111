"""The path rules of ``workspace:`` and ``run:`` addresses: what a gem's path may name, and how.

The operations on the paths are :class:`~notochord.files.workspace.Workspace`'s; this module turns a
gem's text into a :class:`Target` and refuses, before anything is opened, what no operation may do.

Path rules, applied in this order (OD-P06):

1. The root must exist: no conversation folder → ``E_PERM_DENIED`` for every ``workspace:`` call
   (P-FILE-27), and likewise ``run:`` without a run folder.
2. Normalise: ``\\`` is a separator, empty and ``.`` segments drop out, ``..`` pops a segment. An
   absolute path (``/x``, ``C:\\x``) or a ``..`` that climbs above the root → ``E_PERM_DENIED``. A
   name longer than :data:`NAME_MAX` bytes cannot exist anywhere → ``E_FILE``.
3. Resolve symlinks; a path whose real location is outside the root, or that goes through a link
   leading round in a loop → ``E_PERM_DENIED``.
4. Any segment starting with ``.``, before or after resolution, makes the path not exist for the
   gem (P-FILE-20): reading, ``stat`` and ``list`` → ``E_NOT_FOUND``, exactly as for a missing file;
   writing, deleting, moving and ``mkdir`` → ``E_PERM_DENIED``; ``list`` leaves such entries out.
5. A change must lead to a real path the file history can record and the user's programs can open:
   UTF-8 text no longer than the file system's path limit; else ``E_FILE``.

A gem knows two kinds of entry, ``file`` and ``dir``. A pipe, socket or device is neither: ``list``
leaves it out, and ``stat``, ``read``, ``write``, ``move`` and ``delete`` refuse it (``E_FILE``)
without opening it for reading, so nothing waits on it and no gem takes it for a file to copy.
``list`` also leaves out names that are not UTF-8 text: they could not cross to the tool process
as text, nor be passed back. ``stat`` names the entry as the gem named it, even through a link.

A path ending in ``/`` names a folder (P-FILE-18: the AI passes ``"inbox/"``): ``write`` refuses it,
a file may not be moved to it, and a file named with it is refused by every call. A move renames;
it never drops a file into a folder, and a folder cannot be moved into itself. A new name that
differs from an existing neighbour only in Unicode form (``café`` composed or decomposed) is refused
with ``E_EXISTS``: the user could not tell the two apart. Nor may a new name hold a control character
(a line break, a terminal escape) or one that turns the direction of text (``invoice\u202efdp.exe``
shows as ``invoiceexe.pdf``): ``E_FILE``. Nor may a new first name start with a prefix
(``workspace:workspace:notes.txt``, the prefix given twice): ``E_FILE``, naming the path to use.
Names the user gave such characters stay reachable.
"""

from __future__ import annotations

import os
import stat as stat_mod
import unicodedata
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from notochord.errors import FileError, FileExistsInWorkspaceError, FileNotFoundInWorkspaceError, FilePermissionError

__all__ = [
    "NAME_MAX",
    "RUN_PREFIX",
    "WORKSPACE_PREFIX",
    "Mode",
    "Target",
    "check_folder_only",
    "check_hidden",
    "check_new_names",
    "check_no_loop",
    "check_recordable",
    "check_unicode_twin",
    "deceptive",
    "first_deceptive",
    "is_file_or_folder",
    "is_text",
    "normalise",
    "real_root",
    "shown",
    "split_prefix",
]

WORKSPACE_PREFIX = "workspace:"
RUN_PREFIX = "run:"

NAME_MAX = 255
"""The longest name, in UTF-8 bytes, that ext4, APFS, Btrfs and XFS hold (NTFS: 255 UTF-16 units)."""
_PATH_MAX = 4096  # Linux's, counting the closing NUL; used where the file system does not say its own


class Mode(Enum):
    READ = "read"
    CHANGE = "change"


@dataclass(frozen=True)
class Target:
    prefix: str
    root: Path
    parts: tuple[str, ...]
    display: str
    # the last segment as the gem wrote it, before links were followed ("" for the top level)
    name: str = ""
    # the gem's path ended in "/": it means a folder
    folder_only: bool = False

    @property
    def rel(self) -> str:
        return "/".join(self.parts)

    @property
    def absolute(self) -> Path:
        return self.root.joinpath(*self.parts)


def real_root(root: Path | None) -> Path | None:
    return None if root is None else Path(os.path.realpath(root))


def split_prefix(path: str) -> tuple[str, str]:
    if path.startswith(WORKSPACE_PREFIX):
        return WORKSPACE_PREFIX, path[len(WORKSPACE_PREFIX) :]
    if path.startswith(RUN_PREFIX):
        return RUN_PREFIX, path[len(RUN_PREFIX) :]
    head = path.replace("\\", "/").split("/", 1)[0]
    if ":" in head and not (len(head) == 2 and head[0].isalpha()):
        raise FilePermissionError(
            f"{path}: unknown prefix {head.split(':', 1)[0]}: (use workspace: or run:)", path=path
        )
    return RUN_PREFIX, path


def normalise(path: str, rel: str) -> list[str]:
    if "\x00" in rel:
        raise FilePermissionError(f"{path!r} contains a NUL character", path=path)
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no file system name can hold it
        raise FilePermissionError(f"{path!r} is not valid text (it holds a lone surrogate)", path=path) from None
    text = rel.replace("\\", "/")
    if text.startswith("/") or (len(text) >= 2 and text[1] == ":" and text[0].isalpha()):
        raise FilePermissionError(f"{path} is an absolute path; give a path relative to the folder", path=path)
    parts: list[str] = []
    for segment in text.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                raise FilePermissionError(f"{path} climbs above the folder with ..", path=path)
            parts.pop()
            continue
        if len(segment.encode("utf-8")) > NAME_MAX:
            raise FileError(
                f"{shown(path)}: the name {shown(segment, 40)} is longer than the {NAME_MAX} bytes a name may "
                "have; choose a shorter name"
            )
        parts.append(segment)
    return parts


def check_hidden(path: str, parts: tuple[str, ...] | list[str], mode: Mode) -> None:
    if not any(part.startswith(".") for part in parts):
        return
    if mode is Mode.READ:
        raise FileNotFoundInWorkspaceError(f"{path} does not exist", path=path)
    raise FilePermissionError(f"{path}: names starting with . cannot be changed by a gem", path=path)


def check_no_loop(path: str, root: Path, resolved: tuple[str, ...]) -> None:
    """``realpath`` leaves a link unresolved only when it leads round in a loop (``a`` → ``b`` → ``a``)."""
    folder = root
    for part in resolved:
        folder = folder / part
        try:
            looped = stat_mod.S_ISLNK(os.lstat(folder).st_mode)
        except OSError:  # missing, or past the path limit: the walk from the root says which
            return
        if looped:
            raise FilePermissionError(
                f"{path} goes through a link that leads round in a loop; it cannot be followed", path=path
            )


def check_recordable(path: str, root: Path, real: Path) -> None:
    """A change's real path must be text the history can record, and short enough to open again.

    The words never show where the folder itself is: a gem is not told the user's folder layout.
    """
    if not is_text(os.fspath(root)):
        raise FileError(
            f"{path}: the location of this folder holds a name that is not UTF-8 text, which the file history "
            "cannot record; the folder must be renamed before a gem can change files in it"
        )
    inside = real.relative_to(root).as_posix()
    if not is_text(inside):
        raise FileError(
            f"{path} leads to a name that is not UTF-8 text ({shown(ascii(inside))}), which the file history "
            "cannot record; rename it in the folder first"
        )
    limit = path_max(real)
    if len(os.fsencode(real)) >= limit:
        raise FileError(
            f"{shown(path)} is longer than the {limit - 1} bytes a path may have here (counting the folder's "
            "own location); choose a shorter path"
        )


def path_max(real: Path) -> int:
    """The path limit of the file system ``real`` is on, asked of its nearest existing folder."""
    for folder in real.parents:
        try:
            limit = os.pathconf(folder, "PC_PATH_MAX")
        except (OSError, ValueError):
            continue
        return limit if limit > 0 else _PATH_MAX  # -1: the file system sets none of its own
    return _PATH_MAX


def check_folder_only(target: Target, st: os.stat_result | None) -> None:
    """A path ending in ``/`` that names anything but a folder is refused (P-FILE-18)."""
    if not target.folder_only or st is None or stat_mod.S_ISDIR(st.st_mode):
        return
    what = "a file" if stat_mod.S_ISREG(st.st_mode) else "not a folder"
    raise FileError(f"{target.display} ends with /, which names a folder, but {target.name} is {what}; leave out the /")


def check_unicode_twin(parent: int, target: Target) -> None:
    """Refuse a new name that differs from a neighbour's only in Unicode form.

    Linux keeps ``café`` composed and decomposed as two names that look the same; macOS takes them
    for one. Refusing the second keeps the folder legible to the user, and alike on both systems.
    """
    name = target.parts[-1]
    wanted = unicodedata.normalize("NFC", name)
    with os.scandir(parent) as scan:
        for item in scan:
            # a hidden neighbour does not exist for the gem: it is never named to it
            visible = not item.name.startswith(".") and is_text(item.name)
            if visible and item.name != name and unicodedata.normalize("NFC", item.name) == wanted:
                raise FileExistsInWorkspaceError(
                    f"{target.display}: {item.name} is already there in another Unicode form; use the name "
                    "exactly as list gives it",
                    path=target.display,
                )


_DIRECTION_MARKS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_LINE_BREAKS = frozenset("\u2028\u2029")


def deceptive(char: str) -> bool:
    """A character that makes a name read as another one or breaks the line a listing shows it on:
    a control character, a mark or override that turns the direction of text, a line separator."""
    return char in _DIRECTION_MARKS or char in _LINE_BREAKS or unicodedata.category(char) == "Cc"


def first_deceptive(text: str) -> str | None:
    """The first :func:`deceptive` character of ``text``, if any."""
    return next((c for c in text if deceptive(c)), None)


def _escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if deceptive(c) else c for c in text)


def check_new_names(target: Target) -> None:
    """Refuse a name this change would create that holds a control or text-direction character.

    Only names not there yet are refused: a folder the user named so is still written into. So is
    a first name that repeats the prefix (``workspace:workspace:notes.txt``).
    """
    _check_prefix_once(target)
    for depth, part in enumerate(target.parts, start=1):
        bad = first_deceptive(part)
        if bad is None or os.path.lexists(target.root.joinpath(*target.parts[:depth])):
            continue
        raise FileError(
            f"{shown(_escaped(target.display))}: the name {shown(_escaped(part), 40)} holds a control or "
            f"text-direction character (U+{ord(bad):04X}), which would make it read as another name or break "
            "the lines of a listing; choose a name without it"
        )


def _check_prefix_once(target: Target) -> None:
    """The AI may pass ``workspace:notes.txt`` to a gem that adds ``workspace:`` itself (P-FILE-18):
    a file named ``workspace:notes.txt`` would be one neither the user nor the AI looks for."""
    first = target.parts[0] if target.parts else ""
    if not first.startswith((WORKSPACE_PREFIX, RUN_PREFIX)) or os.path.lexists(target.root / first):
        return
    raise FileError(f"{shown(target.display)} names a prefix twice; give it once ({shown(target.rel)})")


def is_text(name: str) -> bool:
    """Whether ``name`` is UTF-8 text; a name in another encoding reaches Python as lone surrogates."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_file_or_folder(st: os.stat_result) -> bool:
    return stat_mod.S_ISREG(st.st_mode) or stat_mod.S_ISDIR(st.st_mode)


def shown(text: str, limit: int = 80) -> str:
    """``text`` cut short for a message: a gem may send a path of megabytes."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
