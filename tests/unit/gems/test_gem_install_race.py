"""An install never puts a gem's code in place while an uninstall or upgrade of the same id holds it.

Covers P-GEN-04 (the installed copy is what runs: an installed gem always has its code) and
K-UNINST (an uninstall removes the gem's code). An uninstall records the removal, then deletes the
code, holding the gem's code alone all along; an install of the same id that landed in between
used to record the gem and swap its code in, which the uninstall then deleted: a gem listed as
installed, with no code to run. An install now takes the same hold: it waits for the change to
end, or is refused as busy after a few seconds, and records nothing.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from notochord import Space
from notochord.errors import BusyError
from notochord.gems import run_leases

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the gem's code is held with flock")

TOOL = "def run(input, ctx):\n    return 2\n"


def _folder(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "tool.py").write_text(TOOL, encoding="utf-8")
    manifest = {"id": "probe", "name": "probe", "version": "1.0.0", "tools": [{"name": "main", "entry": "tool.py"}]}
    (root / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def test_p_gen_04_an_install_while_the_gem_s_code_is_held_for_a_change_is_refused_as_busy_and_records_nothing(
    space: Space, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process (an uninstall of the same id) holds the code; the install does not swap in under it."""
    monkeypatch.setattr(run_leases, "_WAIT_FOR_RUNS_S", 0.2)
    folder = _folder(tmp_path / "probe")
    held = threading.Event()
    release = threading.Event()

    def uninstalling() -> None:
        with space.gems.runner.changing_code("probe"):
            held.set()
            release.wait(60)

    other = threading.Thread(target=uninstalling)
    other.start()
    try:
        assert held.wait(60)
        with pytest.raises(BusyError, match="gem probe is being installed, upgraded or uninstalled") as refused:
            space.gems.install(folder)
        assert "nothing was installed" in str(refused.value)
        assert "running" not in str(refused.value), "no run is in the way of an install"
        assert refused.value.retry_after > 0
        assert space.gems.list() == []
        assert not space.gems.runner.code_dir("probe").exists()
        root = space.gems.runner.code_root
        assert not root.is_dir() or list(root.iterdir()) == [], "no half-made copy is left behind"
    finally:
        release.set()
        other.join(60)
    assert space.gems.install(folder).id == "probe"
    assert space.gems.runner.run_sync("probe", "main").output == 2


def test_k_uninst_an_install_landing_between_an_uninstall_s_record_and_its_code_removal_leaves_no_gem_without_code(
    space: Space, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The install comes exactly after the uninstall recorded the removal and before it deleted the
    code: it is refused as busy, and afterwards the gem is either fully there or fully gone."""
    monkeypatch.setattr(run_leases, "_WAIT_FOR_RUNS_S", 0.2)
    folder = _folder(tmp_path / "probe")
    space.gems.install(folder)
    drop_code = space.gems.runner.drop_code
    refusals: list[BusyError] = []

    def install_then_drop(gem_id: str) -> None:
        try:
            space.gems.install(folder)
        except BusyError as busy:
            refusals.append(busy)
        drop_code(gem_id)

    monkeypatch.setattr(space.gems.runner, "drop_code", install_then_drop)
    space.gems.uninstall("probe")

    assert len(refusals) == 1 and "probe" in str(refusals[0])
    assert space.gems.list() == []
    assert not space.gems.runner.code_dir("probe").exists()
    monkeypatch.undo()
    assert space.gems.install(folder).id == "probe"
    assert (space.gems.runner.code_dir("probe") / "tool.py").read_text(encoding="utf-8") == TOOL
