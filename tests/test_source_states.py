"""Cannot check, not fails verification: pages that are not the source are told apart.

Each state is shown on a page written here (most have no real example in the shared data; the
real pages are scored by ``side eval sources``, run below on the shared data), readable pages
that carry the same words in passing stay readable, bad input gets a state in bounded time,
and a paywall teaser served by a local web server ends as an unflagged ``cannot_check`` Result
through the real pipeline, store, API, dashboard and bot policy.
"""

from __future__ import annotations

import gzip
import json
import random

import pytest

from side.cli import main
from side.errors import SourceFetchError
from side.evaluation.sources import LABELS_FILE, WEB_HTML_SUBDIR, evaluate_sources, load_labels
from side.sources.fetch import (
    Source,
    assess_html,
    extract_html,
    load_cached,
    read_html,
    source_from_bytes,
    source_from_html,
    store_cached,
)
from side.sources.states import (
    MARKERS,
    MAX_SIGNAL_CHARS,
    PageSignals,
    SourceState,
    assess_error,
    assess_source,
    find_markers,
    find_phrases,
    lowerable,
    page_signals,
    required_literals,
    word_count,
)
from side.verify.levels import VerdictLevel

from conftest import need_data
from hostile import THAI, bad_inputs
from httpserver import LocalServer, Response
from wayback import LocalWayback

S = SourceState

ARTICLE_PARAGRAPHS = [
    "The harbour was rebuilt in 1902 after a storm destroyed the old pier and most of the fishing fleet.",
    "The new pier, built of granite from the quarry above the town, is three hundred metres long.",
    "It now shelters the town's fishing fleet and a lifeboat station, which was opened in 1911.",
    "A lighthouse was added at the end of the pier in 1925, and its light can be seen for twelve miles.",
    "The harbour master's office moved into the old customs house when customs left the town in 1950.",
]


def html_page(body: str, title: str = "Harbour history", head: str = "") -> bytes:
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>{head}</head>"
            f"<body><nav><a href=\"/\">Home</a> <a href=\"/news\">News</a></nav>{body}"
            f"<footer><p>Coastal Times, 1 Quay Street</p></footer></body></html>").encode()


def article(extra: str = "", paragraphs: list[str] = ARTICLE_PARAGRAPHS, title: str = "Harbour history") -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return html_page(f"<article><h1>{title}</h1>{body}</article>{extra}", title=title)


def assess(html: bytes, url: str = "https://news.example/harbour") -> tuple[SourceState, str]:
    _source, assessment = assess_html(html, url)
    return assessment.state, assessment.describe()


# --- each state on a written page ----------------------------------------------------------------

PAYWALL_TEASER = html_page(
    "<article><h1>Harbour board approves new pier</h1>"
    "<p>The harbour board on Tuesday approved plans for a new pier, three hundred metres long, to replace "
    "the one destroyed in last winter's storm.</p>"
    "<p>Construction is expected to begin in the spring, the board's chair said, once the funding from the "
    "regional government has been confirmed.</p>"
    "<div class=\"paywall\"><p>Subscribe to continue reading. Already a subscriber? Sign in.</p></div></article>",
    title="Harbour board approves new pier | The Coastal Times")

WRITTEN = {
    S.PAYWALL: (PAYWALL_TEASER, '"subscribe to continue reading"'),
    S.LOGIN_WALL: (html_page(
        "<main><h1>Sign in</h1><p>Sign in to continue to Coastal Times.</p><form><input name=\"email\">"
        "<input type=\"password\" name=\"password\"><button>Next</button></form></main>",
        title="Sign in - Coastal Times Accounts"), "sign in"),
    S.CONSENT_WALL: (html_page(
        "<div class=\"consent\"><h1>Before you continue to Coastal Times</h1>"
        "<p>We use cookies and data to deliver and maintain our services and to measure audience engagement.</p>"
        "<p>If you choose to accept all cookies, we and our partners will also use cookies to show "
        "personalised ads and content.</p><button>Reject all</button><button>Accept all</button></div>",
        title="Before you continue"), "before you continue"),
    S.BOT_WALL: (html_page(
        "<div class=\"main-wrapper\"><h1>news.example</h1><h2>Checking if the site connection is secure</h2>"
        "<p>news.example needs to review the security of your connection before proceeding.</p>"
        "<p>Performance &amp; security by Cloudflare</p></div>",
        title="Just a moment...",
        head="<script>window._cf_chl_opt={cvId: '3', cZone: 'news.example', cType: 'managed'};</script>"),
        "just a moment"),
    S.SOFT_404: (html_page(
        "<main><h1>Page not found</h1><p>Sorry, we couldn't find the page you were looking for. It may have "
        "been moved or deleted.</p><p><a href=\"/\">Go to the home page</a></p></main>",
        title="Page not found | Coastal Times"), "page not found"),
    S.PARKED_DOMAIN: (html_page(
        "<div class=\"parked\"><h1>coastal-times.example</h1><p>This domain may be for sale!</p>"
        "<p><a href=\"https://marketplace.example/buy\">Buy this domain</a></p><h2>Related searches</h2>"
        "<ul><li>Harbour holidays</li><li>Fishing trips</li></ul></div>",
        title="coastal-times.example",
        head="<script src=\"https://www.google.com/adsense/domains/caf.js\"></script>"), "for sale"),
    S.JS_SHELL: (html_page(
        "<noscript>You need to enable JavaScript to run this app.</noscript><div id=\"root\"></div>"
        "<script src=\"/static/js/main.4f2a.js\"></script>", title="Coastal Times"), "#root"),
    S.TOO_LITTLE_TEXT: (html_page("<main><p>Coming soon.</p></main>", title="Coastal Times"), "word"),
    S.UNSUPPORTED_LANGUAGE: (article(title="Geschichte des Hafens", paragraphs=[
        "Der Hafen wurde 1902 wieder aufgebaut, nachdem ein Sturm die alte Mole und den größten Teil der "
        "Fischereiflotte zerstört hatte.",
        "Die neue Mole aus Granit aus dem Steinbruch oberhalb der Stadt ist dreihundert Meter lang.",
        "Heute schützt sie die Fischereiflotte der Stadt und eine Seenotrettungsstation, die 1911 eröffnet wurde.",
        "Am Ende der Mole wurde 1925 ein Leuchtturm gebaut, dessen Licht man zwölf Meilen weit sehen kann.",
    ]), "German"),
}


