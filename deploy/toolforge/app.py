"""Toolforge's uwsgi entry point: copied or linked to ``$HOME/www/python/src/app.py``.

The python3.11 webservice serves the WSGI callable ``app`` of that file. The code lives in the
``side`` checkout installed (editable) into ``$HOME/www/python/venv``, so this file only
imports the app the web service builds (``gadget.server.wsgi``), configured by
``$SIDE_CONFIG`` / ``$HOME/side.toml`` and the tool's ``SIDE_*`` envvars.

Two settings are Toolforge's own, so they are defaults here rather than steps to remember:

- uwsgi runs in ``$HOME/www/python/src``, so ``./side.toml`` is not the tool's file:
  ``SIDE_CONFIG`` defaults to ``$HOME/side.toml``;
- every request reaches the webservice through Toolforge's front proxy, one hop that appends
  the client's address to ``X-Forwarded-For``: ``service.proxy_hops`` defaults to 1
  (``SIDE_SERVICE_PROXY_HOPS``), or every user would share the rate limit of the proxy's address.
"""

import os

os.environ.setdefault("SIDE_CONFIG", os.path.join(os.path.expanduser("~"), "side.toml"))
os.environ.setdefault("SIDE_SERVICE_PROXY_HOPS", "1")

from gadget.server.wsgi import app  # noqa: E402 (after the settings it reads)

__all__ = ["app"]
