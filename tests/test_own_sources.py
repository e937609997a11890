"""A weak citation's fix from the article's own sources: reuse a ref that supports the claim.

The pipeline runs on a real local web server and the shipped verifier; the evaluation task on a
hand-made WiCE-shaped file, and on the real dev split when the shared data is there.
"""

from __future__ import annotations

import json
import re

import pytest

from side.cli import main
from side.config import FetchConfig
from side.evaluation.retrieval import evaluate_own_sources, own_source_items
from side.extract.claims import Citation
from side.extract.refnames import propose_ref_name, ref_tag, reuse_tag, sanitize_ref_name
from side.extract.wikitext import extract_claims
from side.pipeline import REUSE_MESSAGE, Pipeline, Result, Suggestion, SuggestionOrigin, make_source_loader
from side.sources.fetch import fetch_source
from side.verify.levels import VerdictLevel
from side.verify.verifier import Verifier

from conftest import need_data
from httpserver import LocalServer, Response

WEAK_PAGE = b"""<html><head><title>Salmon</title></head><body><article><h1>Salmon</h1>
<p>Salmon migrate upstream to spawn in freshwater rivers.</p>
<p>Many species of trout live in cold lakes, and fishing licences are required in most regions.</p>
</article></body></html>"""

HEIGHT_PAGE = b"""<html><head><title>Eiffel Tower facts</title></head><body><article><h1>Eiffel Tower facts</h1>
<p>The Eiffel Tower in Paris was completed in 1889 for the World's Fair.</p>
<p>The Eiffel Tower is 330 metres (1,083 ft) tall, about the height of an 81-storey building.</p>
<p>Its engineering company was led by Gustave Eiffel.</p></article></body></html>"""

TRAINS_PAGE = b"""<html><head><title>Rail gauge</title></head><body><article><h1>Rail gauge</h1>
<p>Standard gauge railways use a track gauge of 1,435 mm.</p>
<p>Broad gauge lines are wider, and narrow gauge lines are common in mountains.</p></article></body></html>"""

#: Claim 1 cites the salmon page (weak); ref 2's page says what claim 1 says; ref 3 is unrelated.
ARTICLE = """'''Eiffel Tower''' is a landmark in Paris.

== Design ==
The Eiffel Tower is 330 metres tall.<ref>[WEAK_URL Salmon]</ref>
The tower was completed in 1889 for the World's Fair.REF2
A train station with standard gauge tracks is nearby.<ref name="Martin-2019">{{cite web |url=TRAINS_URL \
|title=Rail gauge}}</ref>
"""
NAMED_REF2 = '<ref name="facts">{{cite web |url=HEIGHT_URL |title=Eiffel Tower facts}}</ref>'
UNNAMED_REF2 = ("<ref>{{cite web |url=HEIGHT_URL |title=Eiffel Tower facts |last=Martin |first=Anne "
                "|date=12 March 2019 |website=Tower Facts}}</ref>")


@pytest.fixture(scope="module")
def verifier():
    return Verifier.load(device="cpu")


@pytest.fixture()
def served(tmp_path):
    with LocalServer() as server:
        urls = {"WEAK_URL": server.add("/", Response(WEAK_PAGE)),
                "HEIGHT_URL": server.add("/eiffel/height.html", Response(HEIGHT_PAGE)),
                "TRAINS_URL": server.add("/rail/gauge.html", Response(TRAINS_PAGE))}
        yield urls, tmp_path


def article_with(ref2: str, urls: dict[str, str]) -> str:
    text = ARTICLE.replace("REF2", ref2)
    for placeholder, url in urls.items():
        text = text.replace(placeholder, url)
    return text


class CountingVerifier:
    """The verifier, counting the (claim, source) items it is asked to score."""

    def __init__(self, verifier: Verifier) -> None:
        self.verifier, self.items = verifier, 0

    def verify_many(self, items, *args, **kwargs):
        self.items += len(items)
        return self.verifier.verify_many(items, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.verifier, name)


def check(verifier, wikitext: str, tmp_path, **kwargs) -> list[Result]:
    config = FetchConfig(allow_hosts=["127.0.0.1"], timeout_s=2)
    loader = make_source_loader(None, lambda url: fetch_source(url, config, tmp_path / "cache"))
    return Pipeline(verifier, None, loader, **kwargs).verify_claims(extract_claims(wikitext, "Eiffel Tower"))