@pytest.mark.parametrize("state", list(WRITTEN), ids=lambda s: s.value)
def test_each_state_on_a_written_page(state):
    html, evidence = WRITTEN[state]
    found, described = assess(html)
    assert found is state, described
    assert described.startswith(state.label) and evidence.lower() in described.lower()


def test_a_fetch_error_is_its_own_state():
    assessment = assess_error(SourceFetchError("HTTP 503 fetching https://news.example/x", status=503))
    assert assessment.state is S.FETCH_ERROR and not assessment.readable
    assert assessment.describe() == ("fetch error (HTTP 503 fetching https://news.example/x): "
                                     "the source could not be fetched or read")


def test_a_meta_refresh_stub_is_too_little_text_and_a_parking_one_parked():
    stub = html_page("<p>Redirecting...</p>", head="<meta http-equiv=\"refresh\" content=\"0; url=/new-home\">")
    assert assess(stub) == (S.TOO_LITTLE_TEXT, "too little text (forwards to /new-home): the page only "
                                               "forwards (meta refresh) to another address, which was not read")
    parked = html_page("<p>Loading</p>", head="<meta http-equiv=\"refresh\" content=\"0;URL='http://ww1.sedoparking.com/x'\">")
    assert assess(parked)[0] is S.PARKED_DOMAIN
    live = html_page("<article><p>Live: the new pier opens at noon today, the mayor said.</p></article>",
                     head="<meta http-equiv=\"refresh\" content=\"600; url=https://news.example/live\">")
    assert assess(live)[0] is S.READABLE  # a news page reloading itself every ten minutes


def test_schema_org_paywall_marker_decides_only_for_a_teaser():
    marker = ('<script type="application/ld+json">{"@type": "NewsArticle", "isAccessibleForFree": false,'
              ' "hasPart": {"@type": "WebPageElement", "isAccessibleForFree": "False"}}</script>')
    teaser = html_page("<article><h1>Pier</h1><p>" + ARTICLE_PARAGRAPHS[0] + "</p><p>" + ARTICLE_PARAGRAPHS[1]
                       + "</p></article>", head=marker)
    assert assess(teaser) == (S.PAYWALL, "paywall (schema.org isAccessibleForFree: false): only a teaser of a "
                                         "subscribers-only page was served")
    metered = article(paragraphs=ARTICLE_PARAGRAPHS * 8).replace(b"</head>", marker.encode() + b"</head>")
    assert assess(metered)[0] is S.READABLE  # the whole article is there: metered sites mark it too


# --- precision: readable pages that say the same words in passing ------------------------------------

READABLE_WITH_NOISE = {
    "cookie banner": "<div id=\"cookie-banner\"><p>We use cookies. By clicking Accept all cookies you agree "
                     "to our cookie policy.</p><button>Accept all cookies</button></div>",
    "comment form": "<section id=\"comments\"><h3>Leave a reply</h3><p>You must be logged in to post a comment."
                    "</p></section>",
    "disqus noscript": "<div id=\"disqus_thread\"></div><noscript>Please enable JavaScript to view the comments "
                       "powered by Disqus.</noscript>",
    "captcha in a form": "<form><div class=\"g-recaptcha\" data-sitekey=\"x\"></div><p>I'm not a robot</p></form>",
    "cloudflare script": "<script src=\"/cdn-cgi/challenge-platform/scripts/jsd/main.js\"></script>",
    "subscribe box": "<aside><p>Subscribe to our newsletter for the week's harbour news.</p></aside>",
    "empty app div": "<div id=\"app\"></div>",
    "templates": "<p>{{ comment.author }} {{ comment.date }}</p>",
}


@pytest.mark.parametrize("noise", list(READABLE_WITH_NOISE))
def test_readable_pages_with_wall_words_in_passing_stay_readable(noise):
    assert assess(article(READABLE_WITH_NOISE[noise]))[0] is S.READABLE


@pytest.mark.parametrize("paragraphs", [
    ["Error 404: how a missing page became the internet's most famous number. The code was defined in 1992 "
     "by the web's first specification, and the phrase page not found followed soon after."] + ARTICLE_PARAGRAPHS,
    ["The court said the login required by the bank was lawful, and that customers who sign in to continue "
     "paying bills accept its terms."] + ARTICLE_PARAGRAPHS,
])
def test_articles_about_the_words_themselves_are_readable(paragraphs):
    assert assess(article(paragraphs=paragraphs * 3))[0] is S.READABLE


def test_a_one_sentence_source_is_still_readable():
    """A short page can support (or fail) a claim: too little text means almost nothing."""
    assert assess(article(paragraphs=["Foo was founded in 1990 in Paris."]))[0] is S.READABLE


def test_a_table_of_scores_in_english_is_not_foreign():
    rows = "".join(f"<tr><td>Palm Bay {50 + n}</td><td>Rockledge {30 + n}</td></tr>" for n in range(30))
    page = html_page(f"<article><h1>High school roundup</h1><p>Girls basketball results for the week.</p>"
                     f"<table>{rows}</table></article>")
    assert assess(page)[0] is S.READABLE


