"""The dashboard speaks in verdict levels: each level's badge, the words a partially supported
claim's source does not back (marked in the claim, escaped: claims are untrusted), and citations
that could not be checked shown with their reason and never counted or styled as failures.

Same setup as tests/test_dashboard.py: the Flask app on a real SQLite store and Redis, results
stored with the worker's own records and ``Store.finish``.
"""

from __future__ import annotations

import pytest
from test_dashboard import HTML, LEVEL_BADGES, page, texts

from gadget.server.dashboard.views import highlight_claim, mark_words
from side.pipeline import Result, SourceStatus
from side.verify.levels import VerdictLevel

from webapp import claims_body, finish, outcome

HOSTILE = 'The <script>alert("x")</script> tower is 330 metres tall.'
PAYWALL = "paywall: only the first paragraph is shown"
#: Claim words the (imaginary) source does not back; the second is hostile too.
WORDS = ("330 metres", "<script>alert(\"x\")</script>")


def check_of_every_level(client, store, title="Tower", claim0=HOSTILE):
    """One check with a citation of each level; the partially supported claim is hostile."""
    body = claims_body(title=title, n=4)
    body["claims"][0]["text"] = claim0
    body["claims"][0]["left_context"] = "The tower stands by the river. " + claim0
    check = client.post("/api/v1/checks", json=body).get_json()["check"]
    claims = store.check(check["id"]).claims
    finish(store, check["id"], [
        outcome(claims[0], 0.40, True, label="NOT ENOUGH INFO", level=VerdictLevel.PARTIALLY_SUPPORTED,
                unsupported=WORDS),
        outcome(claims[1], 0.05, True, level=VerdictLevel.NOT_SUPPORTED, reportable=True),
        outcome(claims[2], 0.92, False, label="SUPPORTS", level=VerdictLevel.SUPPORTED),
        Result(claims[3], SourceStatus.CANNOT_CHECK, source_error=PAYWALL),
    ])
    results = store.results(check["id"])
    return {r.level.value: r for r in results}


@pytest.fixture
def every_level(client, store):
    return check_of_every_level(client, store)


def test_each_level_has_its_own_badge_on_the_check_and_article_pages(client, every_level):
    check_id = every_level["supported"].check_id
    for url in (f"/dashboard/checks/{check_id}", "/dashboard/pages/enwiki/Tower"):
        doc = page(client.get(url))
        rows = doc.xpath("//tr[contains(@class, 'result-row')]")
        badges = {row.get("data-level"): row.xpath(f".{LEVEL_BADGES}")[0] for row in rows}
        assert {level: (b.get("class"), " ".join(b.text_content().split())) for level, b in badges.items()} == {
            "supported": ("badge level level-supported", "supported"),
            "partially_supported": ("badge level level-partially-supported", "partially supported"),
            "not_supported": ("badge level level-not-supported", "not supported"),
            "cannot_check": ("badge level level-cannot-check", "could not be checked")}, url
        assert badges["cannot_check"].get("title") == PAYWALL
        # flagged rows lead on the article page; the unread source is neither flagged nor first
        flagged = [row.get("data-level") for row in rows if "flagged" in row.get("class").split()]
        assert sorted(flagged) == ["not_supported", "partially_supported"], url


def test_no_page_shows_the_models_labels(client, every_level):
    check_id = every_level["supported"].check_id
    urls = ["/dashboard/", "/dashboard/?status=all", f"/dashboard/checks/{check_id}", "/dashboard/pages/enwiki/Tower",
            "/dashboard/stats", *(f"/dashboard/results/{r.id}" for r in every_level.values())]
    for url in urls:
        text = page(client.get(url)).text_content().lower()
        for label in ("not enough info", "not_enough_info", "refutes", "supports", "nei"):
            assert f" {label} " not in f" {' '.join(text.split())} ", (url, label)


