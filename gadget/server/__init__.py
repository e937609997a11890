"""The web service: the gadget's REST API (``/api/v1``) and the patrol dashboard.

See docs/service.md for the API contract and :func:`gadget.server.app.create_app`.
"""

from __future__ import annotations

from gadget.server.app import create_app

__all__ = ["create_app"]