# --- bad input: a state and a reason, in bounded time ---------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", ["empty source", "10 MB page", "binary junk as HTML", "binary junk as text",
                                  "Thai page"])
def test_bad_input_gets_a_defined_state_with_its_reason(case):
    junk = random.Random(7).randbytes(1_000_000)
    if case == "empty source":
        assessment = assess_source(Source("https://x.example/", "https://x.example/", "", "", "", "text/html"))
        expected = S.TOO_LITTLE_TEXT
    elif case == "10 MB page":
        html = article(paragraphs=ARTICLE_PARAGRAPHS * 20_000)
        assert len(html) > 10_000_000
        source = source_from_html(html, "https://x.example/big")
        assessment = assess_source(source, html)
        expected = S.READABLE
    elif case == "binary junk as HTML":
        _source, assessment = assess_html(junk, "https://x.example/junk")
        expected = S.UNSUPPORTED_LANGUAGE  # no text extracted, and the markup is binary
    elif case == "binary junk as text":
        assessment = assess_source(source_from_bytes(junk, "https://x.example/j", "https://x.example/j", "text/plain"))
        expected = S.UNSUPPORTED_LANGUAGE
    else:
        _source, assessment = assess_html(article(title="กรุงเทพมหานคร", paragraphs=[THAI] * 4), "https://x.example/th")
        expected = S.UNSUPPORTED_LANGUAGE
    assert assessment.state is expected, assessment
    assert assessment.reason and (assessment.evidence or assessment.readable)
    if case == "Thai page":
        assert assessment.evidence.startswith("Thai, th ")
    if case == "binary junk as text":
        assert "undecodable characters" in assessment.evidence
    if case == "binary junk as HTML":
        assert assessment.evidence.endswith("undecodable characters in the page")
        assert assessment.reason == "the page is binary data, not text the verifier reads"


def test_a_page_without_text_is_binary_only_when_its_markup_is():
    """Binary is decided on the markup, and only when the extractor found no text: an empty page
    or a stub is too little text."""
    assert assess(b"") == (S.TOO_LITTLE_TEXT, "too little text (0 words): the page has too little text to "
                                              "check a claim against")
    assert assess(html_page("<main><p>Coming soon.</p></main>"))[0] is S.TOO_LITTLE_TEXT


# --- bad input through a whole check: fetched, assessed, the archive tried, scored -------------------

#: What a check makes of each bad page of tests/hostile.py: its level, and words of its
#: level_reason ("{url}": the page's URL).
BAD_INPUT_LEVELS = {
    "empty page": (VerdictLevel.CANNOT_CHECK, "no text could be extracted from {url}: too little text (0 words): "
                                              "the page has too little text to check a claim against"),
    "10 MB page": (VerdictLevel.SUPPORTED, ""),  # scored on its start, which states the claim
    "page over the size cap": (VerdictLevel.CANNOT_CHECK, "source too large: {url} declares"),
    "binary junk as HTML": (VerdictLevel.CANNOT_CHECK, "no text could be extracted from {url}: unsupported language "
                                                       "(56% undecodable characters in the page): the page is "
                                                       "binary data, not text the verifier reads"),
    "binary junk as text": (VerdictLevel.CANNOT_CHECK, "unsupported language (54% undecodable characters): the "
                                                       "text is binary or mis-decoded"),
    "binary download": (VerdictLevel.CANNOT_CHECK, "unsupported content type 'application/octet-stream' at {url}"),
    "Thai page": (VerdictLevel.CANNOT_CHECK, "unsupported language (Thai, th 1.00): the page is in Thai; "
                                             "the verifier reads English only"),
}
ARTICLE_HEAD = "'''Harbour''' is a port.\n\n== History ==\n"


@pytest.mark.timeout(180)
def test_bad_input_through_a_check_gets_a_level_and_its_reason(verifier):
    """Every bad page of tests/hostile.py cited in one article, served over HTTP, fetched under the
    real limits with the archive as fallback (it holds none of them, but a good copy of another
    empty page), scored by the real verifier: each citation has a defined level, and one that
    cannot be checked says why, in an editor's words."""
    from side.config import FetchConfig
    from side.extract.wikitext import extract_claims
    from side.pipeline import Pipeline, SourceCopy, SourceStatus, make_source_loader
    from side.sources.archive import ArchiveReader
    from side.sources.fetch import MAX_TEXT_CHARS, fetch_source

    pages = bad_inputs()
    assert [p.name for p in pages] == list(BAD_INPUT_LEVELS)
    with LocalServer() as server:
        wayback = LocalWayback(server)
        config = FetchConfig(allow_hosts=["127.0.0.1"], timeout_s=30, wayback_api=wayback.api)
        urls = {p.name: server.add(f"/page{n}", Response(p.body, content_type=p.content_type))
                for n, p in enumerate(pages)}
        urls["archived"] = server.add("/archived", Response(b""))
        wayback.keep(urls["archived"], article())
        lines = [f"{ARTICLE_PARAGRAPHS[0]}<ref>[{url} {name}]</ref>" for name, url in urls.items()]
        claims = extract_claims(ARTICLE_HEAD + "\n".join(lines), "Harbour")

        def fetch(url, deadline=None):
            return fetch_source(url, config, deadline=deadline)

        loader = make_source_loader(None, fetch, archive=ArchiveReader(config, fetch))
        results = {r.claim.citation.title: r for r in Pipeline(verifier, None, loader).verify_claims(claims)}
        assert wayback.raw_hits(urls["archived"]) == 1
    assert len(results) == len(urls)
    for name, (level, reason) in BAD_INPUT_LEVELS.items():
        result = results[name]
        assert result.level is level, (name, result.level_reason)
        assert reason.format(url=urls[name]) in result.level_reason, (name, result.level_reason)
        assert result.to_dict()["level"] == level and not result.reportable
        if level is VerdictLevel.CANNOT_CHECK:
            assert not result.flagged and result.verdict is None and result.failure_likelihood is None
            assert result.level_reason.endswith(f"archived copy: the Wayback Machine has no archived copy of "
                                                f"{urls[name]}")  # the archive was tried too
            said = "cannot check" if result.source_status is SourceStatus.CANNOT_CHECK else "source unavailable"
            assert result.reasons == [f"{said}: {result.level_reason}"]
    # something was read and it is no document to check: cannot_check; nothing was read: unavailable
    assert {n for n, r in results.items() if r.source_status is SourceStatus.CANNOT_CHECK} == {
        "empty page", "binary junk as HTML", "binary junk as text", "Thai page"}
    assert {n for n, r in results.items() if r.source_status is SourceStatus.UNAVAILABLE} == {
        "page over the size cap", "binary download"}
    big = results["10 MB page"]
    assert big.source_status is SourceStatus.FETCHED and big.source_copy is SourceCopy.LIVE
    assert big.verdict.evidence[0].text == ARTICLE_PARAGRAPHS[0]
    assert len(pages[1].body) > 9_990_000 > 20 * MAX_TEXT_CHARS  # only the start of it is read
    archived = results["archived"]
    assert archived.level is VerdictLevel.SUPPORTED and archived.source_copy is SourceCopy.ARCHIVE
    assert archived.source_fallback.startswith("live copy: no text could be extracted from")
    assert "too little text (0 words)" in archived.source_fallback and archived.level_reason == ""


