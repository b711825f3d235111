"""Backup and restore of a whole vault, beside SQLite's own backup and a plain ``tar`` of the folder.

Run from the repository root (``make bench-backup`` runs the default)::

    python bench/backup.py                        # a vault of about 100 MB
    python bench/backup.py --megabytes 20         # a quick look
    python bench/backup.py --megabytes 130 --repeat 3 --profile   # median of 3, then where the time goes

The vault is built once through the public API (documents with ``upsert_many`` and facts with
``put_many``, ``index_in_background`` off, and a vector per passage from a stand-in embedder that
draws them at random instead of running the model, so that it is quick to build) and kept in
``bench/.cache/backup/vault-<megabytes>mb-v<N>/``; delete that folder to build it again. Then, in the
same process and on the same files, each measured ``--repeat`` times (the median is printed):

- **notochord backup**: ``notochord.backup.backup(vault, file)``: snapshots of every database with
  SQLite's online backup, the record with each file's SHA-256, one ``.tar.gz`` written and synced;
- **notochord backup, deflating on one core**: the same, its gzip stream deflated on one thread
  instead of one per core: what the parallel deflating is worth on this machine, at this load;
- **sqlite3 backup API**: the floor of the snapshot alone, ``sqlite3.Connection.backup`` of each
  database of the vault into a folder (other files copied with ``shutil.copy2``), nothing archived;
- **tarfile w:gz**: a plain ``tar`` of the data directory with Python's ``tarfile`` at the gzip level
  the product writes, with no snapshot, no record and no sync: what archiving the folder costs when
  nothing else is asked of it;
- **notochord restore** against **tarfile r:gz** extracting that plain archive into a new folder.

Figures: seconds (wall) and CPU seconds of the process, MB of the vault per second, the size of the
archive, and the ratio of notochord's time to the baseline's. With ``--profile``, one more backup and
restore run under ``cProfile`` and the functions that took the most time are listed. Nothing is
asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import shutil
import sqlite3
import statistics
import sys
import tarfile
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))
    import notochord

import numpy as np  # noqa: E402
from rich.table import Table  # noqa: E402

import notochord.backup as backup_module  # noqa: E402
from notochord.backup import backup, compressing, restore  # noqa: E402
from notochord.search.embeddings import FloatMatrix, normalise_rows  # noqa: E402
from notochord.settings import Settings  # noqa: E402
from writes_data import people  # noqa: E402  (beside this script)
from writes_measure import console, progress, ratio  # noqa: E402

# bump when the vault built below changes, so that a cached one of another make is not reused
_VAULT_VERSION = 2
_SQLITE_HEADER = b"SQLite format 3\x00"
_WORDS = 20_000


@dataclass
class Timing:
    """One way of doing the job, measured ``repeat`` times."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    output_bytes: int = 0

    @property
    def seconds(self) -> float:
        return statistics.median(self.wall) if self.wall else float("nan")

    @property
    def cpu_seconds(self) -> float:
        return statistics.median(self.cpu) if self.cpu else float("nan")


class NoiseEmbedder:
    """Passage vectors of the default embedder's size, drawn at random from each text's hash: a
    vault built with it holds what a real one does (a vector per passage) without the model's minutes."""

    model_id = "bench-noise-384"
    dim = 384
    multilingual = True

    def embed_passages(self, texts: Sequence[str]) -> FloatMatrix:
        rows = [np.random.default_rng(zlib.crc32(text.encode())).standard_normal(self.dim) for text in texts]
        matrix: FloatMatrix = normalise_rows(np.array(rows, dtype=np.float32).reshape(len(texts), self.dim))
        return matrix

    def embed_query(self, text: str) -> FloatMatrix:
        vector: FloatMatrix = self.embed_passages([text])[0]
        return vector


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


# ------------------------------------------------------------------ the vault


def _vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 11))) for _ in range(_WORDS)]


def _note(rng: random.Random, words: list[str], weights: list[float], names: list[str]) -> tuple[str, str]:
    paragraphs = []
    for _ in range(rng.randint(4, 10)):
        body = " ".join(rng.choices(words, weights, k=rng.randint(40, 110)))
        paragraphs.append(f"{body.capitalize()}, said {rng.choice(names)}.")
    title = " ".join(rng.choices(words, weights, k=4)).title()
    return title, "\n\n".join(paragraphs)


