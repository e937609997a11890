"""Reviewers log in with their wiki account (Wikimedia OAuth 1.0a) before they accept or dismiss.

The handshake runs against the real thing: the local MediaWiki 1.39 with the OAuth extension
(REL1_39, tests/fixtures/mediawiki-oauth.tar.xz), a consumer registered and approved with the
extension's own maintenance script, the web service served by waitress on 127.0.0.1 exactly as
``side-web`` serves it, and a ``requests`` session as the reviewer's browser, which logs in to
the wiki as Alice and clicks "Allow" on ``Special:OAuth/authenticate``. The rest (anonymous
visitors, CSRF tokens, forged callbacks, configuration) is checked on the Flask test client. One
more test runs the handshake in headless Chromium, with the wiki's own login form and Allow button.
"""

from __future__ import annotations

import dataclasses
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import lxml.html
import pytest
import requests

from gadget.server import login
from gadget.server.serve import make_server
from side.config import load_config
from side.errors import ConfigError

from harness import free_port
from harness.browser import save_screenshot
from harness.mediawiki import is_installed, start_mediawiki
from webapp import claims_body, finish, log_in, make_config, outcome, running_app, serving

HTML = {"Accept": "text/html"}


def flag_one(client, store) -> int:
    """A flagged result with a suggestion, stored as a worker stores it; its id."""
    check = client.post("/api/v1/checks", json=claims_body()).get_json()["check"]
    suggestion = ("https://better.example/report", "Annual report", "Alsea operates 1 Starbucks store in Mexico.")
    finish(store, check["id"], [outcome(store.check(check["id"]).claims[0], 0.1, True, suggestion=suggestion)])
    return store.results(check["id"])[0].id


def page(response) -> lxml.html.HtmlElement:
    assert response.headers["Content-Type"].startswith("text/html"), response.text[:300]
    return lxml.html.fromstring(response.text)


# -- without a wiki: anonymous visitors, CSRF, forged callbacks -------------------------------

@pytest.fixture
def login_app(tmp_path, redis_db):
    config = make_config(tmp_path, redis_db.url)
    config.login.wiki_url = "http://127.0.0.1:9/index.php"  # nothing listens: no login can finish
    config.login.consumer_key, config.login.consumer_secret = "k" * 32, "s" * 40
    with running_app(config) as app:
        yield app


def test_anonymous_visitors_read_but_get_a_login_link_instead_of_review_buttons(login_app):
    client, store = login_app.test_client(), login_app.extensions["side"].store
    result_id = flag_one(client, store)
    response = client.get(f"/dashboard/results/{result_id}")
    assert response.status_code == 200
    doc = lxml.html.fromstring(response.get_data(as_text=True))
    assert doc.xpath("//blockquote[@class='context']/mark")  # the result is there to read
    assert not doc.xpath("//form[contains(@class, 'dismiss-form') or contains(@class, 'accept-form')]")
    links = doc.xpath("//p[@class='login-to-review']/a[@class='login-link']/@href")
    assert links and all(urlsplit(link).path == "/auth/login" for link in links)
    assert parse_qs(urlsplit(links[0]).query)["next"] == [f"/dashboard/results/{result_id}"]


def test_an_anonymous_review_is_refused_and_stores_nothing(login_app):
    client, store = login_app.test_client(), login_app.extensions["side"].store
    result_id = flag_one(client, store)
    form = client.post(f"/dashboard/results/{result_id}/feedback", data={"action": "dismiss", "reason": "other"},
                       headers=HTML)
    assert form.status_code == 401
    doc = lxml.html.fromstring(form.get_data(as_text=True))
    assert doc.xpath("//p[@class='error-message']/@data-code") == ["login_required"]
    assert doc.xpath("//a[@class='login-link']/@href")
    api = client.post("/api/v1/feedback", json={"result_id": result_id, "action": "accept"})
    assert api.status_code == 401 and api.get_json()["error"]["code"] == "login_required"
    assert store.feedback_for(result_id) == [] and store.result(result_id).review_status == "open"