def test_result_page_names_the_level_and_marks_the_unsupported_words_escaped(client, every_level):
    result = every_level["partially_supported"]
    response = client.get(f"/dashboard/results/{result.id}")
    html = response.get_data(as_text=True)
    doc = page(response)
    # the hostile claim is text, never a script element, wherever it is shown
    assert [s.get("src") for s in doc.xpath("//script")] == ["/dashboard/static/dashboard.js"]
    assert "<script>alert" not in html and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    assert texts(doc, f"//div[@class='page-head']{LEVEL_BADGES}") == ["partially supported"]
    assert texts(doc, "//dd[@class='verdict']") == ["partially supported"]
    # both words marked inside the claim, in claim order, and listed
    assert texts(doc, "//blockquote[@class='context']/mark") == [" ".join(HOSTILE.split())]
    assert texts(doc, "//blockquote[@class='context']/mark/mark[@class='unsupported']") == [
        '<script>alert("x")</script>', "330 metres"]
    assert texts(doc, "//ul[@class='unsupported-words']/li") == list(WORDS)


def test_queue_marks_the_unsupported_words_and_shows_levels(client, every_level):
    doc = page(client.get("/dashboard/"))
    rows = {row.get("data-level"): row for row in doc.xpath("//tr[@class='flagged-row']")}
    assert sorted(rows) == ["not_supported", "partially_supported"]  # the queue holds flags only
    partial = rows["partially_supported"]
    assert texts(partial, ".//a[@class='result-link']/mark[@class='unsupported']") == [
        '<script>alert("x")</script>', "330 metres"]
    assert texts(partial, f".{LEVEL_BADGES}") == ["partially supported"]
    assert texts(rows["not_supported"], f".{LEVEL_BADGES}") == ["not supported"]
    assert not rows["not_supported"].xpath(".//mark")  # no words given, none marked
    assert [s.get("src") for s in doc.xpath("//script")] == ["/dashboard/static/dashboard.js"]


def test_a_result_that_could_not_be_checked_is_no_failure(client, store, every_level):
    unread = every_level["cannot_check"]
    doc = page(client.get(f"/dashboard/results/{unread.id}"))
    assert texts(doc, "//dd[@class='verdict']") == [f"could not be checked {PAYWALL}"]
    assert not doc.xpath("//form")  # nothing to accept or dismiss
    assert texts(doc, "//p[contains(@class, 'not-reviewable')]")[0].startswith("Nothing to review")
    assert "Why it was flagged" not in doc.text_content()
    assert not doc.xpath("//span[contains(@class, 'status-open')]")
    assert PAYWALL in texts(doc, "//section[@class='card']//p[@class='muted']")[0]  # the passage note says why

    check = store.check(unread.check_id)
    assert check.flagged == 2  # partially and not supported, not the unread source
    page_doc = page(client.get("/dashboard/pages/enwiki/Tower"))
    assert f"{check.citations} citations, 2 flagged" in texts(page_doc, "//p[@class='links']/span")[-1]
    row = page_doc.xpath("//tr[@data-level='cannot_check']")[0]
    assert "flagged" not in row.get("class").split()
    assert texts(row, ".//span[@class='level-reason']") == [PAYWALL]
    assert not row.xpath(".//span[contains(@class, 'status-open')]")

    stats = page(client.get("/dashboard/stats"))
    assert texts(stats, "//span[@class='tile-num']")[:4] == ["1", "4", "2", "1"]  # 2 flagged, 1 unread
    assert "could not be checked: 1" in [t.text for t in stats.xpath("//svg[1]//rect/title")]


def test_an_old_row_flagged_without_a_checked_source_stays_out_of_the_queue(client, store):
    """A row flagged although nothing was scored (stored before levels) is still no failure."""
    body = claims_body(title="Old", n=2)
    check = client.post("/api/v1/checks", json=body).get_json()["check"]
    claims = store.check(check["id"]).claims
    finish(store, check["id"], [Result(claims[0], SourceStatus.UNAVAILABLE, source_error="HTTP 503", flagged=True),
                                outcome(claims[1], 0.1, True)])
    unread, weak = store.results(check["id"])
    assert unread.flagged and unread.level is VerdictLevel.CANNOT_CHECK  # the row says flagged
    queue = page(client.get("/dashboard/"))
    assert [int(r.get("data-result-id")) for r in queue.xpath("//tr[@class='flagged-row']")] == [weak.id]
    assert not page(client.get("/dashboard/?level=cannot_check")).xpath("//tr[@class='flagged-row']")
    doc = page(client.get("/dashboard/pages/enwiki/Old"))
    assert [r.get("data-level") for r in doc.xpath("//tr[contains(@class, 'result-row')]")] == [
        "not_supported", "cannot_check"]
    assert "flagged" not in doc.xpath("//tr[@data-level='cannot_check']")[0].get("class").split()
    stats = page(client.get("/dashboard/stats?wiki=enwiki"))
    assert texts(stats, "//span[@class='tile-num']")[2:4] == ["1", "1"]  # flagged, could not be checked


