"""The gadget's REST API (``/api/v1``): submit claims, read results, send feedback; its OpenAPI document."""

from __future__ import annotations

from flask import Flask

from gadget.server.api import openapi, routes

__all__ = ["init_app"]


def init_app(app: Flask) -> None:
    """Register the API and its OpenAPI document."""
    app.register_blueprint(routes.bp)
    app.register_blueprint(openapi.bp)
