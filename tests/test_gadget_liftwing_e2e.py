"""The editor gadget under Wikipedia's 2026 Content-Security-Policy, answered by Lift Wing.

Since 5 March 2026 Wikipedia lets a page load scripts and open connections only to Wikimedia
hosts (T419234): a gadget that calls its own Toolforge service is blocked by the browser, and
Side's gadget asks Side's verifier on Lift Wing through ``api.wikimedia.org`` instead. This test
puts the gadget in those conditions, every part real and on 127.0.0.1:

* a MediaWiki 1.39 of its own (``php -S``, the gadget installed by ``python -m gadget.deploy``)
  whose every page sends enwiki's 2026 ``Content-Security-Policy`` (:data:`ENWIKI_CSP`);
* Side's KServe model server (``python -m deploy.liftwing.side_verifier.model``) with a small
  evidence index, behind a TLS front for ``api.wikimedia.org`` (:class:`ApiGateway`) that does
  what Wikimedia's API Gateway does for the gadget: rewrites ``/service/lw/inference/v1/models/…``
  to the model server's ``/v1/models/…`` and answers the CORS preflight;
* Chromium, told that ``api.wikimedia.org`` is that front (``--host-resolver-rules``) and to
  trust its test certificate authority (``--ignore-certificate-errors-spki-list``, the
  documented switch for a test CA).

The editor's gadget asks Lift Wing and shows the hints (the good citation supported, the bad
one not, with the better source from the index); the same page configured with a Toolforge
backend is blocked by the CSP and the panel says so once, calmly, and sends nothing again.
Screenshots of both are kept in the test's tmp folder and copied to ``$SIDE_SCREENSHOTS`` when set.
Outside CI the module skips when Chromium, MediaWiki or KServe is missing; in CI that fails.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import http.client
import importlib.util
import ipaddress
import json
import os
import shutil
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from test_gadget_e2e import (
    BAD_CLAIM,
    EDITOR,
    GOOD_CLAIM,
    NEEDS_REVIEW,
    TITLE,
    add_deployer,
    add_editor,
    build_index,
    deploy,
    hint,
    login,
    open_editor,
    serve_sources,
    wait_for_verdicts,
)

from conftest import IN_CI
from harness.browser import CHROMIUM, CHROMIUM_ARGS, VIEWPORT
from harness.liftwing import MODEL, start_model_server
from harness.mediawiki import MediaWiki, is_installed, start_mediawiki
from httpserver import LocalServer

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
GATEWAY_HOST = "api.wikimedia.org"
#: The public path of a Lift Wing model behind the API Gateway, and what the gateway makes of it.
LIFTWING_PREFIX = "/service/lw/inference/v1/models/"
MODEL_SERVER_PREFIX = "/v1/models/"
LIFTWING_URL = f"https://{GATEWAY_HOST}{LIFTWING_PREFIX}{MODEL}:predict"
TOOLFORGE_URL = "https://side-verifier.toolforge.org"
STARTUP_S = 240

_WIKIMEDIA_HOSTS = ("*.wikimedia.org *.wikipedia.org *.wikidata.org *.wiktionary.org *.wikibooks.org *.wikinews.org "
                    "*.wikiquote.org *.wikisource.org wikisource.org *.wikiversity.org *.wikivoyage.org "
                    "*.wikifunctions.org *.mediawiki.org wikimedia.org")
#: enwiki's Content-Security-Policy as enforced since the 2026 CSP rollout (5 March 2026, after
#: the Meta-Wiki user-script incident; the gadget breakage is Phabricator T419234, the allowlist
#: T419265). RECONSTRUCTED, not copied: no network here to read the live header, so it is written
#: from the announcement (mediawiki.org "Product Safety and Integrity/Account Security/Securing
#: User-Managed Code") and the shape of Wikimedia's earlier report-only header: scripts and
#: connections only to 'self' and the Wikimedia project domains, inline scripts and eval still
#: allowed (ResourceLoader needs both). There is no connect-src: connections fall back to
#: default-src, which is what blocks a Toolforge or Cloudflare backend. The report-uri of the
#: real header (/w/api.php?action=cspreport...) is left out: this wiki has no /w/ path.
ENWIKI_CSP = (f"default-src 'self' data: blob: {_WIKIMEDIA_HOSTS} 'unsafe-inline' 'unsafe-eval'; "
              f"script-src 'self' blob: {_WIKIMEDIA_HOSTS} 'unsafe-inline' 'unsafe-eval'; "
              f"style-src 'self' data: blob: {_WIKIMEDIA_HOSTS} 'unsafe-inline'; "
              "object-src 'none'")
#: What api.wikimedia.org answers a CORS preflight with (any origin; the gateway's own headers).
PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, HEAD, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Api-User-Agent, Authorization, Content-Type",
    "Access-Control-Max-Age": "86400",
}


def _fail_or_skip(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason}; CI must run the gadget's Lift Wing test")
    pytest.skip(reason)


# -- the test certificate authority and the API Gateway's TLS front ---------------------------

@dataclass(frozen=True)
class LocalCA:
    """A certificate authority made for this run and ``api.wikimedia.org``'s certificate."""

    cert_file: Path
    key_file: Path
    #: base64 SHA-256 of the public keys (CA's, server's): Chromium's trust list for the test.
    spki_hashes: tuple[str, ...]


