"""The harness of the knowledge-base service tests: a live server on 127.0.0.1, callers with tokens,
and a world of two fresh organizations per test."""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
import jwt
import sqlalchemy as sa
import uvicorn
from fastapi import FastAPI

import notochord
from notochord.clock import FixedClock
from notochord.kbservice import KbService
from notochord.server.app import create_app
from notochord.server.auth import mint_token
from notochord.settings import Settings

SECRET = "test-secret-for-the-knowledge-base-service-0123456789"
WRONG_SECRET = "another-secret-that-the-service-never-configured-987654"
API = "/api/knowledge"
_orgs = itertools.count(1)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveServer:
    """A running service: its base URL, data directory, clock and domain service."""

    url: str
    nc: notochord.Notochord
    clock: FixedClock
    service: KbService
    client: httpx.Client
    app: FastAPI

    def tick(self) -> None:
        """Move the clock on, so the next write gets a later timestamp."""
        self.clock.advance(timedelta(seconds=1))


def start_server(settings: Settings, nc: notochord.Notochord) -> tuple[uvicorn.Server, threading.Thread, str, FastAPI]:
    app = create_app(nc, settings)
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", ws="none", log_level="critical")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="kb-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    return server, thread, f"http://127.0.0.1:{port}", app


def stop_server(server: uvicorn.Server, thread: threading.Thread) -> None:
    server.should_exit = True
    thread.join(timeout=20)


def token_for(
    user: str,
    org: str,
    role: str | None,
    *,
    superadmin: bool = False,
    email: str | None = None,
    ttl: int = 3600,
    secret: str = SECRET,
) -> str:
    return mint_token(secret=secret, user=user, org=org, role=role, superadmin=superadmin, ttl=ttl, email=email)


@dataclass(frozen=True)
class Caller:
    """Someone calling the service: their ids and the headers they send (``None``: no token)."""

    user: str
    org: str
    headers: dict[str, str]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def caller(user: str, org: str, role: str | None, *, superadmin: bool = False) -> Caller:
    email = f"{user}@example.org"
    return Caller(user, org, bearer(token_for(user, org, role, superadmin=superadmin, email=email)))


@dataclass
class World:
    """Two fresh organizations A and B with one caller per role, and a superadmin living in B."""

    live: LiveServer
    a: str
    b: str
    callers: dict[str, Caller] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Caller:
        return self.callers[name]

    def request(self, method: str, path: str, who: Caller | None, **kwargs: Any) -> httpx.Response:
        headers = dict(who.headers) if who is not None else {}
        headers.update(kwargs.pop("headers", {}))
        return self.live.client.request(method, API + path, headers=headers, **kwargs)

    def create_kb(self, who: str = "owner", **body: Any) -> dict[str, Any]:
        response = self.request("POST", "/kb", self[who], json={"name": "Help Center Articles", **body})
        assert response.status_code == 201, response.text
        kb: dict[str, Any] = response.json()["knowledgeBase"]
        return kb

    def create_agent(self, who: str = "owner", **body: Any) -> dict[str, Any]:
        response = self.request("POST", "/agents", self[who], json={"name": "Support bot", **body})
        assert response.status_code == 201, response.text
        agent: dict[str, Any] = response.json()["agent"]
        return agent

    def grant(self, kind: str, resource_id: str, user: str, permission: str) -> None:
        path = f"/{'kb' if kind == 'kb' else 'agents'}/{resource_id}/grants/{user}"
        response = self.request("PUT", path, self["owner"], json={"permission": permission})
        assert response.status_code == 200, response.text

    def audit(self, action: str | None = None, org: str = "a") -> list[dict[str, Any]]:
        who = self["owner"] if org == "a" else self["b_owner"]
        params = {"limit": "100", **({"action": action} if action else {})}
        response = self.request("GET", "/audit", who, params=params)
        assert response.status_code == 200, response.text
        entries: list[dict[str, Any]] = response.json()["entries"]
        return entries

    def usage(self, org: str = "a") -> list[dict[str, Any]]:
        who = self["owner"] if org == "a" else self["b_owner"]
        response = self.request("GET", "/usage", who)
        assert response.status_code == 200, response.text
        records: list[dict[str, Any]] = response.json()["records"]
        return records


def new_world(live: LiveServer) -> World:
    n = next(_orgs)
    a, b = f"org-a{n}", f"org-b{n}"
    w = World(live, a, b)
    for role in ("owner", "admin", "member", "viewer"):
        w.callers[role] = caller(f"{role}-{n}", a, role)
    w.callers["roleless"] = caller(f"roleless-{n}", a, None)
    w.callers["b_owner"] = caller(f"b-owner-{n}", b, "owner")
    w.callers["b_member"] = caller(f"b-member-{n}", b, "member")
    w.callers["superadmin"] = caller(f"super-{n}", b, None, superadmin=True)
    return w


def expired_token(user: str, org: str) -> str:
    """A correctly signed token that expired a minute ago."""
    claims = {"sub": user, "org": org, "org_role": "owner", "exp": int(time.time()) - 60}
    return jwt.encode(claims, SECRET, algorithm="HS256")


def unsigned_token(user: str, org: str) -> str:
    """A token with ``alg: none``."""
    claims = {"sub": user, "org": org, "org_role": "owner", "exp": int(time.time()) + 3600}
    return jwt.encode(claims, "", algorithm="none")


@contextlib.contextmanager
def transactions(world: World) -> Iterator[list[int]]:
    """Counts the transactions begun on organization A's engine inside the ``with`` block."""
    engine = world.live.nc.org(world.a).core.store.engine
    begun = [0]

    def count(_conn: Any) -> None:
        begun[0] += 1

    sa.event.listen(engine, "begin", count)
    try:
        yield begun
    finally:
        sa.event.remove(engine, "begin", count)