@pytest.mark.parametrize("token", [None, "", "not-the-session-token", "jeton-fälscht-ünicode"])
def test_a_form_without_the_logins_csrf_token_is_403(login_app, token):
    client, store = login_app.test_client(), login_app.extensions["side"].store
    result_id = flag_one(client, store)
    log_in(client, "Alice")
    data = {"action": "accept"} | ({} if token is None else {"csrf_token": token})
    response = client.post(f"/dashboard/results/{result_id}/feedback", data=data)
    assert response.status_code == 403 and response.get_json()["error"]["code"] == "bad_csrf_token"
    assert store.feedback_for(result_id) == []


@pytest.mark.parametrize("query", [
    "oauth_token=forged&oauth_verifier=forged",  # no login was started in this browser
    "oauth_token=&oauth_verifier=",
    "",
    "oauth_token=" + "x" * 5000 + "&oauth_verifier=y",
    "oauth_token=%C3%A9t%C3%A9&oauth_verifier=%F0%9F%94%91",
    "oauth_token=%ED%A0%80&oauth_verifier=v",  # a lone surrogate, as bytes no UTF-8 decoder accepts
])
def test_a_forged_callback_is_a_clear_400(login_app, query):
    client = login_app.test_client()
    with client.session_transaction() as session:
        session["oauth_pending"] = "0" * 32  # a login this browser started
    response = client.get(f"/auth/callback?{query}", headers=HTML)
    assert response.status_code == 400
    doc = lxml.html.fromstring(response.get_data(as_text=True))
    assert doc.xpath("//p[@class='error-message']/@data-code") == ["login_refused"]
    assert client.get("/api/v1/openapi.json").status_code == 200  # still serving
    with client.session_transaction() as session:
        assert "reviewer" not in session


def test_a_callback_for_another_browsers_login_is_refused(login_app):
    """Login CSRF: the state this browser started is not the one the callback carries."""
    client = login_app.test_client()
    with client.session_transaction() as session:
        session["oauth_pending"] = "mine"
    response = client.get("/auth/callback?oauth_token=theirs&oauth_verifier=v")
    assert response.status_code == 400 and "does not match" in response.get_json()["error"]["message"]


def test_login_is_503_when_no_consumer_is_configured(client):
    response = client.get("/auth/login")
    assert response.status_code == 503 and response.get_json()["error"]["code"] == "login_unavailable"
    doc = lxml.html.fromstring(client.get("/dashboard/").get_data(as_text=True))
    assert not doc.xpath("//a[@class='login-link']")


def test_login_is_502_when_the_wiki_does_not_answer(login_app):
    response = login_app.test_client().get("/auth/login")
    assert response.status_code == 502 and response.get_json()["error"]["code"] == "wiki_unavailable"


