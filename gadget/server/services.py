"""What every request handler needs, built once per app: config, store, queue, links.

Attached to ``app.extensions["side"]`` by :func:`gadget.server.app.create_app` (the Flask
tutorial's "resources in init_app" pattern) rather than held in module globals, so tests can
build several apps side by side on different stores and Redis queues.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import redis
from flask import current_app, request
from rq import Queue

from gadget.server.links import WikiLinks
from gadget.server.present import Presenter
from service.fetchbudget import OutsideFetches
from service.store import Store
from side.config import Config

EXTENSION = "side"


@dataclass
class Services:
    config: Config
    store: Store
    redis: redis.Redis
    queue: Queue
    presenter: Presenter
    links: WikiLinks
    #: Wiki origins allowed to call the API from a browser (``service.cors_origins``).
    cors_origins: frozenset[str]
    #: The budgets of outside fetches the API's checks may cause (``service.*_fetch_budget``).
    fetches: OutsideFetches

    @property
    def public_origin(self) -> str:
        parts = urlsplit(self.config.service.public_url)
        return f"{parts.scheme}://{parts.netloc}"


def services() -> Services:
    """The current app's services (inside a request or app context)."""
    return current_app.extensions[EXTENSION]


def request_origin() -> str | None:
    """The ``Origin`` header, None when the request did not come from a browser page."""
    origin = request.headers.get("Origin")
    return origin.strip().rstrip("/") if origin and origin.strip() else None