def build_vault(cache: Path, megabytes: int, seed: int) -> Path:
    """A vault of about ``megabytes`` MB in ``cache``, built once and kept (a marker file says it is whole)."""
    folder = cache / f"vault-{megabytes}mb-v{_VAULT_VERSION}"
    data_dir = folder / "data"
    marker = folder / "built.json"
    if marker.is_file():
        return data_dir
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = random.Random(seed)
    words = _vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]  # Zipf, as words in notes are
    names = people(300, rng)
    wanted = megabytes * 1_000_000
    settings = Settings(data_dir=data_dir, index_in_background=False)
    started = time.perf_counter()
    documents = facts = 0
    with notochord.open(data_dir, settings, embedder=NoiseEmbedder()) as nc, progress() as bar:
        space = nc.personal
        task = bar.add_task(f"building a {megabytes} MB vault", total=wanted)
        while (size := _folder_bytes(data_dir)) < wanted:
            bar.update(task, completed=size)
            batch = [_note(rng, words, weights, names) for _ in range(100)]
            space.user.documents.upsert_many([{"collection": "keep", "title": t, "body": b} for t, b in batch])
            documents += len(batch)
            items = [
                {"predicate": "x.note", "value": " ".join(rng.choices(words, weights, k=12)), "subject": "self"}
                for _ in range(200)
            ]
            space.user.facts.put_many(items)
            facts += len(items)
            space.index.wait()
    marker.write_text(
        json.dumps(
            {
                "documents": documents,
                "facts": facts,
                "bytes": _folder_bytes(data_dir),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    )
    return data_dir


# ------------------------------------------------------------------ the ways measured


def _measure(timing: Timing, call: Callable[..., int], *args: Any) -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    timing.output_bytes = call(*args)
    timing.wall.append(time.perf_counter() - wall)
    timing.cpu.append(time.process_time() - cpu)


def notochord_backup(vault: Path, made: Path) -> int:
    return backup(vault, made).path.stat().st_size


def notochord_restore(made: Path, into: Path) -> int:
    return restore(made, into).bytes


def sqlite_backup_api(vault: Path, into: Path) -> int:
    """Every database snapshotted with ``Connection.backup`` (one step), other files copied."""
    for path in sorted(vault.rglob("*")):
        if not path.is_file() or path.name.endswith(("-wal", "-shm", "-journal")):
            continue
        copy = into / path.relative_to(vault)
        copy.parent.mkdir(parents=True, exist_ok=True)
        with path.open("rb") as handle:
            is_database = handle.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
        if not is_database:
            shutil.copy2(path, copy)
            continue
        src = sqlite3.connect(path)
        dst = sqlite3.connect(copy)
        try:
            src.backup(dst)
        finally:
            dst.close()
            src.close()
    return _folder_bytes(into)


def plain_tar(vault: Path, archive: Path) -> int:
    # the level the product writes (tarfile's own default, 9, where the product names none)
    level = int(getattr(backup_module, "COMPRESS_LEVEL", 9))
    with tarfile.open(archive, mode="w:gz", compresslevel=level) as tar:
        tar.add(vault, arcname="vault")
    return archive.stat().st_size


def plain_untar(archive: Path, into: Path) -> int:
    with tarfile.open(archive, mode="r:gz") as tar:
        tar.extractall(into, filter="data")
    return _folder_bytes(into)


def _round(vault: Path, work: Path, timings: dict[str, Timing], advance: Callable[[], None]) -> None:
    """Each way once, one after the other, so that a change of load weighs on every way alike."""
    made, plain = work / "notochord.tar.gz", work / "plain.tar.gz"
    _measure(timings["backup"], notochord_backup, vault, made)
    advance()
    with mock.patch.object(compressing, "workers", return_value=1):
        _measure(timings["backup1"], notochord_backup, vault, work / "one-core.tar.gz")
    advance()
    _measure(timings["sqlite"], sqlite_backup_api, vault, work / "sqlite")
    advance()
    _measure(timings["tar"], plain_tar, vault, plain)
    advance()
    _measure(timings["restore"], notochord_restore, made, work / "restored")
    advance()
    _measure(timings["untar"], plain_untar, plain, work / "untarred")
    advance()
    for name in ("sqlite", "restored", "untarred"):
        shutil.rmtree(work / name)
    for name in ("notochord.tar.gz", "one-core.tar.gz", "plain.tar.gz"):
        (work / name).unlink()


def run(vault: Path, work: Path, repeat: int) -> dict[str, Timing]:
    timings = {name: Timing() for name in ("backup", "backup1", "sqlite", "tar", "restore", "untar")}
    with progress() as bar:
        task = bar.add_task("measuring", total=repeat * len(timings))
        for _ in range(repeat):
            _round(vault, work, timings, lambda: bar.advance(task))
    return timings


def report(vault: Path, megabytes: float, timings: dict[str, Timing], repeat: int) -> None:
    load = os.getloadavg()[0]
    table = Table(
        title=f"backup and restore of a {megabytes:,.1f} MB vault ({vault}), median of {repeat}, load {load:.1f}",
        title_justify="left",
    )
    table.add_column("way")
    table.add_column("seconds", justify="right")
    table.add_column("CPU s", justify="right")
    table.add_column("MB/s", justify="right")
    table.add_column("output MB", justify="right")
    table.add_column("notochord / this", justify="right")
    rows = (
        ("notochord backup", "backup", "backup"),
        ("notochord backup, deflating on one core", "backup1", "backup"),
        ("sqlite3 backup API into a folder", "sqlite", "backup"),
        ("tarfile w:gz of the folder", "tar", "backup"),
        ("notochord restore", "restore", "restore"),
        ("tarfile r:gz extract", "untar", "restore"),
    )
    for label, name, mine in rows:
        timing = timings[name]
        table.add_row(
            label,
            f"{timing.seconds:,.2f}",
            f"{timing.cpu_seconds:,.2f}",
            f"{megabytes / timing.seconds:,.1f}",
            f"{timing.output_bytes / 1e6:,.1f}",
            "" if name == mine else ratio(timings[mine].seconds, timing.seconds),
        )
    console.print(table)
    console.print(
        "  notochord / this: notochord's seconds divided by the baseline's (above 1 means slower). "
        "The sqlite3 row snapshots only; the tar rows archive without snapshot, record or sync."
    )


def profile(vault: Path, work: Path, top: int) -> None:
    for label, call in (
        ("backup", lambda: backup(vault, work / "profiled.tar.gz")),
        ("restore", lambda: restore(work / "profiled.tar.gz", work / "profiled")),
    ):
        profiler = cProfile.Profile()
        profiler.runcall(call)
        console.print(f"[bold]{label}[/bold], under cProfile: the {top} functions with the most time of their own")
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime")
        table = Table(title_justify="left")
        for column in ("function", "calls", "own s", "cumulative s"):
            table.add_column(column, justify="left" if column == "function" else "right")
        entries = stats.stats  # type: ignore[attr-defined]  # pstats keeps its table there, untyped
        ranked = sorted(entries.items(), key=lambda item: item[1][2], reverse=True)[:top]
        for (filename, line, name), (_, calls, own, cumulative, _) in ranked:
            where = f"{Path(filename).name}:{line}" if line else filename
            table.add_row(f"{name} ({where})", f"{calls:,}", f"{own:,.3f}", f"{cumulative:,.3f}")
        console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=100, help="size of the vault to build (default 100)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each way; the median is printed (default 3)")
    parser.add_argument("--profile", action="store_true", help="then profile one backup and one restore")
    parser.add_argument("--top", type=int, default=15, help="functions listed per profile (default 15)")
    parser.add_argument("--cache", type=Path, default=REPO / "bench" / ".cache" / "backup")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    vault = build_vault(args.cache, args.megabytes, args.seed)
    megabytes = _folder_bytes(vault) / 1e6
    # beside the cache, on the same disk as the vault: a backup is usually written to another one,
    # but the baselines are measured on the same disk as notochord, which is what the ratios need
    with tempfile.TemporaryDirectory(prefix="backup-bench-", dir=args.cache) as scratch:
        work = Path(scratch)
        timings = run(vault, work, args.repeat)
        report(vault, megabytes, timings, args.repeat)
        if args.profile:
            profile(vault, work, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
