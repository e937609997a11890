"""The article page lists the lead claims its body does not support, escaped; the API gives them too.

The app runs with its real SQLite store and Redis (tests/webapp.py); the lead claims are stored
as a worker stores them (``Store.finish`` with the lead's verdicts).
"""

from __future__ import annotations

import pytest
from test_dashboard import page, texts
from test_lead import ARTICLE

from service.store import CheckRequest, Origin
from side.extract.claims import Citation, Claim
from side.extract.lead import read_lead
from side.verify.lead import LeadVerdict
from side.verify.levels import VerdictLevel

from webapp import finish, outcome

HOSTILE = '<script>alert("lead")</script> & <b>bold</b>'


@pytest.fixture
def checked(store):
    """Jane Example's revision checked: one citation, four lead claims, two not fully supported."""
    lead = read_lead(ARTICLE.read_text(encoding="utf-8"), "Jane Example")
    claim = Claim("Jane Example", (), "Example won the Pulitzer Prize for Fiction in 1985.", "",
                  Citation(id="nyt", kind="template", url="https://www.nytimes.com/1985/04/18/books/pulitzer.html"))
    record, _ = store.add_check(CheckRequest("enwiki", "Jane Example", [claim], revision=77, origin=Origin.BOT,
                                             lead=lead))
    store.start(record.id)
    store.finish(record.id, [outcome(claim, 0.9, False)], 1.0, lead=[
        LeadVerdict(lead.claims[0].text, 0, VerdictLevel.SUPPORTED, 0.91, "Example was born in Boston.",
                    ("Early life",)),
        LeadVerdict(f"She founded {HOSTILE}.", 2, VerdictLevel.PARTIALLY_SUPPORTED, 0.44,
                    f"The body says {HOSTILE}.", ("Career", f"Essays {HOSTILE}")),
        LeadVerdict(lead.claims[2].text, 4, VerdictLevel.NOT_SUPPORTED, 0.13,
                    "Example was born in Boston, Massachusetts, on March 2, 1950.", ("Early life",)),
        LeadVerdict("She is a member of the Norwegian Academy.", 5, VerdictLevel.NOT_SUPPORTED, 0.08, "", ()),
    ])
    return record


def test_article_page_lists_unsupported_lead_claims_with_the_nearest_body_sentence(client, checked):
    response = client.get("/dashboard/pages/enwiki/Jane_Example")
    assert response.status_code == 200
    doc = page(response)
    rows = doc.xpath("//section[contains(@class, 'lead-claims')]//tr[@class='lead-row']")
    assert [r.get("data-level") for r in rows] == ["partially_supported", "not_supported", "not_supported"]
    claims = texts(doc, "//tr[@class='lead-row']/td[@class='lead-claim']")
    assert claims[1] == "She was born in Chicago, Illinois, to a family of dairy farmers."
    nearest = texts(doc, "//tr[@class='lead-row']/td[@class='lead-nearest']")
    row = rows[1].xpath("td[@class='lead-nearest']")[0]
    assert texts(row, "blockquote") == ["Example was born in Boston, Massachusetts, on March 2, 1950."]
    assert texts(row, "span[contains(@class, 'lead-section')]") == ["in section: Early life"]
    assert nearest[2] == "no body sentence comes near it"
    assert "Jane Example (born March 2, 1950)" not in " ".join(claims)  # supported: not listed
    intro = texts(doc, "//section[contains(@class, 'lead-claims')]/p")[0]
    assert intro.startswith("4 uncited lead sentences were checked against the article's own body; 3 are")


def test_lead_claims_are_escaped(client, checked):
    html = client.get("/dashboard/pages/enwiki/Jane_Example").get_data(as_text=True)
    assert "<script>alert" not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(&#34;lead&#34;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html
    doc = page(client.get("/dashboard/pages/enwiki/Jane_Example"))
    assert not doc.xpath("//section[contains(@class, 'lead-claims')]//script | //section//b")
    assert texts(doc, "//td[@class='lead-claim']")[0] == f"She founded {HOSTILE}."
    assert texts(doc, "//span[contains(@class, 'lead-section')]")[0] == f"in section: Career / Essays {HOSTILE}"


def test_a_page_checked_without_its_lead_shows_no_lead_section(client, store):
    claim = Claim("Plain", (), "Plain is a town.", "", Citation(id="p", kind="template", url="https://p.example/"))
    record, _ = store.add_check(CheckRequest("enwiki", "Plain", [claim], revision=3))
    finish(store, record.id, [outcome(claim, 0.9, False)])
    doc = page(client.get("/dashboard/pages/enwiki/Plain"))
    assert not doc.xpath("//section[contains(@class, 'lead-claims')]")


def test_page_api_gives_the_lead_claims(client, checked):
    body = client.get("/api/v1/pages/enwiki/Jane_Example").get_json()
    assert body["check"]["id"] == checked.id
    assert [(c["position"], c["level"]) for c in body["lead_claims"]] == [
        (0, "supported"), (2, "partially_supported"), (4, "not_supported"), (5, "not_supported")]
    assert body["lead_claims"][1]["nearest_section"] == ["Career", f"Essays {HOSTILE}"]
    schema = client.get("/api/v1/openapi.json").get_json()
    page_schema = schema["paths"]["/api/v1/pages/{wiki}/{title}"]["get"]["responses"]["200"]
    assert page_schema["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/PageEnvelope"}
    required = schema["components"]["schemas"]["LeadClaim"]["required"]
    assert all(set(required) <= set(c) for c in body["lead_claims"])
