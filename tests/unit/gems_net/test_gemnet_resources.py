"""Manifest ``resources``: downloaded at install, verified by SHA-256, never from the local machine.

External files are answered in memory (their host resolves to a public address that is never
contacted). Covers P-RES-01…08, P-NET-22 and OD-P09.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx
import pytest
from gemnet_servers import RouteServer
from gemnet_support import PUBLIC_ADDRESS, ExternalHosts, FakeResolver, gem_manifest

from notochord.errors import NetworkPermissionError, NetworkRequestError
from notochord.gems.manifest import Manifest, parse_manifest
from notochord.gems.resources import describe_resources, download_resources, resource_filenames
from notochord.net.policy import UserNetworkRules

pytestmark = pytest.mark.anyio

FILES = "files.example.test"
MODEL = b"model weights: 0.1 0.2 0.3"
VOCAB = b"apple\nbanana\n"


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _manifest(*resources: dict[str, object], network: bool = False) -> Manifest:
    data = gem_manifest("tagger", hosts=["api.example.test"] if network else None, resources=resources)
    return parse_manifest(data, form="packaged")


def _resource(url: str, data: bytes, *, size: int | None = None, digest: str | None = None) -> dict[str, object]:
    entry: dict[str, object] = {"url": url, "sha256": digest or _sha(data), "description": f"file at {url}"}
    if size is not None:
        entry["size"] = size
    return entry


@pytest.fixture
def files(resolver: FakeResolver) -> ExternalHosts:
    hosts = ExternalHosts()
    resolver.point(FILES, str(PUBLIC_ADDRESS))
    hosts.serve(f"https://{FILES}/v1/model.bin", httpx.Response(200, content=MODEL))
    hosts.serve(f"https://{FILES}/v1/vocab.txt", httpx.Response(200, content=VOCAB))
    return hosts


async def test_resources_are_downloaded_and_verified_without_any_network_permission(
    tmp_path: Path, files: ExternalHosts, resolver: FakeResolver
) -> None:
    """P-RES-01, P-RES-02, P-RES-04: no ``network`` section is needed."""
    manifest = _manifest(
        _resource(f"https://{FILES}/v1/model.bin", MODEL, size=len(MODEL)),
        _resource(f"https://{FILES}/v1/vocab.txt", VOCAB),
    )
    assert manifest.network is None
    paths = await download_resources(
        manifest,
        dest=tmp_path / "res",
        user_rules=UserNetworkRules(),
        resolver=resolver,
        transport=files.transport,
    )
    assert paths == [tmp_path / "res" / "model.bin", tmp_path / "res" / "vocab.txt"]
    assert [p.read_bytes() for p in paths] == [MODEL, VOCAB]
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == ["model.bin", "vocab.txt"]


async def test_checksum_mismatch_discards_the_file_and_names_the_url_and_both_digests(
    tmp_path: Path, files: ExternalHosts, resolver: FakeResolver
) -> None:
    """P-RES-08, OD-P09: the file never appears in the destination, nor do the others of the run."""
    wrong = _sha(b"what the author meant to publish")
    manifest = _manifest(
        _resource(f"https://{FILES}/v1/vocab.txt", VOCAB),
        _resource(f"https://{FILES}/v1/model.bin", MODEL, digest=wrong),
    )
    dest = tmp_path / "res"
    with pytest.raises(NetworkRequestError) as failed:
        await download_resources(
            manifest, dest=dest, user_rules=UserNetworkRules(), resolver=resolver, transport=files.transport
        )
    message = failed.value.message
    assert f"https://{FILES}/v1/model.bin" in message
    assert wrong in message
    assert _sha(MODEL) in message
    assert list(dest.iterdir()) == []


async def test_a_verified_file_already_in_place_is_not_downloaded_again(
    tmp_path: Path, files: ExternalHosts, resolver: FakeResolver
) -> None:
    manifest = _manifest(_resource(f"https://{FILES}/v1/model.bin", MODEL))
    dest = tmp_path / "res"
    for _ in range(2):
        await download_resources(
            manifest, dest=dest, user_rules=UserNetworkRules(), resolver=resolver, transport=files.transport
        )
    assert len(files.received) == 1
    assert (dest / "model.bin").read_bytes() == MODEL


async def test_a_tampered_file_in_place_is_replaced_by_the_verified_one(
    tmp_path: Path, files: ExternalHosts, resolver: FakeResolver
) -> None:
    dest = tmp_path / "res"
    dest.mkdir()
    (dest / "model.bin").write_bytes(b"tampered")
    manifest = _manifest(_resource(f"https://{FILES}/v1/model.bin", MODEL))
    await download_resources(
        manifest, dest=dest, user_rules=UserNetworkRules(), resolver=resolver, transport=files.transport
    )
    assert (dest / "model.bin").read_bytes() == MODEL


async def test_a_body_longer_than_the_declared_size_is_refused(
    tmp_path: Path, files: ExternalHosts, resolver: FakeResolver
) -> None:
    manifest = _manifest(_resource(f"https://{FILES}/v1/model.bin", MODEL, size=4))
    with pytest.raises(NetworkRequestError, match="limit of 4 bytes"):
        await download_resources(
            manifest,
            dest=tmp_path / "res",
            user_rules=UserNetworkRules(),
            resolver=resolver,
            transport=files.transport,
        )
    assert list((tmp_path / "res").iterdir()) == []


async def test_user_blocklist_applies_to_resource_downloads(
    tmp_path: Path, files: ExternalHosts, resolver: FakeResolver
) -> None:
    """P-RES-06."""
    manifest = _manifest(_resource(f"https://{FILES}/v1/model.bin", MODEL))
    rules = UserNetworkRules.build(external_mode="blocklist", external_hosts=[FILES])
    with pytest.raises(NetworkPermissionError, match="was not downloaded") as refused:
        await download_resources(
            manifest, dest=tmp_path / "res", user_rules=rules, resolver=resolver, transport=files.transport
        )
    assert refused.value.rule == "user-blocklist"
    assert files.received == []


async def test_resource_downloads_never_reach_the_local_machine_even_when_the_user_lists_it(
    tmp_path: Path, resolver: FakeResolver, server: RouteServer
) -> None:
    """P-NET-22, P-RES-07: neither by IP literal nor by a name resolving to 127.0.0.1."""
    server.route("/model.bin", MODEL)
    resolver.point(FILES, "127.0.0.1")
    rules = UserNetworkRules.build(local_hosts=["127.0.0.1", FILES])
    for url in (server.url("/model.bin"), server.url("/model.bin", host=FILES)):
        manifest = _manifest(_resource(url, MODEL))
        with pytest.raises(NetworkPermissionError) as refused:
            await download_resources(manifest, dest=tmp_path / "res", user_rules=rules, resolver=resolver)
        assert refused.value.rule == "resources-never-local"
    assert server.seen == []


async def test_redirect_of_a_resource_into_the_local_machine_is_refused(
    tmp_path: Path, files: ExternalHosts, resolver: FakeResolver, server: RouteServer
) -> None:
    """P-NET-22 with P-NET-11: the hop is checked like the first request."""
    files.serve(f"https://{FILES}/v1/moved.bin", httpx.Response(302, headers={"Location": server.url("/x")}))
    manifest = _manifest(_resource(f"https://{FILES}/v1/moved.bin", MODEL))
    with pytest.raises(NetworkPermissionError) as refused:
        await download_resources(
            manifest,
            dest=tmp_path / "res",
            user_rules=UserNetworkRules(),
            resolver=resolver,
            transport=files.transport,
        )
    assert refused.value.rule == "resources-never-local"
    assert server.seen == []


def test_describe_resources_lists_description_size_host_and_when() -> None:
    """P-RES-05: the "Download additional files" entry of the gem's page."""
    manifest = _manifest(
        _resource(f"https://{FILES}/v1/model.bin", MODEL, size=len(MODEL)),
        _resource(f"http://{FILES}:8080/vocab.txt", VOCAB),
    )
    assert describe_resources(manifest) == [
        {
            "description": f"file at https://{FILES}/v1/model.bin",
            "size": len(MODEL),
            "host": FILES,
            "url": f"https://{FILES}/v1/model.bin",
            "sha256": _sha(MODEL),
            "when": "at install",
        },
        {
            "description": f"file at http://{FILES}:8080/vocab.txt",
            "size": None,
            "host": f"{FILES}:8080",
            "url": f"http://{FILES}:8080/vocab.txt",
            "sha256": _sha(VOCAB),
            "when": "at install",
        },
    ]


def test_resource_file_names_are_safe_and_distinct() -> None:
    manifest = _manifest(
        _resource(f"https://{FILES}/a/model.bin", MODEL),
        _resource(f"https://{FILES}/b/MODEL.bin", MODEL),
        _resource(f"https://{FILES}/", MODEL),
        _resource(f"https://{FILES}/x/..%2F..%2Fetc%2Fpasswd", MODEL),
        _resource(f"https://{FILES}/x/.hidden%20file.txt", MODEL),
    )
    assert resource_filenames(manifest.resources) == [
        "model.bin",
        "MODEL-2.bin",
        "resource-3",
        "passwd",
        "hidden-file.txt",
    ]
