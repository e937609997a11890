"""A local stand-in for the Internet Archive's Wayback Machine, for tests.

The real Wayback Machine cannot be reached from the machines the tests run on, and test traffic
stays on 127.0.0.1 anyway; so a :class:`~httpserver.LocalServer` plays its part, answering as
the real service is documented to (https://archive.org/help/wayback_api.php):

* ``GET /wayback/available?url=URL&timestamp=TS``: the availability API, ``{"url": URL,
  "archived_snapshots": {"closest": {"status": "200", "available": true, "url": SNAPSHOT,
  "timestamp": "20130919044612"}}}`` for a kept snapshot, ``{"url": URL, "archived_snapshots": {}}``
  otherwise (or a canned ``answer`` set by the test: malformed JSON, a hostile snapshot URL);
* ``GET /web/<timestamp>id_/<URL>``: the raw snapshot, the page's bytes as captured;
* ``GET /web/<timestamp>/<URL>``: the replay page, those bytes under a toolbar as the real
  Machine adds one, so a test can tell which form was read.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

from httpserver import LocalServer, Response

TIMESTAMP = "20130919044612"
#: What the replay form adds around a page (the raw ``id_`` form has none of it).
TOOLBAR = b"<div id='wm-ipp'>The Wayback Machine toolbar. Its text is never a source.</div>"


class LocalWayback:
    """The Wayback Machine's API and snapshots on ``server`` (see the module doc)."""

    def __init__(self, server: LocalServer) -> None:
        self.server = server
        self.snapshots: dict[str, tuple[str, str]] = {}
        #: (url, timestamp or None) of every availability request, in order.
        self.asked: list[tuple[str, str | None]] = []
        #: When set, every availability request gets this instead of the real lookup.
        self.answer: Response | None = None
        server.add("/wayback/available", self._available)

    @property
    def api(self) -> str:
        return self.server.url("/wayback/available")

    def keep(self, url: str, page: bytes | Response, timestamp: str = TIMESTAMP) -> str:
        """Archive ``page`` as the snapshot of ``url``; returns the snapshot URL the API names."""
        raw = page if isinstance(page, Response) else Response(page)
        self.server.add(f"/web/{timestamp}id_/{url}", raw)
        self.server.add(f"/web/{timestamp}/{url}", Response(TOOLBAR + raw.body, status=raw.status))
        snapshot = self.server.url(f"/web/{timestamp}/{url}")
        self.snapshots[url] = (snapshot, timestamp)
        return snapshot

    def raw_hits(self, url: str, timestamp: str = TIMESTAMP) -> int:
        return self.server.hits[f"/web/{timestamp}id_/{url}"]

    def replay_hits(self, url: str, timestamp: str = TIMESTAMP) -> int:
        return self.server.hits[f"/web/{timestamp}/{url}"]

    def _available(self, path: str) -> Response:
        query = parse_qs(urlsplit(path).query)
        url = query.get("url", [""])[0]
        self.asked.append((url, query.get("timestamp", [None])[0]))
        if self.answer is not None:
            return self.answer
        answer: dict[str, object] = {"url": url, "archived_snapshots": {}}
        if url in self.snapshots:
            snapshot, timestamp = self.snapshots[url]
            answer["archived_snapshots"] = {"closest": {"status": "200", "available": True, "url": snapshot,
                                                        "timestamp": timestamp}}
        return Response(json.dumps(answer).encode(), content_type="application/json")
