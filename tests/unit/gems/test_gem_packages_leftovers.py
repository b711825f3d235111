"""What a killed install, upgrade or uninstall leaves in the gems' code folder does not stay there.

Covers P-GEN-04 (the installed copy is what runs: never removed as a leftover) and K-UNINST (an
uninstall leaves nothing of the gem behind, its code lock included). A copy being made is
``<gem id>.new-<random>`` beside the installed code, and the copy it replaces is renamed
``<gem id>.old-<random>`` before it is removed; a process killed in between leaves them. Whoever
next holds that gem's code alone removes them: the next install, upgrade or uninstall of the gem,
or the next opening of the space's gems. A copy whose maker still lives (it holds the gem's code),
or that a running tool may read, stays.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import sys
import threading
from pathlib import Path

import pytest

import notochord
from halted_child import running_until_ready
from notochord import Space
from notochord.errors import GemError
from notochord.files.noreplace import can_exchange
from notochord.gems import service
from notochord.gems.package import leftover_of, swap_in
from notochord.gems.run_leases import CodeHold, RunLeases
from notochord.settings import Settings

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the gem's code is held with flock")

TOOL = "def run(input, ctx):\n    return {version!r}\n"

# Opens the vault and upgrades the gem, halting for good at one point of the upgrade (named by the
# second argument): after the new copy is made, or after it was swapped in and before the old one
# is removed. The test then kills it there, as a crash or a power cut would.
_UPGRADING_CHILD = """
import sys, time
from pathlib import Path
import notochord
from notochord.gems import package, service
from notochord.settings import Settings

data, url, where = Path(sys.argv[1]), sys.argv[2] or None, sys.argv[3]
source, ready = Path(sys.argv[4]), Path(sys.argv[5])

def halt(*_args, **_kwargs):
    ready.touch()
    time.sleep(600)

class _Shutil:
    rmtree = staticmethod(halt)

settings = Settings(data_dir=data, index_in_background=False, database_url=url)
with notochord.open(data, settings, embedder=None) as nc:
    gems = nc.personal.gems
    if where == "staged":
        service.swap_in = halt
    else:
        package.shutil = _Shutil
    if where == "uninstalling":
        gems.uninstall("probe")
    else:
        gems.upgrade(source)