def test_page_signals_survive_hostile_markup_and_count_unspaced_scripts():
    assert page_signals(b"") == PageSignals()
    assert page_signals(b"\x00\xff" * 1000) == PageSignals()
    assert page_signals("<html><body><div>" * 5000).visible_words == 0
    assert word_count(THAI) > 40 and word_count("three plain words") == 3


# --- the signals travel with the Source ------------------------------------------------------------


MARKER_SAMPLES = {
    "schema.org isAccessibleForFree: false": '"isAccessibleForFree": "False"',
    "Cloudflare challenge": "/cdn-cgi/challenge-platform/h/B/orchestrate/jsch/v1",
    "DataDome block page": "https://geo.Captcha-Delivery.com/captcha",
    "PerimeterX block page": 'id="PX-Captcha"',
    "Distil block page": "distil_r_captcha",
    "domain parking service": "https://www.SedoParking.com/x",
}


def written_markers(markup: str) -> tuple[str, ...]:
    """The markers as their patterns are written, case ignored: what find_markers must give."""
    import re

    return tuple(name for name, (_state, pattern) in MARKERS.items() if re.search(pattern, markup, re.IGNORECASE))


@pytest.mark.parametrize("case", [str, str.upper, str.lower, str.swapcase])
def test_markers_are_found_in_any_case_as_their_patterns_say(case):
    """find_markers searches lower-cased markup with lower-cased patterns, except on markup with a
    character that ignoring case takes for an ASCII letter (the long s, the Kelvin sign, dotted
    and dotless i): the same markers either way, one page or many at once."""
    assert set(MARKER_SAMPLES) == set(MARKERS)
    for name, sample in MARKER_SAMPLES.items():
        for markup in (f"<html>{case(sample)}</html>", f"<p>\u017f\u212a</p>{case(sample)}", case(sample) + "\u0130"):
            assert find_markers(markup) == written_markers(markup) == (name,), (name, markup)
    together = " ".join(case(s) for s in MARKER_SAMPLES.values())
    assert find_markers(together) == written_markers(together) == tuple(MARKERS)
    assert find_markers("<p>Sedo parking, a captcha, px and distil</p>") == ()


@pytest.mark.parametrize(("markup", "name"), [
    ("d\u0131stil_r_captcha", "Distil block page"),  # dotless i: ignoring case takes it for i
    ("d\u0130stil_r_captcha", "Distil block page"),  # dotted I: lower-cased to i and a combining dot
    ("https://www.\u017fedoparking.com/x", "domain parking service"),  # long s: taken for s
    ("/cdn-cgi/challenge-platform/h/\u212a/orchestrate/managed", "Cloudflare challenge"),  # Kelvin: lower-cased to k
])
def test_a_marker_written_with_a_letter_that_ignoring_case_takes_for_ascii_is_found(markup, name):
    """Each such character alone, inside the marker: found as the pattern as written finds it."""
    assert find_markers(f"<html>{markup}</html>") == written_markers(f"<html>{markup}</html>") == (name,)


def test_every_marker_is_searched_in_lower_case_and_unsafe_patterns_are_not():
    """A marker whose pattern could not be lower-cased would silently be searched the slow way."""
    assert all(lowerable(pattern) for _state, pattern in MARKERS.values())
    for unsafe in (r"\x41bc", r"\101bc", r"\u0041bc", r"(?-i:ABC)", r"[A-z]", r"\S+", r"\Bx", "caf\u00e9"):
        assert not lowerable(unsafe), unsafe


