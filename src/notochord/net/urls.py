"""The syntax checks of a request URL and of a redirect's ``Location``, and how a URL is shown in words.

Rules:

- One URL parser, httpx's, is used both to check a URL and to connect to it. Before parsing, a URL
  with a backslash, whitespace, a control character, NUL or a character that is not valid Unicode is
  refused; after parsing, a URL without a scheme, with userinfo (``user@host``), an empty or
  malformed host, or a port outside 1–65535 is refused (:class:`~notochord.errors.NetworkRequestError`).
  A scheme other than http or https is refused by the scheme rule
  (:class:`~notochord.errors.NetworkPermissionError`).
- A ``Location`` that browsers or Node would read as another URL than httpx (a backslash, whitespace
  or a control character anywhere, ``///host``, ``http:host``) is refused before it is joined.
  Every refusal of a ``Location`` says which host redirected there: the gem did not write that URL.
- A URL httpx cannot parse is refused in the project's words, naming the part that is wrong (its
  port, its host, an IPv6 address left open, its length), never in httpx's; httpx's exception is
  kept as the cause, for the log.
- A URL shown in an error never carries what was written before ``@`` in its authority (a password,
  or a token used as a user name), and a long URL is cut to its start and its length.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import httpx
from httpx._urlparse import MAX_URL_LENGTH

from notochord.errors import NetworkPermissionError, NetworkRequestError
from notochord.net.addresses import parse_ip_literal
from notochord.net.hosts import default_port
from notochord.net.policy import ALLOWED_SCHEMES, DenyRule

__all__ = ["CheckedURL", "check_redirect", "check_url", "shown_url"]

_NAME = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*\.?$")
_SCHEME_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# Slashes are optional: "http:user:pw@host" is refused too, and its words must not show "pw" either.
_AUTHORITY = re.compile(r"^(?P<head>(?:[A-Za-z][A-Za-z0-9+.-]*:)?/*)(?P<authority>[^/?#\\]*)")
_SHOWN_CHARACTERS = 100
_SCHEME_ONLY = "only http and https URLs may be requested (rule scheme)"


@dataclass(frozen=True)
class CheckedURL:
    """A URL that passed the syntax checks: parsed once, with its effective port."""

    url: httpx.URL
    scheme: str
    host: str
    port: int


class _MalformedError(Exception):
    """Why a URL cannot be requested, and what to do about it (None when only the sender can fix it)."""

    def __init__(self, problem: str, advice: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.advice = advice


class _OtherSchemeError(Exception):
    def __init__(self, host: str | None) -> None:
        super().__init__(host)
        self.host = host


def shown_url(text: str) -> str:
    """``text`` quoted for an error message: userinfo replaced by ``***``, a long URL cut short.

    Examples:
        >>> shown_url("https://user:pw@api.example.com/x")
        "'https://***@api.example.com/x'"
    """
    match = _AUTHORITY.match(text)
    if match is not None and "@" in match["authority"]:
        host = match["authority"].rsplit("@", 1)[1]
        text = f"{match['head']}***@{host}{text[match.end() :]}"
    if len(text) <= 2 * _SHOWN_CHARACTERS:
        return repr(text)
    return f"{text[:_SHOWN_CHARACTERS]!r}… ({len(text)} characters)"


def _quoted_part(said: str, *, strip: str = "") -> str | None:
    """The part of the URL httpx quotes at the end of its words (``Invalid port: ':1'``), without
    the characters ``strip`` at its ends, shown as :func:`shown_url` shows a URL; ``None`` when its
    words quote nothing."""
    _, _, quoted = said.partition(": ")
    try:
        part = ast.literal_eval(quoted)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return shown_url(part.strip(strip)) if isinstance(part, str) else None


def _unclosed_bracket(text: str) -> bool:
    """Whether the authority of ``text`` opens an IPv6 address with ``[`` and never closes it, which
    httpx reports as a port after the address's last colon."""
    match = _AUTHORITY.match(text)
    if match is None or "//" not in match["head"]:
        return False
    authority = match["authority"].rsplit("@", 1)[-1]
    return "[" in authority and "]" not in authority[authority.index("[") :]


def _unreadable(exc: httpx.InvalidURL, text: str) -> str:
    """What is wrong with ``text``, in the project's words, for httpx's refusal ``exc`` of it.

    httpx's exception carries only its own sentence (no field or value of its own), so its words
    are read here once; a sentence not known here gets the general words rather than httpx's.
    """
    said = str(exc)
    unread = "it cannot be read as a URL"
    if _unclosed_bracket(text):
        return f"{unread}: an IPv6 address in its host is not closed with ']' (write it as http://[::1]:8080/)"
    part = _quoted_part(said)
    if said == "URL too long":
        return f"{unread}: it is longer than {MAX_URL_LENGTH} characters"
    if said.startswith("Invalid port: ") and part is not None:
        return f"{unread}: its port {part} is not a number from 1 to 65535"
    if said.startswith("Invalid IPv4 address: ") and part is not None:
        return f"{part} is not a valid IPv4 address"
    if said.startswith("Invalid IPv6 address: ") and part is not None:
        # named without its brackets, as the address checks after parsing name it
        return f"{_quoted_part(said, strip='[]')} is not a valid IPv6 address"
    if said.startswith("Invalid IDNA hostname: ") and part is not None:
        return f"{part} is not a valid internationalized host name"
    if said.startswith("Invalid non-printable ASCII character"):
        return "whitespace and control characters are not allowed; percent-encode them"
    if said.startswith(("For absolute URLs, path must", "Relative URLs cannot have a path")):
        return f"{unread}: its path must begin with '/'"
    return unread


def _ambiguous_location(location: str) -> str | None:
    """Why a redirect ``Location`` would be read differently by browsers or Node than by httpx.

    WHATWG parsers turn backslashes into slashes, drop tabs and newlines anywhere and strip leading
    and trailing spaces and control characters, read ``///host`` and ``http:host`` as naming a host,
    and so may reach another host than the one RFC 3986 (httpx) reads.
    """
    if "\\" in location:
        return "backslashes are not allowed"
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in location):
        return "whitespace and control characters are not allowed"
    scheme = _SCHEME_PREFIX.match(location)
    if scheme is not None and scheme.group().lower() not in ("http:", "https:"):
        return None  # refused as a scheme by the scheme rule, which names the rule
    rest = location[scheme.end() :] if scheme is not None else location
    if scheme is not None and not rest.startswith("//"):
        return "a scheme must be followed by //host"
    if rest.startswith("///"):
        return "more than two slashes before the host"
    return None