def make_test_ca(folder: Path, host: str) -> LocalCA:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Side test CA (not trusted anywhere)")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_file, key_file = folder / "api.wikimedia.org.pem", folder / "api.wikimedia.org.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_file.chmod(0o600)

    def spki(certificate: Any) -> str:
        der = certificate.public_key().public_bytes(serialization.Encoding.DER,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo)
        return base64.b64encode(hashlib.sha256(der).digest()).decode()

    return LocalCA(cert_file, key_file, (spki(ca), spki(cert)))


@dataclass
class GatewayRequest:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class ApiGateway:
    """``https://api.wikimedia.org`` for the test: TLS with the test CA's certificate, Lift Wing's
    public path rewritten to the model server's, CORS as the gateway answers it. Every request
    it saw is in ``requests``."""

    upstream_port: int
    ca: LocalCA
    port: int = 0
    requests: list[GatewayRequest] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

            def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_OPTIONS(self) -> None:  # noqa: N802 - http.server's naming
                gateway.requests.append(GatewayRequest("OPTIONS", self.path, dict(self.headers.items())))
                self._answer(204, b"", PREFLIGHT_HEADERS)

            def do_POST(self) -> None:  # noqa: N802
                gateway.requests.append(GatewayRequest("POST", self.path, dict(self.headers.items())))
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                cors = {"Access-Control-Allow-Origin": "*"}
                if not self.path.startswith(LIFTWING_PREFIX):
                    self._answer(404, b'{"httpCode": 404, "httpReason": "Not Found"}',
                                 {**cors, "Content-Type": "application/json"})
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", gateway.upstream_port, timeout=180)
                try:
                    upstream.request("POST", MODEL_SERVER_PREFIX + self.path[len(LIFTWING_PREFIX):], body=body,
                                     headers={"Content-Type": self.headers.get("Content-Type", "application/json")})
                    answer = upstream.getresponse()
                    data = answer.read()
                finally:
                    upstream.close()
                self._answer(answer.status, data,
                             {**cors, "Content-Type": answer.getheader("Content-Type", "application/json")})

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.ca.cert_file, self.ca.key_file)
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        server.daemon_threads = True
        self._server = server
        self.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def posts(self) -> list[GatewayRequest]:
        return [r for r in self.requests if r.method == "POST"]


# -- fixtures ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gadget-liftwing")


