"""The HTTP/1.1 connection of ``notochord serve``: uvicorn's h11 protocol with the timeouts it lacks.

Stock uvicorn closes a kept-alive connection that stays idle after a response, and answers 503 when
too many requests run, but a connection that never completes its request head, or trickles it a
byte at a time, stays open for ever: a few hundred of them exhaust the server's file descriptors
(slowloris). :class:`GuardedH11Protocol` adds:

- a head timeout: a connection's request line and headers must arrive within ``header_timeout``
  seconds of the connection (or of the first byte of a following request on a kept-alive one);
- a body timeout: while a request body is being received, ``body_timeout`` seconds without a byte
  close the connection (the time the application takes to read what arrived does not count);
- a connection cap: a connection beyond ``max_connections`` open ones is answered 503 and closed
  at once, so idle sockets cannot use up the descriptors the server needs.

Each closing is logged as one line (logger ``notochord.server``). Build the class for a
configuration with :func:`protocol_class`.

The answers this layer makes itself, before the application sees a request (the 503 past the cap,
the 400 for bytes that are not an HTTP request), carry the console's policy headers and
``no-store`` like every answer of the application (:data:`notochord.console.render.POLICY_HEADERS`):
the console shares the port, and no middleware runs for them. The 400 says in the service's words
what was wrong, not the parser's.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from notochord.console.render import NO_STORE, POLICY_HEADERS

__all__ = ["GuardedH11Protocol", "protocol_class"]

log = logging.getLogger("notochord.server")

_PROTECTIONS: list[tuple[bytes, bytes]] = [
    (name.lower().encode("ascii"), value.encode("ascii")) for name, value in {**NO_STORE, **POLICY_HEADERS}.items()
]


def _plain(text: bytes) -> list[tuple[bytes, bytes]]:
    """The headers of a plain-text answer of this layer, which closes the connection after it."""
    return [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"connection", b"close"),
        (b"content-length", str(len(text)).encode("ascii")),
        *_PROTECTIONS,
    ]


_BUSY_TEXT = b"The server is busy; try again later.\n"
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    + b"".join(name + b": " + value + b"\r\n" for name, value in _plain(_BUSY_TEXT))
    + b"\r\n"
    + _BUSY_TEXT
)
_MALFORMED_TEXT = (
    b"The request could not be read as HTTP (a malformed request line or header); nothing was done. "
    b"Check how the request is built, or let an HTTP client build it.\n"
)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a head timeout, a body idle timeout and a connection cap."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 500

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            log.warning("%s refused: %d connections are open already", self._peer(), self.max_connections)
            self.transport.write(_BUSY)
            self.transport.close()
            return
        self._arm_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head()
        self._cancel_body()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def send_400_response(self, msg: str) -> None:
        """Answer bytes that are not an HTTP request (h11 refused them), then close: uvicorn's
        answer with the console's protections and the service's words (``msg`` is uvicorn's)."""
        del msg
        event = h11.Response(status_code=400, headers=_plain(_MALFORMED_TEXT), reason=b"Bad Request")
        self.transport.write(self.conn.send(event) or b"")
        self.transport.write(self.conn.send(h11.Data(data=_MALFORMED_TEXT)) or b"")
        self.transport.write(self.conn.send(h11.EndOfMessage()) or b"")
        self.transport.close()

    # ------------------------------------------------------------------ the timers

    def _watch(self) -> None:
        """Arm the timer that fits where the request stands after the bytes just handled."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            self._cancel_body()
            # a kept-alive connection waiting for its next request is uvicorn's keep-alive timer's;
            # once bytes of a request head arrived, the head must complete in time
            if self._head_timer is None and self.conn.trailing_data[0]:
                self._arm_head()
        elif state is h11.SEND_BODY:
            self._cancel_head()
            self._arm_body()
        else:
            self._cancel_head()
            self._cancel_body()

    def _arm_head(self) -> None:
        self._cancel_head()
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_expired)

    def _arm_body(self) -> None:
        self._cancel_body()
        self._body_timer = self.loop.call_later(self.body_timeout, self._body_expired)

    def _cancel_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _cancel_body(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _head_expired(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is still being answered: the head of the next one can wait
        log.info("%s closed: no complete request head within %g s", self._peer(), self.header_timeout)
        self.transport.close()

    def _body_expired(self) -> None:
        self._body_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.SEND_BODY:
            return
        if self.flow.read_paused:
            # the application has not read what arrived yet; the client is not the slow one
            self._arm_body()
            return
        log.info("%s closed: no request body bytes for %g s", self._peer(), self.body_timeout)
        self.transport.close()

    def _peer(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "a client"


def protocol_class(*, header_timeout: float, body_timeout: float, max_connections: int) -> type[GuardedH11Protocol]:
    """A :class:`GuardedH11Protocol` with these bounds, for ``uvicorn.Config(http=...)``."""
    return type(
        "GuardedH11Protocol",
        (GuardedH11Protocol,),
        {"header_timeout": header_timeout, "body_timeout": body_timeout, "max_connections": max_connections},
    )