"""


def _folder(root: Path, *, version: str) -> Path:
    root.mkdir(parents=True)
    (root / "tool.py").write_text(TOOL.format(version=version), encoding="utf-8")
    manifest = {"id": "probe", "name": "probe", "version": version, "tools": [{"name": "main", "entry": "tool.py"}]}
    (root / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def _leftovers(space: Space) -> list[str]:
    root = space.gems.runner.code_root
    return sorted(name for name in os.listdir(root) if leftover_of(name) is not None) if root.is_dir() else []


def _settings(nc: notochord.Notochord) -> Settings:
    """Settings for another process opening the same vault on the same backend."""
    return Settings(data_dir=nc.data_dir, index_in_background=False, database_url=nc.settings.database_url)


def _killed_upgrade(nc: notochord.Notochord, tmp_path: Path, *, where: str) -> list[str]:
    """Upgrade ``probe`` to 2.0.0 in a child killed at ``where``; the leftovers it left."""
    space = nc.personal
    url = nc.settings.database_url or ""
    v2 = _folder(tmp_path / "v2", version="2.0.0")
    with running_until_ready(
        _UPGRADING_CHILD, str(nc.data_dir), url, where, str(v2), ready=tmp_path / f"ready-{where}", doing=f"got {where}"
    ):
        pass
    left = _leftovers(space)
    assert left, "the killed upgrade left its copies beside the installed code"
    return left


@pytest.mark.parametrize("where", ["staged", "swapped"])
def test_p_gen_04_the_next_upgrade_removes_what_a_killed_upgrade_left(
    nc: notochord.Notochord, space: Space, tmp_path: Path, where: str
) -> None:
    space.gems.install(_folder(tmp_path / "v1", version="1.0.0"))
    left = _killed_upgrade(nc, tmp_path, where=where)
    assert all(name.startswith("probe.") for name in left)

    space.gems.upgrade(_folder(tmp_path / "v3", version="3.0.0"))

    assert _leftovers(space) == []
    assert space.gems.runner.run_sync("probe", "main").output == "3.0.0"


def test_k_uninst_an_uninstall_removes_what_a_killed_upgrade_left_with_the_code_lock(
    nc: notochord.Notochord, space: Space, tmp_path: Path
) -> None:
    space.gems.install(_folder(tmp_path / "v1", version="1.0.0"))
    _killed_upgrade(nc, tmp_path, where="swapped")

    space.gems.uninstall("probe")

    root = space.gems.runner.code_root
    assert not root.is_dir() or os.listdir(root) == [], "nothing of the gem's code is left"
    lock = RunLeases(space.gems.runner.code_root.parents[1] / "run-leases" / "personal").code_lock_path("probe")
    assert not lock.exists(), "the code lock goes with the gem"


def test_p_gen_04_opening_the_gems_again_removes_a_dead_process_s_copies_and_keeps_the_installed_code(
    nc: notochord.Notochord, space: Space, tmp_path: Path
) -> None:
    """The gem may never be changed again: the leftovers go at the next opening of the space."""
    space.gems.install(_folder(tmp_path / "v1", version="1.0.0"))
    _killed_upgrade(nc, tmp_path, where="staged")
    with notochord.open(nc.data_dir, _settings(nc), embedder=None) as again:
        assert _leftovers(again.personal) == []
        assert again.personal.gems.runner.run_sync("probe", "main").output == "1.0.0"


def test_p_gen_04_a_copy_whose_maker_still_holds_the_gem_s_code_is_not_removed(space: Space, tmp_path: Path) -> None:
    """Another process is upgrading the gem right now (it holds the code alone): its copy stays."""
    space.gems.install(_folder(tmp_path / "v1", version="1.0.0"))
    root = space.gems.runner.code_root
    making = root / "probe.new-0123456789abcdef"
    (making / "half").mkdir(parents=True)
    leases = RunLeases(root.parents[1] / "run-leases" / "personal")
    with leases.change_code("probe", running=list):
        assert space.gems.remove_leftovers() == []
        assert making.is_dir()
    assert space.gems.remove_leftovers() == [making.name]
    assert not making.exists()
    assert (root / "probe" / "tool.py").is_file(), "the installed code is never a leftover"


def test_p_gen_04_a_copy_of_a_gem_whose_tool_is_running_is_left_for_later(space: Space, tmp_path: Path) -> None:
    """A running tool shares the gem's code lock: nothing of that gem is removed under it."""
    space.gems.install(_folder(tmp_path / "v1", version="1.0.0"))
    root = space.gems.runner.code_root
    (root / "probe.old-0123456789abcdef").mkdir()
    leases = RunLeases(root.parents[1] / "run-leases" / "personal")
    hold = asyncio.run(leases.use_code("probe"))
    try:
        assert space.gems.remove_leftovers() == []
    finally:
        hold.release()
    assert space.gems.remove_leftovers() == ["probe.old-0123456789abcdef"]


def test_k_uninst_the_leftovers_of_another_gem_and_unrelated_names_are_not_touched(
    space: Space, tmp_path: Path
) -> None:
    space.gems.install(_folder(tmp_path / "v1", version="1.0.0"))
    root = space.gems.runner.code_root
    other = root / "other.new-0123456789abcdef"
    other.mkdir()
    kept = [root / "probe.resources", root / "probe.new-", root / "notes.txt"]
    kept[0].mkdir()
    kept[1].mkdir()
    kept[2].write_text("mine", encoding="utf-8")
    # the other gem's code is held by a change in progress: only its own hold may remove its copy
    leases = RunLeases(root.parents[1] / "run-leases" / "personal")
    with leases.change_code("other", running=list):
        space.gems.uninstall("probe")
    assert other.is_dir()
    assert all(path.exists() for path in kept[1:])


# ---------------------------------------------------------------- the code lock file of a gem


def test_k_uninst_uninstalling_removes_the_gem_s_code_lock_file(space: Space, tmp_path: Path) -> None:
    space.gems.install(_folder(tmp_path / "v1", version="1.0.0"))
    assert space.gems.runner.run_sync("probe", "main").output == "1.0.0"
    leases_dir = space.gems.runner.code_root.parents[1] / "run-leases" / "personal"
    lock = RunLeases(leases_dir).code_lock_path("probe")
    assert lock.exists()

    space.gems.uninstall("probe")

    assert not lock.exists()
    assert space.gems.install(_folder(tmp_path / "again", version="2.0.0")).id == "probe"
    assert space.gems.runner.run_sync("probe", "main").output == "2.0.0"