def test_the_session_cookie_is_hardened(login_app):
    client = login_app.test_client()
    with client.session_transaction() as session:
        session["reviewer"] = "Alice"  # a login without a CSRF token yet: the next page makes one
    response = client.get("/dashboard/")
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith("side_session=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "Secure" not in cookie  # the test service is http; an https public_url adds it
    from gadget.server.security import session_cookie_settings
    assert session_cookie_settings("https://side.toolforge.org")["SESSION_COOKIE_SECURE"] is True


def test_secrets_come_from_the_environment_only(tmp_path):
    path = tmp_path / "side.toml"
    path.write_text('[login]\nconsumer_key = "abc"\nconsumer_secret = "hunter2"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="SIDE_LOGIN_CONSUMER_SECRET") as refused:
        load_config(path, environ={})
    assert "hunter2" not in str(refused.value)
    path.write_text('[login]\nconsumer_key = "abc"\n', encoding="utf-8")
    config = load_config(path, environ={"SIDE_LOGIN_CONSUMER_SECRET": "hunter2", "SIDE_LOGIN_SESSION_SECRET": "x"})
    assert config.login.consumer_secret == "hunter2" and config.login.consumer_key == "abc"
    assert "hunter2" not in repr(config)


# -- the real handshake with the wiki's OAuth extension ---------------------------------------

@pytest.fixture(scope="module")
def oauth_wiki(tmp_path_factory):
    """The local wiki with the OAuth extension, and a consumer for a service on ``port``."""
    ok, reason = is_installed()
    if not ok:
        import os
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"{reason}; CI must run the MediaWiki tests")
        pytest.skip(reason)
    wiki = start_mediawiki(tmp_path_factory.mktemp("oauth-wiki"), oauth=True)
    try:
        port = free_port()
        key, secret = wiki.create_oauth_consumer(f"http://127.0.0.1:{port}/auth/callback")
        yield wiki, port, key, secret
    finally:
        wiki.stop()


@pytest.fixture
def served(oauth_wiki, tmp_path, redis_db):
    """The web service on 127.0.0.1 (waitress, as side-web serves it), logging in with the wiki."""
    wiki, port, key, secret = oauth_wiki
    config = make_config(tmp_path, redis_db.url, public_url=f"http://127.0.0.1:{port}")
    config.login.wiki_url, config.login.consumer_key, config.login.consumer_secret = wiki.index, key, secret
    config.login.session_secret = "test-session-secret"
    with running_app(config) as app:
        with serving(make_server(app, config.service, host="127.0.0.1", port=port, threads=4)):
            yield app, f"http://127.0.0.1:{port}", wiki


def refusal(response) -> tuple[int, str, str]:
    """Status, code and message of the error page a browser is shown."""
    doc = page(response)
    [message] = doc.xpath("//p[@class='error-message']")
    return response.status_code, message.get("data-code"), message.text_content()


def browser(wiki, user: str | None = "Alice") -> requests.Session:
    """A reviewer's browser: one cookie jar for the wiki and the service, logged in to the wiki."""
    session = requests.Session()
    session.headers["Accept"] = "text/html,application/xhtml+xml,*/*;q=0.8"
    if user:
        wiki.log_in(session, user)
    return session


def start_login(session: requests.Session, base: str, next_path: str) -> str:
    """Follow a login link (to ``next_path`` afterwards) as far as the wiki; the wiki page it lands on."""
    return follow_login_link(session, f"{base}/auth/login?" + urlencode({"next": next_path}))


def follow_login_link(session: requests.Session, url: str) -> str:
    response = session.get(url, allow_redirects=False, timeout=30)
    assert response.status_code == 302, response.text[:500]
    return response.headers["Location"]


def test_a_reviewer_logs_in_on_the_wiki_and_the_review_records_their_user_name(served):
    app, base, wiki = served
    store = app.extensions["side"].store
    result_id = flag_one(app.test_client(), store)
    reviewer = browser(wiki)

    anonymous = page(reviewer.get(f"{base}/dashboard/results/{result_id}", timeout=30))
    login_link = anonymous.xpath("//p[@class='login-to-review']/a/@href")[0]
    assert not anonymous.xpath("//form[@class='dismiss-form']")
    authorize = follow_login_link(reviewer, urljoin(base, login_link))
    assert authorize.startswith(wiki.index) and "Special%3AOAuth%2Fauthenticate" in authorize
    callback = wiki.oauth_allow(reviewer, authorize)
    assert callback.startswith(f"{base}/auth/callback?") and "oauth_verifier=" in callback

    back = reviewer.get(callback, allow_redirects=False, timeout=30)
    assert back.status_code == 303 and back.headers["Location"] == f"/dashboard/results/{result_id}"
    doc = page(reviewer.get(base + back.headers["Location"], timeout=30))
    assert doc.xpath("//span[@class='logged-in-as']/text()") == ["Logged in as Alice"]
    [token] = doc.xpath("//form[@class='dismiss-form']/input[@name='csrf_token']/@value")
    assert not doc.xpath("//input[@name='user']")

    saved = reviewer.post(f"{base}/dashboard/results/{result_id}/feedback", allow_redirects=False, timeout=30,
                          data={"action": "dismiss", "reason": "source-is-fine", "csrf_token": token})
    assert saved.status_code == 303, saved.text[:500]
    [feedback] = store.feedback_for(result_id)
    assert (feedback.action, feedback.reason, feedback.reviewer) == ("dismiss", "source-is-fine", "Alice")
    history = page(reviewer.get(f"{base}/dashboard/results/{result_id}", timeout=30))
    assert history.xpath("//section[@class='card history']//span[@class='reviewer']/text()") == ["Alice"]

    # the same login reviews through the API, under the same name
    api = reviewer.post(f"{base}/api/v1/feedback", json={"result_id": result_id, "action": "accept"}, timeout=30,
                        headers={"Accept": "application/json"})
    assert api.status_code == 201 and api.json()["feedback"]["reviewer"] == "Alice"

    out = reviewer.post(f"{base}/auth/logout", data={"csrf_token": token, "next": "/dashboard/"},
                        allow_redirects=False, timeout=30)
    assert out.status_code == 303
    refused = reviewer.post(f"{base}/api/v1/feedback", json={"result_id": result_id, "action": "accept"},
                            timeout=30, headers={"Accept": "application/json"})
    assert refused.status_code == 401 and len(store.feedback_for(result_id)) == 2


def test_a_replayed_callback_is_refused(served):
    """The wiki's answer replayed, even with the cookie the login started with, finds its token used."""
    app, base, wiki = served
    reviewer = browser(wiki)
    authorize = start_login(reviewer, base, "/dashboard/")
    started_cookie = reviewer.cookies.get("side_session", domain="127.0.0.1")
    callback = wiki.oauth_allow(reviewer, authorize)
    assert reviewer.get(callback, allow_redirects=False, timeout=30).status_code == 303

    again = reviewer.get(callback, allow_redirects=False, timeout=30)
    assert refusal(again)[:2] == (400, "login_refused")
    replay = browser(wiki, None)
    replay.cookies.set("side_session", started_cookie, domain="127.0.0.1")
    status, code, message = refusal(replay.get(callback, allow_redirects=False, timeout=30))
    assert (status, code) == (400, "login_refused") and "already used" in message


def test_a_forged_state_or_verifier_is_refused(served):
    app, base, wiki = served
    # a forged state: this browser started a login, the callback names another request token
    victim = browser(wiki)
    authorize = start_login(victim, base, "/dashboard/")
    real_token = parse_qs(urlsplit(authorize).query)["oauth_token"][0]
    forged = victim.get(f"{base}/auth/callback", params={"oauth_token": "0" * 32, "oauth_verifier": "0" * 32},
                        allow_redirects=False, timeout=30)
    status, code, message = refusal(forged)
    assert (status, code) == (400, "login_refused") and "does not match" in message

    # login CSRF: an attacker allows their own request token, then feeds the victim its callback
    attacker = browser(wiki, "Admin")
    their_callback = wiki.oauth_allow(attacker, start_login(attacker, base, "/dashboard/"))
    planted = victim.get(their_callback, allow_redirects=False, timeout=30)
    assert refusal(planted)[:2] == (400, "login_refused")

    # the right state with a forged verifier: the wiki refuses the exchange, Side says so, and the
    # genuine callback cannot be tried after it (the pending login was used up)
    honest = browser(wiki)
    callback = wiki.oauth_allow(honest, start_login(honest, base, "/dashboard/"))
    query = parse_qs(urlsplit(callback).query)
    assert query["oauth_token"][0] != real_token
    wrong = honest.get(f"{base}/auth/callback", allow_redirects=False, timeout=30,
                       params={"oauth_token": query["oauth_token"][0], "oauth_verifier": "f" * 32})
    assert refusal(wrong)[:2] == (403, "login_refused")
    assert refusal(honest.get(callback, allow_redirects=False, timeout=30))[:2] == (400, "login_refused")
    for session in (victim, honest):
        answer = session.post(f"{base}/api/v1/feedback", json={"result_id": 1, "action": "accept"}, timeout=30,
                              headers={"Accept": "application/json"})
        assert answer.status_code == 401 and answer.json()["error"]["code"] == "login_required"


def test_the_login_returns_only_to_the_dashboard(served):
    app, base, wiki = served
    reviewer = browser(wiki)
    authorize = start_login(reviewer, base, "https://evil.example/dashboard/")
    back = reviewer.get(wiki.oauth_allow(reviewer, authorize), allow_redirects=False, timeout=30)
    assert back.status_code == 303 and back.headers["Location"] == "/dashboard/"


def test_the_identity_is_checked_before_it_is_believed(served):
    """The wiki's identity JWT is read only when it is signed for this consumer by this wiki."""
    app, base, wiki = served
    config = app.extensions["side"].config.login
    with app.test_request_context():
        token, secret = login.request_token(config, f"{base}/auth/callback")
        callback = wiki.oauth_allow(browser(wiki), login.authorize_url(config, token))
        access = login.access_token(config, token, secret, parse_qs(urlsplit(callback).query)["oauth_verifier"][0])
        assert login.identify(config, *access) == login.Identity(username="Alice", blocked=False)
        # a wrong consumer secret: the wiki refuses the signature, and no JWT verifies
        with pytest.raises(login.WikiRefusal, match="identity is not valid"):
            login.identify(dataclasses.replace(config, consumer_secret="0" * 40), *access)


def test_an_identity_issued_by_another_server_is_refused(served):
    """The JWT's issuer must be the wiki the login was configured for: the wiki's extension signs
    with the consumer secret, so only the issuer tells a statement about another wiki's account."""
    app, base, wiki = served
    config = app.extensions["side"].config.login
    with wiki.overriding(wgCanonicalServer="http://other-wiki.invalid"), app.test_request_context():
        token, secret = login.request_token(config, f"{base}/auth/callback")
        callback = wiki.oauth_allow(browser(wiki), login.authorize_url(config, token))
        access = login.access_token(config, token, secret, parse_qs(urlsplit(callback).query)["oauth_verifier"][0])
        with pytest.raises(login.WikiRefusal, match="issued by 'http://other-wiki.invalid', not the wiki"):
            login.identify(config, *access)
    # the same access token, once the wiki names itself again, identifies its user
    with app.test_request_context():
        assert login.identify(config, *access) == login.Identity(username="Alice", blocked=False)


def test_a_reviewer_logs_in_and_reviews_in_chromium(served, page):
    """The same handshake in headless Chromium: the wiki's own login form and its Allow button."""
    app, base, wiki = served
    store = app.extensions["side"].store
    result_id = flag_one(app.test_client(), store)
    alice = wiki.accounts["Alice"]
    page.goto(f"{wiki.index}?title=Special:UserLogin")
    page.fill("#wpName1", alice.name)
    page.fill("#wpPassword1", alice.password)
    page.click("#wpLoginAttempt")
    page.wait_for_url(lambda url: "Special:UserLogin" not in url)

    page.goto(f"{base}/dashboard/results/{result_id}")
    assert page.locator("form.dismiss-form").count() == 0
    page.locator("p.login-to-review a.login-link").first.click()
    page.wait_for_url(lambda url: "Special:OAuth" in url or "Special%3AOAuth" in url)
    # the wiki's script moves the form into a dialog as it opens: a click before it is ready can
    # land on the form while it moves, and nothing is submitted
    allow = page.locator(".oo-ui-window-ready .oo-ui-messageDialog-text #mw-mwoauth-authorize-form "
                         "button[name='accept']")
    allow.wait_for(state="visible")
    save_screenshot(page, "dashboard_login_1_authorize")
    allow.click()
    page.wait_for_url(f"{base}/dashboard/results/{result_id}")
    assert page.locator("span.logged-in-as").inner_text() == "Logged in as Alice"

    page.locator("form.dismiss-form input[value='not-relevant']").check()
    page.locator("form.dismiss-form button.dismiss").click()
    page.wait_for_url(lambda url: "saved=dismiss" in url)
    save_screenshot(page, "dashboard_login_2_reviewed")
    [feedback] = store.feedback_for(result_id)
    assert (feedback.action, feedback.reason, feedback.reviewer) == ("dismiss", "not-relevant", "Alice")
    assert page.locator("section.history span.reviewer").inner_text() == "Alice"


def test_a_user_blocked_on_the_wiki_cannot_log_in_to_review(served):
    """The wiki's identity says the user is blocked: the login is refused (403), nobody is logged in."""
    app, base, wiki = served
    wiki.add_account("Blockedreviewer")
    reviewer = browser(wiki, "Blockedreviewer")
    wiki.run_maintenance("blockUsers.php", "--performer", "Admin", "--reason", "test", "--disable-autoblock",
                         input="Blockedreviewer\n")
    callback = wiki.oauth_allow(reviewer, start_login(reviewer, base, "/dashboard/"))
    status, code, message = refusal(reviewer.get(callback, allow_redirects=False, timeout=30))
    assert (status, code) == (403, "blocked") and "Blockedreviewer" in message
    answer = reviewer.post(f"{base}/api/v1/feedback", json={"result_id": 1, "action": "accept"}, timeout=30,
                           headers={"Accept": "application/json"})
    assert answer.status_code == 401
