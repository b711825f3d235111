"""Fixtures for the network tests: real HTTP servers on 127.0.0.1 that record what they receive."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from net_servers import (
    RecordingServer,
    ServerCertificates,
    make_certificates,
    start_server,
    start_tls_server,
    stop_server,
)


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    started = start_server()
    yield started
    stop_server(started)


@pytest.fixture
def other_server() -> Iterator[RecordingServer]:
    started = start_server()
    yield started
    stop_server(started)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tls_certificates(tmp_path: Path) -> ServerCertificates:
    return make_certificates(str(tmp_path), name="api.example.test")


@pytest.fixture
def tls_server(tls_certificates: ServerCertificates) -> Iterator[RecordingServer]:
    started = start_tls_server(tls_certificates)
    yield started
    stop_server(started)
