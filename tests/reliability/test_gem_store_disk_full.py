"""A gem's store first opened on a full disk leaves no empty database behind (P-STOR-02, P-STOR-09).

Made in place, SQLite's new file exists (a name costs no data block) before its first page can be
written: the full disk used to leave a zero-byte ``kv.db``, later opened as a new, empty store. Built
aside, the attempt leaves nothing, says the disk is full, and works once space is freed.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from fault_sandbox import FILL, run_on_small_disk

pytestmark = pytest.mark.slow

CHILD = FILL + textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from notochord.errors import NotochordError
    from notochord.files.private import GemStore

    disk = Path(sys.argv[1])
    (disk / "gem").mkdir()
    fill(disk / "ballast")
    report = {}
    try:
        GemStore(disk / "gem", key=b"k" * 32).close()
        report["full"] = {"class": None}
    except NotochordError as exc:
        report["full"] = {"class": type(exc).__name__, "message": str(exc)}
    report["left"] = sorted(
        f"{p.relative_to(disk / 'gem')}:{p.stat().st_size}" for p in (disk / "gem").rglob("*") if p.is_file()
    )
    (disk / "ballast").unlink()
    with GemStore(disk / "gem", key=b"k" * 32) as store:
        store.kv.set("k", 1)
        store.sql.execute("CREATE TABLE t (x)")
    report["sizes"] = {name: (disk / "gem" / name).stat().st_size for name in ("kv.db", "sql.db")}
    sys.stdout.write(json.dumps(report))
    """
)


def test_a_gem_store_opened_on_a_full_disk_leaves_no_empty_database(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    disk = tmp_path_factory.mktemp("gem-disk")
    done = run_on_small_disk(disk, "1m", CHILD, args=[str(disk)])
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout)
    assert report["full"]["class"] == "StorageFullError", report["full"]
    assert "the disk is full" in report["full"]["message"]
    assert report["left"] == [], "a database (or a half-built one) was left behind"
    assert all(size > 0 for size in report["sizes"].values()), report["sizes"]
