"""The exceptions of the knowledge-base service, a subtree of :class:`notochord.errors.NotochordError`.

::

    NotochordError
    └── KbServiceError                     E_KB
        ├── KbAuthenticationError   E_KB_UNAUTHENTICATED  no, malformed, expired or refused credentials
        ├── KbForbiddenError        E_KB_FORBIDDEN        may see the resource, may not do this
        ├── KbNotFoundError         E_KB_NOT_FOUND        missing, deleted, out of reach, malformed id
        ├── KbConflictError         E_KB_CONFLICT         a KB and an agent of different organizations
        ├── KbUpstreamError         E_KB_UPSTREAM         a URL to ingest could not be fetched
        └── KbValidationError       E_KB_VALIDATION       a malformed request body or argument
            ├── KbPayloadTooLargeError      E_KB_TOO_LARGE          over the size limit
            └── KbUnsupportedMediaTypeError E_KB_UNSUPPORTED_MEDIA  a type the service does not ingest

The domain never knows HTTP: ``server/errors.py`` is the one table that maps these classes to status
codes and the ``{ "error", "message" }`` body. A :class:`KbNotFoundError` carries no detail on purpose:
every not-found case must read the same to the caller (KB-LNK-09).
"""

from __future__ import annotations

from notochord.errors import NotochordError

__all__ = [
    "KbAuthenticationError",
    "KbConflictError",
    "KbForbiddenError",
    "KbNotFoundError",
    "KbPayloadTooLargeError",
    "KbServiceError",
    "KbUnsupportedMediaTypeError",
    "KbUpstreamError",
    "KbValidationError",
]


class KbServiceError(NotochordError):
    """Base of every error the knowledge-base service raises on purpose."""

    code = "E_KB"


class KbAuthenticationError(KbServiceError):
    """The request carries no usable identity: no token, a malformed, expired or wrongly signed token,
    a refused algorithm, or gateway headers from an untrusted peer.

    ``invalid_token`` is true when a bearer token was sent and refused, so that the HTTP edge can
    say ``error="invalid_token"`` in its ``WWW-Authenticate`` challenge (RFC 6750 §3.1); without a
    token the challenge carries no error code.
    """

    code = "E_KB_UNAUTHENTICATED"

    def __init__(self, message: str, *, invalid_token: bool = False) -> None:
        super().__init__(message)
        self.invalid_token = invalid_token


class KbForbiddenError(KbServiceError):
    """The caller can see the resource (or its organization) but lacks the role or grant for the act.

    The message names what is missing, e.g. ``Requires member role or higher``.
    """

    code = "E_KB_FORBIDDEN"


class KbNotFoundError(KbServiceError):
    """The resource does not exist, was deleted, belongs to an organization the caller cannot reach,
    or the id is malformed. All of these read the same on purpose (OD-B13, OD-B23)."""

    code = "E_KB_NOT_FOUND"

    def __init__(self, what: str = "resource") -> None:
        super().__init__(f"not found: no {what}")
        self.what = what


class KbConflictError(KbServiceError):
    """The request contradicts the state of two resources that both exist, such as linking a knowledge
    base to an agent of another organization (KB-LNK-10)."""

    code = "E_KB_CONFLICT"


class KbValidationError(KbServiceError):
    """A request body or argument is malformed (OD-B12, OD-B22); nothing was changed."""

    code = "E_KB_VALIDATION"


class KbPayloadTooLargeError(KbValidationError):
    """An upload, a document's text or a structured record exceeds the service's limit (413)."""

    code = "E_KB_TOO_LARGE"


class KbUnsupportedMediaTypeError(KbValidationError):
    """A request body or uploaded file of a type the service does not ingest (415).

    ``accept_encoding`` is set when the body's content coding was the problem: the codings the
    service takes, for the HTTP edge's ``Accept-Encoding`` header (RFC 9110 §12.5.3).
    """

    code = "E_KB_UNSUPPORTED_MEDIA"

    def __init__(self, message: str, *, accept_encoding: str | None = None) -> None:
        super().__init__(message)
        self.accept_encoding = accept_encoding


class KbUpstreamError(KbServiceError):
    """A URL to ingest could not be fetched: no connection, a timeout, an error status (502)."""

    code = "E_KB_UPSTREAM"