@pytest.mark.parametrize(("pattern", "literals"), [
    ("ab?c", ("a",)),  # an optional letter leaves the run
    ("abc*", ("ab",)),
    ("ab+c", ("ab",)),  # one b is there; "abc" need not be ("abbc")
    ("abc{2}d", ("ab",)),
    ("a{10}", None),  # a count's digits are not text
    (r"x\.y-z", ("x.y-z",)),  # an escaped dot is a dot
    (r"ab\sc", ("ab",)),  # \s is a class, not an s
    (r"a\d\d\dzz", ("zz",)),
    ("[ab]cde", ("cde",)),
    ("[]|]xy|zw", ("xy", "zw")),  # a | in a class does not split the pattern
    ("a(bc|de)f|gh", ("a", "gh")),  # nor one in a group
    (r"(?<!\w)hello(?!\w)", ("hello",)),
    ("a|[bc]", None),  # an alternative with no sure literal: no precheck
    ("[^]xyz]+q", ("q",)),  # "^]" opens a class holding "]"
    ("[^])]abc|xyz", ("abc", "xyz")),
    ("(?#[)abc|(xyz])def", None),  # syntax it does not read: no precheck
    (r"\x41bc", None),
    (r"(a)\1bc", None),
    ("(?x)a b c", None),
])
def test_required_literals_are_in_every_match(pattern, literals):
    """The strings find_markers looks for before it runs a pattern: one of them is in every
    match (a wrong one would hide a marker), None where an alternative has none for sure."""
    import re

    assert required_literals(pattern) == literals
    texts = ["abc abbbc abccd aaaaaaaaaa x.y-z ab\tc a123zz bcde ]xy zw adef abcf gh hello aXc"]
    for match in (m.group(0) for text in texts for m in re.finditer(pattern, text)):
        assert literals is None or any(literal in match for literal in literals), (pattern, match)


def test_required_literals_hold_on_random_patterns():
    """Patterns put together at random from pieces of regular-expression syntax (classes that
    open with ``]`` or ``^]``, groups, lookarounds, quantifiers, escapes, comments, flags),
    searched in random texts: every match holds one of the literals found for its pattern."""
    import re

    pieces = ["a", "b", "ab", "x.", "[ab]", "[^]a]", "[]b]", "[^])]", "(a|b)", "(?:ab|c)", "a?", "b*", "c+",
              "a{2}", "b{1,2}?", r"\.", ".", r"\s", r"\b", "|", "(?<!a)", "(?=b)", "(?#[)", "(?i)", r"\x61",
              r"(b)\1", "^", "$", "]", "}", "{"]
    alphabet = "abcx.] }{("
    rng = random.Random(7)
    texts = ["".join(rng.choice(alphabet) for _ in range(40)) for _ in range(40)]
    checked = 0
    for _ in range(3000):
        pattern = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        try:
            compiled = re.compile(pattern)
        except re.error:
            continue
        literals = required_literals(pattern)
        for match in (m.group(0) for text in texts for m in compiled.finditer(text)):
            assert literals is None or any(literal in match for literal in literals), (pattern, literals, match)
            checked += literals is not None
    assert checked > 1000


def test_every_marker_has_literals_and_a_literal_alone_is_no_marker():
    """Each marker is prechecked (no pattern is run on every page), and a page holding a
    marker's literal without its pattern has no marker."""
    for name, (_state, pattern) in MARKERS.items():
        literals = required_literals(pattern.lower())
        assert literals is not None, name
        assert any(literal in MARKER_SAMPLES[name].lower() for literal in literals), name
    near = '<script>{"isAccessibleForFree": true}</script> /cdn-cgi/challenge-platform/h/b/orchestrate/other'
    assert find_markers(near) == written_markers(near) == ()


@pytest.mark.parametrize("text", [
    "an article about nothing in particular",
    "please enable javascript to continue",
    "xplease enable javascript to continue",  # the phrase's text, but not as whole words
    "loading... then you need to enable javascript to run this app. loading...",
    "",
])
def test_wall_phrases_are_found_as_the_pattern_finds_them(text):
    """find_phrases runs the phrases' pattern only where a phrase is a substring: the same
    phrases, in order of first appearance."""
    from side.sources.states import _all_phrases, _normalize

    normalized = _normalize(text)
    assert find_phrases(normalized) == tuple(dict.fromkeys(m.group(0) for m in _all_phrases().finditer(normalized)))
    assert bool(find_phrases(normalized)) == (text.startswith(("please", "loading")))


def test_white_space_is_squeezed_as_the_pattern_did():
    """Every character Python counts as white space, in runs, at both ends and between words."""
    import re
    import sys

    from side.sources.states import _squeeze

    spaces = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
    assert len(spaces) > 20
    text = spaces + "a" + spaces[::2] + "b\u200bc" + spaces[5] + "d" + spaces
    assert _squeeze(text) == re.sub(r"\s+", " ", text).strip() == "a b\u200bc d"


@pytest.mark.parametrize("text", [
    "plain ASCII, nothing to change",
    "\u201cQuoted\u201d, it\u2019s \u2018so\u2019\u00a0\u2026 and\u2026\u2026 more",
    "caf\u00e9 \u2019\u2019 \u4e2d\u6587 \U0001f600 \u2026",  # one-, two- and four-byte text
    "\u2026\u2019\u201c",
    "",
])
def test_typeset_characters_become_plain_as_a_translation_table_makes_them(text):
    """_plain replaces character by character as str.translate with the same table."""
    from side.sources.states import _QUOTES, _plain

    assert _plain(text) == text.translate(str.maketrans(dict(_QUOTES)))


def test_a_walls_sentences_are_searched_only_where_one_holds_a_phrase_of_it():
    """_Sentences.may_hold is true wherever the wall's pattern matches a sentence (each phrase of
    each wall, written in capitals and curly quotes), and false on sentences without them, line
    breaks included."""
    from side.sources.states import _rule_phrases, _Sentences, _wall_patterns

    plain = ["Nothing of the kind here.", "Another sentence,\nacross a line break."]
    for rule, pattern, _titles in _wall_patterns():
        for phrase in rule.phrases:
            sentences = _Sentences(plain + [f"Then \u201c{phrase.upper()}\u201d, it said."])
            assert any(pattern.search(normal) for _sentence, normal in sentences.normalized()), phrase
            assert sentences.may_hold(_rule_phrases(rule)), phrase
        sentences = _Sentences(plain)
        assert not sentences.may_hold(_rule_phrases(rule))
        assert not any(pattern.search(normal) for _sentence, normal in sentences.normalized())


