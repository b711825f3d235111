"""Manifest ``resources``: files notochord downloads for a gem at install, checked by checksum.

Rules (P-RES-01…08, P-NET-22, OD-P09):

- Downloading resources needs no permission and does not use the gem's ``network`` permission
  (P-RES-01, P-RES-04): the policy is :meth:`NetworkPolicy.for_resources`, which applies the user's
  external rules (P-RES-06) and never reaches the local machine or internal network, whatever the
  user's local list says (P-NET-22, P-RES-07). Redirect hops are checked the same way.
- The URL and the checksum come from the installed manifest only; gem code plays no part (P-RES-03).
- Each file is hashed (SHA-256) in memory before anything is written. A mismatch is reported as
  :class:`~notochord.errors.NetworkRequestError` naming the URL and both digests, and the bytes are
  discarded: the file never appears in the destination (P-RES-08, OD-P09).
- All or nothing: files are written to a hidden staging folder inside the destination and moved into
  place only when every resource was downloaded and verified; on any failure the staging folder is
  removed and the destination holds no file of this run. A file already in place whose checksum
  matches is kept and not downloaded again.
- File names come from the URL's last path segment, reduced to ``[A-Za-z0-9._-]`` without a leading
  dot; a URL without one gives ``resource-<n>``; repeated names get ``-2``, ``-3``, … before the
  extension (:func:`resource_filenames`).
- Each body is bounded by the manifest's ``size`` when given (else :data:`MAX_RESOURCE_BYTES`) and
  each download by :data:`RESOURCE_TIMEOUT` seconds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import httpx

from notochord.errors import NetworkPermissionError, NetworkRequestError, StorageError
from notochord.gems.api.http import BorrowedTransport
from notochord.gems.manifest import Manifest, ResourceSpec
from notochord.gems.package import INCOMING
from notochord.net.hosts import default_port
from notochord.net.policy import NetworkPolicy, UserNetworkRules
from notochord.net.transport import GuardedClient, RequestLimits, Resolver

__all__ = [
    "MAX_RESOURCE_BYTES",
    "RESOURCE_TIMEOUT",
    "describe_resources",
    "download_resources",
    "resource_filenames",
]

MAX_RESOURCE_BYTES: Final = 512 * 1024 * 1024
RESOURCE_TIMEOUT: Final = 600.0
WHEN_DOWNLOADED: Final = "at install"

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME: Final = 120


def _safe_name(url: str) -> str | None:
    try:
        segment = PurePosixPath(unquote(urlsplit(url).path)).name
    except ValueError:
        return None
    cleaned = _UNSAFE.sub("-", segment).lstrip(".-")[:_MAX_NAME]
    return cleaned or None


def resource_filenames(resources: Sequence[ResourceSpec]) -> list[str]:
    """The file name of each resource inside the destination folder, in manifest order."""
    names: list[str] = []
    used: set[str] = set()
    for index, spec in enumerate(resources):
        base = _safe_name(spec.url) or f"resource-{index + 1}"
        stem, dot, suffix = base.partition(".") if not base.startswith(".") else (base, "", "")
        name, counter = base, 2
        while name.lower() in used:  # lowercase: the folder may be on a case-insensitive disk
            name = f"{stem}-{counter}{dot}{suffix}"
            counter += 1
        used.add(name.lower())
        names.append(name)
    return names


def _host_label(url: str) -> str:
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return url
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None or port == default_port(parts.scheme) else f"{shown}:{port}"


def describe_resources(manifest: Manifest) -> list[dict[str, Any]]:
    """The "Download additional files" entry of the gem's page, one item per file (P-RES-05).

    Each item: ``description``, ``size`` (bytes, or None when the manifest does not say),
    ``host`` (with its port when not the default), ``url``, ``sha256`` and ``when`` (``at install``).
    """
    return [
        {
            "description": spec.description,
            "size": spec.size,
            "host": _host_label(spec.url),
            "url": spec.url,
            "sha256": f"sha256:{spec.sha256}",
            "when": WHEN_DOWNLOADED,
        }
        for spec in manifest.resources
    ]


def _file_digest(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


async def _download(
    spec: ResourceSpec,
    *,
    policy: NetworkPolicy,
    resolver: Resolver | None,
    transport: httpx.AsyncBaseTransport | None,
    limits: RequestLimits,
) -> bytes:
    if spec.size is not None and spec.size > MAX_RESOURCE_BYTES:
        raise NetworkRequestError(
            f"resource {spec.url} was not downloaded: its size {spec.size} is over the limit of "
            f"{MAX_RESOURCE_BYTES} bytes"
        )
    inner = BorrowedTransport(transport) if transport is not None else None
    bound = dataclasses.replace(
        limits, max_response_bytes=spec.size if spec.size is not None else limits.max_response_bytes
    )
    try:
        async with GuardedClient(policy=policy, resolver=resolver, inner=inner, limits=bound) as client:
            response = await client.get(spec.url)
    except NetworkPermissionError as exc:
        raise NetworkPermissionError(
            f"resource {spec.url} was not downloaded: {exc.message}", host=exc.host, rule=exc.rule
        ) from exc
    except NetworkRequestError as exc:
        raise NetworkRequestError(f"resource {spec.url} was not downloaded: {exc.message}") from exc
    if response.status != 200:
        raise NetworkRequestError(f"resource {spec.url} was not downloaded: the server answered HTTP {response.status}")
    actual = hashlib.sha256(response.body).hexdigest()
    if actual != spec.sha256:
        size_note = ""
        if spec.size is not None and len(response.body) != spec.size:
            size_note = f" (received {len(response.body)} bytes, the manifest says {spec.size})"
        raise NetworkRequestError(
            f"resource {spec.url} failed its checksum and was discarded: expected sha256:{spec.sha256}, "
            f"got sha256:{actual}{size_note}; the file on the server differs from the one the "
            "manifest names"
        )
    return response.body


async def download_resources(
    manifest: Manifest,
    *,
    dest: Path,
    user_rules: UserNetworkRules,
    resolver: Resolver | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    limits: RequestLimits | None = None,
) -> list[Path]:
    """Download and verify every resource of ``manifest`` into ``dest``; all or nothing.

    Args:
        manifest: the installed manifest, whose ``resources`` name the URLs and checksums.
        dest: the gem's resource folder (created if needed).
        user_rules: the user's network rules in force now.
        resolver: the name resolver (the system's by default).
        transport: the inner transport that connects to checked addresses (real sockets by default).
        limits: bounds of each download (default: :data:`MAX_RESOURCE_BYTES`, :data:`RESOURCE_TIMEOUT`).

    Returns:
        The path of each resource, in manifest order.

    Raises:
        NetworkPermissionError: the user's rules refuse a host, or a URL leads to the local machine
            or internal network; names the URL, the host and the rule.
        NetworkRequestError: a download failed or a checksum did not match (names both digests).
        StorageError: the files could not be written.
    """
    if not manifest.resources:
        return []
    policy = NetworkPolicy.for_resources(user_rules=user_rules)
    bounds = limits or RequestLimits(max_response_bytes=MAX_RESOURCE_BYTES, timeout=RESOURCE_TIMEOUT)
    names = resource_filenames(manifest.resources)
    targets = [dest / name for name in names]
    try:
        dest.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=INCOMING, dir=dest))
    except OSError as exc:
        raise StorageError(f"cannot create the resource folder {dest}: {exc}") from exc
    try:
        staged: list[tuple[Path, Path]] = []
        for spec, name, target in zip(manifest.resources, names, targets, strict=True):
            if target.is_file() and _file_digest(target) == spec.sha256:
                continue
            body = await _download(spec, policy=policy, resolver=resolver, transport=transport, limits=bounds)
            part = staging / name
            try:
                part.write_bytes(body)
            except OSError as exc:
                raise StorageError(f"cannot write the resource {name} into {staging}: {exc}") from exc
            staged.append((part, target))
        try:
            for part, target in staged:
                os.replace(part, target)
        except OSError as exc:
            raise StorageError(f"cannot move the verified resources into {dest}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return targets
