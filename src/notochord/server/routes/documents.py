"""Documents of a knowledge base: ``/api/knowledge/kb/{kb_id}/documents`` (OD-B07 as overridden).

Adding a document reads the body only after the caller's ``edit`` on the knowledge base is
established (401 → 404 → 403 first), and reads it as a stream: a declared ``Content-Length`` over the
limit is refused before anything is read, and a body that grows past it while streaming is refused at
that point (413). A JSON body is ``{title?, content}``, ``{title?, url}`` or ``{title, data}``; a
``multipart/form-data`` body carries one ``file`` and an optional ``title``. Any other body type is 415.
``…/documents/batch`` takes one to 100 ``file`` fields in one multipart body and stores them in one
transaction, all or none; the upload limit covers the whole body. A body sent with a
``Content-Encoding`` (other than ``identity``) is 415: the service decodes no compressed body. A
multipart body is read by :func:`notochord.server.forms.read_form`, so the parser's refusals reach the
client in the service's words.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from notochord.kbservice.documents import (
    UPLOAD_EXTENSIONS,
    KbDocument,
    KbPayloadTooLargeError,
    KbUnsupportedMediaTypeError,
    Upload,
)
from notochord.kbservice.errors import KbValidationError
from notochord.kbservice.validation import check_content_coding, check_json_charset, is_json_media
from notochord.server.deps import Caller, CurrentActor, Service, limited, permission, read_limited
from notochord.server.errors import documented
from notochord.server.forms import read_form
from notochord.server.routes.documents_json import document_list_json
from notochord.server.routes.kb import Limit, Offset, paging_of
from notochord.server.routes.models import (
    DocumentBatchEnvelope,
    DocumentDetailEnvelope,
    DocumentEnvelope,
    DocumentList,
    document_detail_out,
    document_out,
)
from notochord.server.routes.passages_json import json_response

__all__ = ["ADD_DOCUMENTS_BODY", "ADD_DOCUMENT_BODY", "router"]

router = APIRouter(tags=["documents"])

_MAX_FORM_FIELDS = 8
_MAX_BATCH_FILES = 100

ADD_DOCUMENT_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "description": "Exactly one of content, url or data.",
                "properties": {
                    "title": {"type": "string", "description": "Title; required with data."},
                    "content": {"type": "string", "description": "Markdown or plain text."},
                    "url": {"type": "string", "description": "An http(s) URL, fetched under the org's rules."},
                    "data": {"type": "object", "description": "A structured record, kept as meta."},
                },
            }
        },
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "One of " + ", ".join(UPLOAD_EXTENSIONS),
                    },
                    "title": {"type": "string"},
                },
                "required": ["file"],
            }
        },
    },
}


ADD_DOCUMENTS_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "properties": {
                    "file": {
                        "type": "array",
                        "items": {"type": "string", "format": "binary"},
                        "description": f"1 to {_MAX_BATCH_FILES} files, each one of " + ", ".join(UPLOAD_EXTENSIONS),
                    },
                },
                "required": ["file"],
            }
        },
    },
}


def _too_large(limit: int) -> KbPayloadTooLargeError:
    return KbPayloadTooLargeError(f"the request body is over the upload limit of {limit} bytes")


async def _read_upload(request: Request, limit: int) -> Upload:
    several = " (several files go to POST …/documents/batch)"
    async with read_form(request, max_files=1, max_fields=_MAX_FORM_FIELDS, more_files=several) as form:
        file = form.get("file")
        if not isinstance(file, UploadFile):
            raise KbValidationError("a multipart upload needs one file in the field named file")
        title = form.get("title")
        if title is not None and not isinstance(title, str):
            raise KbValidationError("title must be a text field")
        data = await file.read(limit + 1)
        if len(data) > limit:
            raise _too_large(limit)
        return Upload(data=data, filename=file.filename, content_type=file.content_type, title=title)


async def _read_uploads(request: Request, limit: int) -> list[Upload]:
    more = "; split a larger batch into several requests"
    async with read_form(request, max_files=_MAX_BATCH_FILES, max_fields=_MAX_FORM_FIELDS, more_files=more) as form:
        files = form.getlist("file")
        if not files or not all(isinstance(f, UploadFile) for f in files):
            raise KbValidationError(f"a batch upload needs 1 to {_MAX_BATCH_FILES} files in fields named file")
        uploads: list[Upload] = []
        total = 0
        for file in files:
            assert isinstance(file, UploadFile)
            data = await file.read(limit + 1 - total)
            total += len(data)
            if total > limit:
                raise _too_large(limit)
            uploads.append(Upload(data=data, filename=file.filename, content_type=file.content_type))
        return uploads


@router.post(
    "/kb/{kb_id}/documents/batch",
    status_code=201,
    response_model=DocumentBatchEnvelope,
    responses=documented(400, 401, 403, 404, 413, 415, 429, 507),
    openapi_extra={"x-permission": "kb:edit", "requestBody": ADD_DOCUMENTS_BODY},
    summary="Add Documents",
)
async def add_documents(service: Service, actor: CurrentActor, kb_id: str, request: Request) -> DocumentBatchEnvelope:
    """Upload several files at once; they are added together or, if one is refused, not at all."""
    documents = service.documents
    await run_in_threadpool(lambda: documents.writable(actor=actor, kb_id=kb_id))
    limit = documents.limits.max_upload_bytes
    check_content_coding(request.headers.get("content-encoding"))
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "multipart/form-data":
        raise KbUnsupportedMediaTypeError(
            f"send multipart/form-data with the files in fields named file, not {media or 'no content type'}"
        )
    uploads = await _read_uploads(limited(request, limit), limit)
    added = await run_in_threadpool(lambda: documents.add_uploads(actor=actor, kb_id=kb_id, uploads=uploads))
    return DocumentBatchEnvelope(documents=[document_out(d) for d in added])


@router.post(
    "/kb/{kb_id}/documents",
    status_code=201,
    response_model=DocumentEnvelope,
    responses=documented(400, 401, 403, 404, 413, 415, 429, 502, 507),
    openapi_extra={"x-permission": "kb:edit", "requestBody": ADD_DOCUMENT_BODY},
    summary="Add Document",
)
async def add_document(service: Service, actor: CurrentActor, kb_id: str, request: Request) -> DocumentEnvelope:
    """Add a Markdown or text document, an uploaded file, a URL's content or a structured record."""
    documents = service.documents
    await run_in_threadpool(lambda: documents.writable(actor=actor, kb_id=kb_id))
    limit = documents.limits.max_upload_bytes
    check_content_coding(request.headers.get("content-encoding"))
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    bounded = limited(request, limit)
    document: KbDocument
    if media == "multipart/form-data":
        upload = await _read_upload(bounded, limit)
        document = await run_in_threadpool(lambda: documents.add_upload(actor=actor, kb_id=kb_id, upload=upload))
    elif is_json_media(media):
        check_json_charset(request.headers.get("content-type"))
        raw = await read_limited(bounded, limit)
        document = await run_in_threadpool(lambda: documents.add_json(actor=actor, kb_id=kb_id, raw=raw))
    else:
        raise KbUnsupportedMediaTypeError(
            f"send application/json or multipart/form-data, not {media}; files go in a multipart upload"
        )
    return DocumentEnvelope(document=document_out(document))


