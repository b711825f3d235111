"""The gem folder an installation keeps a copy of: checked before anything is recorded, copied safely.

A tool may read its installed code (and nothing else of the machine, where the kernel allows), so
the copy must hold only what is inside the gem folder:

- A symbolic link is never followed out of the folder. One whose target (followed to the end) is a
  file or folder of the gem is kept as a relative link into the copy; one that leads outside the
  folder, to nothing, into a loop, or to something that is neither a file nor a folder is refused.
- Named pipes, devices and sockets are refused: reading one may never end.
- A file with more than one hard link is refused: the same file is also elsewhere, perhaps outside
  the folder (a key a hostile script linked in), and a gem folder needs no hard links.
- Two names in one folder that differ only in case (or Unicode form) are refused: a vault or
  backup carried to a system whose file names ignore case would keep one of them.
- Well-known clutter is left out of the copy, at any depth (:data:`LEFT_OUT`,
  :data:`LEFT_OUT_FILES`, :func:`left_out_kind`): version control (``.git``, ``.hg``, ``.svn``),
  caches and environments (``__pycache__``, ``.venv``), what macOS adds to a
  ``.zip`` (``__MACOSX``), ``.DS_Store`` and ``Thumbs.db``, and editor swap and backup files
  (``*.swp``, ``*.swo``, ``*~``, ``.#*``). Whatever its kind (a ``.git`` may be a file, a ``.venv`` a
  link), it is neither checked nor counted; the install says how many of each kind it left out. A
  tool's entry there is refused (:mod:`notochord.gems.entries`), never skipped in silence.
  ``node_modules`` is not clutter: it is how a JavaScript tool ships the packages it imports.
- The copy holds at most :data:`MAX_ENTRIES` files and folders and :data:`MAX_TOTAL_BYTES` bytes,
  the limits of an uploaded ``.zip``: a folder over either (``gem install ~/`` by mistake) is
  refused as soon as the count passes it, before anything is copied, and again while copying, as
  the folder may grow in between. What is left out does not count.
- A folder that holds the installed gems of the vault (the vault's own folder, or one above it) is
  refused: the copy would be made inside what it copies, and the vault's files handed to the gem.

:func:`check_package` lists every such problem at once, before the installation records anything.
:func:`stage_package` copies into a fresh folder beside the installed code without following any
link (what it finds is checked again: the folder may change between the two). It reaches every
file and folder through its already opened folder, never by its path again, so a folder swapped
for a link meanwhile is refused rather than copied from where the link leads. A copied file keeps
its permission bits, without set-user-id or set-group-id, and its times. :func:`swap_in` puts a
staged copy in place of the installed one.

A staged copy is ``<gem id>.new-<random>`` beside the installed code, and the copy it replaces is
renamed ``<gem id>.old-<random>`` before it is removed (:func:`leftover_of`). A process killed in
between leaves them behind; whoever holds the gem's code alone next removes them
(:func:`remove_leftovers`), since every such folder is made and removed under that hold.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
import unicodedata
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from notochord.errors import GemError
from notochord.files.noreplace import exchange

__all__ = [
    "INCOMING",
    "LEFT_OUT",
    "LEFT_OUT_FILES",
    "MAX_ENTRIES",
    "MAX_TOTAL_BYTES",
    "SWAP_FILES",
    "StagedCopy",
    "check_package",
    "describe_left_out",
    "gems_with_leftovers",
    "left_out_kind",
    "left_out_problem",
    "leftover_of",
    "remove_code",
    "remove_leftovers",
    "stage_package",
    "swap_in",
]

LEFT_OUT: Final = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "__MACOSX"})
"""Names never copied into an installation, at any depth, whether a folder, a file or a link."""

LEFT_OUT_FILES: Final = frozenset({".DS_Store", "Thumbs.db"})
"""File names never copied into an installation, at any depth."""

SWAP_FILES: Final = "editor swap and backup files"
"""The kind :func:`left_out_kind` gives ``*.swp``, ``*.swo``, ``*~`` and ``.#*`` files."""