@pytest.fixture(scope="module")
def needs() -> None:
    """Chromium, Playwright, MediaWiki and KServe, or a clear skip (a failure in CI)."""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        _fail_or_skip(f"Chromium not found at {CHROMIUM} (run scripts/install.sh)")
    if importlib.util.find_spec("playwright") is None:
        _fail_or_skip("playwright is not installed (pip install -e '.[dev]')")
    ok, reason = is_installed()
    if not ok:
        _fail_or_skip(reason)
    if importlib.util.find_spec("kserve") is None:
        _fail_or_skip("kserve is not installed (pip install -e '.[liftwing]')")


@pytest.fixture(scope="module")
def sources(needs) -> Iterator[LocalServer]:
    with LocalServer() as server:
        yield serve_sources(server)


@pytest.fixture(scope="module")
def index_dir(folder: Path, sources: LocalServer) -> Path:
    """A small evidence index: the better source and a distractor (suggestions come from it)."""
    return build_index(folder, sources)


@pytest.fixture(scope="module")
def model_server(folder: Path, index_dir: Path) -> Iterator[int]:
    """Side's Lift Wing model server on 127.0.0.1, as Lift Wing runs it; yields its port."""
    env = {"INDEX_PATH": str(index_dir), "SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1", "SIDE_FETCH_WAYBACK_API": "",
           "SIDE_VAR_DIR": str(folder / "var"), "WIKI_API_URL": "http://127.0.0.1:9/api.php"}
    with start_model_server(folder, env, STARTUP_S) as port:
        yield port


@pytest.fixture(scope="module")
def gateway(folder: Path, model_server: int) -> Iterator[ApiGateway]:
    front = ApiGateway(model_server, make_test_ca(folder, GATEWAY_HOST))
    front.start()
    yield front
    front.stop()


@pytest.fixture(scope="module")
def wiki(folder: Path, needs) -> Iterator[MediaWiki]:
    """A wiki of its own whose every page sends enwiki's 2026 Content-Security-Policy."""
    instance = start_mediawiki(folder / "wiki", headers={"Content-Security-Policy": ENWIKI_CSP})
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture(scope="module")
def installed(wiki: MediaWiki, sources: LocalServer) -> str:
    """The gadget deployed by an interface admin (its default configuration), an editor who
    turned it on, and the article. Returns the editor's password."""
    add_deployer(wiki)
    done = deploy(wiki)
    assert done.returncode == 0, done.stderr
    return add_editor(wiki, sources)


@pytest.fixture(scope="module")
def chromium(browser, gateway: ApiGateway) -> Iterator[Any]:
    """A Chromium for which api.wikimedia.org is the local gateway, trusting the test CA only
    for it (a second browser of the session's Playwright, with its own switches)."""
    instance = browser.browser_type.launch(executable_path=CHROMIUM, headless=True, args=[
        *CHROMIUM_ARGS,
        f"--host-resolver-rules=MAP {GATEWAY_HOST} 127.0.0.1:{gateway.port}",
        f"--ignore-certificate-errors-spki-list={','.join(gateway.ca.spki_hashes)}",
    ])
    yield instance
    instance.close()


@pytest.fixture
def tab(chromium) -> Iterator[Any]:
    """A fresh page; its console errors on ``tab.side_console``."""
    context = chromium.new_context(viewport=VIEWPORT, locale="en-US")
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.side_console = []
    page.on("console", lambda m: page.side_console.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.side_console.append(f"pageerror: {e}"))
    yield page
    context.close()


def user_config(wiki: MediaWiki, script: str) -> None:
    """``User:<editor>/common.js``: how an editor points the gadget at a backend."""
    wiki.edit(f"User:{EDITOR}/common.js", script, user=EDITOR, summary="gadget test")


