"""Hostile HTTP clients: every bad input gets a clear 4xx with the documented error shape, never a
5xx; parsers refuse the forms other software reads differently; and a real ``notochord serve``
closes idle and trickling connections, caps how many it holds, and keeps serving.

Everything here talks to 127.0.0.1 only, with a bounded number of sockets and requests.
"""

from __future__ import annotations

import http.server
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import pytest
import uvicorn

import notochord
from notochord.errors import NetworkRequestError
from notochord.kbservice.documents import organization_download_policy
from notochord.net.hosts import parse_host_entry
from notochord.net.policy import UserNetworkRules
from notochord.net.transport import GuardedClient
from notochord.server.app import create_app
from notochord.server.auth import mint_token
from notochord.settings import Settings

SECRET = "hostile-clients-secret-0123456789-abcdefghijklmnop"
API = "/api/knowledge"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _token(user: str = "mallory", org: str = "hostile", role: str = "owner") -> str:
    return mint_token(secret=SECRET, user=user, org=org, role=role)


# ---------------------------------------------------------------------- an in-process service


@dataclass
class Service:
    url: str
    client: httpx.Client
    headers: dict[str, str]
    kb_id: str
    agent_id: str


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    data = tmp_path_factory.mktemp("hostile") / "data"
    settings = Settings(data_dir=data, index_in_background=False, jwt_secret=SECRET)
    with notochord.open(data, settings, embedder=None) as nc:
        port = _free_port()
        config = uvicorn.Config(
            create_app(nc, settings), host="127.0.0.1", port=port, lifespan="off", ws="none", log_level="critical"
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, name="hostile-test-server", daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the test server did not start"
            time.sleep(0.01)
        try:
            url = f"http://127.0.0.1:{port}"
            headers = {"Authorization": f"Bearer {_token()}"}
            with httpx.Client(base_url=url + API, timeout=30) as client:
                kb = client.post("/kb", json={"name": "target"}, headers=headers).json()["knowledgeBase"]["id"]
                agent = client.post("/agents", json={"name": "bot"}, headers=headers).json()["agent"]["id"]
                yield Service(url, client, headers, kb, agent)
        finally:
            server.should_exit = True
            thread.join(timeout=20)


DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
DEEP = b"[" * 100_000 + b"]" * 100_000


@dataclass(frozen=True)
class Bad:
    """One hostile request and the status it must get."""

    method: str
    path: str
    status: int
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)
    authenticated: bool = True
    files: dict[str, Any] | None = None


