"""Two cited pages for the queue's end-to-end tests, served on 127.0.0.1: a company report that
backs claims about Alsea, and a weather page that backs none of them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from httpserver import LocalServer, Response

ALSEA = (b"<html><head><title>Alsea annual report</title></head><body>"
         b"<p>Alsea operates Starbucks coffee shops in Mexico, Argentina and Chile.</p>"
         b"<p>The company was founded in 1990 in Mexico City.</p>"
         b"<p>It also operates Domino's Pizza and Burger King restaurants.</p></body></html>")
WEATHER = (b"<html><head><title>Weather</title></head><body>"
           b"<p>Tomorrow will be sunny with light winds along the coast.</p>"
           b"<p>Temperatures reach 25 degrees in the afternoon.</p></body></html>")


@contextmanager
def alsea_sources() -> Iterator[LocalServer]:
    """A local server with the report at ``/alsea`` and the weather page at ``/weather``."""
    with LocalServer() as server:
        server.add("/alsea", Response(body=ALSEA))
        server.add("/weather", Response(body=WEATHER))
        yield server