def screenshot(page: Any, folder: Path, name: str) -> Path:
    """A PNG in the test's tmp folder, copied to $SIDE_SCREENSHOTS when that is set."""
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    if os.environ.get("SIDE_SCREENSHOTS"):
        target = Path(os.environ["SIDE_SCREENSHOTS"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target / path.name)
    return path


# -- tests ------------------------------------------------------------------------------------

def test_the_wiki_sends_wikipedias_content_security_policy(wiki: MediaWiki, installed: str) -> None:
    response = requests.get(wiki.index, params={"title": TITLE, "action": "edit"}, timeout=30)
    assert response.headers["Content-Security-Policy"] == ENWIKI_CSP


def test_hints_come_through_lift_wing_under_wikipedias_csp(tab, wiki, installed, gateway, sources, folder):
    # Where the wiki's configuration page would name the served model (no address is built in).
    user_config(wiki, f"window.sideGadgetConfig = {{ backend: 'liftwing', liftwingUrl: '{LIFTWING_URL}' }};")
    login(tab, wiki, installed)
    open_editor(tab, wiki)
    panel = tab.locator(".side-panel")
    assert f"https://{GATEWAY_HOST}" in panel.inner_text()  # the consent names where claims go
    tab.click(".side-consent-allow")

    wait_for_verdicts(tab, 2)
    good, bad = tab.locator(".side-hint").first, hint(tab, *NEEDS_REVIEW)
    assert GOOD_CLAIM in good.inner_text() and good.get_attribute("data-side-level") == "supported"
    assert bad.count() == 1 and BAD_CLAIM in bad.inner_text()
    assert "Source says:" in bad.inner_text()
    assert bad.locator(".side-suggestion a").first.get_attribute("href") == sources.url("/alsea-history")
    assert tab.locator(".side-panel[data-side-error]").count() == 0
    tab.locator(".side-panel").scroll_into_view_if_needed()
    screenshot(tab, folder, "gadget-liftwing-hints")

    posts = gateway.posts()
    assert [p.path for p in posts] == [f"{LIFTWING_PREFIX}{MODEL}:predict"]
    assert posts[0].headers.get("Api-User-Agent", "").startswith("Side citation gadget (")
    assert any(r.method == "OPTIONS" for r in gateway.requests)  # the browser's CORS preflight
    assert not [m for m in tab.side_console if "Content Security Policy" in m or "pageerror" in m], tab.side_console


def test_a_toolforge_backend_is_blocked_and_the_gadget_says_so_once(tab, wiki, installed, gateway, folder):
    user_config(wiki, f"window.sideGadgetConfig = {{ backend: 'side', apiUrl: '{TOOLFORGE_URL}' }};")
    wiki.call({"action": "options", "change": "userjs-side-consent=granted", "token": wiki.token(EDITOR)},
              EDITOR, post=True)
    before = len(gateway.requests)
    login(tab, wiki, installed)
    open_editor(tab, wiki)
    tab.wait_for_selector('.side-panel[data-side-error="csp"]', timeout=30_000)
    messages = tab.locator(".side-panel .cdx-message")
    assert messages.count() == 1
    # The gadget's own sentence for a CSP block, nothing more (no stack, no error object).
    csp_message = json.loads((REPO / "gadget" / "i18n" / "en.json").read_text(encoding="utf-8"))["side-error-csp"]
    assert messages.inner_text().strip() == csp_message.replace("$1", TOOLFORGE_URL)
    # The browser refused it, citing the policy's default-src (there is no connect-src).
    def refusals() -> list[str]:
        return [m for m in tab.side_console if "Content Security Policy" in m and TOOLFORGE_URL in m]

    assert refusals() and all("default-src" in m for m in refusals()), tab.side_console

    textarea = tab.locator("#wpTextbox1")
    textarea.press("Control+End")
    textarea.type(" Typed after the block.")
    tab.wait_for_timeout(4000)  # over two debounce periods: the gadget must not try again
    assert textarea.input_value().endswith(" Typed after the block.")
    assert len(refusals()) == 1, refusals()  # one attempt, refused once
    assert messages.count() == 1 and len(gateway.requests) == before
    tab.locator(".side-panel").scroll_into_view_if_needed()
    screenshot(tab, folder, "gadget-toolforge-blocked")
