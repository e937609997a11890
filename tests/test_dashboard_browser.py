"""The patrol flow in real headless Chromium against the served app with a real worker.

The whole stack runs on 127.0.0.1 as in production (``service_stack``: Redis, ``side-worker``
with the shipped verifier and a small evidence index, ``python -m gadget.server.serve``).
A wikitext snippet citing a page that does not support its claim is submitted through the API;
the worker flags it and suggests a better source; a patroller opens the queue in Chromium,
reads the detail page and dismisses the flag with a reason, and the store records it under the
reviewer's wiki user name (the browser starts with the login cookie the service's OAuth login
gives; the handshake with the wiki's OAuth extension itself is tests/test_dashboard_login.py).
Screenshots of each step are kept under artifacts/screenshots/ (the ``page`` fixture of
tests/harness/browser.py drives Debian's Chromium through Playwright). The served app is also
checked for the reliability rules over real HTTP (waitress in front): malformed JSON, huge
bodies, unknown ids and disallowed origins get the right 4xx and store nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import requests
from playwright.sync_api import expect

from side.retrieval.corpus import Document, build_corpus
from side.retrieval.retriever import build_index

from harness.browser import save_screenshot
from httpserver import LocalServer, Response
from webapp import reviewer_cookie

LOCAL_WIKI = "http://wiki.test:8080"
SESSION_SECRET = "dashboard-browser-test"
#: Seconds the worker may take to load the model and score the check on 2 CPU cores.
CHECK_TIMEOUT_S = 240

DOCS = [
    Document("d1", "https://museum.example/eiffel/height", "Eiffel Tower facts",
             "The Eiffel Tower is 330 metres (1,083 ft) tall. It was the tallest man-made structure in the "
             "world until 1930. Gustave Eiffel's engineering company designed and built the tower."),
    Document("d2", "https://fish.example/salmon", "Salmon",
             "Salmon migrate upstream to spawn in freshwater rivers. Many species of trout live in cold lakes."),
]
BAD_PAGE = b"""<html><head><title>Salmon</title></head><body><article><h1>Salmon</h1>
<p>Salmon migrate upstream to spawn in freshwater rivers.</p>
<p>Many species of trout live in cold lakes, and fishing licences are required in most regions.</p>
</article></body></html>"""
SNIPPET = ("== Design ==\nThe tower was completed in 1889. The Eiffel Tower is 330 metres tall."
           "<ref>{{cite web |url=BAD_URL |title=Salmon}}</ref>\n")


@pytest.fixture(scope="module")
def sources():
    with LocalServer() as server:
        server.add("/", Response(BAD_PAGE))
        yield server


@pytest.fixture(scope="module")
def var_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dashboard-var")
    build_index(build_corpus(DOCS, folder / "index" / "corpus"), folder / "index", progress=False)
    return folder


@pytest.fixture(scope="module")
def stack(service_stack, var_dir):
    return service_stack(var_dir=var_dir, env={"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1",
                                               "SIDE_SERVICE_WIKI_URLS": f"localwiki={LOCAL_WIKI}",
                                               "SIDE_SERVICE_RATE_LIMIT": "1000/minute",
                                               "SIDE_LOGIN_SESSION_SECRET": SESSION_SECRET})


def log_in(page, stack, reviewer: str = "Patroller") -> None:
    name, value = reviewer_cookie(SESSION_SECRET, reviewer)
    page.context.add_cookies([{"name": name, "value": value, "url": stack.web_url}])


def screenshot(page, name: str) -> Path:
    return save_screenshot(page, f"dashboard_{name}")


@pytest.fixture(scope="module")
def flagged_check(stack, sources):
    """Submit the snippet through the served API and wait for the worker's verdict."""
    body = {"wiki": "localwiki", "title": "Eiffel Tower", "revision": 42, "parent_revision": 41,
            "wikitext": SNIPPET.replace("BAD_URL", sources.url("/"))}
    response = requests.post(f"{stack.api_url}/checks", json=body, timeout=30)
    assert response.status_code == 202, response.text
    check_id = response.json()["check"]["id"]
    assert response.headers["Location"] == f"/api/v1/checks/{check_id}"
    record = stack.wait_for(check_id, timeout=CHECK_TIMEOUT_S)
    assert record.status == "done", record.error
    return check_id


def test_a_flagged_citation_is_dismissed_with_a_reason(stack, flagged_check, page):
    store = stack.store()
    [result] = store.results(flagged_check)
    assert result.flagged and result.suggestions, result.to_dict()
    api = requests.get(f"{stack.api_url}/checks/{flagged_check}", timeout=10).json()["check"]
    assert api["results"][0]["level"] == result.level and result.level.needs_review

    log_in(page, stack, "Patroller")
    page.goto(f"{stack.web_url}/dashboard/")
    row = page.locator(f"tr[data-result-id='{result.id}']")
    row.wait_for()
    assert "330 metres" in row.inner_text()
    screenshot(page, "1_queue")

    row.locator("a.result-link").click()
    page.wait_for_url(re.compile(rf"/dashboard/results/{result.id}$"))
    assert page.locator("blockquote.context > mark").inner_text() == result.claim_text  # unsupported words nest inside
    assert page.locator("a.diff-link").get_attribute("href") == f"{LOCAL_WIKI}/index.php?diff=42&oldid=41"
    suggestion = page.locator("article.suggestion").first
    assert suggestion.locator("a.suggestion-link").get_attribute("href") == DOCS[0].url
    assert "330 metres" in suggestion.locator("blockquote.evidence mark").inner_text()
    assert suggestion.locator("textarea.cite-text").input_value().startswith(f"{{{{cite web |url={DOCS[0].url}")
    screenshot(page, "2_detail")

    page.locator("form.dismiss-form input[value='source-is-fine']").check()
    page.locator("form.dismiss-form textarea[name='comment']").fill("The page is about salmon, but see p. 2.")
    assert page.locator("form.dismiss-form p.reviewing-as").inner_text() == "Reviewing as Patroller."
    page.locator("form.dismiss-form button.dismiss").click()
    page.wait_for_url(re.compile(r"saved=dismiss"))
    assert page.locator("p.notice").inner_text() == "Saved: dismissed."
    screenshot(page, "3_dismissed")

    assert store.result(result.id).review_status == "dismissed"
    [feedback] = store.feedback_for(result.id)
    assert (feedback.action, feedback.reason, feedback.reviewer) == ("dismiss", "source-is-fine", "Patroller")
    page.goto(f"{stack.web_url}/dashboard/")
    assert page.locator(f"tr[data-result-id='{result.id}']").count() == 0
    assert page.side_console == []


