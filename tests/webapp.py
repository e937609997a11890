"""Helpers and fixtures for the web service tests (tests/test_api*.py, tests/test_dashboard*.py).

Registered as a pytest plugin in tests/conftest.py: ``web_config``, ``app``, ``client`` and
``store`` give a test the app on its own SQLite store and the flushed test Redis.

The app runs on a real SQLite store and a real Redis (the module's own ``redis-server``), so
what the tests see is what production does. A worker's outcome is written with the real
``side.pipeline`` dataclasses and ``Store.finish`` (what ``workers.jobs`` does after scoring),
without loading the model: those tests are about the web layer, and the browser test runs the
real worker end to end.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from service.store import Store
from side.config import Config
from side.extract.claims import Claim
from side.pipeline import Result, SourceStatus, Suggestion, cite_web
from side.verify.levels import VerdictLevel
from side.verify.verifier import Evidence, Verdict, VerdictLabel

WIKI_URL = "http://wiki.test:8080"


def make_config(tmp_path: Path, redis_url: str, **service: Any) -> Config:
    """A Config on a temporary SQLite store and the given Redis, with service overrides."""
    config = Config(var_dir=tmp_path / "var")
    config.service.database_url = f"sqlite:///{tmp_path / 'side.sqlite3'}"
    config.service.redis_url = redis_url
    config.service.queue = "side-test"
    config.service.public_url = "http://side.test"
    config.service.wiki_urls = {"testwiki_local": WIKI_URL}
    for key, value in service.items():
        setattr(config.service, key, value)
    return config


@contextmanager
def running_app(config: Config) -> Iterator[Flask]:
    """The app on ``config``; its store is closed afterwards so the SQLite file is released."""
    from gadget.server import create_app

    app = create_app(config)
    try:
        yield app
    finally:
        app.extensions["side"].store.close()


@contextmanager
def serving(server: Any) -> Iterator[Any]:
    """Run a waitress ``server`` (side-web's ``make_server``) in a thread until the block ends.

    Closing the server from the test's thread races the server thread's select() on the sockets
    it closes: an OSError once closing has begun is that teardown, not a server error."""
    closing = threading.Event()

    def run() -> None:
        try:
            server.run()
        except OSError:
            if not closing.is_set():
                raise

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        closing.set()
        server.close()
        thread.join(5)


@pytest.fixture
def web_config(tmp_path, redis_db) -> Config:
    return make_config(tmp_path, redis_db.url)


@pytest.fixture
def app(web_config) -> Iterator[Flask]:
    with running_app(web_config) as app:
        yield app


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def store(app) -> Store:
    return app.extensions["side"].store


def log_in(client, reviewer: str = "Patroller") -> str:
    """Log the test client in as the wiki user ``reviewer``, writing the session exactly as
    ``/auth/callback`` ends a login (tests/test_dashboard_login.py runs the real OAuth handshake
    with the wiki's OAuth extension); returns the CSRF token the dashboard's forms carry."""
    from gadget.server import login

    token = secrets.token_urlsafe(32)
    with client.session_transaction() as session:
        session[login.REVIEWER] = reviewer
        session[login.CSRF] = token
    return token


def reviewer_cookie(session_secret: str, reviewer: str = "Patroller") -> tuple[str, str]:
    """The login cookie (name, value) a served app with ``SIDE_LOGIN_SESSION_SECRET=session_secret``
    gives the wiki user ``reviewer`` at the end of a login, for a browser test to start logged in."""
    from flask.sessions import SecureCookieSessionInterface

    from gadget.server import login, security

    signer = Flask(__name__)
    signer.secret_key = session_secret
    serializer = SecureCookieSessionInterface().get_signing_serializer(signer)
    assert serializer is not None
    value = serializer.dumps({login.REVIEWER: reviewer, login.CSRF: secrets.token_urlsafe(32), "_permanent": True})
    return security.SESSION_COOKIE, value


def outcome(claim: Claim, score: float, flagged: bool, label: str = "REFUTES",
            suggestion: tuple[str, str, str] | None = None, evidence: tuple[str, ...] = (),
            level: VerdictLevel | None = None, unsupported: tuple[str, ...] = (), reportable: bool = False) -> Result:
    """One Result as a worker hands it to the store; ``suggestion`` is (url, title, sentence).

    ``level`` defaults to not supported for a flagged result, supported otherwise.
    """
    if level is None:
        level = VerdictLevel.NOT_SUPPORTED if flagged else VerdictLevel.SUPPORTED
    sentences = tuple(Evidence(text=t, sentence_index=n * 3, score=round(0.9 - n * 0.2, 2))
                      for n, t in enumerate(evidence))
    suggestions = []
    if suggestion:
        url, title, sentence = suggestion
        suggestions.append(Suggestion(url=url, title=title, score=0.91,
                                      evidence=Evidence(text=sentence, sentence_index=4, score=0.93),
                                      cite=cite_web(url, title)))
    return Result(claim=claim, source_status=SourceStatus.FETCHED,
                  verdict=Verdict(label=VerdictLabel(label), score=score, evidence=sentences, level=level,
                                  unsupported=unsupported),
                  rank=2 if flagged else 1, flagged=flagged, reportable=reportable,
                  reasons=["the cited source does not support the claim"] if flagged else [],
                  suggestions=suggestions)


def finish(store: Store, check_id: str, outcomes: list[Result], seconds: float = 1.5) -> None:
    """Run the worker's store calls for a check: start, then finish with these outcomes."""
    store.start(check_id)
    store.finish(check_id, outcomes, seconds)


def claims_body(wiki: str = "enwiki", title: str = "Alsea (company)", revision: int | None = 123,
                n: int = 1, **extra: Any) -> dict[str, Any]:
    """A valid ``POST /checks`` body with ``n`` claims keyed c0, c1, ..."""
    claims = [{"key": f"c{i}", "text": f"Alsea operates {i + 1} Starbucks stores in Mexico.",
               "left_context": f"Alsea is a restaurant operator. Alsea operates {i + 1} Starbucks stores in Mexico.",
               "section": ["History"], "url": f"https://example.org/report-{i}", "citation_title": "Annual report"}
              for i in range(n)]
    return {"wiki": wiki, "title": title, "revision": revision, "claims": claims, **extra}
