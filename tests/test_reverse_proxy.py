"""The web service behind a real reverse proxy, as on Toolforge: each client its own rate limit.

nginx (tests/harness/nginx.py) forwards to side-web (waitress, as ``side-web`` serves it) and
appends the client's address to ``X-Forwarded-For``, as Toolforge's front proxy does. Two
clients connect from different loopback addresses (127.0.0.2 and 127.0.0.3). With
``service.proxy_hops = 1`` (Toolforge's setting) each has its own budget and a client cannot
take another's by sending ``X-Forwarded-For`` itself; with 0 every client has the proxy's
address, and all of them share one budget (what an outside probe saw: 8 clients, one 60/min).
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gadget.server.serve import make_server

from harness.nginx import ReverseProxy, need_nginx
from webapp import claims_body, make_config, running_app, serving

#: The test's budget: three POSTs a minute per client.
LIMIT = 3
CLIENT_A, CLIENT_B = "127.0.0.2", "127.0.0.3"
REPO = Path(__file__).resolve().parent.parent


@contextmanager
def proxied_service(tmp_path, redis_url: str, proxy_hops: int) -> Iterator[ReverseProxy]:
    """side-web on a free port with ``proxy_hops``, behind nginx."""
    need_nginx()
    config = make_config(tmp_path, redis_url, rate_limit=f"{LIMIT}/minute", proxy_hops=proxy_hops)
    with running_app(config) as app:
        with serving(make_server(app, config.service, host="127.0.0.1", port=0, threads=4)) as server:
            with ReverseProxy(tmp_path / "nginx", server.effective_port) as proxy:
                yield proxy


def post_from(source: str, proxy: ReverseProxy, revision: int, **headers: str) -> int:
    """POST a check to the proxy from the loopback address ``source``; the status."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30, source_address=(source, 0))
    try:
        conn.request("POST", "/api/v1/checks", json.dumps(claims_body(revision=revision)),
                     {"Content-Type": "application/json", **headers})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_behind_one_proxy_each_client_has_its_own_budget(tmp_path, redis_db):
    with proxied_service(tmp_path, redis_db.url, proxy_hops=1) as proxy:
        assert [post_from(CLIENT_A, proxy, n) for n in range(LIMIT)] == [202] * LIMIT
        assert post_from(CLIENT_A, proxy, 10) == 429
        # a header of its own does not make client A someone else: nginx appends the real address
        assert post_from(CLIENT_A, proxy, 11, **{"X-Forwarded-For": "192.0.2.9"}) == 429
        assert [post_from(CLIENT_B, proxy, 20 + n) for n in range(LIMIT)] == [202] * LIMIT
        assert post_from(CLIENT_B, proxy, 30) == 429
    log = (tmp_path / "nginx" / "access.log").read_text()
    assert CLIENT_A in log and CLIENT_B in log  # the requests really went through nginx


def test_without_proxy_hops_every_client_behind_the_proxy_shares_one_budget(tmp_path, redis_db):
    with proxied_service(tmp_path, redis_db.url, proxy_hops=0) as proxy:
        assert [post_from(CLIENT_A, proxy, n) for n in range(LIMIT)] == [202] * LIMIT
        assert post_from(CLIENT_B, proxy, 20) == 429


@pytest.fixture(autouse=True)
def _loopback_aliases():
    """127.0.0.2 and 127.0.0.3 must be usable source addresses (they are on Linux)."""
    import socket

    for address in (CLIENT_A, CLIENT_B):
        with socket.socket() as sock:
            try:
                sock.bind((address, 0))
            except OSError as exc:
                pytest.skip(f"cannot bind {address}: {exc}")


def test_the_toolforge_entry_point_reads_the_tools_side_toml_and_trusts_one_hop(tmp_path, redis_db):
    """uwsgi runs app.py in $HOME/www/python/src, behind Toolforge's one front proxy."""
    home = tmp_path / "home"
    (home / "www" / "python" / "src").mkdir(parents=True)
    (home / "side.toml").write_text('[service]\nqueue = "side-toolforge"\n')
    env = {key: value for key, value in os.environ.items() if not key.startswith("SIDE_")}
    env.update(HOME=str(home), PYTHONPATH=str(REPO), SIDE_SERVICE_REDIS_URL=redis_db.url,
               SIDE_SERVICE_DATABASE_URL=f"sqlite:///{tmp_path / 'side.sqlite3'}", SIDE_VAR_DIR=str(tmp_path / "var"))
    script = ("import runpy, sys; app = runpy.run_path(sys.argv[1])['app']; "
              "print(type(app.wsgi_app).__name__, app.wsgi_app.x_for, app.extensions['side'].config.service.queue)")
    done = subprocess.run([sys.executable, "-c", script, str(REPO / "deploy" / "toolforge" / "app.py")],
                          cwd=home / "www" / "python" / "src", env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ProxyFix", "1", "side-toolforge"]
