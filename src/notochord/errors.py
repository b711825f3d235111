"""The notochord exception tree.

Every error raised through the public API is a :class:`NotochordError`. Foreign exceptions
(``sqlite3``, ``sqlalchemy``, ``httpx``, ``cryptography``) are translated at the layer that meets
them (``raise ... from exc``) and never escape.

::

    NotochordError                         code
    ├── ConfigurationError                 E_CONFIG
    ├── ClosedError                        E_CLOSED
    ├── StorageError                       E_STORAGE
    │   ├── StorageFullError               E_STORAGE_FULL  the disk is full; nothing was written
    │   ├── ReadOnlyStoreError             E_READ_ONLY     the data directory cannot be written
    │   ├── StoreUnreachableError          E_UNREACHABLE   the database server is down or refused the login
    │   ├── StoreLockedError               E_STORE_LOCKED  another process held the store past the wait
    │   └── StoreVersionError              E_STORE_VERSION a newer notochord wrote the space
    ├── SpaceNotFoundError                 E_NO_SPACE      no vault at PATH; names `notochord --data-dir PATH init`
    ├── BusyError                          E_BUSY          as much of this work runs as may; retry_after s
    ├── KnowledgeError                     E_KNOWLEDGE
    │   ├── KnowledgePermissionError       E_PERMISSION    "lacks knowledge permission <perm>"
    │   │   └── ServiceContentError        E_PERMISSION    a host write into a REST knowledge base
    │   ├── KnowledgeNotFoundError         E_NOT_FOUND     "not found: no entity|fact|document|…"
    │   ├── KnowledgeQuotaError            E_QUOTA         "… quota …"
    │   ├── KnowledgeValidationError       E_VALIDATION    bad arguments, "exceeds limit", nesting
    │   │   ├── DocumentTooLargeError      E_VALIDATION    a file over a size, page, text or memory limit
    │   │   └── UnsupportedDocumentError   E_VALIDATION    a kind of file whose text is not extracted
    │   └── RevertError                    E_REVERT        "superseded", "not empty"
    ├── ManifestError                      E_MANIFEST      every problem as "<json path>: <problem>"
    ├── GemError                           E_GEM           permission not requested, tool or code unusable
    │   └── GemNotFoundError               E_NOT_FOUND     no such gem, tool of a gem, or run
    ├── NetworkError                       E_NETWORK
    │   ├── NetworkPermissionError         E_NET_DENIED    names the host and the rule
    │   └── NetworkRequestError            E_NET_REQUEST   timeouts, oversized bodies, bad URLs
    └── FileError                          E_FILE
        ├── FilePermissionError            E_PERM_DENIED
        ├── FileNotFoundInWorkspaceError   E_NOT_FOUND
        └── FileExistsInWorkspaceError     E_EXISTS

Messages say what happened and what to do. Codes are stable; callers (the CLI, the REST edge, the
JSON-RPC bridge) branch on ``code`` or on the class, never on the message text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

__all__ = [
    "BusyError",
    "ClosedError",
    "ConfigurationError",
    "DocumentTooLargeError",
    "FileError",
    "FileExistsInWorkspaceError",
    "FileNotFoundInWorkspaceError",
    "FilePermissionError",
    "GemError",
    "GemNotFoundError",
    "KnowledgeError",
    "KnowledgeNotFoundError",
    "KnowledgePermissionError",
    "KnowledgeQuotaError",
    "KnowledgeValidationError",
    "ManifestError",
    "NetworkError",
    "NetworkPermissionError",
    "NetworkRequestError",
    "NotochordError",
    "ReadOnlyStoreError",
    "RevertError",
    "ServiceContentError",
    "SpaceNotFoundError",
    "StorageError",
    "StorageFullError",
    "StoreLockedError",
    "StoreUnreachableError",
    "StoreVersionError",
    "UnsupportedDocumentError",
]


class NotochordError(Exception):
    """Root of every error notochord raises on purpose."""

    code: str = "E_NOTOCHORD"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigurationError(NotochordError):
    """A setting is missing, malformed or contradicts another one.

    ``reason`` is a stable code saying which rule was broken, and ``values`` the text its words
    need, as for :class:`KnowledgeValidationError`: the console says the refusal in the reader's
    language from them, while the message stays the English sentence the CLI, REST and MCP show. A
    code is never renamed; a refusal no reader words yet carries ``other``. The codes are those of
    the user's network rules (``list`` is ``external`` or ``local``; ``entry`` is the entry as the
    message quotes it). Codes and their values (all text):

    - ``net_entry_not_text`` (``list``, ``entry``): a stored entry is not a string.
    - ``net_entry_empty`` (``list``, ``entry``): an entry is blank.
    - ``net_entry_scheme_or_path`` (``list``, ``entry``): an entry holds a scheme or a path.
    - ``net_entry_wildcard_local`` (``list``, ``entry``): a wildcard in the local list.
    - ``net_entry_malformed`` (``list``, ``entry``, ``detail``): not host, host:port or [IPv6]:port
      (``detail`` is the parser's English words).
    - ``net_entry_external_address`` (``list``, ``entry``, ``address``): an external address in the
      local list.
    - ``net_entry_local_address`` (``list``, ``entry``, ``address``): a local or internal address in
      the external list.
    - ``net_entry_bad_name`` (``list``, ``entry``): not a valid host name.
    - ``net_entry_localhost_external`` (``list``, ``entry``): a localhost name in the external list.
    - ``net_too_many`` (``list``, ``max``): a list would hold more than ``max`` entries.
    - ``net_unknown_mode`` (``mode``, ``modes``): ``mode`` (quoted) is not one of ``modes``.
    - ``net_open_no_list`` and ``net_open_no_list_hint``: open mode takes no host list.
    - ``net_no_host`` (``mode``): an addition to the allowlist or blocklist names no host.
    - ``net_not_listed`` (``list``, ``entry``, ``listed``) and ``net_not_listed_empty`` (``list``,
      ``entry``): an entry to remove is not in the list (``listed`` is what is, comma-separated).
    - ``net_rules_damaged`` (``why``): the stored rules cannot be read (``why`` in English).
    - ``other``: any other refusal, in English only.
    """

    code = "E_CONFIG"
    REASONS: Final = (
        "net_entry_not_text",
        "net_entry_empty",
        "net_entry_scheme_or_path",
        "net_entry_wildcard_local",
        "net_entry_malformed",
        "net_entry_external_address",
        "net_entry_local_address",
        "net_entry_bad_name",
        "net_entry_localhost_external",
        "net_too_many",
        "net_unknown_mode",
        "net_open_no_list",
        "net_open_no_list_hint",
        "net_no_host",
        "net_not_listed",
        "net_not_listed_empty",
        "net_rules_damaged",
        "other",
    )
    """Every code a refusal may carry, as listed above."""

    def __init__(self, message: str, *, reason: str = "other", values: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.values: dict[str, str] = dict(values or {})


class ClosedError(NotochordError):
    """An object was used after it was closed."""

    code = "E_CLOSED"


class StorageError(NotochordError):
    """The store could not complete an operation (disk full, corrupt file, locked too long)."""

    code = "E_STORAGE"


class SpaceNotFoundError(NotochordError):
    """The data directory holds no vault, or no space of the named organization, and the call may not create one.

    Reads never create a vault: a typo in a path or an organization id must not look like an empty vault.
    ``path`` is the data directory or the space file that is missing.
    """

    code = "E_NO_SPACE"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path

    @classmethod
    def no_vault(cls, data_dir: str) -> SpaceNotFoundError:
        """No vault in the folder ``data_dir`` (absolute): the refusal names the command that makes
        one there, folder included, since a bare ``notochord init`` makes the default vault instead."""
        import shlex

        return cls(
            f"no vault at {data_dir}; create it with `notochord --data-dir {shlex.quote(data_dir)} init`",
            path=data_dir,
        )


class BusyError(NotochordError):
    """As much of this kind of work is running as may run at once, and none finished in time to make
    room: nothing was done. ``retry_after`` is how many seconds from now a retry is worth it."""

    code = "E_BUSY"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StorageFullError(StorageError):
    """The disk (or the quota of the file system) is full: the write was undone, nothing is torn.

    Writing works again as soon as space is freed; nothing needs repairing.
    """

    code = "E_STORAGE_FULL"


class ReadOnlyStoreError(StorageError):
    """The data directory cannot be written: a write was refused, or the store needs an upgrade first."""

    code = "E_READ_ONLY"


class StoreUnreachableError(StorageError):
    """The database server cannot be reached (down, a wrong host or port) or refused the login (a wrong
    user or password): nothing was read or written. It works again once the server answers."""

    code = "E_UNREACHABLE"


class StoreLockedError(StorageError):
    """Another process held the store's write lock for longer than notochord waits: nothing was
    changed, and the same call succeeds once that process is done. Busy, not broken."""

    code = "E_STORE_LOCKED"


class StoreVersionError(StorageError):
    """The space's schema is one this version does not know (a newer notochord wrote it): it is left
    untouched; a newer notochord opens it."""

    code = "E_STORE_VERSION"


class KnowledgeError(NotochordError):
    """Base of the errors a caller of the Knowledge API sees."""

    code = "E_KNOWLEDGE"


class KnowledgePermissionError(KnowledgeError):
    """A single-object call needs a permission that is not switched on.

    ``permission`` is the narrowest permission string that would allow the call.
    """

    code = "E_PERMISSION"

    def __init__(self, permission: str, *, hint: str | None = None) -> None:
        detail = hint or "request it in the manifest; the user must switch it on"
        super().__init__(f"lacks knowledge permission {permission} ({detail})")
        self.permission = permission


class ServiceContentError(KnowledgePermissionError):
    """A write through the host API would touch a knowledge base of the REST service.

    Those documents are the service's own (it keeps their public ids and metadata beside them, and
    deletes them for good); only the service writes them, through ``/api/knowledge``. ``kb`` is the
    knowledge base's id when known; ``reason`` (``service_content``, else ``other``) and ``values``
    (``kb``) let the console say the refusal in the reader's language, as for a
    :class:`KnowledgeValidationError`.
    """

    def __init__(self, message: str, *, kb: str | None = None) -> None:
        KnowledgeError.__init__(self, message)
        self.permission = "knowledge base of the REST service"
        self.kb = kb
        self.reason = "other" if kb is None else "service_content"
        self.values: dict[str, str] = {} if kb is None else {"kb": kb}


class KnowledgeNotFoundError(KnowledgeError):
    """The object does not exist, was deleted, or the ref is foreign, forged or malformed.

    All of these read the same on purpose: a caller must not learn whether an object it cannot
    address exists.
    """

    code = "E_NOT_FOUND"

    def __init__(self, what: str, ref: str | None = None) -> None:
        super().__init__(f"not found: no {what}" + (f" {ref}" if ref else ""))
        self.what = what
        self.ref = ref


class KnowledgeQuotaError(KnowledgeError):
    """A daily write quota would be exceeded; nothing was written."""

    code = "E_QUOTA"


class KnowledgeValidationError(KnowledgeError):
    """Arguments are malformed or break a single-write limit; nothing was written.

    ``reason`` is a stable code saying which rule was broken, and ``values`` the text its words
    need, as for :class:`RevertError`: the console says the refusal in the reader's language from
    them, while the message stays the English sentence the CLI, REST and MCP show. A code is never
    renamed; a refusal no reader words yet carries ``other``. Codes and their values (all text):

    - ``too_long`` (``what``, ``limit``, ``got``): a text is longer than ``limit`` characters.
    - ``too_large`` (``what``, ``limit``, ``got``): a value is larger than ``limit`` bytes as JSON.
    - ``unstorable`` (``what``, ``char``): a text holds a character the store cannot hold
      (``char`` is its code point, ``U+0000`` or a lone surrogate).
    - ``unstorable_filter`` (``what``, ``char``): a filter holds such a character, so nothing matches.
    - ``builtin_move`` and ``builtin_rename`` (``collection``): a built-in collection stays as it is.
    - ``into_itself``: a collection cannot be moved into itself or one of its subfolders.
    - ``inside_diary``: nothing is created or moved inside the diary collection.
    - ``too_deep`` (``depth``): collections would nest more than ``depth`` levels.
    - ``keyed_document``: a document written with a key cannot be moved.
    - ``merge_itself``, ``merge_self``, ``delete_self``: an entity merged into itself, the user's
      own entity merged or deleted.
    - ``merge_kinds`` (``merged``, ``merged_kind``, ``kept``, ``kept_kind``): two entities of
      different kinds (``person``, ``organization``, ``place``).
    - ``revert_of_revert``: a revert cannot itself be reverted.
    - ``not_revertible`` (``op``): changes of this type cannot be reverted.
    - ``not_open_conflict`` (``change``, ``status``): a conflict to resolve is no longer open.
    - ``resolve_choice`` (``take``): a resolution is neither ``theirs`` nor ``mine``.
    - ``other``: any other refusal, in English only.
    """

    code = "E_VALIDATION"
    REASONS: Final = (
        "too_long",
        "too_large",
        "unstorable",
        "unstorable_filter",
        "builtin_move",
        "builtin_rename",
        "into_itself",
        "inside_diary",
        "too_deep",
        "keyed_document",
        "merge_itself",
        "merge_self",
        "delete_self",
        "merge_kinds",
        "revert_of_revert",
        "not_revertible",
        "not_open_conflict",
        "resolve_choice",
        "other",
    )
    """Every code a refusal may carry, as listed above."""

    def __init__(self, message: str, *, reason: str = "other", values: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.values: dict[str, str] = dict(values or {})


class DocumentTooLargeError(KnowledgeValidationError):
    """A file to extract is over a limit: its bytes, pages, unpacked size, text, or the memory reading
    it takes. The message names the limit."""


class UnsupportedDocumentError(KnowledgeValidationError):
    """A file is of a kind whose text is not extracted; the message names the supported kinds."""


class RevertError(KnowledgeError):
    """A change cannot be reverted without overwriting later work (``superseded``, ``not empty``).

    ``reason`` is a stable code saying why, and ``values`` the text each of its words need, so each
    place that shows the refusal can say it in its own words (the console in the reader's language);
    the message is the English sentence the CLI, REST and MCP show. A code is never renamed, and a
    reader that does not know a code shows the message. Codes and their values (all text):

    - ``superseded`` (``change``, ``later``, ``actor``, ``summary``): a later change, by ``actor``
      and described by its ``summary``, touched the same thing; undo that one first.
    - ``entity_deleted`` (``change``, ``predicate``): the entity the fact's ``predicate`` pointed at
      was deleted since.
    - ``key_taken`` (``change``, ``key``): another document took the deleted one's ``key`` since.
    - ``collection_not_empty`` (``change``): a collection to remove again holds something.
    - ``document_place_removed`` and ``collection_place_removed`` (``change``): the collection the
      document or collection was in was removed since.
    - ``old_parent_inside`` (``change``, ``parent``): the collection a moved one came from now sits
      inside it.
    - ``too_deep`` (``change``, ``depth``): moving the collection back would nest past ``depth`` levels.
    - ``other``: any other refusal, in English only.
    """

    code = "E_REVERT"
    REASONS: Final = (
        "superseded",
        "entity_deleted",
        "key_taken",
        "collection_not_empty",
        "document_place_removed",
        "collection_place_removed",
        "old_parent_inside",
        "too_deep",
        "other",
    )
    """Every code a refusal may carry, as listed above."""

    def __init__(self, message: str, *, reason: str = "other", values: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.values: dict[str, str] = dict(values or {})


class ManifestError(NotochordError):
    """A gem manifest is invalid. ``problems`` lists every problem as ``<json path>: <problem>``."""

    code = "E_MANIFEST"

    def __init__(self, problems: Sequence[str], *, source: str | None = None) -> None:
        self.problems = tuple(problems)
        head = f"invalid manifest{f' {source}' if source else ''}"
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{head} ({len(self.problems)} problem(s)):\n{lines}")


class GemError(NotochordError):
    """A gem-level operation failed: a permission the manifest never requested, a tool that cannot run.

    An unknown gem, tool or run is the subclass :class:`GemNotFoundError`.
    """

    code = "E_GEM"


class GemNotFoundError(GemError):
    """No gem with that id is installed, the gem has no tool of that name, or there is no such run."""

    code = "E_NOT_FOUND"


class NetworkError(NotochordError):
    """Base of network errors seen by gems and the host."""

    code = "E_NETWORK"


class NetworkPermissionError(NetworkError):
    """A request was refused before any connection was made. Names the host and the rule."""

    code = "E_NET_DENIED"

    def __init__(self, message: str, *, host: str | None = None, rule: str | None = None) -> None:
        super().__init__(message)
        self.host = host
        self.rule = rule


class NetworkRequestError(NetworkError):
    """A permitted request failed: timeout, connection error, response too large, malformed URL."""

    code = "E_NET_REQUEST"


class FileError(NotochordError):
    """Base of errors from ``ctx.files`` and gem storage.

    ``reason`` is a stable code saying why, and ``values`` the text its words need, as for
    :class:`KnowledgeValidationError`: the console says the refusals the user meets (a working
    folder typed on a gem's page, a file rollback, a run's file history) in the reader's language
    from them, while the message stays the English sentence the CLI, REST and MCP show. A code is
    never renamed; a refusal no reader words yet carries ``other``. Codes and their values (all text):

    - ``folder_root``, ``folder_home``, ``folder_data_dir``, ``folder_app_bundle``, ``folder_hidden``
      (``path``), ``folder_system`` and ``folder_app_data`` (``path``, ``folder``): a
      :class:`FilePermissionError`, the folder ``path`` breaks that rule of the working folders
      (``folder`` is the system or application folder it is in).
    - ``folder_not_absolute``, ``folder_nul``, ``folder_is_file`` (``path``): a working folder is
      not a full path, holds NUL, or is a file.
    - ``folder_uncheckable`` (``path``, ``detail``): the system could not look at it (``detail`` is
      its own words).
    - ``history_folder_is_file`` (``path``): the folder whose file history is asked for is a file.
    - ``history_unopenable`` (``place``, ``detail``), ``history_unreadable`` and
      ``history_unrecorded`` (``detail``): the file history kept at ``place`` cannot be opened,
      read or written.
    - ``history_name_not_text``: the file history cannot record a name that is not UTF-8 text.
    - ``other``: any other refusal, in English only.

    A rollback's own :class:`~notochord.files.skips.NotPutBackError` never leaves it: it carries
    the code of its skip reason (:data:`notochord.files.skips.CODES`) instead.
    """

    code = "E_FILE"
    REASONS: Final = (
        "folder_root",
        "folder_home",
        "folder_data_dir",
        "folder_system",
        "folder_app_bundle",
        "folder_app_data",
        "folder_hidden",
        "folder_not_absolute",
        "folder_nul",
        "folder_is_file",
        "folder_uncheckable",
        "history_folder_is_file",
        "history_unopenable",
        "history_unreadable",
        "history_unrecorded",
        "history_name_not_text",
        "other",
    )
    """Every code a refusal may carry, as listed above."""

    def __init__(self, message: str, *, reason: str = "other", values: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.values: dict[str, str] = dict(values or {})


class FilePermissionError(FileError):
    """A path lies outside what the caller may touch, or there is no conversation folder.

    ``reason`` and ``values`` are as for :class:`FileError` (the ``folder_*`` rules).
    """

    code = "E_PERM_DENIED"

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        reason: str = "other",
        values: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"E_PERM_DENIED: {message}", reason=reason, values=values)
        self.path = path


class FileNotFoundInWorkspaceError(FileError):
    """The path does not exist (or is hidden, which reads the same)."""

    code = "E_NOT_FOUND"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"E_NOT_FOUND: {message}")
        self.path = path


class FileExistsInWorkspaceError(FileError):
    """The target of a move or mkdir already exists."""

    code = "E_EXISTS"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"E_EXISTS: {message}")
        self.path = path