def test_article_page_filters_by_level(client, every_level):
    doc = page(client.get("/dashboard/pages/enwiki/Tower"))
    links = {a.get("data-level"): (" ".join(a.text_content().split()), a.get("href"))
             for a in doc.xpath("//p[@class='level-counts']/a[@data-level]")}
    assert links == {level: (f"1 {text}", f"/dashboard/pages/enwiki/Tower?level={level}") for level, text in (
        ("supported", "supported"), ("partially_supported", "partially supported"),
        ("not_supported", "not supported"), ("cannot_check", "could not be checked"))}
    only = page(client.get("/dashboard/pages/enwiki/Tower?level=cannot_check"))
    assert [int(r.get("data-result-id")) for r in only.xpath("//tr[contains(@class, 'result-row')]")] == [
        every_level["cannot_check"].id]
    assert only.xpath("//a[@class='count all-levels']/@href") == ["/dashboard/pages/enwiki/Tower"]
    check = page(client.get(f"/dashboard/checks/{every_level['supported'].check_id}?level=partially_supported"))
    assert [r.get("data-level") for r in check.xpath("//tr[contains(@class, 'result-row')]")] == [
        "partially_supported"]
    for url in ("/dashboard/pages/enwiki/Tower?level=fails", "/dashboard/pages/enwiki/Tower?level=NOT+ENOUGH+INFO"):
        response = client.get(url, headers=HTML)
        assert response.status_code == 400, url


def test_queue_level_filter_offers_every_level(client, every_level):
    doc = page(client.get("/dashboard/?level=partially_supported"))
    assert doc.xpath("//select[@name='level']/option/@value") == [
        "", "supported", "partially_supported", "not_supported", "cannot_check"]
    assert doc.xpath("//select[@name='level']/option[@selected]/@value") == ["partially_supported"]
    assert [r.get("data-level") for r in doc.xpath("//tr[@class='flagged-row']")] == ["partially_supported"]
    empty = page(client.get("/dashboard/?level=cannot_check"))
    assert "never flagged" in texts(empty, "//section[contains(@class, 'empty')]")[0]


@pytest.mark.parametrize("text, words, html", [
    ("Plain text.", (), "Plain text."),
    ("It is 330 metres tall.", ("330 metres",), 'It is <mark class="unsupported">330 metres</mark> tall.'),
    ("Metres and metres.", ("METRES",),
     '<mark class="unsupported">Metres</mark> and <mark class="unsupported">metres</mark>.'),
    ("Parisian Paris.", ("Paris",), 'Parisian <mark class="unsupported">Paris</mark>.'),  # whole words only
    ("a b c", ("a b", "b c"), '<mark class="unsupported">a b c</mark>'),  # overlaps merged
    ("x <b>y</b> & z", ("<b>y</b>",), 'x <mark class="unsupported">&lt;b&gt;y&lt;/b&gt;</mark> &amp; z'),
    ('say "hi"', ('"><img src=x onerror=alert(1)>',), "say &#34;hi&#34;"),  # a word not in the text
])
def test_mark_words_escapes_text_and_words(text, words, html):
    assert str(mark_words(text, words)) == html


def test_highlight_claim_marks_words_only_in_the_claim():
    marked = str(highlight_claim("Metres matter. It is 5 metres <i>.", "It is 5 metres <i>.", ("metres",)))
    assert marked == ('Metres matter. <mark>It is 5 <mark class="unsupported">metres</mark> &lt;i&gt;.</mark>')
