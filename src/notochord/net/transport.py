"""The guarded HTTP path: resolve, check, pin, send, follow redirects, bound the response.

Invariants:

- Every request URL and every redirect ``Location`` passes the syntax checks of
  :mod:`notochord.net.urls` (one parser, httpx's, to check and to connect; userinfo, bad hosts and
  ports refused; a scheme other than http or https refused by the policy's scheme rule).
- :class:`GuardedTransport` resolves the name right before connecting (OD-P05), on every request and
  so on every redirect hop. IP literals in any ``inet_aton`` spelling are read as addresses and never
  sent to the resolver. Before resolving, the policy refuses whatever no lookup could make allowed
  (so a refused name is not even looked up); after resolving it checks EVERY address.
- The connection goes only to an address the policy returned: the request URL's host is rewritten
  to that address, the ``Host`` header is set from the checked URL (a caller cannot choose another
  one) and for https the TLS SNI and certificate check use the name (``sni_hostname``).
- Connection pools of the default inner transport are kept per TLS name, so that a connection whose
  certificate was verified for one name is never reused for another name served by the same address.
- :class:`GuardedClient` follows redirects in its own loop (never httpx's): each hop is a new request
  through the transport, so it is checked again (P-NET-11), including scheme and port; at most
  ``max_redirects`` hops. A ``Location`` that browsers or Node would read as another URL than httpx
  is refused, in words that name the host that redirected.
- Response bodies are read as a stream and refused past ``max_response_bytes``, counted both as
  received and after content decoding, which stops at the bound (:mod:`notochord.net.bodies`); the
  whole exchange, redirects included, is bounded by ``timeout``.
- No httpx, httpcore, socket, ssl or anyio exception leaves :class:`GuardedClient` or
  :func:`guarded_request`: each becomes a :class:`~notochord.errors.NetworkRequestError`.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address
from types import TracebackType

import anyio
import httpx

from notochord.charsets import text_codec
from notochord.errors import NetworkError, NetworkPermissionError, NetworkRequestError
from notochord.net.addresses import IPAddress, connect_address, is_local_name, parse_ip_literal
from notochord.net.bodies import read_bounded
from notochord.net.failures import lookup_failure, translate_error
from notochord.net.policy import NetworkPolicy
from notochord.net.urls import CheckedURL, check_redirect, check_url, shown_url

__all__ = [
    "CheckedURL",
    "GuardedClient",
    "GuardedResponse",
    "GuardedTransport",
    "RequestLimits",
    "Resolver",
    "check_url",
    "guarded_request",
    "system_resolver",
]

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_METHOD = re.compile(r"^[A-Z]{1,20}$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_LOOPBACK_V4 = IPv4Address("127.0.0.1")
_LOOPBACK_V6 = IPv6Address("::1")
# Headers the transport sets itself, or that would let a caller frame the request differently
# from what was checked.
_RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})


@dataclass(frozen=True)
class RequestLimits:
    """Bounds of one guarded exchange. ``timeout`` covers the whole exchange, redirects included."""

    max_response_bytes: int = 10 * 1024 * 1024
    timeout: float = 30.0
    connect_timeout: float = 10.0
    max_redirects: int = 10
    max_connect_attempts: int = 4


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """Resolve a name with the operating system's resolver, in a worker thread.

    ``localhost`` and ``*.localhost`` names are answered with the loopback addresses without a
    lookup (RFC 6761), so they never reach a DNS server.

    Raises:
        NetworkRequestError: the name does not resolve.
    """
    if is_local_name(host):
        return [_LOOPBACK_V4, _LOOPBACK_V6]
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise lookup_failure(host, exc) from exc
    addresses: list[IPAddress] = []
    for _family, _kind, _proto, _canonical, sockaddr in infos:
        text = str(sockaddr[0]).partition("%")[0]
        try:
            address = ip_address(text)
        except ValueError:
            continue
        if address not in addresses:
            addresses.append(address)
    return addresses


# Foreign exceptions the guarded path translates; anything else is a programming error.
_FOREIGN_ERRORS: tuple[type[BaseException], ...] = (
    httpx.HTTPError,
    httpx.InvalidURL,
    httpx.StreamError,
    httpx.CookieConflict,
    OSError,
    TimeoutError,
    UnicodeError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
)


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends a request only to an address the policy allowed.

    Args:
        policy: the decision to apply to every request.
        resolver: ``async (host, port) -> [addresses]``; defaults to :func:`system_resolver`.
        inner: the transport that really connects. It receives requests whose URL host is the
            checked address. When omitted, an ``httpx.AsyncHTTPTransport`` per TLS name is used.
        verify: TLS verification for the default inner transports (an ``SSLContext`` or True).
        max_connect_attempts: how many allowed addresses to try when connecting fails.

    Refusals raise :class:`~notochord.errors.NetworkPermissionError` and failed lookups or
    connections :class:`~notochord.errors.NetworkRequestError`; other httpx errors of the inner
    transport pass through unchanged, so the transport also serves an ``httpx.AsyncClient``
    (which must use ``trust_env=False``: an environment proxy would bypass the transport).
    :class:`GuardedClient` translates them.
    """

    def __init__(
        self,
        *,
        policy: NetworkPolicy,
        resolver: Resolver | None = None,
        inner: httpx.AsyncBaseTransport | None = None,
        verify: ssl.SSLContext | bool = True,
        max_connect_attempts: int = 4,
    ) -> None:
        self._policy = policy
        self._resolver: Resolver = resolver or system_resolver
        self._inner = inner
        self._verify = verify
        self._ssl_context: ssl.SSLContext | None = None
        self._pools: dict[str, httpx.AsyncHTTPTransport] = {}
        self._max_attempts = max(1, max_connect_attempts)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Check the request, resolve its name, check every address, send to a checked one."""
        checked = check_url(request.url)
        self._policy.precheck(scheme=checked.scheme, host=checked.host, port=checked.port)
        literal = parse_ip_literal(checked.host)
        if literal is not None:
            resolved: list[IPAddress] = [literal]
        else:
            resolved = await self._resolve(checked.host, checked.port)
        allowed = self._policy.select(scheme=checked.scheme, host=checked.host, port=checked.port, resolved=resolved)
        if not allowed:
            raise NetworkRequestError(f"could not resolve {checked.host}: no address; check the host name")
        last_error: BaseException = NetworkRequestError(f"could not connect to {checked.host}")
        for address in allowed[: self._max_attempts]:
            pinned = self._pin(request, checked, address, is_literal=literal is not None)
            try:
                return await self._inner_for(checked).handle_async_request(pinned)
            except (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError) as exc:
                last_error = exc
        raise translate_error(last_error, host=checked.host) from last_error

    async def _resolve(self, host: str, port: int) -> list[IPAddress]:
        try:
            addresses = list(await self._resolver(host, port))
        except NetworkError:
            raise
        except _FOREIGN_ERRORS as exc:
            raise lookup_failure(host, exc) from exc
        if not addresses:
            raise NetworkRequestError(f"could not resolve {host}: no address; check the host name")
        for address in addresses:
            if not isinstance(address, IPv4Address | IPv6Address):
                raise NetworkRequestError(f"could not resolve {host}: the resolver returned {address!r}")
        return addresses

    @staticmethod
    def _pin(request: httpx.Request, checked: CheckedURL, address: IPAddress, *, is_literal: bool) -> httpx.Request:
        headers = request.headers.copy()
        # The Host header always names the checked host: a caller-chosen Host could route the
        # request, through a shared front end, to a host the policy never saw.
        headers["Host"] = checked.url.netloc.decode("ascii")
        extensions = dict(request.extensions)
        if checked.scheme == "https" and not is_literal:
            extensions["sni_hostname"] = checked.host
        return httpx.Request(
            request.method,
            checked.url.copy_with(host=connect_address(address)),
            headers=headers,
            stream=request.stream,
            extensions=extensions,
        )

    def _inner_for(self, checked: CheckedURL) -> httpx.AsyncBaseTransport:
        if self._inner is not None:
            return self._inner
        key = checked.host if checked.scheme == "https" else ""
        pool = self._pools.get(key)
        if pool is None:
            if self._ssl_context is None:
                self._ssl_context = (
                    self._verify
                    if isinstance(self._verify, ssl.SSLContext)
                    else httpx.create_ssl_context(verify=self._verify)
                )
            pool = httpx.AsyncHTTPTransport(verify=self._ssl_context, retries=0)
            self._pools[key] = pool
        return pool

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()
        if self._inner is not None:
            await self._inner.aclose()


@dataclass(frozen=True)
class GuardedResponse:
    """A finished response: status, headers (lowercase names, in order), body and final URL."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    url: str

    def header(self, name: str) -> str | None:
        """The value of a header (repeated headers joined with ``, ``), or None."""
        wanted = name.lower()
        values = [value for key, value in self.headers if key == wanted]
        return ", ".join(values) if values else None

    @property
    def charset(self) -> str:
        """The declared charset when it names a text encoding, else ``utf-8``.

        A server's charset must not pick a Python codec that is no character set (``base64``,
        ``zlib``, ``rot13``, ``punycode``, ``unicode-escape``): those would fail, decompress or
        rewrite the body instead of decoding it.
        """
        content_type = self.header("content-type") or ""
        for parameter in content_type.split(";")[1:]:
            key, _, value = parameter.strip().partition("=")
            if key.strip().lower() == "charset":
                return text_codec(value.strip().strip('"')) or "utf-8"
        return "utf-8"

    def text(self) -> str:
        """The body decoded with the declared charset (UTF-8 if none); bad bytes are replaced."""
        return self.body.decode(self.charset, errors="replace")

    def json(self) -> object:
        """The body parsed as JSON.

        Raises:
            NetworkRequestError: the body is not JSON.
        """
        try:
            parsed: object = json.loads(self.text())
        except ValueError as exc:
            raise NetworkRequestError(f"the response of {self.url} is not JSON: {exc}") from exc
        except RecursionError as exc:
            # Python's JSON reader recurses once per nesting level, and a server chooses the depth.
            raise NetworkRequestError(
                f"the response of {self.url} is not JSON that can be read here: it is nested too deeply"
            ) from exc
        return parsed


