"""Typed errors of the Side library.

Every mistake a user can make (a missing file, a URL that times out, a page that is not
text) surfaces as a subclass of :class:`SideError`, so entry points can print one line and
exit non-zero instead of a traceback, and the API can map each to a stable JSON error.
"""

from __future__ import annotations


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


class DataNotFoundError(SideError):
    """A dataset under ``SIDE_DATA_DIR`` is missing."""

    code = "data_not_found"


class SourceFetchError(SideError):
    """A cited source could not be fetched (timeout, HTTP error, too large, too many redirects)."""

    code = "source_fetch_failed"


class SourceBlockedError(SourceFetchError):
    """A URL points at an address Side refuses to contact (loopback, private, metadata...)."""

    code = "source_blocked"


class UnsupportedContentError(SourceFetchError):
    """A fetched document is neither HTML, plain text nor PDF, or holds no extractable text."""

    code = "unsupported_content"


class IndexNotFoundError(SideError):
    """No evidence index was built at the configured location."""

    code = "index_not_found"


class ModelLoadError(SideError):
    """Model weights could not be found or loaded (never downloaded at run time)."""

    code = "model_load_failed"
