"""A TCP relay in front of the test PostgreSQL server, which a test cuts to make the server go away.

Cutting it closes the listener and drops every relayed connection, so new connections are refused
and open ones fail, as when the database server stops; :meth:`Relay.start` listens again on the
same port, as when it is back.
"""

from __future__ import annotations

import contextlib
import socket
import threading

import psycopg


class Relay:
    """A TCP listener on 127.0.0.1 that pipes each connection to the PostgreSQL server's socket."""

    def __init__(self, server_url: str) -> None:
        info = psycopg.conninfo.conninfo_to_dict(server_url)
        host, port = str(info.get("host") or "localhost"), int(info.get("port") or 5432)
        self._target: tuple[int, str | tuple[str, int]] = (
            (socket.AF_UNIX, f"{host}/.s.PGSQL.{port}") if host.startswith("/") else (socket.AF_INET, (host, port))
        )
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.port = 0
        self.start()

    def start(self) -> None:
        """Listen (again, on the same port once cut); a relay already listening is left as it is."""
        if self._listener is not None:
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """The server is gone: the listener closes and every relayed connection drops."""
        with self._lock:
            if self._listener is not None:
                # shutdown first: close alone leaves the thread blocked in accept() holding the port
                with contextlib.suppress(OSError):
                    self._listener.shutdown(socket.SHUT_RDWR)
                self._listener.close()
                self._listener = None
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            family, address = self._target
            upstream = socket.socket(family, socket.SOCK_STREAM)
            try:
                upstream.connect(address)
            except OSError:
                upstream.close()
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