@router.get(
    "/kb/{kb_id}/documents",
    response_model=DocumentList,
    responses=documented(400, 401, 403, 404),
    openapi_extra=permission("kb:view"),
    summary="List Documents",
)
def list_documents(call: Caller, kb_id: str, request: Request, limit: Limit = None, offset: Offset = None) -> Response:
    """The knowledge base's documents, newest first."""
    paging = paging_of(request, limit, offset)
    found, total = call.service.documents.list(actor=call.actor, kb_id=kb_id, paging=paging)
    # the bytes DocumentList writes, without a model per document validated once more
    return json_response(document_list_json(found, total=total, limit=paging.limit, offset=paging.offset))


@router.get(
    "/kb/{kb_id}/documents/{document_id}",
    response_model=DocumentDetailEnvelope,
    responses=documented(401, 403, 404),
    openapi_extra=permission("kb:view"),
    summary="Get Document",
)
def get_document(service: Service, actor: CurrentActor, kb_id: str, document_id: str) -> DocumentDetailEnvelope:
    """One document with its text (and its record, for structured data)."""
    document = service.documents.get(actor=actor, kb_id=kb_id, document_id=document_id)
    return DocumentDetailEnvelope(document=document_detail_out(document))


@router.delete(
    "/kb/{kb_id}/documents/{document_id}",
    status_code=204,
    response_class=Response,
    responses=documented(401, 403, 404, 507),
    openapi_extra=permission("kb:edit"),
    summary="Delete Document",
)
def delete_document(service: Service, actor: CurrentActor, kb_id: str, document_id: str) -> Response:
    """Delete the document with its chunks and vectors; irreversible."""
    service.documents.delete(actor=actor, kb_id=kb_id, document_id=document_id)
    return Response(status_code=204)