def read_separately(html: str | bytes) -> tuple[str, str, str, PageSignals]:
    """What read_html must give: the text as extract_html gives it and the signals as page_signals
    reads them, each parsing the page itself."""
    return (*extract_html(html, url="http://127.0.0.1/page"), page_signals(html))


def test_one_parse_gives_the_text_and_signals_of_two(monkeypatch):
    """read_html parses a page once for its text and its signals: the same as two parses, on a
    wall, a page the extractor cuts (its signals read before the cut), a page longer than the
    signals read (parsed twice), markup the parser refuses, and undecodable bytes."""
    from side.sources import fetch, states

    wall = (b"<html><head><title>Just a moment...</title></head><body><noscript>Please enable JavaScript"
            b"</noscript><div id=root></div><script>window._cf_chl_opt={}</script></body></html>")
    paragraphs = "".join(f"<p>Paragraph {n} of a long article.</p>" for n in range(400))
    article = f"<html><body>{paragraphs}</body></html>"
    pages: list[str | bytes] = [wall, article, article.encode("utf-16"), "plain words, no markup", b"\x00\xff" * 100]
    for page in pages:
        assert fetch.read_html(page, url="http://127.0.0.1/page") == read_separately(page)
    monkeypatch.setattr(fetch, "MAX_HTML_ELEMENTS", 50)  # the extractor cuts the article's tree
    assert fetch.read_html(article, url="http://127.0.0.1/page") == read_separately(article)
    assert len(fetch.read_html(article)[0]) < len(article) // 10
    monkeypatch.setattr(states, "MAX_SIGNAL_CHARS", 120)  # the signals read the start only
    assert states.signals_markup(article, article) is None
    for page in (wall, article):
        assert fetch.read_html(page, url="http://127.0.0.1/page") == read_separately(page)
    assert fetch.read_html(wall)[3].markers == ()  # the marker is past the first 120 characters


def test_one_parse_of_real_pages_gives_the_text_and_signals_of_two():
    """The extraction benchmark's real pages: the same text, title, date and signals."""
    folder = need_data("fixtures/web_html/article_extraction_benchmark/html")
    for path in sorted(folder.glob("*.html.gz"))[:60]:
        html = gzip.decompress(path.read_bytes())
        assert read_html(html, url="http://127.0.0.1/page") == read_separately(html), path.name


def test_markers_of_real_pages_are_the_patterns_own():
    """The extraction benchmark's real pages, as page_signals reads them: the same markers."""
    from trafilatura.utils import decode_file

    folder = need_data("fixtures/web_html/article_extraction_benchmark/html")
    pages = [str(decode_file(gzip.decompress(path.read_bytes())))[:MAX_SIGNAL_CHARS]
             for path in sorted(folder.glob("*.html.gz"))]
    found = [find_markers(markup) for markup in pages]
    assert found == [written_markers(markup) for markup in pages]
    assert any(found)


def test_a_cached_source_is_assessed_as_the_fetched_one(tmp_path):
    source = source_from_html(WRITTEN[S.JS_SHELL][0].replace(b"<div id=\"root\"></div>",
                                                             b"<div id=\"root\"></div><p>Coastal Times</p>"),
                              "https://news.example/app")
    assert source.page is not None and source.page.empty_root == "root"
    store_cached(tmp_path, source)
    cached = load_cached(tmp_path, source.url)
    assert cached == source
    assert assess_source(cached) == assess_source(source)
    assert assess_source(cached).state is S.JS_SHELL
    old = Source.from_dict({k: v for k, v in source.to_dict().items() if k != "page"})  # an entry from before
    assert old.page is None and assess_source(old).state is S.TOO_LITTLE_TEXT


# --- the real pages of the shared data ---------------------------------------------------------------


def test_labels_name_real_pages_with_states_and_notes():
    root = need_data(str(WEB_HTML_SUBDIR))
    labels = load_labels()
    assert len({label.path for label in labels}) == len(labels)
    for label in labels:
        assert (root / label.path).is_file(), label.path
        assert label.note