BAD_INPUTS: dict[str, Bad] = {
    # bodies that are not what they claim (the bad-input table)
    "not-json": Bad("POST", "/kb", 400, b"{"),
    "json-array": Bad("POST", "/kb", 400, b"[]"),
    "json-string": Bad("POST", "/kb", 400, b'"kb"'),
    "deeply-nested": Bad("POST", "/kb", 400, DEEP),
    "invalid-utf8": Bad("POST", "/kb", 400, b'{"name": "\xff\xfe\xfd"}'),
    # PostgreSQL text cannot hold U+0000, so both backends refuse it rather than differ
    "nul-in-name": Bad("POST", "/kb", 400, b'{"name": "a\\u0000b"}'),
    "name-a-number": Bad("POST", "/kb", 400, b'{"name": 1e999999}'),
    "lone-surrogate-name": Bad("POST", "/kb", 400, rb'{"name": "x\ud800y"}'),
    "lone-surrogate-key": Bad("POST", "/kb", 400, rb'{"name": "x", "\udc00": 1}'),
    "lone-surrogate-agent": Bad("POST", "/agents", 400, rb'{"name": "\udfff"}'),
    "lone-surrogate-update": Bad("PATCH", "/kb/{kb}", 400, rb'{"description": "\ud800"}'),
    "lone-surrogate-document": Bad("POST", "/kb/{kb}/documents", 400, rb'{"content": "\ud800"}'),
    "lone-surrogate-search": Bad("POST", "/kb/{kb}/search", 400, rb'{"query": "\ud800"}'),
    "lone-surrogate-retrieve": Bad("POST", "/agents/{agent}/retrieve", 400, rb'{"query": "\ud800"}'),
    "lone-surrogate-grant": Bad("PUT", "/kb/{kb}/grants/someone", 400, rb'{"permission": "\ud800"}'),
    "lone-surrogate-link": Bad("POST", "/kb/{kb}/agents/{agent}", 400, rb'{"permissions": {"\ud800": 1}}'),
    "body-over-1-mib": Bad("POST", "/kb", 413, b'{"name": "' + b"x" * (1024 * 1024) + b'"}'),
    "priority-a-boolean": Bad("POST", "/kb/{kb}/agents/{agent}", 400, b'{"priority": true}'),
    "priority-huge": Bad("POST", "/kb/{kb}/agents/{agent}", 400, b'{"priority": 99999999999999999999}'),
    "search-query-object": Bad("POST", "/kb/{kb}/search", 400, b'{"query": {"$ne": 1}}'),
    # paging
    "limit-abc": Bad("GET", "/kb?limit=abc", 400),
    "limit-negative": Bad("GET", "/agents?limit=-1", 400),
    "offset-negative": Bad("GET", "/kb/{kb}/documents?offset=-5", 400),
    "limit-negative-50-digits": Bad("GET", "/audit?limit=-" + "9" * 50, 400),
    "graph-limit-abc": Bad("GET", "/kb/{kb}/graph?limit=abc", 400),
    # ids and paths
    "kb-id-not-a-uuid": Bad("GET", "/kb/not-a-uuid", 404),
    "kb-id-nul": Bad("GET", "/kb/%00", 404),
    "kb-id-surrogate-bytes": Bad("GET", "/kb/%ED%A0%80", 404),
    "unknown-route": Bad("GET", "/nothing/here", 404),
    "wrong-method": Bad("DELETE", "/kb", 405),
    # ingestion URLs
    "url-userinfo": Bad("POST", "/kb/{kb}/documents", 400, b'{"url": "user@host"}'),
    "url-space": Bad("POST", "/kb/{kb}/documents", 400, b'{"url": "http://example.org/a b"}'),
    "url-backslash": Bad("POST", "/kb/{kb}/documents", 400, b'{"url": "http://example.org\\\\evil/"}'),
    "url-empty-host": Bad("POST", "/kb/{kb}/documents", 400, b'{"url": "http://:80/"}'),
    "url-port-99999": Bad("POST", "/kb/{kb}/documents", 400, b'{"url": "http://example.org:99999/"}'),
    "url-prose": Bad("POST", "/kb/{kb}/documents", 400, b'{"url": "not a url at all"}'),
    "url-unclosed-ipv6": Bad("POST", "/kb/{kb}/documents", 400, b'{"url": "https://[::1"}'),
    "url-a-number": Bad("POST", "/kb/{kb}/documents", 400, b'{"url": 42}'),
    # uploads
    "multipart-without-boundary": Bad(
        "POST", "/kb/{kb}/documents", 400, b"--x--", headers=(("Content-Type", "multipart/form-data"),)
    ),
    "multipart-without-file": Bad(
        "POST",
        "/kb/{kb}/documents",
        400,
        b'--b\r\nContent-Disposition: form-data; name="title"\r\n\r\nhi\r\n--b--\r\n',
        headers=(("Content-Type", "multipart/form-data; boundary=b"),),
    ),
    "multipart-title-invalid-utf8": Bad(
        "POST",
        "/kb/{kb}/documents",
        415,
        b'--b\r\nContent-Disposition: form-data; name="title"\r\n\r\n\xff\xfe\r\n'
        b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.exe"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\nMZ\r\n--b--\r\n",
        headers=(("Content-Type", "multipart/form-data; boundary=b"),),
    ),
    "upload-unsupported-type": Bad("POST", "/kb/{kb}/documents", 415, files={"file": ("a.exe", b"MZ\x90", "x/y")}),
    "upload-corrupt-docx": Bad(
        "POST", "/kb/{kb}/documents", 400, files={"file": ("a.docx", b"PK\x03\x04 broken", DOCX_TYPE)}
    ),
    "body-type-xml": Bad("POST", "/kb/{kb}/documents", 415, b"<a/>", headers=(("Content-Type", "application/xml"),)),
    # credentials
    "no-token": Bad("GET", "/kb", 401, authenticated=False),
    "token-garbage": Bad("GET", "/kb", 401, headers=(("Authorization", "Bearer \x7f\x01"),), authenticated=False),
    "token-latin1": Bad("GET", "/kb", 401, headers=(("Authorization", "Bearer é"),), authenticated=False),
    "basic-auth": Bad("GET", "/kb", 401, headers=(("Authorization", "Basic dTpw"),), authenticated=False),
}


