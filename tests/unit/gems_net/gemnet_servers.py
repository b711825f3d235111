"""HTTP servers on 127.0.0.1 serving fixed routes and recording every request, for the gem network tests.

A route answers with a fixed status, headers and body. A path without a route answers 404. Every
request, routed or not, is recorded (method, path, headers, body), so a test can prove that a refused
request never reached the server.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Route:
    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class RouteServer:
    """A started server; add routes with :meth:`route`, read requests from ``seen``."""

    httpd: ThreadingHTTPServer
    thread: threading.Thread
    routes: dict[str, Route]
    seen: list[Seen] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def route(
        self,
        path: str,
        body: bytes = b"",
        *,
        status: int = 200,
        content_type: str | None = None,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> str:
        """Serve ``body`` at ``path``; return the path for convenience."""
        extra = ((("Content-Type", content_type),) if content_type else ()) + headers
        self.routes[path] = Route(status=status, body=body, headers=extra)
        return path

    def redirect(self, path: str, location: str, *, status: int = 302) -> str:
        self.routes[path] = Route(status=status, headers=(("Location", location),))
        return path

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def _handler(server: RouteServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length", "0") or "0")
            body = self.rfile.read(length) if length else b""
            server.seen.append(Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            route = server.routes.get(self.path.split("?", 1)[0], Route(status=404, body=b"no such route"))
            self.send_response(route.status)
            for name, value in route.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            self.wfile.write(route.body)

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def do_PUT(self) -> None:
            self._answer()

    return Handler


def start_route_server() -> RouteServer:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    server = RouteServer(httpd=httpd, thread=thread, routes={})
    httpd.RequestHandlerClass = _handler(server)
    thread.start()
    return server
