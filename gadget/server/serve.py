"""``side-web``: serve the API and dashboard with waitress (threads, no fork after import).

Usage::

    side-web [--host 127.0.0.1] [--port 8765] [--config side.toml] [--threads 8]
    python -m gadget.server.serve --port 0        # any free port; the chosen one is logged

Waitress is a pure-Python WSGI server that serves from threads of this one process, so the
app built here (store engine, Redis pool, metrics registry) is the one that answers; nothing
is forked after import. On Toolforge, uwsgi loads :mod:`gadget.server.wsgi` instead.

A request waitress refuses before the app sees it (a body beyond its buffer, a malformed
request line or chunk, headers beyond its limit) is answered by waitress itself;
:func:`use_json_errors` makes those answers the API's one error shape too, instead of
waitress's plain text, with the app's security headers (CSP and the rest).

With ``service.proxy_hops`` > 0 side-web trusts ``X-Forwarded-For``: it must then be reachable
only through its reverse proxy, and it warns at start when it listens on another address than
loopback (:func:`warn_if_reachable_past_the_proxy`).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import sys
from typing import Any

from side.config import ServiceConfig, load_config
from side.errors import SideError

log = logging.getLogger("gadget.server.serve")

#: Waitress buffers a body up to this many times the API's own limit, so a body somewhat too
#: large still reaches the app and gets its JSON 413; beyond it waitress refuses on its own
#: (also with the JSON shape, :func:`use_json_errors`).
BODY_BUFFER_FACTOR = 4


def json_error_channel(max_body_bytes: int, headers: list[tuple[str, str]] | None = None) -> type:
    """A waitress channel whose own error answers are ``{"error": {"code", "message"}}``, with
    ``headers`` (the app's security headers, :func:`gadget.server.security.security_headers`):
    a refusal waitress sends before the app runs must not lack the CSP the app's answers carry."""
    from waitress.channel import HTTPChannel
    from waitress.task import ErrorTask

    from gadget.server.errors import HTTP_CODES, error_body
    from gadget.server.security import security_headers

    extra = list(headers if headers is not None else security_headers())

    class JsonErrorTask(ErrorTask):
        def execute(self) -> None:
            error = self.request.error
            status = int(error.code)
            code = HTTP_CODES.get(status, "bad_request" if status < 500 else "internal_error")
            if status == 413:
                message = f"the body is larger than {max_body_bytes} bytes"
            else:
                message = (str(error.body).strip().splitlines() or [error.reason])[0][:300]
            body = json.dumps(error_body(code, message)).encode("utf-8")
            self.status = f"{status} {error.reason}"
            self.response_headers.extend([("Content-Type", "application/json"), *extra])
            self.set_close_on_finish()
            self.content_length = len(body)
            self.write(body)

    return type("JsonErrorChannel", (HTTPChannel,), {"error_task_class": JsonErrorTask})


def use_json_errors(server: Any, max_body_bytes: int, headers: list[tuple[str, str]] | None = None) -> None:
    """Make every listening socket of ``server`` (one, or several for a multi-address host)
    answer waitress's own errors with the JSON error shape and the security ``headers``."""
    from waitress.server import BaseWSGIServer

    channel = json_error_channel(max_body_bytes, headers)
    dispatchers = getattr(server, "map", None) or getattr(server, "_map", None) or {}
    for candidate in [server, *dispatchers.values()]:
        if isinstance(candidate, BaseWSGIServer):
            candidate.channel_class = channel


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or name side-web listens on) is reachable from this machine only."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:  # another host name: it may resolve to any interface
        return False


def warn_if_reachable_past_the_proxy(host: str, proxy_hops: int) -> bool:
    """Warn (and return True) when side-web trusts ``X-Forwarded-For`` (``proxy_hops`` > 0) yet
    listens on an address others can reach: a client that reaches it directly writes its own
    X-Forwarded-For and so picks its rate-limit and fetch-budget key, an unlimited budget. Behind
    a proxy, side-web must be reachable through the proxy only (docs/service.md)."""
    if proxy_hops <= 0 or is_loopback(host):
        return False
    log.warning("service.proxy_hops = %d trusts X-Forwarded-For, and side-web listens on %s: it must be "
                "reachable only through its reverse proxy (firewall it, or listen on 127.0.0.1), or any "
                "client that reaches it directly chooses its own rate limit and fetch budget", proxy_hops, host)
    return True


def make_server(app: Any, service: ServiceConfig, host: str, port: int, threads: int) -> Any:
    """The waitress server for ``app``: bodies buffered up to :data:`BODY_BUFFER_FACTOR` times the
    API's limit (so the app answers most oversize bodies itself), waitress's own errors as JSON.

    A connection that sends nothing for ``service.channel_timeout_s`` is closed, a request that
    declares more body than it sends included (it held a connection until the client gave up).
    Behind a reverse proxy (``service.proxy_hops`` > 0) waitress passes ``X-Forwarded-*`` on to the
    app, whose ProxyFix trusts exactly that many hops; without one waitress drops those headers
    (its default) and the client is the TCP peer."""
    from waitress import create_server

    from gadget.server.security import security_headers

    timeout = service.channel_timeout_s
    server = create_server(app, host=host, port=port, threads=threads, ident="side-web",
                           max_request_body_size=BODY_BUFFER_FACTOR * service.max_body_bytes,
                           channel_timeout=timeout, cleanup_interval=max(1, min(30, timeout // 2)),
                           clear_untrusted_proxy_headers=service.proxy_hops == 0)
    use_json_errors(server, service.max_body_bytes, security_headers(service.frame_ancestors))
    warn_if_reachable_past_the_proxy(host, service.proxy_hops)
    return server


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="side-web", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", help="address to listen on (default: service.host)")
    parser.add_argument("--port", type=int, help="port (default: service.port; 0 = any free port)")
    parser.add_argument("--config", help="TOML config file (default: $SIDE_CONFIG or ./side.toml)")
    parser.add_argument("--threads", type=int, help="worker threads (default: service.threads)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from gadget.server.app import create_app

    try:
        config = load_config(args.config)
        app = create_app(config)
    except SideError as exc:
        log.error("%s", exc)
        return 2
    service = config.service
    server = make_server(app, service, host=args.host or service.host,
                         port=service.port if args.port is None else args.port, threads=args.threads or service.threads)
    log.info("serving on http://%s:%s", server.effective_host, server.effective_port)  # type: ignore[union-attr]
    try:
        server.run()
    except KeyboardInterrupt:
        log.info("stopped")
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