class GuardedClient:
    """Make checked requests: the redirect loop, the size bound and the timeout around the transport.

    Example::

        policy = NetworkPolicy(permission=permission, user_rules=UserNetworkRules())
        async with GuardedClient(policy=policy) as client:
            response = await client.request("GET", "https://api.open-meteo.com/v1/forecast")
    """

    def __init__(
        self,
        *,
        policy: NetworkPolicy,
        resolver: Resolver | None = None,
        inner: httpx.AsyncBaseTransport | None = None,
        limits: RequestLimits | None = None,
        verify: ssl.SSLContext | bool = True,
        user_agent: str = "notochord",
    ) -> None:
        self._limits = limits or RequestLimits()
        self._transport = GuardedTransport(
            policy=policy,
            resolver=resolver,
            inner=inner,
            verify=verify,
            max_connect_attempts=self._limits.max_connect_attempts,
        )
        self._user_agent = user_agent

    async def __aenter__(self) -> GuardedClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        try:
            await self._transport.aclose()
        except _FOREIGN_ERRORS as exc:
            # no request and no host: the words of translate_error would name neither
            raise NetworkRequestError(
                "closing the client's open connections failed; the requests already made are not affected, "
                "and the connections close when the process ends"
            ) from exc

    async def get(self, url: str, *, headers: Mapping[str, str] | None = None) -> GuardedResponse:
        return await self.request("GET", url, headers=headers)

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | str | None = None,
        follow_redirects: bool = True,
    ) -> GuardedResponse:
        """Send a request, following redirects hop by hop, each hop checked by the policy.

        Raises:
            NetworkPermissionError: a hop was refused by the policy; nothing was sent to it.
            NetworkRequestError: malformed URL, timeout, connection failure, too many redirects,
                a response larger than the limit.
        """
        checked = check_url(url)
        verb = method.upper()
        if not _METHOD.match(verb):
            raise NetworkRequestError(f"{method!r} is not an HTTP method")
        try:
            base_headers = self._base_headers(headers)
            body = content.encode("utf-8") if isinstance(content, str) else content
            with anyio.fail_after(self._limits.timeout):
                return await self._exchange(verb, checked, base_headers, body, follow_redirects)
        except NetworkError:
            raise
        except _FOREIGN_ERRORS as exc:
            raise translate_error(exc, host=checked.host) from exc

    def _base_headers(self, headers: Mapping[str, str] | None) -> httpx.Headers:
        result = httpx.Headers({"User-Agent": self._user_agent, "Accept": "*/*", "Accept-Encoding": "gzip, deflate"})
        for key, value in (headers or {}).items():
            if key.lower() in _RESERVED_HEADERS:
                raise NetworkRequestError(f"the {key} header is set from the URL and body; leave it out")
            if not _HEADER_NAME.match(key) or any(
                (ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F or ord(ch) > 0xFF for ch in value
            ):
                raise NetworkRequestError(
                    f"the header {key!r} has a malformed name or a control or non-Latin-1 character"
                )
            result[key] = value
        return result

    async def _exchange(
        self,
        method: str,
        checked: CheckedURL,
        headers: httpx.Headers,
        body: bytes | None,
        follow_redirects: bool,
    ) -> GuardedResponse:
        timeouts = {
            "connect": self._limits.connect_timeout,
            "read": self._limits.timeout,
            "write": self._limits.timeout,
            "pool": self._limits.timeout,
        }
        first_host = checked.host
        redirected: tuple[str, str] | None = None  # (host, Location) of the hop that led here
        for _hop in range(self._limits.max_redirects + 1):
            request = httpx.Request(
                method, checked.url, headers=headers, content=body, extensions={"timeout": timeouts}
            )
            response = await self._send(request, redirected)
            try:
                location = _single_location(response, checked.host)
                if not follow_redirects or response.status_code not in _REDIRECT_STATUSES or not location:
                    data = await read_bounded(
                        response, host=checked.host, limit=self._limits.max_response_bytes, method=method
                    )
                    return GuardedResponse(
                        status=response.status_code,
                        headers=tuple(
                            (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in response.headers.raw
                        ),
                        body=data,
                        url=str(checked.url),
                    )
            finally:
                await response.aclose()
            next_url = check_redirect(checked, location)
            redirected = (checked.host, location)
            if (response.status_code == 303 and method != "HEAD") or (
                response.status_code in (301, 302) and method == "POST"
            ):
                method, body = "GET", None
                headers = headers.copy()
                headers.pop("Content-Type", None)
            if (next_url.scheme, next_url.host, next_url.port) != (
                checked.scheme,
                checked.host,
                checked.port,
            ):
                headers = headers.copy()
                headers.pop("Authorization", None)
                headers.pop("Cookie", None)
            checked = next_url
        raise NetworkRequestError(
            f"too many redirects (more than {self._limits.max_redirects}) starting from {first_host}"
        )

    async def _send(self, request: httpx.Request, redirected: tuple[str, str] | None) -> httpx.Response:
        try:
            return await self._transport.handle_async_request(request)
        except NetworkPermissionError as exc:
            if redirected is None:
                raise
            # The gem asked for another URL: the refusal says which server sent it here.
            origin, location = redirected
            raise NetworkPermissionError(
                f"{origin} redirected to {shown_url(location)}; {exc.message}", host=exc.host, rule=exc.rule
            ) from exc


def _single_location(response: httpx.Response, host: str) -> str | None:
    """The one place a response redirects to; several different ``Location`` headers are refused."""
    locations = response.headers.get_list("location")
    if len(set(locations)) > 1:
        raise NetworkRequestError(
            f"{host} redirected to {len(set(locations))} places at once (several Location headers); "
            "the redirect was not followed"
        )
    return locations[0] if locations else None


async def guarded_request(
    method: str,
    url: str,
    *,
    policy: NetworkPolicy,
    resolver: Resolver | None = None,
    inner: httpx.AsyncBaseTransport | None = None,
    limits: RequestLimits | None = None,
    headers: Mapping[str, str] | None = None,
    content: bytes | str | None = None,
) -> GuardedResponse:
    """One checked request with a client of its own (see :class:`GuardedClient`)."""
    async with GuardedClient(policy=policy, resolver=resolver, inner=inner, limits=limits) as client:
        return await client.request(method, url, headers=headers, content=content)
