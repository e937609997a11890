"""Typed errors of the Side library.

Every mistake a user can make (a missing file, a URL that times out, a page that is not
text) surfaces as a subclass of :class:`SideError`, so entry points can print one line and
exit non-zero instead of a traceback, and the API can map each to a stable JSON error.
"""

from __future__ import annotations

__all__ = [
    "SideError", "InputError", "ConfigError", "DataNotFoundError", "SourceFetchError",
    "SourceBlockedError", "UnsupportedContentError", "UnreadableContentError", "CannotCheckError",
    "ForeignSourceError", "NoArchivedCopyError",
    "IndexNotFoundError", "IndexServerError",
    "ModelLoadError", "TooManyClaimsError",
]


class SideError(Exception):
    """Root of every error the library raises on purpose."""

    #: Stable machine-readable code, used by the CLI and the web API.
    code = "side_error"


class InputError(SideError):
    """The caller gave something that cannot be processed (bad file, bad argument)."""

    code = "bad_input"


class ConfigError(SideError):
    """The configuration file or an environment override is invalid."""

    code = "bad_config"


class TooManyClaimsError(InputError):
    """A page has more citation uses than the caller's cap allows; nothing of it was extracted."""

    code = "too_many_claims"

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class DataNotFoundError(SideError):
    """A dataset under ``SIDE_DATA_DIR`` is missing."""

    code = "data_not_found"


class SourceFetchError(SideError):
    """A cited source could not be fetched (timeout, HTTP error, too large, too many redirects).

    Callers decide from data, never from the message: ``status`` is the HTTP status when the
    server answered with an error (4xx/5xx), else None; ``transient`` says whether asking again
    later may succeed (timeouts, resets, 5xx/429), as opposed to a refusal, a 404 or bad content.
    Subclasses keep both (they are never transient).
    """

    code = "source_fetch_failed"

    def __init__(self, message: str, *, status: int | None = None, transient: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.transient = transient


class SourceBlockedError(SourceFetchError):
    """A URL points at an address Side refuses to contact (loopback, private, metadata...)."""

    code = "source_blocked"


class UnsupportedContentError(SourceFetchError):
    """A fetched document is neither HTML, plain text nor PDF, or holds no extractable text."""

    code = "unsupported_content"


class UnreadableContentError(UnsupportedContentError):
    """A document of a supported type that its parser refused: a PDF over pypdf's limits (a
    compression bomb), a broken file, markup the extractor failed on."""

    code = "unreadable_content"


class CannotCheckError(UnsupportedContentError):
    """What was read is not the cited document: a paywall teaser, a login, consent or bot wall,
    a soft 404, a parked domain, a JavaScript shell, too little text or a language the model
    cannot read (:mod:`side.sources.states`). The citation is "cannot check", never flagged."""

    code = "cannot_check"


class ForeignSourceError(CannotCheckError):
    """The page reads as a document, but in a language Side's verifier does not read: cannot
    check for Side, though an LLM judge reads it (``language`` and ``sentences`` are kept)."""

    code = "cannot_check"

    def __init__(self, message: str, *, language: str = "", sentences: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.language = language
        self.sentences = sentences


class NoArchivedCopyError(SourceFetchError):
    """No archived copy of a source could be found to read (the archive has none, or archive
    lookups are off); not transient: an archive does not gain an old copy by asking again."""

    code = "no_archived_copy"


class IndexNotFoundError(SideError):
    """No evidence index was built at the configured location."""

    code = "index_not_found"


class IndexServerError(SideError):
    """The index server named by the configuration (Milvus) cannot be reached or refused a request."""

    code = "index_server"


class ModelLoadError(SideError):
    """Model weights could not be found or loaded (never downloaded at run time)."""

    code = "model_load_failed"