def test_a_weak_citation_is_told_to_reuse_the_named_ref_that_supports_it(verifier, served):
    urls, tmp_path = served
    results = check(verifier, article_with(NAMED_REF2, urls), tmp_path)
    weak = results[0]
    assert weak.claim.citation.url == urls["WEAK_URL"] and weak.level.needs_review and weak.flagged
    reuse = weak.suggestions[0]
    assert reuse.origin is SuggestionOrigin.ARTICLE and reuse.url == urls["HEIGHT_URL"]
    assert reuse.reuse_ref == "facts" and reuse.cite == '<ref name="facts" />' and reuse.name_ref == ""
    assert reuse.message == REUSE_MESSAGE and "330 metres" in reuse.evidence.text
    assert reuse.score >= verifier.levels.supported > weak.verdict.score
    assert any(REUSE_MESSAGE in r and '"facts"' in r for r in weak.reasons)
    # a supported citation is not given its neighbours' refs, nor a weak one that none of them supports
    assert results[1].level is VerdictLevel.SUPPORTED
    assert all(s.origin is SuggestionOrigin.CORPUS for r in results[1:] for s in r.suggestions)
    assert all(r.source_sentences == [] for r in results)  # dropped once decided, as before


def test_an_unnamed_ref_gets_a_proposed_name_unique_in_the_article(verifier, served):
    urls, tmp_path = served
    wikitext = article_with(UNNAMED_REF2, urls)
    reuse = check(verifier, wikitext, tmp_path)[0].suggestions[0]
    # Martin + 2019, but "Martin-2019" already names ref 3
    assert reuse.origin is SuggestionOrigin.ARTICLE and reuse.reuse_ref == "Martin-2019-2"
    assert reuse.cite == '<ref name="Martin-2019-2" />'
    original = UNNAMED_REF2.replace("HEIGHT_URL", urls["HEIGHT_URL"])
    assert reuse.name_ref == original.replace("<ref>", '<ref name="Martin-2019-2">', 1)
    assert original in wikitext  # what is pasted over is the ref as written
    again = extract_claims(wikitext.replace(original, reuse.name_ref) + "\nAgain." + reuse.cite, "Eiffel Tower")
    assert {c.citation.name for c in again if c.citation.url == urls["HEIGHT_URL"]} == {"Martin-2019-2"}


def test_own_sources_are_bounded_and_chosen_by_relevance(verifier, served):
    urls, tmp_path = served
    wikitext = article_with(NAMED_REF2, urls)
    counting = CountingVerifier(verifier)
    one = check(counting, wikitext, tmp_path, own_sources=1)
    weak = [r for r in one if r.level in {VerdictLevel.PARTIALLY_SUPPORTED, VerdictLevel.NOT_SUPPORTED}]
    # 3 citations, then 1 other source per weak claim: for claim 1, BM25 picks the page about the tower
    assert len(weak) >= 1 and counting.items == 3 + len(weak)
    assert one[0].suggestions[0].reuse_ref == "facts"
    counting.items = 0
    check(counting, wikitext, tmp_path)  # by default up to 3: the two others each
    assert counting.items == 3 + 2 * len(weak)
    counting.items = 0
    none = check(counting, wikitext, tmp_path, own_sources=0)
    assert counting.items == 3 and not none[0].suggestions


def test_reuse_suggestions_round_trip_through_json(verifier, served):
    urls, tmp_path = served
    results = check(verifier, article_with(UNNAMED_REF2, urls), tmp_path)
    reuse = results[0].suggestions[0]
    data = json.loads(json.dumps(reuse.to_dict()))
    assert data["origin"] == "article" and data["reuse_ref"] == "Martin-2019-2" and data["message"] == REUSE_MESSAGE
    assert Suggestion.from_dict(data) == reuse
    for result in results:
        assert Result.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    old = {k: v for k, v in reuse.to_dict().items() if k not in {"origin", "reuse_ref", "name_ref", "message"}}
    assert Suggestion.from_dict(old).origin is SuggestionOrigin.CORPUS  # stored before the field existed


def test_the_store_keeps_a_reuse_suggestion(verifier, served):
    from bot.report import MESSAGES, ReportItem, _item_text
    from service.store import CheckRequest, Store

    urls, tmp_path = served
    results = check(verifier, article_with(UNNAMED_REF2, urls), tmp_path)
    store = Store.open(f"sqlite:///{tmp_path / 'side.sqlite3'}")
    record, _ = store.add_check(CheckRequest("enwiki", "Eiffel Tower", [r.claim for r in results]))
    store.finish(record.id, results, 1.0)
    stored = store.results(record.id)
    by_url = {r.citation_url: r for r in stored}
    weak = by_url[urls["WEAK_URL"]]
    assert weak.suggestions[0] == results[0].suggestions[0]
    store.close()
    # the talk-page report says so, and gives both texts to paste
    text = _item_text(MESSAGES.messages("en"), 1, ReportItem(weak, "key"))
    assert "This article already cites a source that supports this." in text
    assert 'Ready to paste: <code><nowiki>&lt;ref name="Martin-2019-2" /&gt;' in text
    assert "has no name yet" in text and '&lt;ref name="Martin-2019-2"&gt;{{cite web' in text


