"""Start-up of the command line: ``notochord --help`` and ``notochord facts --help`` beside ``python -c pass``.

Run from the repository root::

    python bench/cli.py                  # 10 runs of each
    python bench/cli.py --runs 3

Each command runs as a fresh process (the installed console script next to this interpreter), in a
temporary per-user data folder so that nothing is read from or written to a real vault. Runs
alternate the three commands so that drift of the machine hits each alike. Printed: the median and
the fastest wall time of each, and the ratio to ``python -c pass`` (the interpreter's own start-up,
which no command can beat). It prints; it never asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("notochord")

COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "notochord --help": [str(SCRIPT), "--help"],
    "notochord facts --help": [str(SCRIPT), "facts", "--help"],
}


def _once(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each command (default 10)")
    args = parser.parse_args()
    if not SCRIPT.is_file():
        sys.exit(f"the console script is not installed next to {sys.executable}; run `make install`")

    with tempfile.TemporaryDirectory(prefix="notochord-bench-cli-") as folder:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
        env["XDG_DATA_HOME"] = folder
        for argv in COMMANDS.values():
            _once(argv, env)  # warm the file cache, so the first timed run is not an outlier
        times: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for _ in range(args.runs):
            for name, argv in COMMANDS.items():
                times[name].append(_once(argv, env))

    baseline = statistics.median(times["python -c pass"])
    print(f"start-up over {args.runs} runs each (wall time, seconds)")
    print(f"{'command':<26}{'median':>9}{'fastest':>9}{'× python':>10}")
    for name, measured in times.items():
        median = statistics.median(measured)
        print(f"{name:<26}{median:>9.3f}{min(measured):>9.3f}{median / baseline:>10.1f}")


if __name__ == "__main__":
    main()
