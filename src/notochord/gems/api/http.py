"""``ctx.http``: a gem's own HTTP requests, checked by the network permission and the user's rules.

Rules (P-NET-07…22, P-GEN-01, OD-P05):

- Every request is decided by a :class:`~notochord.net.policy.NetworkPolicy` built from the gem's
  installed ``permissions.network`` (read from the install record, never from the manifest file,
  P-GEN-04) and the user's rules read afresh from the store for that very request, so a change of the
  rules applies to the next request (P-NET-12). The gem can only narrow what the user allows.
- A gem without a ``network`` section is refused every request, before the URL is even parsed
  (rule ``no-network-permission``).
- Requests go through :class:`~notochord.net.transport.GuardedClient`: the name is resolved right
  before connecting and every address checked, redirects are followed hop by hop with each hop
  checked as a new request (P-NET-11), the response size and the whole exchange's time are bounded.
  A per-request ``timeout`` may only shorten the bound, never lengthen it.
- Refusals raise :class:`~notochord.errors.NetworkPermissionError` (naming the host and the rule)
  before anything is sent; failures raise :class:`~notochord.errors.NetworkRequestError`. No httpx
  type or exception reaches the gem: responses are :class:`HttpResponse` values.
- ``fetch`` takes Python keywords or, as the JavaScript shim sends it, an options object as its
  second argument: ``fetch(url, {"method": "POST", "headers": {...}, "body": "..."})``.
"""

from __future__ import annotations

import base64
import builtins
import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import anyio.to_thread
import httpx

from notochord.errors import ConfigurationError, NetworkPermissionError, NetworkRequestError
from notochord.knowledge.arguments import shown
from notochord.net.hosts import NetworkPermission
from notochord.net.policy import DenyRule, NetworkPolicy, UserNetworkRules
from notochord.net.transport import GuardedClient, GuardedResponse, RequestLimits, Resolver

if TYPE_CHECKING:
    from notochord.gems.context import CapabilityRequest

__all__ = ["FETCH_OPTIONS", "BorrowedTransport", "HttpApi", "HttpResponse", "make_http"]

FETCH_OPTIONS: Final = ("method", "headers", "body", "timeout", "redirect")
"""The keys a ``fetch`` options object may carry."""

RulesSource = Callable[[], UserNetworkRules]

_HEADER_NUMBER_BITS = 64
"""The largest whole number a header may be given as (bits): past it, the text of the number is the
gem's to write."""


class HttpResponse:
    """A finished response: ``status``, ``ok``, ``headers`` (lowercase names), ``url`` and the body.

    ``text()``, ``json()`` and ``bytes()`` read the body, which is already fully received and
    bounded in size. ``url`` is the URL of the final hop after redirects.
    """

    __slots__ = ("_response", "headers", "status", "url")

    def __init__(self, response: GuardedResponse) -> None:
        self._response = response
        self.status: int = response.status
        self.url: str = response.url
        joined: dict[str, str] = {}
        for name, value in response.headers:
            joined[name] = f"{joined[name]}, {value}" if name in joined else value
        self.headers: Mapping[str, str] = MappingProxyType(joined)

    @property
    def ok(self) -> bool:
        """True for a 2xx status, as in the JavaScript ``Response``."""
        return 200 <= self.status <= 299

    def header(self, name: str) -> str | None:
        """The value of a header (case-insensitive; repeated headers joined with ``, ``)."""
        return self.headers.get(name.lower())

    def text(self) -> str:
        """The body decoded with the declared charset (UTF-8 if none); bad bytes are replaced."""
        return self._response.text()

    def json(self) -> object:
        """The body parsed as JSON.

        Raises:
            NetworkRequestError: the body is not JSON.
        """
        return self._response.json()

    def bytes(self) -> builtins.bytes:
        """The raw body."""
        return self._response.body

    def to_wire(self) -> dict[str, Any]:
        """The JSON form sent to a JavaScript gem: status, ok, url, headers and the body in base64."""
        return {
            "status": self.status,
            "ok": self.ok,
            "url": self.url,
            "headers": dict(self.headers),
            "bodyBase64": base64.b64encode(self._response.body).decode("ascii"),
        }

    def __repr__(self) -> str:
        return f"<HttpResponse {self.status} {self.url} ({len(self._response.body)} bytes)>"