def _send(service: Service, bad: Bad) -> httpx.Response:
    path = bad.path.format(kb=service.kb_id, agent=service.agent_id)
    headers = dict(service.headers) if bad.authenticated else {}
    if bad.files is None:
        # sent as bytes, so that a header can carry what a hostile client sends (Latin-1, controls)
        raw = {name.encode("latin-1"): value.encode("latin-1") for name, value in [*headers.items(), *bad.headers]}
        return service.client.request(bad.method, path, content=bad.body, headers=raw)
    return service.client.request(bad.method, path, files=bad.files, headers=headers)


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_every_bad_input_gets_its_4xx_with_the_error_shape_never_a_5xx(service: Service, name: str) -> None:
    bad = BAD_INPUTS[name]
    response = _send(service, bad)
    assert response.status_code == bad.status, response.text
    body = response.json()
    if response.status_code == 404:
        assert body == {"error": "Not found"}
    elif response.status_code >= 400:
        assert set(body) == {"error", "message"}
        assert body["message"] and "Traceback" not in body["message"]
    if response.status_code == 401:
        assert response.headers["www-authenticate"].startswith('Bearer realm="notochord"')


def test_nothing_was_created_by_the_refused_requests(service: Service) -> None:
    """A refused request changes nothing."""
    for name in sorted(BAD_INPUTS):
        _send(service, BAD_INPUTS[name])
    documents = service.client.get(f"/kb/{service.kb_id}/documents", headers=service.headers).json()
    assert documents["total"] == 0
    names = [kb["name"] for kb in service.client.get("/kb", headers=service.headers).json()["knowledgeBases"]]
    assert sorted(set(names)) == ["target"]


# ---------------------------------------------------------------------- host entries


@pytest.mark.parametrize(
    "entry",
    ["[api.example.com]", "[api.example.com]:443", "[1.2.3.4]", "[localhost]", "[xn--bcher-kva.example]:8080"],
)
def test_a_bracketed_host_entry_must_hold_an_ipv6_address(entry: str) -> None:
    """Brackets are the URL spelling of IPv6 only; a name in brackets is refused."""
    parsed, problem = parse_host_entry(entry, allow_local_network=True)
    assert parsed is None
    assert problem is not None and "brackets hold only an IPv6 address" in problem


def test_a_bracketed_ipv6_entry_still_parses() -> None:
    parsed, problem = parse_host_entry("[2001:db8::1]:8443", allow_local_network=True)
    assert problem is None and parsed is not None
    assert (parsed.host, parsed.port) == ("2001:db8::1", 8443)


# ---------------------------------------------------------------------- redirect locations


class _Redirects(http.server.BaseHTTPRequestHandler):
    """``/go?to=<Location>`` answers 302 with that exact Location; every other path says ok."""

    def do_GET(self) -> None:
        if self.path.startswith("/go?to="):
            from urllib.parse import unquote

            location = unquote(self.path.removeprefix("/go?to="))
            self.send_response(302)
            # written raw: send_header would not let a tab or a leading space through unchanged
            # (the buffer send_response made; typeshed does not declare it)
            self._headers_buffer.append(f"Location: {location}\r\n".encode("latin-1"))  # type: ignore[attr-defined]
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture(scope="module")
def redirector() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Redirects)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def _follow(port: int, location: str) -> Any:
    rules = organization_download_policy(UserNetworkRules.build(local_hosts=[f"127.0.0.1:{port}"]), "acme")

    async def go() -> Any:
        async with GuardedClient(policy=rules) as client:
            return await client.get(f"http://127.0.0.1:{port}/go?to={quote(location, safe='')}")

    return anyio.run(go)


