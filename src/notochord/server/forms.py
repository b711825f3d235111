"""Reading a ``multipart/form-data`` upload, with the parser's refusals told in the service's words.

Starlette's multipart parser refuses a body with its own sentence ("Missing boundary in multipart.",
"Too many files. Maximum number of files is 1.") wrapped in an ``HTTPException``. None of that reaches a
client: :func:`read_form` maps each refusal to a :class:`KbValidationError` (400) or, for a form field
over the size limit, a :class:`KbPayloadTooLargeError` (413), saying what is wrong and how to send the
upload instead.

Starlette's refusals carry no code, only the sentence, so they are told apart by its opening words; a
sentence this module does not know (a new Starlette version) still becomes the service's own "malformed"
message, never Starlette's. A test sends each kind of malformed body, so a changed wording shows there.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request

from notochord.kbservice.errors import KbPayloadTooLargeError, KbValidationError

__all__ = ["MAX_FIELD_BYTES", "read_form"]

MAX_FIELD_BYTES = 1024 * 1024
"""The largest form field that is not a file (a title); files have the upload limit instead."""

_BUILD_IT = "let your HTTP client build the multipart body (for example curl -F file=@notes.pdf)"


def _refusal(sentence: str, *, max_files: int, max_fields: int, more_files: str) -> KbValidationError:
    if sentence.startswith("Missing boundary"):
        return KbValidationError(
            f"the Content-Type multipart/form-data has no boundary parameter; {_BUILD_IT} "
            "instead of setting the Content-Type by hand"
        )
    if sentence.startswith("Too many files"):
        files = "1 file" if max_files == 1 else f"{max_files} files"
        return KbValidationError(
            f"the upload holds too many files; send at most {files} in fields named file{more_files}"
        )
    if sentence.startswith("Too many fields"):
        return KbValidationError(
            f"the upload holds too many form fields; send at most {max_fields} form fields "
            "(only file and title are read)"
        )
    if sentence.startswith(("Part exceeded maximum size", "Field exceeded maximum size")):
        return KbPayloadTooLargeError(
            f"a form field that is not a file is over {MAX_FIELD_BYTES // (1024 * 1024)} MiB; "
            "send long text as a file in the field named file"
        )
    if "Content-Disposition" in sentence:
        return KbValidationError(
            "a part of the multipart body needs a name; give every part a Content-Disposition header such as "
            'form-data; name="file"; filename="notes.pdf", or ' + _BUILD_IT
        )
    return KbValidationError(
        "the multipart/form-data body is malformed: its parts do not follow the boundary its Content-Type "
        f"names; {_BUILD_IT}"
    )


@contextlib.asynccontextmanager
async def read_form(
    request: Request, *, max_files: int, max_fields: int, more_files: str = ""
) -> AsyncIterator[FormData]:
    """The parsed form of ``request``, its uploaded files closed on exit.

    Args:
        request: a request whose body is ``multipart/form-data`` (already bounded by the upload limit).
        max_files: the most files the route takes.
        max_fields: the most fields that are not files.
        more_files: advice appended when there are too many files, such as where to send several.

    Raises:
        KbValidationError: a body the parser refuses (400), named in the service's words.
        KbPayloadTooLargeError: a field that is not a file is over :data:`MAX_FIELD_BYTES` (413).
    """
    try:
        form = await request.form(max_files=max_files, max_fields=max_fields, max_part_size=MAX_FIELD_BYTES)
    except MultiPartException as exc:
        raise _refusal(exc.message, max_files=max_files, max_fields=max_fields, more_files=more_files) from exc
    except StarletteHTTPException as exc:
        # Starlette wraps its parser's refusal in a 400 whose detail is the parser's sentence
        sentence = exc.detail if isinstance(exc.detail, str) else ""
        raise _refusal(sentence, max_files=max_files, max_fields=max_fields, more_files=more_files) from exc
    try:
        yield form
    finally:
        await form.close()