class BorrowedTransport(httpx.AsyncBaseTransport):
    """A shared inner transport that one request's client may use but must not close."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        return None


@dataclasses.dataclass(frozen=True)
class _Call:
    method: str
    headers: dict[str, str]
    body: builtins.bytes | None
    timeout: float | None


def _host_of(url: object) -> str | None:
    try:
        return urlsplit(str(url)).hostname
    except ValueError:
        return None


def _headers(raw: object) -> dict[str, str]:
    if raw is None:
        return {}
    pairs: Iterable[object]
    if isinstance(raw, Mapping):
        pairs = raw.items()
    elif isinstance(raw, list | tuple):
        pairs = raw
    else:
        raise NetworkRequestError("fetch headers must be an object of name: value (or a list of pairs)")
    result: dict[str, str] = {}
    for pair in pairs:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise NetworkRequestError(f"fetch header {shown(pair)} is not a [name, value] pair")
        name, value = pair
        if not isinstance(name, str):
            raise NetworkRequestError(f"fetch header name {shown(name)} must be a string")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise NetworkRequestError(f"fetch header {shown(name)} must have a string value, not {shown(value)}")
        result[name] = value if isinstance(value, str) else _number_text(name, value)
    return result


def _number_text(name: str, value: int | float) -> str:
    """A header given as a number, as the text sent; a number no header can spell is refused."""
    if isinstance(value, float) and not math.isfinite(value):
        raise NetworkRequestError(
            f"fetch header {shown(name)} must have a string value or a finite number, not {value}"
        )
    if isinstance(value, int) and value.bit_length() > _HEADER_NUMBER_BITS:
        raise NetworkRequestError(
            f"fetch header {shown(name)} has a number of more than {_HEADER_NUMBER_BITS} bits; send it as a string"
        )
    return str(value)


def _body(raw: object) -> builtins.bytes | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        try:
            return raw.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise NetworkRequestError(
                f"fetch body holds a lone surrogate (U+{ord(raw[exc.start]):04X}, half of a UTF-16 pair) at "
                f"character {exc.start}, which UTF-8 cannot send; remove it, or send the body as bytes"
            ) from None
    if isinstance(raw, builtins.bytes | bytearray | memoryview):
        return builtins.bytes(raw)
    raise NetworkRequestError(
        f"fetch body must be a string or bytes, not {type(raw).__name__}; "
        "send JSON as json.dumps(value) with a Content-Type: application/json header"
    )


def _timeout(raw: object) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not raw > 0:
        raise NetworkRequestError(f"fetch timeout must be a positive number of seconds, not {shown(raw)}")
    try:
        return float(raw)
    except OverflowError:  # a whole number past any float: longer than the bound, which then holds
        return math.inf


def _call(options: object, given: Mapping[str, object]) -> _Call:
    merged: dict[str, object] = {}
    if options is not None:
        if not isinstance(options, Mapping):
            raise NetworkRequestError("fetch options must be an object with method, headers and body")
        unknown = [key for key in options if key not in FETCH_OPTIONS]
        if unknown:
            raise NetworkRequestError(
                f"fetch options {', '.join(map(shown, unknown))} are not supported "
                f"(supported: {', '.join(FETCH_OPTIONS)})"
            )
        merged.update(options)
    for key, value in given.items():
        if value is None:
            continue
        if merged.get(key) is not None:
            raise NetworkRequestError(f"fetch {key} is given twice, in the options and as a keyword")
        merged[key] = value
    redirect = merged.get("redirect")
    if redirect not in (None, "follow"):
        # Handing a redirect response to the gem would let it follow the hop outside the policy.
        raise NetworkRequestError(f'fetch redirect {shown(redirect)} is not supported; redirects are always "follow"')
    method = merged.get("method") or "GET"
    if not isinstance(method, str):
        raise NetworkRequestError(f"fetch method must be a string, not {shown(method)}")
    return _Call(
        method=method.upper(),
        headers=_headers(merged.get("headers")),
        body=_body(merged.get("body")),
        timeout=_timeout(merged.get("timeout")),
    )


class HttpApi:
    """``ctx.http`` of one run of one gem.

    Args:
        gem_id: the calling gem, named in refusals.
        permission: the gem's installed ``permissions.network``, or None when it has none.
        rules: returns the user's rules as they are now; called once per request.
        resolver: the name resolver (the system's by default).
        transport: the inner transport that really connects to checked addresses (default: real
            sockets). It is shared by every request of this facade and never closed by it.
        limits: the size and time bounds of each request.
    """

    def __init__(
        self,
        *,
        gem_id: str,
        permission: NetworkPermission | None,
        rules: RulesSource,
        resolver: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        limits: RequestLimits | None = None,
    ) -> None:
        self._gem_id = gem_id
        self._permission = permission
        self._rules = rules
        self._resolver = resolver
        self._transport = transport
        self._limits = limits or RequestLimits()

    @property
    def limits(self) -> RequestLimits:
        """The bounds every request of this facade runs under."""
        return self._limits

    async def fetch(
        self,
        url: str,
        options: Mapping[str, object] | None = None,
        /,
        *,
        method: str | None = None,
        headers: Mapping[str, str] | None = None,
        body: str | builtins.bytes | None = None,
        timeout: float | None = None,
    ) -> HttpResponse:
        """Send one request and return the final response (redirects followed and checked).

        Args:
            url: an ``http`` or ``https`` URL whose host the gem's manifest lists (or, for a gem
                with ``allowLocalNetwork``, that the user listed as a local target).
            options: the JavaScript form, ``{"method", "headers", "body", "timeout"}``.
            method: ``GET`` by default.
            headers: extra request headers; ``Host``, ``Content-Length``, ``Transfer-Encoding`` and
                ``Connection`` are set by notochord and may not be given.
            body: the request body, text (sent as UTF-8) or bytes.
            timeout: seconds for the whole exchange; at most the facade's bound.

        Raises:
            NetworkPermissionError: refused by the gem's permission or the user's rules; names the
                host and the rule. Nothing was sent to the refused host.
            NetworkRequestError: a malformed URL or option, a timeout, a connection failure, too
                many redirects, a response larger than the bound.
        """
        if self._permission is None:
            raise NetworkPermissionError(
                f"refused {url}: gem {self._gem_id} has no network permission (rule "
                f"{DenyRule.NO_NETWORK_PERMISSION}); declare permissions.network in its manifest",
                host=_host_of(url),
                rule=DenyRule.NO_NETWORK_PERMISSION,
            )
        if not isinstance(url, str):
            raise NetworkRequestError(f"fetch needs a URL string, not {type(url).__name__}")
        call = _call(options, {"method": method, "headers": headers, "body": body, "timeout": timeout})
        limits = self._limits
        if call.timeout is not None and call.timeout < limits.timeout:
            limits = dataclasses.replace(
                limits, timeout=call.timeout, connect_timeout=min(limits.connect_timeout, call.timeout)
            )
        user_rules = await anyio.to_thread.run_sync(self._rules)
        policy = NetworkPolicy(permission=self._permission, user_rules=user_rules)
        inner = BorrowedTransport(self._transport) if self._transport is not None else None
        async with GuardedClient(policy=policy, resolver=self._resolver, inner=inner, limits=limits) as client:
            response = await client.request(call.method, url, headers=call.headers, content=call.body)
        return HttpResponse(response)

    def __repr__(self) -> str:
        return f"<ctx.http of {self._gem_id}>"


def make_http(request: CapabilityRequest) -> HttpApi:
    """The capability factory of ``ctx.http`` (register as ``space.gems.factories["http"]``).

    Uses the space services ``network_rules`` (a
    :class:`~notochord.net.user_rules.NetworkRulesStore`, required) and, when set, ``resolver``,
    ``http_transport`` and ``http_limits``.

    Raises:
        ConfigurationError: the network rules store is not registered.
    """
    services = request.services
    store = services.network_rules
    if store is None:
        raise ConfigurationError(
            "ctx.http needs the user's network rules: set space.gems.services.network_rules "
            "to NetworkRulesStore(space.core)"
        )
    limits, transport, resolver = services.http_limits, services.http_transport, services.resolver
    return HttpApi(
        gem_id=request.gem_id,
        permission=request.manifest.network,
        rules=store.get,
        resolver=resolver,
        transport=transport,
        limits=limits,
    )