@pytest.mark.parametrize(
    "location",
    [
        "///127.0.0.1/elsewhere",
        "////evil.example/",
        "/\\evil.example/",
        "\\\\evil.example/",
        "http:evil.example/",
        "https:/evil.example/",
        "http:///evil.example/",
        "/ok\tpath",
        "\x01/ok",
        "\x1f//evil.example/",
        "/ok\x7f",
    ],
    ids=repr,
)
def test_a_redirect_location_that_browsers_read_differently_is_refused(redirector: int, location: str) -> None:
    """``///host``, ``http:host``, backslashes, tabs and control characters are
    refused, as WHATWG parsers (browsers, Node) read them as another URL than httpx. (A newline cannot
    reach a header value, and leading spaces are stripped by every HTTP parser alike.)"""
    with pytest.raises(NetworkRequestError, match="redirected to a malformed URL"):
        _follow(redirector, location)


@pytest.mark.parametrize("location", ["/plain", "plain", "//127.0.0.1:{port}/plain", "http://127.0.0.1:{port}/x"])
def test_an_ordinary_redirect_location_is_followed(redirector: int, location: str) -> None:
    response = _follow(redirector, location.format(port=redirector))
    assert response.status == 200 and response.text() == "ok"


# ---------------------------------------------------------------------- slowloris on a real server