@pytest.mark.data
def test_side_eval_sources_on_real_pages(capsys):
    data_dir = need_data("")
    need_data(str(WEB_HTML_SUBDIR))
    assert main(["eval", "sources", "--data-dir", str(data_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    labels = load_labels()
    assert report["pages"] == len(labels)
    by_state = {s["state"]: s for s in report["states"]}
    for state in SourceState:
        assert by_state[state.value]["support"] == sum(label.state is state for label in labels)
    # precision first: no readable page of the set is called unreadable
    assert report["confusion"]["readable_as_cannot_check"] == 0
    assert by_state["readable"]["support"] > 100 and by_state["unsupported_language"]["support"] > 50
    assert set(report["no_real_example"]) == {s.value for s in SourceState} - {label.state.value for label in labels}


@pytest.mark.data
def test_side_eval_sources_table_names_states_without_real_examples(capsys):
    data_dir = need_data(str(WEB_HTML_SUBDIR)).parent.parent
    assert main(["eval", "sources", "--data-dir", str(data_dir), "--limit", "3"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "readable vs cannot check" in out and "no real example in the data" in out and "login_wall" in out


def test_eval_sources_bad_input_is_one_line_exit_2(tmp_path, capsys):
    assert main(["eval", "sources", "--data-dir", str(tmp_path)]) == 2
    assert "web pages not found" in capsys.readouterr().err
    bad = tmp_path / "labels.json"
    bad.write_text('{"pages": {"a.html": {"state": "paywalled"}}}')
    (tmp_path / WEB_HTML_SUBDIR).mkdir(parents=True)
    assert main(["eval", "sources", "--data-dir", str(tmp_path), "--labels", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad labels file" in err[0]
    assert main(["eval", "sources", "--limit", "0"]) == 2
    assert LABELS_FILE.is_file()


def test_evaluation_reports_missing_pages_as_no_data(tmp_path):
    from side.errors import DataNotFoundError

    (tmp_path / WEB_HTML_SUBDIR).mkdir(parents=True)
    with pytest.raises(DataNotFoundError, match="none of the labelled pages"):
        evaluate_sources(tmp_path)


# --- through the flow: pipeline, store, API, dashboard, bot -----------------------------------------

CLAIMS_ARTICLE = """'''Harbour''' is a small port.

== History ==
The new pier will cost forty million pounds.<ref>[PAYWALL_URL Harbour board approves new pier]</ref>
The harbour was rebuilt in 1902 after a storm destroyed the old pier.<ref>[GOOD_URL Harbour history]</ref>
"""


@pytest.fixture(scope="module")
def verifier():
    from side.verify.verifier import Verifier

    return Verifier.load(device="cpu")


def test_a_paywalled_citation_is_cannot_check_and_never_flagged(verifier, tmp_path, client, store):
    from bot.policy import is_reportable
    from side.config import FetchConfig
    from side.extract.wikitext import extract_claims
    from side.pipeline import Pipeline, SourceStatus, claim_query, make_source_loader
    from side.sources.fetch import fetch_source

    from webapp import finish

    config = FetchConfig(allow_hosts=["127.0.0.1"], timeout_s=5)
    with LocalServer() as server:
        paywall = server.add("/news/pier", Response(PAYWALL_TEASER))
        good = server.add("/harbour/history", Response(article()))
        wikitext = CLAIMS_ARTICLE.replace("PAYWALL_URL", paywall).replace("GOOD_URL", good)
        claims = extract_claims(wikitext, "Harbour")
        loader = make_source_loader(None, lambda url: fetch_source(url, config, tmp_path / "cache"))
        results = Pipeline(verifier, None, loader).verify_claims(claims)
        again = Pipeline(verifier, None, loader).verify_claims(claims)  # from the disk cache
        assert server.hits["/news/pier"] == 1
    by_title = {r.claim.citation.title: r for r in results}
    walled, fine = by_title["Harbour board approves new pier"], by_title["Harbour history"]
    assert walled.source_status is SourceStatus.CANNOT_CHECK
    assert walled.verdict is None and not walled.flagged and walled.rank is None
    assert walled.source_error.startswith('paywall ("subscribe to continue reading")')
    assert f"cannot check: {walled.source_error}" in walled.reasons
    assert fine.source_status is SourceStatus.FETCHED and fine.verdict is not None and not fine.flagged
    assert [(r.source_status, r.source_error) for r in again] == [(r.source_status, r.source_error) for r in results]
    # what it would have been: the teaser does not state the claim, so scoring it would flag it
    teaser = source_from_html(PAYWALL_TEASER, paywall)
    assert verifier.verify_text(claim_query(walled.claim), teaser.text).score < verifier.flag_threshold
    assert walled.to_dict()["source_status"] == "cannot_check"

    # stored as a worker stores it: the API, the dashboard and the bot see "cannot check"
    body = {"wiki": "enwiki", "title": "Harbour", "revision": 5,
            "claims": [{"key": f"c{n}", "text": c.text, "left_context": c.left_context, "section": ["History"],
                        "url": c.citation.url, "citation_title": c.citation.title} for n, c in enumerate(claims)]}
    check = client.post("/api/v1/checks", json=body).get_json()["check"]
    finish(store, check["id"], results)
    api = client.get(f"/api/v1/checks/{check['id']}").get_json()["check"]
    shown = {r["citation_title"]: r for r in api["results"]}["Harbour board approves new pier"]
    assert shown["source_status"] == "cannot_check" and shown["source_error"] == walled.source_error
    assert shown["flagged"] is False and shown["score"] is None and shown["level"] == "cannot_check"
    assert shown["level_reason"] == walled.source_error and shown["reportable"] is False
    assert api["flagged"] == 0
    stored = {r.citation_title: r for r in store.results(check["id"])}["Harbour board approves new pier"]
    assert not is_reportable(stored, threshold=1.0)
    check_page = client.get(f"/dashboard/checks/{check['id']}", headers={"Accept": "text/html"}).get_data(as_text=True)
    assert "could not be checked" in check_page
    detail = client.get(shown["dashboard_url"].removeprefix("http://side.test"),
                        headers={"Accept": "text/html"}).get_data(as_text=True)
    assert "could not be checked: paywall (&#34;subscribe to continue reading&#34;)" in detail
    schema = client.get("/api/v1/openapi.json").get_json()["components"]["schemas"]["Result"]
    assert "cannot_check" in schema["properties"]["source_status"]["enum"]


def test_the_bot_never_reports_a_cannot_check_citation_even_if_a_row_says_flagged(tmp_path):
    from bot.policy import is_reportable
    from service.store import CheckRequest, Store
    from side.extract.claims import Citation, Claim
    from side.pipeline import Result, SourceStatus
    from side.verify.levels import VerdictLevel
    from side.verify.verifier import Verdict

    store = Store.open(f"sqlite:///{tmp_path / 'side.sqlite3'}")
    try:
        citation = Citation(id="c1", kind="template", url="https://news.example/pier", title="Pier")
        claim = Claim("Harbour", ("History",), "The pier cost 40 million.", "The pier cost 40 million.", citation)
        record, _ = store.add_check(CheckRequest("testwiki", "Harbour", [claim, claim], 3, origin="bot"))
        low = Verdict("NOT ENOUGH INFO", 0.01)
        scored = Verdict("NOT ENOUGH INFO", 0.01, level=VerdictLevel.NOT_SUPPORTED)
        store.finish(record.id, [
            Result(claim, SourceStatus.CANNOT_CHECK, low, "paywall", flagged=True, reportable=True),
            Result(claim, SourceStatus.FETCHED, scored, flagged=True, reportable=True)], 1.0)
        walled, scored = store.results(record.id)
        assert walled.source_status == "cannot_check"
        assert not is_reportable(walled, 0.5) and is_reportable(scored, 0.5)
        assert not is_reportable(walled) and is_reportable(scored)  # the stored operating point too
    finally:
        store.close()


# --- how many real citations end as cannot check: WiCE ------------------------------------------------


def wice_record(claim_id: str, label: str, evidence: list[str], claim: str = ARTICLE_PARAGRAPHS[0]) -> str:
    return json.dumps({"label": label, "supporting_sentences": [], "claim": claim, "evidence": evidence,
                       "meta": {"id": claim_id, "claim_title": "Harbour", "claim_section": "History."}})


GERMAN = ["Der Hafen wurde 1902 wieder aufgebaut, nachdem ein Sturm die alte Mole zerstört hatte.",
          "Die neue Mole aus Granit ist dreihundert Meter lang und schützt die Fischereiflotte der Stadt."]


def test_eval_sources_wice_counts_cannot_check_citations_by_reason(tmp_path, capsys):
    """Each cited page is assessed as a fetched one, its WiCE title as the title, then pre-checked
    as the verifier does; the counts are per reason and gold label."""
    claims = tmp_path / "claims.jsonl"
    claims.write_text("\n".join([
        wice_record("d1", "supported", ["(meta data) TITLE: Harbour history", *ARTICLE_PARAGRAPHS]),
        wice_record("d2", "supported", ["(meta data) TITLE: Harbour history", *ARTICLE_PARAGRAPHS[1:]]),
        wice_record("d3", "not_supported", ["(meta data) TITLE: Geschichte", *GERMAN * 3]),
        wice_record("d4", "partially_supported", ["(meta data) TITLE: Page not found | Coastal Times",
                                                  "Sorry, we couldn't find that page."]),
        wice_record("d5", "not_supported", ["(meta data) TITLE: Empty"]),
    ]) + "\n")
    assert main(["eval", "sources", "--wice", str(claims), "--json", "--per-page"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["citations"], report["cannot_check"]) == (5, 3)
    assert {o["id"]: o["outcome"] for o in report["per_citation"]} == {
        "d1": "checkable", "d2": "checkable", "d3": "unsupported_language", "d4": "soft_404",
        "d5": "too_little_text"}
    outcomes = {o["outcome"]: o for o in report["outcomes"]}
    assert list(outcomes)[0] == "checkable" and outcomes["checkable"]["citations"] == 2
    assert outcomes["checkable"]["by_label"] == {"supported": 2, "partially_supported": 0, "not_supported": 0}
    assert outcomes["soft_404"]["reason"].startswith("the page says it does not exist")
    assert outcomes["too_little_text"]["reason"] == "the page has too little text to check a claim against"
    assert main(["eval", "sources", "--wice", str(claims), "--limit", "2"]) == 0
    table = " ".join(capsys.readouterr().out.split())
    assert "2 WiCE citations: 0 cannot check" in table and "false cannot check" in table
    assert main(["eval", "sources", "--wice", str(tmp_path / "none.jsonl")]) == 2
    assert "WiCE claims not found" in capsys.readouterr().err


@pytest.mark.parametrize(("claim", "sentences", "reason"), [
    (ARTICLE_PARAGRAPHS[0], ARTICLE_PARAGRAPHS, ""),
    (ARTICLE_PARAGRAPHS[0], GERMAN, "source is not in English"),
    (ARTICLE_PARAGRAPHS[0], [" ", ""], "empty source"),
    (" ", ARTICLE_PARAGRAPHS, "empty claim"),
])
def test_the_verifiers_cannot_check_reasons_are_counted_as_it_decides_them(verifier, claim, sentences, reason):
    """``verifier_cannot_check`` counts without the model what the real verifier decides with it."""
    from side.evaluation.sources import verifier_cannot_check
    from side.verify.verifier import Query

    verdict = verifier.verify(Query(claim), list(sentences))
    assert verifier_cannot_check(claim, sentences) == reason
    assert (verdict.level is VerdictLevel.CANNOT_CHECK, verdict.reason) == (bool(reason), reason)


@pytest.mark.data
def test_side_eval_sources_wice_on_wice_dev(capsys):
    from side.evaluation.sources import WICE_DEV

    data_dir = need_data(str(WICE_DEV)).parent.parent
    assert main(["eval", "sources", "--wice", "--data-dir", str(data_dir), "--json", "--per-page"]) == 0
    report = json.loads(capsys.readouterr().out)
    lines = (data_dir / WICE_DEV).read_text(encoding="utf-8").splitlines()
    assert report["citations"] == len(lines) == len(report["per_citation"])
    assert sum(o["citations"] for o in report["outcomes"]) == report["citations"]
    assert report["cannot_check"] == sum(o["outcome"] != "checkable" for o in report["per_citation"])
    assert report["outcomes"][0]["outcome"] == "checkable"
    assert report["outcomes"][0]["citations"] > 0.9 * report["citations"]  # WiCE's pages were all read by people