def test_a_dismissal_needs_a_reason_in_the_browser(stack, flagged_check, page):
    """The form will not submit without a reason (HTML ``required``), so nothing is stored."""
    [result] = stack.store().results(flagged_check)
    before = stack.store().feedback_for(result.id)
    log_in(page, stack)
    page.goto(f"{stack.web_url}/dashboard/results/{result.id}")
    page.locator("form.dismiss-form button.dismiss").click()
    assert page.evaluate("document.querySelector('form.dismiss-form input[name=reason]').validity.valueMissing")
    assert page.url.endswith(f"/dashboard/results/{result.id}")
    assert stack.store().feedback_for(result.id) == before


def test_copy_button_copies_the_citation(stack, flagged_check, page):
    [result] = stack.store().results(flagged_check)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=stack.web_url)
    page.goto(f"{stack.web_url}/dashboard/results/{result.id}")
    page.locator("button.copy").first.click()
    # The clipboard write is a promise: wait for it to settle instead of reading the label at once.
    expect(page.locator("button.copy").first).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()").startswith("{{cite web |url=")


def test_pages_work_under_the_content_security_policy(stack, flagged_check, page):
    """No inline script or style: every page loads with the policy in force and nothing is
    refused (a refusal is a console error), the score bars keep their width, copy still works."""
    [result] = stack.store().results(flagged_check)
    paths = ["/dashboard/", f"/dashboard/checks/{flagged_check}", "/dashboard/stats", f"/dashboard/results/{result.id}"]
    for path in paths:
        response = page.goto(f"{stack.web_url}{path}")
        headers = response.all_headers()
        assert "script-src 'self'" in headers["content-security-policy"], path
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "same-origin"
    score = float(page.locator("article.suggestion .score-num").first.inner_text())  # e.g. 0.91
    bar = page.locator("article.suggestion .score-fill").first
    assert score > 0.5 and abs(bar.evaluate("e => e.getBoundingClientRect().width") - 56 * score) < 1.5
    # Chromium reports each refusal as a console error; a favicon fetch cut short by the next
    # navigation (requestfailed) is not one.
    assert [m for m in page.side_console if not m.startswith("requestfailed:")] == []


def test_stats_page_renders_its_plots(stack, flagged_check, page):
    page.goto(f"{stack.web_url}/dashboard/stats")
    assert page.locator("svg.chart").count() == 5
    flagged = "svg rect.bar-not-supported, svg rect.bar-partially-supported"
    assert page.locator(flagged).count() >= 4  # the level bars (two), the score histogram and the day
    box = page.locator("svg.chart[aria-label^='Distribution']").bounding_box()  # the score histogram
    assert box["width"] > 500 and box["height"] > 150
    screenshot(page, "4_stats")
    assert page.side_console == []


# -- reliability over real HTTP -----------------------------------------------------------------

def checks_in_store(stack) -> int:
    return len(stack.store().checks(limit=1000))


def test_served_app_refuses_bad_requests_and_stores_nothing(stack, flagged_check):
    api, before = stack.api_url, checks_in_store(stack)
    cases = [
        (requests.post(f"{api}/checks", data=b'{"wiki": ', headers={"Content-Type": "application/json"},
                       timeout=10), 400),
        (requests.post(f"{api}/checks", data=b"x" * (1024 * 1024), headers={"Content-Type": "application/json"},
                       timeout=30), 413),
        # beyond waitress's own buffer (4x the limit): waitress answers, in the same JSON shape
        (requests.post(f"{api}/checks", data=b"x" * (3 * 1024 * 1024), headers={"Content-Type": "application/json"},
                       timeout=30), 413),
        (requests.post(f"{api}/checks", data="[" * 50_000 + "]" * 50_000, headers={"Content-Type": "application/json"},
                       timeout=30), 400),
        (requests.post(f"{api}/checks", data="wiki=enwiki", timeout=10), 415),
        (requests.get(f"{api}/checks/chk_{'0' * 32}", timeout=10), 404),
        (requests.post(f"{api}/checks", json={"wiki": "enwiki", "title": "A", "claims": [{"text": "A."}]},
                       headers={"Origin": "https://evil.example"}, timeout=10), 403),
        (requests.delete(f"{api}/checks", timeout=10), 405),
    ]
    for response, status in cases:
        assert response.status_code == status, response.text
        assert response.headers["Content-Type"] == "application/json"
        assert set(json.loads(response.text)["error"]) == {"code", "message"}
    assert checks_in_store(stack) == before


def test_served_app_reports_health_with_a_live_worker(stack):
    body = requests.get(f"{stack.web_url}/healthz", timeout=10).json()
    assert body["status"] == "ok", body
    assert body["components"]["workers"]["live"] == 1
    metrics = requests.get(f"{stack.web_url}/metrics", timeout=10).text
    assert 'side_checks{status="done"}' in metrics