def _ends_in_number(host: str) -> bool:
    last = host.rstrip(".").rsplit(".", 1)[-1]
    return last.isdigit() or last.startswith("0x")


def _before_parsing(text: str) -> None:
    if "\\" in text:
        raise _MalformedError("backslashes are not allowed", "use '/'")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise _MalformedError("whitespace and control characters are not allowed", "percent-encode them")
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise _MalformedError(
            "it holds a character that is not valid Unicode (a lone surrogate)", "percent-encode the bytes meant"
        )


def _parse(url: str | httpx.URL, text: str) -> CheckedURL:
    _before_parsing(text)
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(text)
        raw_host = parsed.raw_host.decode("ascii")
        userinfo = parsed.userinfo
    except httpx.InvalidURL as exc:
        raise _MalformedError(_unreadable(exc, text)) from exc
    except (UnicodeError, ValueError, TypeError) as exc:
        raise _MalformedError("it cannot be read as a URL") from exc
    scheme = parsed.scheme
    if not scheme:
        if not text:
            raise _MalformedError("the URL is empty", "write it in full, as https://host/path")
        raise _MalformedError("it has no scheme", f"write it in full, as https://{text.lstrip('/')}")
    if scheme not in ALLOWED_SCHEMES:
        raise _OtherSchemeError(raw_host or None)
    if userinfo:
        raise _MalformedError(
            "user names and passwords in URLs (user@host) are not allowed", "send credentials in a header"
        )
    if not raw_host:
        raise _MalformedError("the host is empty")
    shown_host = shown_url(raw_host)
    if ":" in raw_host:
        if "%" in raw_host or parse_ip_literal(raw_host) is None:
            raise _MalformedError(f"{shown_host} is not a valid IPv6 address")
    elif parse_ip_literal(raw_host) is None and (not _NAME.match(raw_host) or _ends_in_number(raw_host)):
        # A name ending in a number that is not a valid address is refused rather than looked up:
        # resolvers disagree on how to read it.
        raise _MalformedError(f"{shown_host} is not a valid host name")
    port = parsed.port if parsed.port is not None else default_port(scheme)
    if port is None or not 1 <= port <= 65535:
        raise _MalformedError("the port must be a number from 1 to 65535")
    return CheckedURL(url=parsed, scheme=scheme, host=raw_host, port=port)


def check_url(url: str | httpx.URL) -> CheckedURL:
    """Parse and check a request URL with the single parser used to connect.

    Raises:
        NetworkRequestError: malformed URL, no scheme, userinfo, empty or malformed host, bad port.
        NetworkPermissionError: a scheme other than http or https (rule ``scheme``).
    """
    text = str(url)
    try:
        return _parse(url, text)
    except _MalformedError as exc:
        advice = f"; {exc.advice}" if exc.advice else ""
        raise NetworkRequestError(f"malformed URL {shown_url(text)}: {exc.problem}{advice}") from exc.__cause__
    except _OtherSchemeError as exc:
        raise NetworkPermissionError(
            f"refused {shown_url(text)}: {_SCHEME_ONLY}", host=exc.host, rule=DenyRule.SCHEME
        ) from None


def check_redirect(current: CheckedURL, location: str) -> CheckedURL:
    """Check the ``Location`` a response of ``current`` redirects to, and return the joined URL.

    The raw ``Location`` is checked before joining, so that a form that browsers and Node read as
    another host than httpx does is refused rather than normalized into a different host.

    Raises:
        NetworkRequestError: the Location is malformed or ambiguous; names the redirecting host.
        NetworkPermissionError: a scheme other than http or https (rule ``scheme``).
    """
    refused = f"{current.host} redirected to a malformed URL {shown_url(location)}"
    problem = _ambiguous_location(location)
    if problem is not None:
        raise NetworkRequestError(f"{refused}: {problem}; the redirect was not followed")
    try:
        joined = current.url.join(location)
    except httpx.InvalidURL as exc:
        raise NetworkRequestError(f"{refused}: {_unreadable(exc, location)}; the redirect was not followed") from exc
    except (UnicodeError, ValueError) as exc:
        raise NetworkRequestError(f"{refused}: it cannot be read as a URL; the redirect was not followed") from exc
    try:
        return _parse(joined, str(joined))
    except _MalformedError as exc:
        raise NetworkRequestError(f"{refused}: {exc.problem}; the redirect was not followed") from exc.__cause__
    except _OtherSchemeError as exc:
        raise NetworkPermissionError(
            f"{current.host} redirected to {shown_url(location)}, refused: {_SCHEME_ONLY}",
            host=exc.host,
            rule=DenyRule.SCHEME,
        ) from None
