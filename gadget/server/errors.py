"""One error shape for every failure the web service returns.

Clients (the gadget, bots, schemathesis) branch on ``error.code``, never on prose, so every
4xx/5xx body is ``{"error": {"code": "...", "message": "..."}}``: our own :class:`ApiError`,
the library's :class:`~side.errors.SideError`, Werkzeug's 404/405/413/415, Flask-Limiter's 429,
Redis unreachable (503, one log line: the rate limiter fails closed) and any unexpected
exception (logged, answered as a bare 500 without a traceback). Dashboard
pages get the same code and message rendered as HTML, because people read those.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from flask import Flask, Response, current_app, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from side.errors import InputError, SideError

log = logging.getLogger(__name__)

#: Stable code per HTTP status, for errors raised by Flask, Werkzeug or Flask-Limiter.
HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    408: "request_timeout",
    411: "length_required",
    413: "too_large",
    414: "uri_too_long",
    415: "unsupported_media_type",
    422: "unprocessable",
    429: "rate_limited",
    431: "headers_too_large",
    500: "internal_error",
    501: "not_implemented",
    503: "unavailable",
}


class ApiError(SideError):
    """A request the API refuses, with its HTTP status and stable code."""

    code = "bad_request"
    status = 400

    def __init__(self, message: str, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status


class NotFoundError(ApiError):
    """An unknown check, result or page."""

    code = "not_found"
    status = 404


class ForbiddenOriginError(ApiError):
    """A browser request from an origin outside the configured allowlist."""

    code = "forbidden_origin"
    status = 403


class UnsupportedMediaError(ApiError):
    """A body that is not ``application/json``."""

    code = "unsupported_media_type"
    status = 415


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def _is_dashboard() -> bool:
    """A page people read: the dashboard, and the login routes a browser is sent through."""
    return request.path.startswith(("/dashboard", "/auth/")) and request.accept_mimetypes.accept_html


def error_response(status: int, code: str, message: str, headers: Any = None) -> Response:
    """JSON for the API, an HTML page for the dashboard; same code and message in both."""
    if _is_dashboard():
        html = render_template("error.html", status=status, code=code, message=message)
        response = Response(html, status=status, mimetype="text/html")
    else:
        response = jsonify(error_body(code, message))
        response.status_code = status
    for name, value in headers or ():
        if name.lower() not in {"content-type", "content-length"}:
            response.headers[name] = value
    return response


def _handle_api_error(exc: ApiError) -> Response:
    return error_response(exc.status, exc.code, exc.message)


def _handle_side_error(exc: SideError) -> Response:
    """Input errors are the caller's; any other library error is a component that is down
    (the queue's Redis, the store), which a retry later may find back: 503."""
    if isinstance(exc, InputError):
        return error_response(400, "bad_request", str(exc))
    log.error("request failed: %s: %s", exc.code, exc)
    return error_response(503, exc.code, str(exc))


def _handle_http(exc: HTTPException) -> Response:
    status = exc.code or 500
    code = HTTP_CODES.get(status, "bad_request" if status < 500 else "internal_error")
    message = exc.description or exc.name
    if status == 413:
        message = f"the body is larger than {current_app.config['MAX_CONTENT_LENGTH']} bytes"
    elif status == 429:
        message = f"rate limit exceeded ({exc.description}); retry later"
    return error_response(status, code, message, exc.get_headers())


#: Seconds a client is told to wait (``Retry-After``) while Redis is unreachable.
REDIS_RETRY_AFTER_S = 30


def _handle_redis_error(exc: redis.RedisError) -> Response:
    """Redis unreachable where a request needs it (above all the rate limiter, which runs before
    every POST): fail closed with a 503, never serve without limits, and log one line without a
    traceback, since the cause is known and a traceback per request would flood the log. The code
    is the queue's (``queue_unavailable``): to a client every Redis outage is the same one."""
    log.warning("Redis unavailable on %s %s: %s: %s", request.method, request.path, type(exc).__name__,
                str(exc).splitlines()[0][:200] if str(exc) else "")
    return error_response(503, "queue_unavailable", "the service's Redis is unreachable (rate limits and "
                          "the queue need it); retry later", [("Retry-After", str(REDIS_RETRY_AFTER_S))])


def _handle_unexpected(exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.path)
    return error_response(500, "internal_error", "internal error; it has been logged")


def init_app(app: Flask) -> None:
    """Register the handlers; the most specific class wins in Flask's lookup."""
    app.register_error_handler(ApiError, _handle_api_error)
    app.register_error_handler(SideError, _handle_side_error)
    app.register_error_handler(HTTPException, _handle_http)
    app.register_error_handler(redis.RedisError, _handle_redis_error)
    app.register_error_handler(Exception, _handle_unexpected)
