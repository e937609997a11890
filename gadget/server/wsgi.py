"""WSGI entry point for Toolforge's uwsgi (``module = gadget.server.wsgi:app``).

Configuration comes from ``$SIDE_CONFIG`` (or ``./side.toml``) and ``SIDE_*`` variables.
"""

from __future__ import annotations

import logging

from gadget.server.app import create_app

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

app = create_app()
