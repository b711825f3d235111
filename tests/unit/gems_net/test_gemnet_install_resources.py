"""Resources at install and upgrade, through ``space.gems`` (P-RES-02, P-RES-08, P-GEN-04)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import httpx
import pytest
from gemnet_support import PUBLIC_ADDRESS, ExternalHosts, FakeResolver, gem_manifest

from notochord import GemError, ManifestError, NetworkRequestError, Space

FILES = "files.example.test"
DATA = b"weights 0.1 0.2"


def _gem(root: Path, *, version: str, digest: str) -> Path:
    data = gem_manifest(
        "tagger",
        resources=[{"url": f"https://{FILES}/model.bin", "sha256": digest, "description": "the model"}],
    )
    data["version"] = version
    root.mkdir(parents=True, exist_ok=True)
    (root / "notochord.json").write_text(json.dumps(data), encoding="utf-8")
    (root / "tools").mkdir(exist_ok=True)
    (root / "tools" / "main.mjs").touch()  # install checks that the tool's entry file exists
    return root


@pytest.fixture
def wired(space: Space, resolver: FakeResolver) -> Space:
    hosts = ExternalHosts()
    resolver.point(FILES, str(PUBLIC_ADDRESS))
    hosts.serve(f"https://{FILES}/model.bin", httpx.Response(200, content=DATA))
    space.gems.services.resolver = resolver
    space.gems.services.http_transport = hosts.transport
    return space


def test_install_downloads_and_verifies_resources_even_from_inside_an_event_loop(wired: Space, tmp_path: Path) -> None:
    """P-RES-02: installing from async code (a server handler) downloads in its own loop."""
    folder = _gem(tmp_path / "v1", version="1.0.0", digest="sha256:" + hashlib.sha256(DATA).hexdigest())

    async def install_from_a_handler() -> str:
        return wired.gems.install(folder).id

    gem_id = asyncio.run(install_from_a_handler())
    assert (wired.gems.resources_dir(gem_id) / "model.bin").read_bytes() == DATA


def test_a_checksum_mismatch_installs_nothing(wired: Space, tmp_path: Path) -> None:
    """P-RES-08, OD-P09: the file never appears and the gem is not installed."""
    folder = _gem(tmp_path / "bad", version="1.0.0", digest="sha256:" + "0" * 64)
    with pytest.raises(NetworkRequestError, match="sha256"):
        wired.gems.install(folder)
    with pytest.raises(GemError, match="no gem"):
        wired.gems.get("tagger")
    assert not wired.gems.resources_dir("tagger").exists()


def test_unknown_permission_keys_are_reported(space: Space, tmp_path: Path) -> None:
    """P-GEN-01/02, OD-P10: files and storage are not permissions; a manifest asking for them is told so."""
    data = gem_manifest("asker")
    data["permissions"] = {**data.get("permissions", {}), "storage": True}
    (tmp_path / "notochord.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ManifestError, match=r"permissions\.storage: is not a permission"):
        space.gems.install(tmp_path)


def test_a_host_whose_last_label_reads_as_hex_is_refused(space: Space, tmp_path: Path) -> None:
    """P-NET-03: ``example.0x1f`` would be parsed as an IPv4 address, so it is no host name."""
    data = gem_manifest("hexy", hosts=["example.0x1f"])
    (tmp_path / "notochord.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ManifestError, match="last label is a number"):
        space.gems.install(tmp_path)
