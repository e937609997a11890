"""Browser-facing hardening of the web service: response headers and which URLs become links.

Three rules, each in one place so no page can forget them:

- every response carries a Content-Security-Policy that lets a page run only the dashboard's
  own script and stylesheet (no inline script or style, no plugins, no ``<base>``, forms post
  only to this service) and be framed by nobody, or only by the configured
  ``service.frame_ancestors`` wiki origins; plus ``X-Content-Type-Options: nosniff`` and a
  ``Referrer-Policy`` that keeps the dashboard's URLs from the cited sites it links to;
- a URL that came from an edit (a cited source, a suggestion) becomes an ``href`` only when it
  is http(s): :func:`http_url`, the Jinja filter ``http_url``, is what every template links
  through, so ``javascript:`` or ``data:`` from a submitted snippet stays inert text.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from flask import Flask, Response

from side.errors import ConfigError

__all__ = ["REFERRER_POLICY", "SESSION_COOKIE", "content_security_policy", "http_url", "init_app",
           "security_headers", "session_cookie_settings"]

#: Same-origin navigation keeps its referrer (the dashboard's forms send ``Origin`` either way);
#: the cited sites and wikis the pages link to learn nothing about the dashboard's URLs.
REFERRER_POLICY = "same-origin"
#: A web origin as CSP's frame-ancestors takes it: scheme, host, optional port, nothing else.
_ORIGIN = re.compile(r"^https?://[a-z0-9.-]+(:[0-9]{1,5})?$")
#: An absolute http(s) URL with no white space or control character anywhere, so the string
#: checked is exactly the string a browser would follow (browsers drop tabs and newlines).
_HTTP_URL = re.compile(r"^https?://[^\s\x00-\x1f\x7f-\x9f]+$", re.IGNORECASE)


def content_security_policy(frame_ancestors: list[str] | tuple[str, ...] = ()) -> str:
    """The policy for every response; ``frame_ancestors`` are origins allowed to frame pages."""
    origins = [o.strip().rstrip("/").lower() for o in frame_ancestors if o.strip()]
    bad = [o for o in origins if not _ORIGIN.match(o)]
    if bad:
        raise ConfigError(f"service.frame_ancestors: not an origin (scheme://host[:port]): {', '.join(bad)}")
    ancestors = " ".join(origins) if origins else "'none'"
    return ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; "
            f"base-uri 'none'; form-action 'self'; frame-ancestors {ancestors}")


def http_url(value: object) -> str | None:
    """``value`` if it is an http(s) URL with a host, safe to put in an ``href``; else None."""
    if not isinstance(value, str) or not _HTTP_URL.match(value):
        return None
    try:
        return value if urlsplit(value).hostname else None
    except ValueError:  # e.g. an unbalanced IPv6 bracket
        return None


#: Name of the login cookie (Flask's default "session" says nothing about whose it is).
SESSION_COOKIE = "side_session"


def session_cookie_settings(public_url: str) -> dict[str, object]:
    """Flask settings for the signed session cookie that holds a reviewer's login."""
    return {"SESSION_COOKIE_NAME": SESSION_COOKIE, "SESSION_COOKIE_HTTPONLY": True,
            "SESSION_COOKIE_SAMESITE": "Lax", "SESSION_COOKIE_SECURE": public_url.lower().startswith("https://"),
            "SESSION_COOKIE_DOMAIN": False, "SESSION_COOKIE_PATH": "/"}


def security_headers(frame_ancestors: list[str] | tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The headers every response carries, the app's and the WSGI server's own refusals alike
    (:mod:`gadget.server.serve`), so no answer of this service lacks them."""
    return [("Content-Security-Policy", content_security_policy(frame_ancestors)),
            ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", REFERRER_POLICY)]


def init_app(app: Flask, frame_ancestors: list[str] | tuple[str, ...] = ()) -> None:
    """Register the headers on every response and the ``http_url`` template filter."""
    headers = security_headers(frame_ancestors)

    def add_headers(response: Response) -> Response:
        for name, value in headers:
            response.headers.setdefault(name, value)
        return response

    app.after_request(add_headers)
    app.jinja_env.filters["http_url"] = http_url
