"""A tool holds no capabilities, whoever runs notochord (P-FILE-01, DESIGN §4).

Run as root (a container, a service account), a tool would otherwise be root inside its namespaces:
able to load a kernel module, change its user id or send signals anywhere its namespace reaches.
The tool process drops every capability, from its bounding set too, so a program it starts gains
none either; the run's isolation says ``privileges: none``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import notochord
from one_tool_gem import install_one_tool_gem

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")

READS_ITS_CAPABILITIES = """
import os
import subprocess
import sys


def _capabilities(status):
    return {line.split(":")[0]: line.split(":")[1].strip() for line in status.splitlines() if line.startswith("Cap")}


async def run(input, ctx):
    with open("/proc/self/status") as status:
        own = _capabilities(status.read())
    # a program the tool starts, as root would start a setuid-free binary
    child = subprocess.run(
        [sys.executable, "-c", "print(open('/proc/self/status').read())"], capture_output=True, text=True
    )
    try:
        os.setuid(12345)
        became = "changed its user id"
    except PermissionError:
        became = "refused"
    return {"own": own, "child": _capabilities(child.stdout), "setuid": became}
"""

NONE = "0000000000000000"


@pytest.fixture
def reading(tmp_path: Path, space: notochord.Space) -> notochord.Space:
    install_one_tool_gem(space, tmp_path / "caps-gem", "caps", READS_ITS_CAPABILITIES)
    return space


def test_a_tool_and_what_it_starts_hold_no_capabilities(reading: notochord.Space) -> None:
    """P-FILE-01: effective, permitted, inheritable, ambient and bounding sets are all empty."""
    record = reading.gems.runner.run_sync("caps", "main", input={}, timeout=60)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    [note] = [n for n in record.isolation if n.startswith("privileges:")]
    # "none held": an ordinary user without a user namespace held none to drop, and may not empty
    # its bounding set; no_new_privs then keeps a program it starts from gaining any
    assert note in ("privileges: none (every capability dropped)", "privileges: none held"), note
    held = ("CapInh", "CapPrm", "CapEff", "CapAmb") + (("CapBnd",) if "dropped" in note else ())
    for holder in ("own", "child"):
        sets = record.output[holder]
        assert {name: sets[name] for name in held} == dict.fromkeys(held, NONE), holder
    assert record.output["setuid"] == "refused"