@pytest.mark.parametrize("citation, taken, name", [
    (Citation("a", "template", "{{cite web}}", author="Smith, John", date="2001-05-01"), set(), "Smith-2001"),
    (Citation("a", "template", "x", author="Anne Martin and Bob Lee", date="May 2019"), {"Martin-2019"},
     "Martin-2019-2"),
    (Citation("a", "template", "x", website="The \"Times\" <UK>", date="n.d."), set(), "The-Times-UK"),
    (Citation("a", "bare_url", "x", url="https://www.bbc.co.uk/news/1"), {"bbc.co.uk", "bbc.co.uk-2"},
     "bbc.co.uk-3"),
    (Citation("a", "text", "x", title="1999"), set(), "ref-1999"),
    (Citation("a", "text", "x"), set(), "source"),
])
def test_proposed_ref_names(citation, taken, name):
    assert propose_ref_name(citation, taken) == name
    assert re.fullmatch(r"[\w.\-]+", name) and not name.isdigit()


def test_ref_tags_quote_any_name():
    assert reuse_tag("a b") == '<ref name="a b" />' and reuse_tag('say "hi"') == "<ref name='say \"hi\"' />"
    assert ref_tag(Citation("a", "template", "{{cite web |url=u}}"), "U-2020") == \
        '<ref name="U-2020">{{cite web |url=u}}</ref>'
    assert sanitize_ref_name("  --  ") == "" and len(sanitize_ref_name("x" * 100)) == 40


# --------------------------------------------------------------------------------------------
# side eval retrieval own-sources

def _row(claim: str, title: str, page: list[str], label: str = "supported") -> dict:
    return {"claim": claim, "label": label, "supporting_sentences": [], "evidence": page,
            "meta": {"id": claim[:8], "claim_title": title, "claim_section": "History.", "claim_context": ""}}


BRIDGE = ["(meta data) TITLE: Bridge", "The bridge opened to traffic in 1932.", "It is painted grey."]
TOLLS = ["(meta data) TITLE: Tolls", "Tolls on the bridge were abolished in 1970.", "Cars paid one dollar."]
RIVER = ["The river floods every spring.", "Its delta is home to many birds."]
ALONE = ["A page cited once in its article."]


def test_own_source_pools_group_an_articles_pages(tmp_path):
    rows = [_row("The bridge opened in 1932.", "Bridge", BRIDGE), _row("Tolls ended in 1970.", "Bridge", TOLLS),
            _row("It is grey.", "Bridge", BRIDGE), _row("The river floods in spring.", "Bridge", RIVER),
            _row("Nothing else.", "Other", ALONE)]
    items, pages, single = own_source_items(rows)
    assert single == 1 and len(items) == 4 and len(pages) == 4
    assert all(len(i.pool) == 3 and i.gold in i.pool and list(i.pool) == sorted(i.pool) for i in items)
    assert items[0].gold == items[2].gold  # the same page cited twice is one page of the pool
    assert not any(s.startswith("(meta data)") for s in pages[items[0].gold])


def test_own_sources_eval_on_a_hand_made_set(verifier, tmp_path):
    rows = [_row("The bridge opened to traffic in 1932.", "Bridge", BRIDGE),
            _row("Tolls on the bridge were abolished in 1970.", "Bridge", TOLLS),
            _row("The river floods every spring.", "Bridge", RIVER),
            _row("Nothing else.", "Other", ALONE)]
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = evaluate_own_sources(path, verifier, preselect=2)
    assert report.task == "own-sources" and report.n_queries == 3
    assert set(report.metrics) == {"verifier", "bm25-max", "minilm-max-cos", "bm25-top2+verifier", "chance",
                                   "verifier (supported claims)"}
    assert report.metrics["verifier"] == {"hit@1": 1.0, "hit@3": 1.0, "hit@10": 1.0}
    assert report.metrics["chance"]["hit@1"] == pytest.approx(1 / 3, abs=1e-3)
    assert report.settings["claims_left_out_single_page"] == 1
    assert report.settings["claims_by_pool_size"] == {"3": 3} and report.settings["pairs_verified"] == 9


