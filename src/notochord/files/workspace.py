"""The folders a gem's code may touch: the conversation folder and the folder of its run.

Addresses (P-FILE-01, P-FILE-17):

- ``workspace:<relative path>`` is inside the conversation folder (or, for a scheduled SOP, the
  working folder the user chose for the gem); ``workspace:`` alone is its top level.
- ``run:<relative path>`` is inside the folder of the current run, ``run:`` alone its top level. A
  path with no prefix is read the same way: the run folder is the run's working directory.

One :class:`Workspace` serves both roots, chosen by prefix, rather than two objects: a gem gets one
``ctx.files``, a ``move`` may cross from ``run:`` to ``workspace:`` (publishing a result), and both
roots share the same path rules, history and run id. Any other ``<word>:`` prefix is refused, so a
mistyped ``worksapce:`` never silently writes into the run folder.

The path rules (OD-P06) are :mod:`~notochord.files.paths`'s.

Against races (a directory swapped for a symlink after the check) the resolved path is then walked
again component by component from an open descriptor of the root, every component opened with
``O_NOFOLLOW``; a symlink met on that walk → ``E_PERM_DENIED``. Writes go to a hidden temporary
file in the target's directory and are renamed into place, so a reader never sees half a file, and
a move renames with ``RENAME_NOREPLACE`` (without it: ``link`` + ``unlink`` for a file) so it can
never replace a target that appeared after the check.

Every change is recorded in the :class:`~notochord.files.history.FileHistory` before the file system
is touched (P-FILE-21…24). Missing parent folders of a ``write``, ``move`` or ``mkdir`` target are
created, each recorded as its own ``mkdir``. Every ``OSError`` becomes a
:class:`~notochord.errors.FileError`. Needs ``dir_fd`` support (Linux, macOS, BSD).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_mod
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from notochord.errors import (
    FileError,
    FileExistsInWorkspaceError,
    FileNotFoundInWorkspaceError,
    FilePermissionError,
)
from notochord.files.history import DIR, ChangeRecorder, FileHistory, Op, hash_bytes, hash_stream, path_state
from notochord.files.noreplace import exchange
from notochord.files.opening import DIR_FLAGS, open_read, open_regular, permissions, through
from notochord.files.oserrors import translate
from notochord.files.paths import (
    NAME_MAX,
    RUN_PREFIX,
    WORKSPACE_PREFIX,
    Mode,
    Target,
    check_folder_only,
    check_hidden,
    check_new_names,
    check_no_loop,
    check_recordable,
    check_unicode_twin,
    is_file_or_folder,
    is_text,
    normalise,
    real_root,
    split_prefix,
)
from notochord.files.placing import move_noreplace, write_replace
from notochord.files.text import utf8

__all__ = ["NAME_MAX", "RUN_PREFIX", "WORKSPACE_PREFIX", "Entry", "Workspace"]


@dataclass(frozen=True)
class Entry:
    """One file or folder as a gem sees it. ``name`` is empty for a root."""

    name: str
    kind: Literal["file", "dir"]
    size: int
    modified: datetime


class Workspace:
    """Synchronous file operations for one run. ``root`` is the conversation folder (``None``:
    there is none); ``run_root`` the run folder (``None``: the run has none)."""

    def __init__(
        self,
        root: Path | None,
        *,
        history: FileHistory,
        actor: str,
        run_id: str,
        run_root: Path | None = None,
    ) -> None:
        self._roots: dict[str, Path | None] = {
            WORKSPACE_PREFIX: real_root(root),
            RUN_PREFIX: real_root(run_root),
        }
        self._history = history
        self._actor = actor
        self._run_id = run_id

    # -- reading -----------------------------------------------------------------------------

    def read(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """The content of a file. Raises E_NOT_FOUND for missing or hidden files, and ``FileError``
        for a file larger than ``max_bytes`` (read no further than that)."""
        target = self._resolve(path, Mode.READ)
        if not target.parts:
            raise FileError(f"{path} is a folder, not a file")
        if target.folder_only:
            with self._os(target), self._parent(target) as parent:
                check_folder_only(target, _lstat(target.parts[-1], parent))
        with self._os(target), self._parent(target) as parent, open_read(parent, target) as stream:
            if max_bytes is None:
                return stream.read()
            data = stream.read(max_bytes + 1)  # the size may change while it is read
            if len(data) > max_bytes or os.fstat(stream.fileno()).st_size > max_bytes:
                size = max(len(data), os.fstat(stream.fileno()).st_size)
                raise FileError(
                    f"{target.display} is {_megabytes(size)}, more than a tool may read at once "
                    f"({_megabytes(max_bytes)})"
                )
            return data

    def read_text(self, path: str, *, encoding: str = "utf-8", max_bytes: int | None = None) -> str:
        data = self.read(path, max_bytes=max_bytes)
        try:
            return data.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise FileError(f"{path} is not {encoding} text") from exc

    def stat(self, path: str) -> Entry:
        """Name, kind, size and time of a file or folder; a pipe, socket or device is refused."""
        target = self._resolve(path, Mode.READ)
        with self._os(target):
            if not target.parts:
                return _entry("", os.stat(target.root))
            with self._parent(target) as parent:
                st = os.stat(target.parts[-1], dir_fd=parent, follow_symlinks=False)
        if stat_mod.S_ISLNK(st.st_mode):
            raise FilePermissionError(f"{path} changed while it was checked", path=path)
        if not is_file_or_folder(st):
            raise FileError(f"{path} is a pipe, socket or device, not a file or folder; a gem cannot use it")
        check_folder_only(target, st)
        return _entry(target.name, st)

    def list(self, path: str) -> list[Entry]:
        """Entries of a folder, sorted by name, hidden ones and unreachable symlinks left out."""
        target = self._resolve(path, Mode.READ)
        if target.parts:
            with self._os(target), self._parent(target) as parent:
                _check_listable(target, _lstat(target.parts[-1], parent))
        entries: list[Entry] = []
        with self._os(target), self._open_dir(target) as fd, os.scandir(fd) as scan:
            for item in scan:
                if item.name.startswith(".") or not is_text(item.name):
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except FileNotFoundError:  # removed by another run or program since it was listed
                    continue
                if stat_mod.S_ISLNK(st.st_mode):
                    followed = self._follow_link(target, item.name)
                    if followed is None:
                        continue
                    st = followed
                if is_file_or_folder(st):
                    entries.append(_entry(item.name, st))
        return sorted(entries, key=lambda e: e.name)

    # -- changing ----------------------------------------------------------------------------

    def write(self, path: str, data: bytes | str) -> None:
        """Create or replace a file; the replaced version is saved first (P-FILE-22)."""
        payload = utf8(data, path) if isinstance(data, str) else bytes(data)
        target = self._resolve(path, Mode.CHANGE)
        if not target.parts:
            raise FileError(f"{path} is a folder, not a file")
        if target.folder_only:
            # refused before any missing parent folder is created; the words only name what is there
            if os.path.isdir(target.absolute):
                raise FileError(f"{path} is a folder, not a file")
            raise FileError(f"{path} ends with /, which names a folder; give the file's name ({path}notes.txt)")
        check_new_names(target)
        name = target.parts[-1]
        with self._os(target), self._parent(target, create=True) as parent:
            old = _lstat(name, parent)
            if old is not None and stat_mod.S_ISDIR(old.st_mode):
                raise FileError(f"{path} is a folder, not a file")
            if old is not None and not stat_mod.S_ISREG(old.st_mode) and not stat_mod.S_ISLNK(old.st_mode):
                raise FileError(f"{path} is a pipe, socket or device, not a file; it cannot be replaced")
            if old is None:
                check_unicode_twin(parent, target)
            op: Op = "overwrite" if old is not None else "create"
            with self._change(op, target) as change:
                in_place = old is not None and self._save_old(change, parent, target, old)
                try:
                    displaced = write_replace(
                        parent, name, payload, mode=None if old is None else permissions(old), swap=in_place
                    )
                except FileExistsError:
                    raise FileExistsInWorkspaceError(
                        f"{path} appeared while it was written (another run or program made it); nothing was "
                        "replaced: write again to replace it, its content then kept in the history",
                        path=path,
                    ) from None
                if displaced is not None:
                    self._keep_displaced(change, parent, target, displaced)
                change.applied(hash_bytes(payload))

    def delete(self, path: str) -> None:
        """Delete a file (to the trash, with a copy in the history) or an empty folder."""
        target = self._resolve(path, Mode.CHANGE)
        if not target.parts:
            raise FilePermissionError(f"{path} is the top level and cannot be deleted", path=path)
        self._check_keeps_run_folder(target, "deleted")
        name = target.parts[-1]
        with self._os(target), self._parent(target) as parent:
            old = _lstat(name, parent)
            if old is None:
                raise FileNotFoundInWorkspaceError(f"{path} does not exist", path=path)
            if not is_file_or_folder(old) and not stat_mod.S_ISLNK(old.st_mode):
                # nothing of it could be kept in the history to roll the deletion back
                raise FileError(f"{path} is a pipe, socket or device, not a file or folder; it cannot be deleted")
            check_folder_only(target, old)
            if stat_mod.S_ISDIR(old.st_mode):
                _check_empty(parent, name, path)
            with self._change("delete", target) as change:
                if stat_mod.S_ISDIR(old.st_mode):
                    change.old_is_dir()
                    os.rmdir(name, dir_fd=parent)
                elif self._save_old(change, parent, target, old):
                    trash = self._history.trash
                    if trash is not None:
                        change.old_in_trash(trash.put(through(parent, target)), size=old.st_size)
                    else:
                        # Headless: permanent, but the history copy can still be rolled back (P-FILE-26).
                        os.unlink(name, dir_fd=parent)
                change.applied("absent")

    def move(self, src: str, dst: str) -> None:
        """Rename ``src`` to ``dst``; refused with E_EXISTS when ``dst`` exists (P-FILE-24)."""
        source = self._resolve(src, Mode.CHANGE)
        dest = self._resolve(dst, Mode.CHANGE)
        if not source.parts or not dest.parts:
            raise FilePermissionError("the top level cannot be moved or replaced", path=src)
        self._check_keeps_run_folder(source, "moved")
        with self._os(source), self._parent(source) as src_parent:
            st = _lstat(source.parts[-1], src_parent)
            if st is None:
                raise FileNotFoundInWorkspaceError(f"{src} does not exist", path=src)
            if not is_file_or_folder(st):
                # a pipe left where the user or the AI would open it makes them wait for ever
                raise FileError(f"{src} is a pipe, socket or device, not a file or folder; it cannot be moved")
            check_folder_only(source, st)
            is_dir = stat_mod.S_ISDIR(st.st_mode)
            if dest.folder_only and not is_dir:
                raise FileError(
                    f"{dst} ends with /, which names a folder; give the full new path "
                    f"({dst}{source.name}): a move renames, it does not put a file into a folder"
                )
            if is_dir and dest.absolute != source.absolute and dest.absolute.is_relative_to(source.absolute):
                # refused before any missing folder on the way to the destination is created
                raise FileError(f"cannot move {src} into itself ({dst} is inside it); choose a destination outside it")
            check_new_names(dest)
            with self._os(dest), self._parent(dest, create=True) as dst_parent:
                if _lstat(dest.parts[-1], dst_parent) is not None:
                    raise FileExistsInWorkspaceError(f"{dst} already exists", path=dst)
                check_unicode_twin(dst_parent, dest)
                with self._change("move", source, dest) as change:
                    move_noreplace(src_parent, source.parts[-1], dst_parent, dest.parts[-1], st)
                    change.applied(path_state(dest.root, dest.rel))

    def mkdir(self, path: str) -> None:
        """Create a folder (and missing parents); E_EXISTS if the path is taken."""
        target = self._resolve(path, Mode.CHANGE)
        if not target.parts:
            raise FileExistsInWorkspaceError(f"{path} already exists", path=path)
        check_new_names(target)
        with self._os(target), self._parent(target, create=True) as parent:
            if _lstat(target.parts[-1], parent) is not None:
                raise FileExistsInWorkspaceError(f"{path} already exists", path=path)
            self._mkdir_at(parent, target)

    # -- internals ---------------------------------------------------------------------------

    def _check_keeps_run_folder(self, target: Target, done: str) -> None:
        """The host reports the run folder where it made it and tidies it when the run ends, so the
        run may not take it (or a folder holding it) away through ``workspace:``."""
        run_root = self._roots[RUN_PREFIX]
        if run_root is not None and run_root.is_relative_to(target.absolute):
            raise FilePermissionError(
                f"{target.display} is or holds this run's own folder, which cannot be {done} while the run "
                "lasts; its files can be (through run:)",
                path=target.display,
            )

    def _change(
        self, op: Op, target: Target, dest: Target | None = None
    ) -> contextlib.AbstractContextManager[ChangeRecorder]:
        root = target.root
        if dest is not None and dest.root != root:
            # A move between run: and workspace: is recorded against the roots' common folder, so
            # that both recorded paths hang off the one root a history row has.
            root = Path(os.path.commonpath([root, dest.root]))
        return self._history.change(
            op=op,
            run_id=self._run_id,
            actor=self._actor,
            root=root,
            path=target.absolute.relative_to(root).as_posix(),
            display=target.display,
            dest_path=dest.absolute.relative_to(root).as_posix() if dest is not None else None,
            dest_display=dest.display if dest is not None else None,
        )

    def _save_old(self, change: ChangeRecorder, parent: int, target: Target, old: os.stat_result) -> bool:
        """Save the version about to be replaced (P-FILE-22, OD-P07).

        Returns whether the file is still in place: a version too large for the history has been
        moved to the trash already.
        """
        size = old.st_size
        if self._history.keeps_in_history(size):
            with open_read(parent, target) as stream:
                change.keep_old(stream, size=size, mode=permissions(old))
            return True
        change.old_in_trash(self._history.dispose(through(parent, target)), size=size)
        return False

    def _keep_displaced(self, change: ChangeRecorder, parent: int, target: Target, displaced: str) -> None:
        """Make the history hold the version the write replaced, then remove it from the folder.

        ``displaced`` is that version, swapped out in one step. When it differs from the one saved
        before (the user's editor saved in between), it is what the history keeps, or the trash when
        it is too large for the history. If it can be kept in neither, the swap is undone, so the
        user's version is back in place, and the write fails.
        """
        try:
            with open_regular(parent, displaced) as stream:
                st = os.fstat(stream.fileno())
                changed = hash_stream(stream) != change.old_blob
                in_history = self._history.keeps_in_history(st.st_size)
                if changed and in_history:
                    stream.seek(0)
                    change.keep_old(stream, size=st.st_size, mode=permissions(st))
            if changed and not in_history:
                change.old_in_trash(self._history.dispose(through(parent, target, displaced)), size=st.st_size)
                return
        except BaseException:
            with contextlib.suppress(OSError):
                if exchange(displaced, target.parts[-1], src_dir_fd=parent, dst_dir_fd=parent):
                    os.unlink(displaced, dir_fd=parent)
            raise
        with contextlib.suppress(FileNotFoundError):
            os.unlink(displaced, dir_fd=parent)

    def _mkdir_at(self, parent: int, target: Target) -> None:
        check_unicode_twin(parent, target)
        with self._change("mkdir", target) as change:
            os.mkdir(target.parts[-1], 0o777, dir_fd=parent)
            change.applied(DIR)

    def _resolve(self, path: str, mode: Mode) -> Target:
        prefix, rel = split_prefix(path)
        root = self._roots[prefix]
        if root is None:
            what = "conversation folder" if prefix == WORKSPACE_PREFIX else "run folder"
            raise FilePermissionError(
                f"{path}: this call has no {what} (it was not started from a conversation, or no "
                "working folder is chosen on the gem's page)",
                path=path,
            )
        parts = normalise(path, rel)
        check_hidden(path, parts, mode)
        real = Path(os.path.realpath(root.joinpath(*parts)))
        if real != root and not real.is_relative_to(root):
            raise FilePermissionError(f"{path} leads outside the folder", path=path)
        resolved = real.relative_to(root).parts
        check_hidden(path, resolved, mode)
        if mode is Mode.CHANGE:
            check_recordable(path, root, real)
        check_no_loop(path, root, resolved)
        return Target(
            prefix=prefix,
            root=root,
            parts=tuple(resolved),
            display=path,
            name=parts[-1] if parts else "",
            folder_only=bool(parts) and rel.replace("\\", "/").endswith("/"),
        )

    @contextlib.contextmanager
    def _open_dir(self, target: Target, *, upto: int | None = None, create: bool = False) -> Iterator[int]:
        """Open ``root/parts[:upto]`` by walking from the root with O_NOFOLLOW."""
        parts = target.parts if upto is None else target.parts[:upto]
        fd = os.open(target.root, DIR_FLAGS)
        try:
            for index, part in enumerate(parts):
                try:
                    nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
                except NotADirectoryError:
                    # O_DIRECTORY|O_NOFOLLOW reports a symlink as "not a directory": tell them apart.
                    if _is_link(part, fd):
                        raise OSError(errno.ELOOP, "a symlink appeared on the path") from None
                    raise
                except FileNotFoundError:
                    if not create:
                        raise
                    sub_parts = parts[: index + 1]
                    sub = Target(target.prefix, target.root, sub_parts, target.prefix + "/".join(sub_parts), name=part)
                    self._mkdir_at(fd, sub)
                    nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nxt
            yield fd
        finally:
            os.close(fd)

    def _parent(self, target: Target, *, create: bool = False) -> contextlib.AbstractContextManager[int]:
        return self._open_dir(target, upto=len(target.parts) - 1, create=create)

    @contextlib.contextmanager
    def _os(self, target: Target) -> Iterator[None]:
        """Translate OSError into the FileError tree, naming the address the gem used."""
        try:
            yield
        except OSError as exc:
            raise translate(exc, target.display) from exc

    def _follow_link(self, folder: Target, name: str) -> os.stat_result | None:
        real = Path(os.path.realpath(folder.absolute / name))
        root = folder.root
        if real == root or not real.is_relative_to(root):
            return None
        if any(p.startswith(".") for p in real.relative_to(root).parts):
            return None
        try:
            return os.stat(real)
        except OSError:
            return None


def _is_link(name: str, parent: int) -> bool:
    st = _lstat(name, parent)
    return st is not None and stat_mod.S_ISLNK(st.st_mode)


def _lstat(name: str, parent: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _megabytes(size: int) -> str:
    return f"{-(-size // (1024 * 1024))} MB"


def _entry(name: str, st: os.stat_result) -> Entry:
    kind: Literal["file", "dir"] = "dir" if stat_mod.S_ISDIR(st.st_mode) else "file"
    return Entry(
        name=name,
        kind=kind,
        size=0 if kind == "dir" else st.st_size,
        modified=datetime.fromtimestamp(st.st_mtime, UTC),
    )


def _check_empty(parent: int, name: str, path: str) -> None:
    """Refuse to delete a folder that holds anything, in words that fit what the gem can see."""
    fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    try:
        items: list[tuple[str, int]] = []
        with os.scandir(fd) as scan:
            for item in scan:
                with contextlib.suppress(FileNotFoundError):  # removed meanwhile: not there to hold the folder
                    items.append((item.name, item.stat(follow_symlinks=False).st_mode))
    finally:
        os.close(fd)
    if not items:
        return
    if all(n.startswith(".") for n, _ in items):
        # list shows such a folder empty; its hidden entries are the user's, never a gem's to delete
        raise FileError(
            f"{path} holds only hidden entries (names starting with .), which a gem may not delete; the folder stays"
        )
    removable = [n for n, mode in items if not n.startswith(".") and is_text(n) and _file_or_folder(mode)]
    if not removable:
        # "delete its entries first" would send the gem after entries it can neither list nor delete
        raise FileError(
            f"{path} holds only entries a gem cannot see or remove (hidden names, links, pipes, sockets or "
            "devices); the folder stays"
        )
    raise FileError(f"{path} is a folder that is not empty; delete its entries first")


def _file_or_folder(mode: int) -> bool:
    return stat_mod.S_ISREG(mode) or stat_mod.S_ISDIR(mode)


def _check_listable(target: Target, st: os.stat_result | None) -> None:
    """Refuse to list what is not a folder, naming what it is rather than "a part of the path"."""
    if st is None or stat_mod.S_ISDIR(st.st_mode) or stat_mod.S_ISLNK(st.st_mode):
        return  # missing: the walk says so; a link swapped in: the walk refuses it
    if stat_mod.S_ISREG(st.st_mode):
        raise FileError(f"{target.display} is a file, not a folder; read it, or list the folder holding it")
    raise FileError(f"{target.display} is a pipe, socket or device, not a folder; a gem cannot use it")
