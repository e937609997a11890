"""A real ``side-worker`` checks a revision's lead against its body with the citations, stores
both, and the running web service's article page lists the lead claims the body does not support.

Real Redis, real worker subprocess with the real model, real web service (tests/harness/stack.py);
the cited source is served on 127.0.0.1.
"""

from __future__ import annotations

import lxml.html
import pytest
import requests
from test_lead import ARTICLE

from service.store import CheckRequest, Origin
from side.extract.claims import Citation, Claim
from side.extract.lead import read_lead
from side.verify.levels import VerdictLevel

from httpserver import LocalServer, Response

pytestmark = pytest.mark.slow

PULITZER = (b"<html><head><title>Pulitzer Prizes announced</title></head><body>"
            b"<p>Jane Example won the 1985 Pulitzer Prize for Fiction for her novel The Long River.</p>"
            b"<p>The prizes were announced at Columbia University on Thursday.</p></body></html>")


@pytest.fixture(scope="module")
def sources():
    with LocalServer() as server:
        server.add("/pulitzer", Response(body=PULITZER))
        yield server


@pytest.fixture(scope="module")
def stack(service_stack, sources):
    return service_stack(env={"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1"})


def test_a_worker_checks_the_lead_against_the_body_and_the_dashboard_lists_it(stack, sources):
    wikitext = ARTICLE.read_text(encoding="utf-8")
    lead = read_lead(wikitext, "Jane Example")
    claim = Claim("Jane Example", (), "Example won the Pulitzer Prize for Fiction in 1985 for The Long River.", "",
                  Citation(id="nyt", kind="template", url=sources.url("/pulitzer")))
    record, enqueued = stack.submit(CheckRequest(wiki="enwiki", title="Jane Example", revision=501,
                                                 origin=Origin.BOT, claims=[claim], lead=lead))
    assert enqueued
    done = stack.wait_for(record.id, timeout=240)
    assert done.status == "done", done.error
    stored = stack.store().lead_claims(record.id)
    assert [s.verdict.claim for s in stored] == [c.text for c in lead.claims]
    levels = {s.verdict.claim: s.verdict.level for s in stored}
    assert levels["She studied English literature at Smith College."] is VerdictLevel.SUPPORTED
    assert levels["She was born in Chicago, Illinois, to a family of dairy farmers."] is VerdictLevel.NOT_SUPPORTED
    assert stack.store().results(record.id)[0].source_status == "fetched"

    if stack.web_url is None:
        pytest.skip("the web service's module cannot be imported here")
    html = requests.get(f"{stack.web_url}/dashboard/pages/enwiki/Jane_Example", timeout=30).text
    doc = lxml.html.fromstring(html)
    cells = doc.xpath("//tr[@class='lead-row']/td[@class='lead-claim']")
    listed = [" ".join(td.text_content().split()) for td in cells]
    assert "She was born in Chicago, Illinois, to a family of dairy farmers." in listed
    assert "She studied English literature at Smith College." not in listed
    api = requests.get(f"{stack.api_url}/pages/enwiki/Jane_Example", timeout=30).json()
    assert [c["claim"] for c in api["lead_claims"]] == [c.text for c in lead.claims]