def test_own_sources_cli_bad_input_is_one_line(tmp_path, capsys):
    assert main(["eval", "retrieval", "own-sources", "--claims", str(tmp_path / "none.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("side: error:") and "no such claims file" in err and "\n" not in err


def test_own_sources_on_wice_dev(verifier, tmp_path):
    """On real dev articles the verifier finds a claim's own page among its article's pages more
    often than chance (the figures on the whole split are printed by ``side eval``). The whole
    split takes minutes on a CPU: the first eight articles citing several pages, of at most 700
    sentences each (about 2,100 in all), are measured."""
    from side.data import read_jsonl

    records = list(read_jsonl(need_data("wice/claim_dev.jsonl")))
    items, pages, single = own_source_items(records)
    assert len(items) >= 30 and single > 0 and max(len(i.pool) for i in items) >= 3
    size = {i.record["meta"]["claim_title"]: sum(len(pages[p]) for p in i.pool) for i in items}
    titles = [t for t in dict.fromkeys(i.record["meta"]["claim_title"] for i in items) if size[t] <= 700][:8]
    path = tmp_path / "dev-subset.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records
                            if (r.get("meta") or {}).get("claim_title") in titles), encoding="utf-8")
    report = evaluate_own_sources(path, verifier)
    assert report.n_queries >= 8 and report.settings["articles"] == 8
    assert report.metrics["verifier"]["hit@1"] > report.metrics["chance"]["hit@1"]
    assert report.metrics["verifier"]["hit@10"] >= report.metrics["verifier"]["hit@3"] >= \
        report.metrics["verifier"]["hit@1"]


def test_the_gadget_offers_the_reuse_from_the_api_in_a_browser(page, client, store):
    """A stored reuse suggestion, read through ``GET /api/v1/checks/<id>``, is rendered by the
    gadget's own panel in Chromium: first, as a reuse, saying the article already cites it."""
    from pathlib import Path

    from side.pipeline import SourceStatus
    from side.verify.verifier import Evidence, Verdict, VerdictLabel

    from harness.browser import save_screenshot
    from webapp import claims_body, finish

    gadget = Path(__file__).resolve().parents[1] / "gadget"
    check_ = client.post("/api/v1/checks", json=claims_body(n=1)).get_json()["check"]
    [claim] = store.check(check_["id"]).claims
    own = Suggestion("https://example.org/good", "Good", 0.9, Evidence("Alsea was founded in 1997.", 2, 0.9),
                     '<ref name="Good-2020" />', origin=SuggestionOrigin.ARTICLE, reuse_ref="Good-2020",
                     name_ref='<ref name="Good-2020">{{cite web |url=https://example.org/good}}</ref>')
    corpus = Suggestion("https://better.example/a", "Better", 0.8, None, "{{cite web |url=https://better.example/a}}")
    finish(store, check_["id"], [Result(claim, SourceStatus.FETCHED, Verdict(VerdictLabel.NOT_ENOUGH_INFO, 0.1,
                                                                             level=VerdictLevel.NOT_SUPPORTED),
                                        flagged=True, suggestions=[own, corpus])])
    results = client.get(f"/api/v1/checks/{check_['id']}").get_json()["check"]["results"]
    assert results[0]["suggestions"][0] | {"evidence": None} == own.to_dict() | {"evidence": None}
    messages = json.loads((gadget / "i18n" / "en.json").read_text(encoding="utf-8"))
    css = (gadget / "src" / "side.css").read_text(encoding="utf-8")
    page.set_content(f"<!doctype html><html><head><style>{css}</style></head><body></body></html>")
    panel = (gadget / "src" / "side-hints.js").read_text("utf-8")  # CommonJS, loaded as ResourceLoader runs it
    page.add_script_tag(content=f"var module = {{ exports: {{}} }};\n{panel}\nwindow.sideHints = module.exports;")
    page.evaluate("""([messages, results]) => {
        const msg = (key, ...params) => messages[key].replace(/\\$(\\d+)/g, (m, n) => String(params[n - 1]));
        const panel = window.sideHints.createPanel({document, msg, onConsent() {}, onShow() {}, onInsert() {}});
        document.body.appendChild(panel.element);
        panel.render(results.map((result, n) => ({key: result.client_key, number: n + 1, text: 'Claim.', result})));
    }""", [messages, results])
    save_screenshot(page, "gadget-reuse", full_page=False)
    rows = page.locator(".side-suggestion")
    assert rows.count() == 2
    assert rows.nth(0).locator(".side-insert").inner_text() == "Reuse this citation"
    assert rows.nth(0).locator(".side-suggestion__origin").inner_text() == messages["side-reuse-note"]
    assert rows.nth(1).locator(".side-insert").inner_text() == "Insert citation"
    assert rows.nth(1).locator(".side-suggestion__origin").count() == 0
    assert not page.side_console, page.side_console
