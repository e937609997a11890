"""Toolforge's uwsgi entry point: copied or linked to ``$HOME/www/python/src/app.py``.

The python3.11 webservice serves the WSGI callable ``app`` of that file. The code lives in the
``side`` checkout installed (editable) into ``$HOME/www/python/venv``, so this file only
imports the app the web service builds (``gadget.server.wsgi``), configured by
``$SIDE_CONFIG`` / ``$HOME/side.toml`` and the tool's ``SIDE_*`` envvars.
"""

from gadget.server.wsgi import app

__all__ = ["app"]