# the random part of a staged copy's or a replaced copy's name: token_hex here, and the 8 characters
# of tempfile.mkdtemp in earlier versions
INCOMING: Final = ".incoming-"
"""How the folder a gem's resources are downloaded into before they are checked begins."""
_RESOURCES: Final = ".resources"  # beside the code: ``<gem id>.resources``
_LEFTOVER: Final = re.compile(r"(?P<gem>[a-z0-9][a-z0-9-]*)\.(?:new|old)-[a-z0-9_]{8,32}", re.ASCII)

MAX_ENTRIES: Final = 2000
"""The most files, folders and links an installation copies."""
MAX_TOTAL_BYTES: Final = 64 * 1024 * 1024
"""The most bytes of files an installation copies."""

_HARD_LINK: Final = (
    "is a hard link: the same file is also elsewhere, maybe outside the gem folder; replace it with a copy of the file"
)

_KINDS: Final = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a file or folder")


def left_out_kind(name: str, *, folder: bool) -> str | None:
    """The kind of clutter an entry named ``name`` is, as the install reports it, or ``None`` to copy it.

    ``folder``: the entry is a folder (editor swap files are files only; the names of
    :data:`LEFT_OUT` are left out whatever the entry is).
    """
    if name in LEFT_OUT:
        return name
    if folder:
        return None
    if name in LEFT_OUT_FILES:
        return name
    if name.endswith((".swp", ".swo", "~")) or (name.startswith(".#") and len(name) > 2):
        return SWAP_FILES
    return None


def left_out_problem(parts: Sequence[str]) -> str | None:
    """Why a tool's entry at the relative path ``parts`` is never copied, or ``None`` if it is."""
    for index, part in enumerate(parts):
        kind = left_out_kind(part, folder=index < len(parts) - 1)
        if kind is None:
            continue
        if index < len(parts) - 1:
            return f"is inside {part}, which an installation does not copy; move the file out of it"
        return f"is left out of every installation as clutter ({kind}); rename the file"
    return None


def describe_left_out(left_out: Mapping[str, int]) -> str:
    """``left_out`` in words: ``.git (1), .venv (1), editor swap and backup files (3)``."""
    return ", ".join(f"{kind} ({count})" for kind, count in sorted(left_out.items()))


@dataclass(frozen=True)
class StagedCopy:
    """A copy :func:`stage_package` made, and what it left out (kind → how many)."""

    path: Path
    left_out: Mapping[str, int]


def _walk(root: Path, left_out: Counter[str]) -> Iterator[tuple[Path, os.stat_result | OSError]]:
    """Every entry below ``root`` with its own ``lstat`` (or why it failed), links never followed;
    clutter is counted in ``left_out`` instead."""
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
            if name in LEFT_OUT:
                left_out[name] += 1
                continue
            try:
                info = path.lstat()
            except OSError as exc:
                yield path, exc
                continue
            kind = left_out_kind(name, folder=stat.S_ISDIR(info.st_mode))
            if kind is not None:
                left_out[kind] += 1
                continue
            if stat.S_ISDIR(info.st_mode):
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