@dataclass
class Served:
    port: int
    log: Path
    process: subprocess.Popen[bytes]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``notochord serve`` in a subprocess with short timeouts and a cap of 20 connections."""
    root = tmp_path_factory.mktemp("slowloris")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
    env.update(
        NOTOCHORD_EMBEDDER="none",
        NOTOCHORD_JWT_SECRET=SECRET,
        NOTOCHORD_HTTP_HEADER_TIMEOUT="1",
        NOTOCHORD_HTTP_BODY_TIMEOUT="1",
        NOTOCHORD_HTTP_KEEPALIVE_TIMEOUT="1",
        NOTOCHORD_HTTP_MAX_CONNECTIONS="20",
    )
    port = _free_port()
    log = root / "serve.log"
    data = str(root / "data")
    subprocess.run([sys.executable, "-m", "notochord", "init", "--data-dir", data], env=env, check=True, timeout=120)
    command = [sys.executable, "-m", "notochord", "serve", "--port", str(port), "--data-dir", data]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "notochord serve did not start"
                time.sleep(0.1)
        yield Served(port, log, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _closed_by_server(sock: socket.socket) -> bool:
    """True once the server has closed ``sock`` (whatever it wrote before)."""
    try:
        while True:
            ready, _, _ = select.select([sock], [], [], 0)
            if not ready:
                return False
            if not sock.recv(65536):
                return True
    except OSError:
        return True


def _wait_closed(sockets: list[socket.socket], seconds: float, *, trickle: bool = False) -> list[socket.socket]:
    """The sockets still open after ``seconds``; trickling ones get one header byte per round."""
    deadline = time.monotonic() + seconds
    open_ = list(sockets)
    while open_ and time.monotonic() < deadline:
        for sock in list(open_):
            if _closed_by_server(sock):
                open_.remove(sock)
            elif trickle:
                try:
                    sock.sendall(b"x")
                except OSError:
                    open_.remove(sock)
        time.sleep(0.2)
    return open_


def _connect(port: int, first: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    if first:
        sock.sendall(first)
    return sock


def _normal_request(port: int) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{port}{API}/kb", headers={"Authorization": f"Bearer {_token()}"}, timeout=10)


def test_idle_and_trickling_connections_are_closed_and_the_server_still_serves(served: Served) -> None:
    """60 sockets against a cap of 20: those past the cap are answered 503 and
    closed at once; idle ones and ones trickling a header byte at a time are closed after the 1 s
    head timeout although they keep sending; then a normal request is served."""
    idle = [_connect(served.port) for _ in range(30)]
    trickling = [_connect(served.port, b"GET /openapi.json HTTP/1.1\r\nHost: x\r\nX-Slow: ") for _ in range(30)]
    try:
        assert _wait_closed(idle, 15) == []
        assert _wait_closed(trickling, 15, trickle=True) == []
        response = _normal_request(served.port)
        assert response.status_code == 200
    finally:
        for sock in idle + trickling:
            sock.close()
    assert "no complete request head within 1 s" in served.log.read_text(errors="replace")


def test_connections_past_the_cap_are_answered_503_at_once(served: Served) -> None:
    """The 21st open connection gets a 503 and is closed, before any timeout."""
    time.sleep(0.5)  # the connections of earlier tests are gone by then
    held = [_connect(served.port) for _ in range(20)]
    try:
        time.sleep(0.2)  # let the server accept them all before the one over the cap
        extra = _connect(served.port)
        extra.settimeout(5)
        answer = extra.recv(65536)
        extra.close()
        assert answer.startswith(b"HTTP/1.1 503 ")
    finally:
        for sock in held:
            sock.close()
    assert _normal_request(served.port).status_code == 200


def test_a_stalled_body_is_closed_and_a_disconnect_is_one_log_line(served: Served) -> None:
    """A body that stops arriving is closed after the body timeout; a client that
    goes away mid-body is logged as one line, never a traceback."""
    head = (
        f"POST {API}/kb HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {_token()}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    ).encode()
    stalled = _connect(served.port, head + b'{"name": ')
    gone = _connect(served.port, head + b'{"name": ')
    gone.close()
    try:
        assert _wait_closed([stalled], 15) == []
    finally:
        stalled.close()
    assert _normal_request(served.port).status_code == 200
    log = served.log.read_text(errors="replace")
    assert "Traceback" not in log
    assert log.count("disconnected before its request to POST /api/knowledge/kb was read") >= 1
    assert "no request body bytes for 1 s" in log


def test_the_server_limits_are_settings_with_sane_defaults() -> None:
    """The timeouts and the connection cap are settings."""
    defaults = Settings()
    assert (defaults.http_header_timeout, defaults.http_body_timeout, defaults.http_keepalive_timeout) == (10, 30, 5)
    assert defaults.http_max_connections == 500
    loaded = Settings.load(environ={"NOTOCHORD_HTTP_HEADER_TIMEOUT": "3", "NOTOCHORD_HTTP_MAX_CONNECTIONS": "64"})
    assert (loaded.http_header_timeout, loaded.http_max_connections) == (3, 64)


@pytest.mark.parametrize(
    "name", ["http_header_timeout", "http_body_timeout", "http_keepalive_timeout", "http_max_connections"]
)
def test_a_server_limit_that_is_not_positive_is_refused_before_serving(tmp_path: Path, name: str) -> None:
    """A zero or negative timeout or cap would switch the protection off; it is a
    configuration error naming the setting."""
    from notochord.cli.serve_cmd import build_server
    from notochord.errors import ConfigurationError

    limit: dict[str, Any] = {name: 0}
    settings = Settings(data_dir=tmp_path / "data", index_in_background=False, jwt_secret=SECRET, **limit)
    with (
        notochord.open(tmp_path / "data", settings, embedder=None) as nc,
        pytest.raises(ConfigurationError, match=name),
    ):
        build_server(nc, settings, host="127.0.0.1", port=_free_port())


def test_the_built_server_uses_the_guarded_protocol_with_the_settings(tmp_path: Path) -> None:
    """``notochord serve`` runs the protocol with the head and body timeouts and the
    cap, and uvicorn's keep-alive timeout from the settings."""
    from notochord.cli.serve_cmd import build_server
    from notochord.server.http_protocol import GuardedH11Protocol

    settings = Settings(
        data_dir=tmp_path / "data",
        index_in_background=False,
        jwt_secret=SECRET,
        http_header_timeout=4,
        http_body_timeout=7,
        http_keepalive_timeout=3,
        http_max_connections=50,
    )
    with notochord.open(tmp_path / "data", settings, embedder=None) as nc:
        config = build_server(nc, settings, host="127.0.0.1", port=_free_port()).config
    protocol = config.http
    assert isinstance(protocol, type) and issubclass(protocol, GuardedH11Protocol)
    assert (protocol.header_timeout, protocol.body_timeout, protocol.max_connections) == (4, 7, 50)
    assert config.timeout_keep_alive == 3
    assert config.limit_concurrency is not None and config.limit_concurrency > 50
