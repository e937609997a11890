"""``side-web``: serve the API and dashboard with waitress (threads, no fork after import).

Usage::

    side-web [--host 127.0.0.1] [--port 8765] [--config side.toml] [--threads 8]
    python -m gadget.server.serve --port 0        # any free port; the chosen one is logged

Waitress is a pure-Python WSGI server that serves from threads of this one process, so the
app built here (store engine, Redis pool, metrics registry) is the one that answers; nothing
is forked after import. On Toolforge, uwsgi loads :mod:`gadget.server.wsgi` instead.
"""

from __future__ import annotations

import argparse
import logging
import sys

from side.config import load_config
from side.errors import SideError

log = logging.getLogger("gadget.server.serve")

#: Waitress buffers a body up to this many times the API's own limit, so a body somewhat too
#: large still reaches the app and gets its JSON 413; beyond it waitress refuses on its own.
BODY_BUFFER_FACTOR = 4


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
    from waitress import create_server

    from gadget.server.app import create_app

    try:
        config = load_config(args.config)
        app = create_app(config)
    except SideError as exc:
        log.error("%s", exc)
        return 2
    service = config.service
    server = create_server(app, host=args.host or service.host,
                           port=service.port if args.port is None else args.port,
                           threads=args.threads or service.threads, ident="side-web",
                           max_request_body_size=BODY_BUFFER_FACTOR * service.max_body_bytes)
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