class _Budget:
    """What the copy holds so far, against :data:`MAX_ENTRIES` and :data:`MAX_TOTAL_BYTES`."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._entries = 0
        self._bytes = 0

    def entry(self) -> None:
        self._entries += 1
        if self._entries > MAX_ENTRIES:
            raise GemError(
                f"the gem folder {self._root} holds more than {MAX_ENTRIES} files and folders, the most a gem "
                "may hold; nothing was installed. Is it the right folder? Install the folder that holds the "
                "gem's manifest and its own files only"
            )

    def add(self, size: int) -> None:
        self._bytes += size
        if self._bytes > MAX_TOTAL_BYTES:
            raise GemError(
                f"the gem folder {self._root} holds more than {MAX_TOTAL_BYTES // (1024 * 1024)} MiB of files, "
                "the most a gem may hold; nothing was installed. Is it the right folder? Large data belongs "
                "in the manifest's resources, downloaded at install"
            )


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _problems(root: Path, left_out: Counter[str]) -> Iterator[tuple[Path, str]]:
    budget = _Budget(root)
    seen: dict[tuple[Path, str], Path] = {}
    for path, info in _walk(root, left_out):
        budget.entry()
        folded = (path.parent, _fold(path.name))
        twin = seen.setdefault(folded, path)
        if twin != path:
            yield (
                path,
                (
                    f"and {twin.relative_to(root)} differ only in case; a system whose file names ignore case "
                    "keeps only one of them: rename one"
                ),
            )
        if isinstance(info, OSError):
            yield path, f"cannot be read: {(info.strerror or 'the system refused').lower()}; check that you may read it"
        elif stat.S_ISLNK(info.st_mode):
            _, problem = _link_problem(root, path)
            if problem is not None:
                yield path, problem
        elif stat.S_ISREG(info.st_mode):
            budget.add(info.st_size)
            if info.st_nlink > 1:
                yield path, _HARD_LINK
        elif not stat.S_ISDIR(info.st_mode):
            yield path, f"is {_kind(info.st_mode)}, which a gem cannot ship; remove it"


def _refusal(folder: Path, problems: list[tuple[Path, str]]) -> GemError:
    lines = "\n".join(f"  - {path.relative_to(folder)} {problem}" for path, problem in problems)
    return GemError(f"the gem folder {folder} cannot be installed; nothing was installed:\n{lines}")


def check_package(folder: Path) -> dict[str, int]:
    """Refuse ``folder`` unless everything in it can be copied into an installation; returns what
    the copy would leave out (kind → how many).

    Raises:
        GemError: naming every link, hard link, pipe, device, socket, unreadable entry and pair of
            names differing only in case, and what to do; or the folder is over a limit.
    """
    root = folder.resolve()
    left_out: Counter[str] = Counter()
    problems = list(_problems(root, left_out))
    if problems:
        raise _refusal(root, problems)
    return dict(left_out)


_FOLDER_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a file swapped for a named pipe since it was looked at does not hang the open
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHANGED: Final = "changed while it was copied; install again once nothing changes the gem folder"


class _Copy:
    """One copy of ``root`` into ``staged``.

    Every folder is opened without following a link and its entries are reached through that open
    folder, never through their path again: a folder swapped for a link (to the user's ``~/.ssh``)
    after it was looked at fails to open instead of being copied from where the link leads.
    """

    def __init__(self, root: Path, staged: Path) -> None:
        self.root = root
        self.staged = staged
        self.budget = _Budget(root)
        self.left_out: Counter[str] = Counter()
        self.problems: list[tuple[Path, str]] = []
        self.pending: list[tuple[int, Path]] = []

    def run(self) -> None:
        self.pending.append((os.open(self.root, _FOLDER_FLAGS), Path()))
        try:
            while self.pending:
                folder, relative = self.pending.pop()
                try:
                    self._folder(folder, relative)
                finally:
                    os.close(folder)
        finally:
            for folder, _ in self.pending:
                os.close(folder)
        if self.problems:
            raise _refusal(self.root, self.problems)

    def _folder(self, folder: int, relative: Path) -> None:
        try:
            with os.scandir(folder) as entries:
                names = sorted(entry.name for entry in entries)
        except OSError:
            self.problems.append((self.root / relative, "cannot be read"))
            return
        for name in names:
            path = self.root / relative / name
            if name in LEFT_OUT:
                self.left_out[name] += 1  # not even looked at: it may be unreadable, and is not copied
                continue
            try:
                info = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except OSError:
                self.problems.append((path, "cannot be read"))
                continue
            kind = left_out_kind(name, folder=stat.S_ISDIR(info.st_mode))
            if kind is not None:
                self.left_out[kind] += 1
                continue
            self.budget.entry()
            if stat.S_ISDIR(info.st_mode):
                self._subfolder(folder, name, relative)
            elif stat.S_ISLNK(info.st_mode):
                # nothing is read through the link: it is made again, pointing into the copy
                target, problem = _link_problem(self.root, path)
                if target is None:
                    self.problems.append((path, problem or "cannot be kept"))
                else:
                    os.symlink(os.path.relpath(target, path.parent), self.staged / relative / name)
            elif stat.S_ISREG(info.st_mode):
                self._file(folder, name, relative)
            else:
                self.problems.append((path, f"is {_kind(info.st_mode)}, which a gem cannot ship; remove it"))

    def _subfolder(self, folder: int, name: str, relative: Path) -> None:
        try:
            opened = os.open(name, _FOLDER_FLAGS, dir_fd=folder)
        except OSError:
            self.problems.append((self.root / relative / name, _CHANGED))
            return
        self.pending.append((opened, relative / name))
        (self.staged / relative / name).mkdir()

    def _file(self, folder: int, name: str, relative: Path) -> None:
        path = self.root / relative / name
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=folder)
        except OSError:
            self.problems.append((path, _CHANGED))
            return
        with os.fdopen(fd, "rb") as source:
            opened = os.fstat(source.fileno())
            if not stat.S_ISREG(opened.st_mode):
                self.problems.append((path, _CHANGED))
                return
            if opened.st_nlink > 1:
                self.problems.append((path, _HARD_LINK))
                return
            copy = self.staged / relative / name
            with copy.open("xb") as sink:
                # counted as read: the file may have grown since the folder was checked
                while chunk := source.read(1024 * 1024):
                    self.budget.add(len(chunk))
                    sink.write(chunk)
        # the permissions and times of the file that was read, not of whatever the path names now;
        # never set-user-id or set-group-id bits, which no gem needs
        os.chmod(copy, stat.S_IMODE(opened.st_mode) & 0o777)
        os.utime(copy, ns=(opened.st_atime_ns, opened.st_mtime_ns))


def stage_package(folder: Path, target: Path) -> StagedCopy:
    """Copy ``folder`` into a new folder beside ``target`` and return it (for :func:`swap_in`).

    The caller holds the code of ``target``'s gem alone (:meth:`~notochord.gems.run_leases.RunLeases.change_code`)
    until the copy is swapped in or removed: whoever holds it next takes what is left for the
    leftover of a killed process (:func:`remove_leftovers`).

    Raises:
        GemError: the folder holds something that cannot be installed, or the installed gems
            themselves, or cannot be copied; nothing is left behind.
    """
    root = folder.resolve()
    if target.parent.resolve().is_relative_to(root):
        # the copy would be made inside what is copied, and the vault's own files handed to the gem
        raise GemError(
            f"the gem folder {root} holds this vault's installed gems ({target.parent}); nothing was installed. "
            "Install the folder that holds the gem's manifest and its own files only"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # a fresh name per call: two installs of one gem at once never share a half-made copy
        staged = target.with_name(f"{target.name}.new-{secrets.token_hex(8)}")
        staged.mkdir(mode=0o700)
    except OSError as exc:
        raise GemError(f"cannot keep the code of the gem in {target.parent}: {exc.strerror or exc}") from exc
    copy = _Copy(root, staged)
    try:
        copy.run()
    except BaseException as exc:
        shutil.rmtree(staged, ignore_errors=True)
        if isinstance(exc, OSError):
            raise GemError(f"cannot copy the gem folder {root}: {exc.strerror or exc}; nothing was installed") from exc
        raise
    return StagedCopy(staged, dict(copy.left_out))


def swap_in(staged: Path, target: Path) -> None:
    """Put ``staged`` where ``target`` is, then remove the copy it replaced.

    Where the system swaps two names in one step (:func:`~notochord.files.noreplace.exchange`), the
    installed code is never missing: a process killed right after the swap leaves the replaced copy
    under the staged name, a leftover the next change of the gem removes. Elsewhere it takes two
    renames, and a kill between them leaves the gem without its code until it is upgraded or
    installed again.

    Raises:
        GemError: the staged copy could not be moved in; ``target`` is as it was and ``staged`` is gone.
    """
    try:
        swapped = target.exists() and exchange(staged, target)
        replaced = staged if swapped else _rename_in(staged, target)
    except OSError as exc:
        shutil.rmtree(staged, ignore_errors=True)
        raise GemError(f"cannot put the gem's code in place at {target}: {exc.strerror or exc}") from exc
    if replaced is not None:
        shutil.rmtree(replaced, ignore_errors=True)


def _rename_in(staged: Path, target: Path) -> Path | None:
    """Two renames: ``target`` aside, ``staged`` to ``target``; returns where the replaced copy went."""
    old = target.with_name(f"{target.name}.old-{secrets.token_hex(8)}")
    had_old = target.exists()
    if had_old:
        target.rename(old)
    try:
        staged.rename(target)
    except OSError:
        if had_old:
            old.rename(target)
        raise
    return old if had_old else None


def remove_code(target: Path) -> None:
    """Remove the installed code at ``target``: renamed aside first, in one step, then deleted, so a
    process killed while deleting leaves a leftover the next opening removes, never a half-deleted
    folder under the gem's own name."""
    aside = target.with_name(f"{target.name}.old-{secrets.token_hex(8)}")
    try:
        target.rename(aside)
    except FileNotFoundError:
        return
    except OSError:
        aside = target  # cannot rename here: delete in place, as well as it goes
    shutil.rmtree(aside, ignore_errors=True)


def leftover_of(name: str) -> str | None:
    """The gem id whose staged or replaced copy the folder ``name`` is, or ``None`` (the installed
    code itself, its resources, anything else)."""
    match = _LEFTOVER.fullmatch(name)
    return None if match is None else match.group("gem")


def gems_with_leftovers(code_root: Path) -> list[str]:
    """The ids of the gems that :func:`remove_leftovers` would find something of in ``code_root``."""
    try:
        names = sorted(os.listdir(code_root))
    except OSError:
        return []
    found = [gem for gem in map(leftover_of, names) if gem is not None]
    for name in names:
        if name.endswith(_RESOURCES) and _holds_incoming(code_root / name):
            found.append(name.removesuffix(_RESOURCES))
    return list(dict.fromkeys(found))


def _holds_incoming(folder: Path) -> bool:
    if folder.is_symlink() or not folder.is_dir():
        return False
    try:
        return any(name.startswith(INCOMING) for name in os.listdir(folder))
    except OSError:
        return False


def remove_leftovers(code_root: Path, gem_id: str) -> list[str]:
    """Remove the staged and replaced copies of ``gem_id``'s code a killed process left in
    ``code_root``, and the half-downloaded resources in ``<gem id>.resources/.incoming-*``; returns
    their names (relative to ``code_root``). Never the installed code nor a downloaded resource.

    The caller holds the gem's code alone: every such folder is made and removed under that hold
    (resources are downloaded under it too), so none found then belongs to a live process. What
    cannot be removed stays for the next time.
    """
    try:
        names = sorted(os.listdir(code_root))
    except OSError:
        return []
    found = [name for name in names if leftover_of(name) == gem_id]
    resources = gem_id + _RESOURCES
    if resources in names and _holds_incoming(code_root / resources):
        with contextlib.suppress(OSError):
            found += sorted(
                f"{resources}/{name}" for name in os.listdir(code_root / resources) if name.startswith(INCOMING)
            )
    return [name for name in found if _removed(code_root / name)]


def _removed(path: Path) -> bool:
    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink()  # not ours to follow: a folder of ours is never a link
        else:
            shutil.rmtree(path)
    except OSError:
        return False
    return True