def test_k_uninst_a_failed_install_leaves_no_code_lock_file(
    space: Space, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(staged: Path, target: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(service, "swap_in", full_disk)
    with pytest.raises(GemError, match="No space left on device"):
        space.gems.install(_folder(tmp_path / "v1", version="1.0.0"))
    assert space.gems.list() == []
    leases_dir = space.gems.runner.code_root.parents[1] / "run-leases" / "personal"
    assert not RunLeases(leases_dir).code_lock_path("probe").exists()


def test_k_uninst_a_waiter_on_a_removed_lock_file_locks_the_file_at_its_path(tmp_path: Path) -> None:
    """One side waits on the lock file while the holder removes it: the waiter must not end up
    holding the removed file while a third side locks the new one at the same path."""
    leases = RunLeases(tmp_path / "leases")
    first = leases.change_code("probe", running=list)
    path = leases.code_lock_path("probe")
    got: list[CodeHold] = []
    waiting = threading.Thread(target=lambda: got.append(leases.change_code("probe", running=list)))
    waiting.start()
    # the waiter has opened the file (it retries its lock on it); the holder removes it and lets go
    while not _opened_by_this_process(path):
        threading.Event().wait(0.01)
    first.release(remove=True)
    waiting.join(60)
    assert len(got) == 1
    second = got[0]
    assert path.exists(), "the waiter holds the file at the path, made anew"
    # a third side finds the lock held, so the waiter's hold is on the file at the path
    assert leases.try_change_code("probe") is None
    second.release()
    third = leases.try_change_code("probe")
    assert third is not None
    third.release()


def _opened_by_this_process(path: Path) -> bool:
    """Whether two descriptors of this process have ``path``'s file open (the holder's and a waiter's)."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                found += 1
        except OSError:
            continue
    return found >= 2


def test_p_gen_04_a_swap_interrupted_part_way_never_leaves_the_gem_without_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Putting a new copy in place used to take two renames (the installed code aside, the copy in):
    a kill between them left no code at all. Where the system swaps two names in one step, the
    installed code is the old copy or the new one at every instant."""
    if not can_exchange():
        pytest.skip("this system has no rename that swaps two names")
    target = _folder(tmp_path / "code" / "probe", version="1.0.0")
    staged = _folder(tmp_path / "code" / "probe.new-0123456789abcdef", version="2.0.0")
    renames = 0
    real_rename = Path.rename

    def killed_at_the_second_rename(self: Path, to: str | os.PathLike[str]) -> Path:
        nonlocal renames
        renames += 1
        if renames == 2:
            raise KeyboardInterrupt  # what a kill between the two steps would cut short
        return real_rename(self, to)

    monkeypatch.setattr(Path, "rename", killed_at_the_second_rename)
    swap_in(staged, target)

    assert "2.0.0" in (target / "tool.py").read_text(encoding="utf-8")
    assert sorted(os.listdir(tmp_path / "code")) == ["probe"]


def test_k_uninst_an_uninstall_killed_while_deleting_the_code_leaves_no_half_deleted_gem_behind(
    nc: notochord.Notochord, space: Space, tmp_path: Path
) -> None:
    """The code used to be deleted in place: a kill part way left a half-deleted folder under the
    gem's own name for good. It is renamed aside first, so what the kill leaves is a leftover that
    the next opening removes."""
    space.gems.install(_folder(tmp_path / "v1", version="1.0.0"))
    _killed_upgrade(nc, tmp_path, where="uninstalling")
    root = space.gems.runner.code_root
    assert "probe" not in os.listdir(root), "no folder is left under the gem's own name"

    with notochord.open(nc.data_dir, _settings(nc), embedder=None) as again:
        assert _leftovers(again.personal) == []
        assert again.personal.gems.list() == []


def test_p_gen_04_resources_half_downloaded_by_a_killed_process_go_at_the_next_opening(
    nc: notochord.Notochord, space: Space, tmp_path: Path
) -> None:
    """Resources are downloaded into ``<gem id>.resources/.incoming-*`` and moved into place once all
    are checked; a kill before that left the folder there for good. The resources in place stay."""
    space.gems.install(_folder(tmp_path / "v1", version="1.0.0"))
    resources = space.gems.resources_dir("probe")
    (resources / ".incoming-k1ll3d" / "model.bin").parent.mkdir(parents=True)
    (resources / ".incoming-k1ll3d" / "model.bin").write_bytes(b"half")
    (resources / "model.bin").write_bytes(b"checked")

    with notochord.open(nc.data_dir, _settings(nc), embedder=None) as again:
        assert sorted(os.listdir(again.personal.gems.resources_dir("probe"))) == ["model.bin"]
        assert (resources / "model.bin").read_bytes() == b"checked"
        assert again.personal.gems.runner.run_sync("probe", "main").output == "1.0.0"
