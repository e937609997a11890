"""More than one language: the gadget's, the dashboard's and the talk-page report's messages in
translatewiki.net's format, English as the source and fallback, German shipped complete.

Each message folder: ``en.json``, ``qqq.json`` documenting every key, one file per language with
exactly the English keys (no extra, none missing), ``@metadata`` with authors, keys with the
folder's prefix. The loader (side/messages.py) resolves ``{{PLURAL}}`` with English and German
rules and substitutes ``$n`` once, so quoted text can never pick a plural or a parameter. The
report follows the wiki's content language; the dashboard ``?uselang=`` or Accept-Language.
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import mwparserfromhell
import pytest
from markupsafe import escape
from test_bot_policy import HOSTILE_WORDS, finished_check
from test_dashboard import LEVEL_BADGES, flagged, page  # noqa: F401 - flagged is a fixture
from test_dashboard_levels import check_of_every_level

from bot.report import ReportItem, build_report
from service.store import CheckStatus, DismissReason, FeedbackAction, ReviewStatus, Store
from side.messages import Catalog, Messages
from side.verify.levels import VerdictLevel

REPO = Path(__file__).resolve().parents[1]
#: Each message folder and the prefix of its keys.
FOLDERS = {REPO / "gadget" / "i18n": "side-", REPO / "bot" / "i18n": "side-report-",
           REPO / "gadget" / "server" / "dashboard" / "i18n": "side-dashboard-"}
TEMPLATES = REPO / "gadget" / "server" / "dashboard" / "templates"


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("folder", list(FOLDERS), ids=lambda f: str(f.relative_to(REPO)))
def test_every_language_has_exactly_the_english_keys_and_each_is_documented(folder):
    files = {path.stem: _load(path) for path in folder.glob("*.json")}
    assert {"en", "qqq", "de"} <= set(files)
    english = set(files["en"]) - {"@metadata"}
    assert english and all(key.startswith(FOLDERS[folder]) for key in english)
    for lang, messages in files.items():
        assert messages["@metadata"]["authors"], lang
        assert set(messages) - {"@metadata"} == english, lang  # none missing, none extra
        assert all(isinstance(text, str) and text.strip() for text in messages.values() if text is not
                   messages["@metadata"]), lang


@pytest.mark.parametrize("folder", list(FOLDERS), ids=lambda f: str(f.relative_to(REPO)))
def test_translations_keep_the_parameters_and_plurals_of_english(folder):
    english = _load(folder / "en.json")
    for path in folder.glob("*.json"):
        if path.stem in ("en", "qqq"):
            continue
        for key, text in _load(path).items():
            if key == "@metadata":
                continue
            assert set(re.findall(r"\$\d", text)) == set(re.findall(r"\$\d", english[key])), (path.stem, key)
            for number in re.findall(r"\{\{PLURAL:(\$\d)\|", text):
                assert number in english[key], (path.stem, key)
    # the documentation names each parameter the English text takes
    documentation = _load(folder / "qqq.json")
    for key, text in english.items():
        for number in set(re.findall(r"\$\d", text)) if key != "@metadata" else ():
            assert number in documentation[key], key


def test_every_dashboard_message_the_templates_use_exists():
    catalog = _load(REPO / "gadget" / "server" / "dashboard" / "i18n" / "en.json")
    used = set()
    for path in TEMPLATES.glob("*.html"):
        used |= set(re.findall(r"'(side-dashboard-[a-z-]*[a-z])'", path.read_text(encoding="utf-8")))
    assert used and used <= set(catalog), used - set(catalog)
    # keys the templates build from a value: every value has its message
    built = ([f"side-dashboard-status-{s}" for s in (*ReviewStatus, *CheckStatus)]
             + [f"side-dashboard-reason-{r}" for r in DismissReason]
             + [f"side-dashboard-action-{a}" for a in FeedbackAction]
             + [f"side-dashboard-{kind}-{level.value.replace('_', '-')}" for level in VerdictLevel
                for kind in ("level", "count")])
    assert [key for key in built if key not in catalog] == []


def messages(lang: str, texts: dict[str, str], fallback: dict[str, str] | None = None) -> Messages:
    return Messages(lang, texts, fallback if fallback is not None else texts)


def test_plural_follows_the_language_and_a_missing_message_falls_back_to_english():
    english = {"n": "{{PLURAL:$1|$1 citation|$1 citations}} in $2", "only-en": "English only"}
    german = {"n": "{{PLURAL:$1|ein Beleg|$1 Belege}} in $2"}
    de = Messages("de", german, english)
    assert [de("n", n, "X") for n in (0, 1, 2, 21)] == ["0 Belege in X", "ein Beleg in X", "2 Belege in X",
                                                       "21 Belege in X"]
    assert messages("en", english)("n", 1, "Y") == "1 citation in Y"
    assert de("only-en") == "English only"
    assert de("nowhere") == "⧼nowhere⧽"
    assert de.number(0.054) == "0,05" and messages("en", english).number(0.054) == "0.05"


def test_parameters_are_substituted_once_and_never_read_as_markup():
    msg = messages("en", {"k": "$1 said {{PLURAL:$2|once|$2 times}}"})
    assert msg("k", "$2 {{PLURAL:$2|a|b}}", 3) == "$2 {{PLURAL:$2|a|b}} said 3 times"
    assert msg("k", "<b>", 1, escape=lambda text: str(escape(text))) == "<b> said once"  # escape: own text only
    assert messages("en", {"k": "a <i>$1</i>"})("k", "x", escape=lambda text: str(escape(text))) == \
        "a &lt;i&gt;x&lt;/i&gt;"


def test_a_language_is_chosen_by_code_region_or_falls_back_to_english():
    catalog = Catalog(REPO / "bot" / "i18n")
    assert catalog.languages[0] == "en" and "de" in catalog.languages and "qqq" not in catalog.languages
    assert catalog.choose(["de"]) == catalog.choose(["de-AT"]) == catalog.choose(["de_CH"]) == "de"
    assert catalog.choose(["fr", None, "de"]) == "de"
    assert catalog.choose(["qqq"]) == catalog.choose(["fr"]) == catalog.choose([]) == "en"


@pytest.fixture()
def report_store(tmp_path):
    store = Store.open(f"sqlite:///{tmp_path / 'side.sqlite3'}")
    yield store
    store.close()


def _report(store, rows, lang, revision=42):
    check_id = finished_check(store, "Turm", revision, rows)
    items = [ReportItem(r, f"k{r.id}") for r in store.results(check_id)]
    return build_report("dewiki", "Turm", "Diskussion:Turm", check_id, revision, items,
                        "http://dash.example/dashboard/checks/" + check_id, "Benutzer:SideBot/Run",
                        "Benutzer Diskussion:SideBot", "side", today=date(2026, 11, 22), lang=lang)


def test_a_dewiki_report_is_german_with_the_right_plural(report_store):
    store = report_store
    one = _report(store, [("Der Turm ist 330 Meter hoch.", "http://s/1", 0.05, True, "330 Meter")], "de")
    assert one.heading == ("Automatische Belegprüfung: 1 Beleg von der angegebenen Quelle nicht gestützt "
                           "(2026-11-22)")
    assert "stuft 1 Beleg als '''nicht gestützt''' ein" in one.body
    assert "[[Special:Diff/42|dieser Bearbeitung]] von [[:Turm]]" in one.body
    assert "; Einstufung\n: '''nicht gestützt''': Die angegebene Quelle scheint die Aussage nicht zu stützen." \
        in one.body
    assert ": Wörter der Aussage, die die Quelle nicht stützt: <nowiki>330 Meter</nowiki>" in one.body
    assert "Stützwert 0,05" in one.body and "(Stützwert 0,91)" in one.body
    assert "{{bots|optout=side}}" in one.body and one.body.rstrip().endswith("~~~~")
    assert one.summary.startswith("Automatische Belegprüfung von [[:Turm]]: 1 Beleg ")
    two = _report(store, [("A.", "http://s/1", 0.05, True), ("B.", "http://s/2", 0.04, True)], "de", revision=None)
    assert "2 Belege von der angegebenen Quelle nicht gestützt" in two.heading
    assert "in einer kürzlichen Bearbeitung von [[:Turm]]" in two.body and "'''Beleg 2'''" in two.body
    assert ": 2 Belege " in two.summary
    # a wiki in a language Side has no messages in gets the English report
    assert _report(store, [("C.", "http://s/3", 0.05, True)], "fr").heading.startswith("Automated citation check: ")


def test_a_german_report_quoting_hostile_words_stays_inert(report_store):
    report = _report(report_store, [("Der Turm ist hoch.", "http://s/1", 0.05, True, *HOSTILE_WORDS)], "de")
    [line] = [line for line in report.body.splitlines() if "nicht stützt" in line]
    outside = re.sub(r"<nowiki>.*?</nowiki>", "", line)
    assert outside == ": Wörter der Aussage, die die Quelle nicht stützt: " + ", " * (len(HOSTILE_WORDS) - 1)
    parsed = mwparserfromhell.parse(report.body)
    assert parsed.filter_templates() == [] and parsed.filter_headings() == [] and parsed.filter_comments() == []
    assert re.sub(r"<nowiki>.*?</nowiki>", "", report.body).count("~~~~") == 1


def _badges(client, url, **headers):
    response = client.get(url, headers=headers)
    doc = page(response)
    rows = doc.xpath("//tr[contains(@class, 'result-row')]")
    return doc, response, {row.get("data-level"): " ".join(row.xpath(f".{LEVEL_BADGES}")[0].text_content().split())
                           for row in rows}


def test_the_dashboard_speaks_german_with_uselang_or_accept_language(client, store):
    check_id = check_of_every_level(client, store)["supported"].check_id
    german = {"supported": "gestützt", "partially_supported": "teilweise gestützt",
              "not_supported": "nicht gestützt", "cannot_check": "konnte nicht geprüft werden"}
    doc, response, badges = _badges(client, f"/dashboard/checks/{check_id}?uselang=de")
    assert badges == german
    assert doc.xpath("//html/@lang") == ["de"]
    assert "4 Belege, 2 markiert" in doc.text_content()
    assert [" ".join(a.text_content().split()) for a in doc.xpath("//a[contains(@class, 'level-count')]")] == [
        "1 gestützt", "1 teilweise gestützt", "1 nicht gestützt", "1 nicht prüfbar"]
    doc, response, badges = _badges(client, "/dashboard/pages/enwiki/Tower", **{"Accept-Language": "de-DE,de;q=0.9"})
    assert badges == german and "Accept-Language" in response.headers.get("Vary", "")
    queue = page(client.get("/dashboard/?uselang=de", headers={"Accept-Language": "en"}))
    assert "Markierte Belege" in queue.xpath("//h1")[0].text_content()
    assert "teilweise gestützt" in [o.text_content() for o in queue.xpath("//select[@name='level']/option")]
    # English by default, for an unknown language, and when uselang says so over the browser
    for url, headers in ((f"/dashboard/checks/{check_id}", {}),
                         (f"/dashboard/checks/{check_id}?uselang=xx", {"Accept-Language": "fr"}),
                         (f"/dashboard/checks/{check_id}?uselang=en", {"Accept-Language": "de"})):
        doc, _, badges = _badges(client, url, **headers)
        assert badges["not_supported"] == "not supported" and doc.xpath("//html/@lang") == ["en"], url


def test_the_german_stats_page_draws_its_charts_in_german(client, store, flagged):  # noqa: F811 - the fixture
    """Chart names (aria-label), legends, tooltips, the supported cut and its number, the ring's
    caption and the dismissal reasons: every word the statistics charts show, in German."""
    store.add_feedback(flagged["nei"].id, "accept")
    store.add_feedback(flagged["worst"].id, "dismiss", reason="source-is-fine")
    doc = page(client.get("/dashboard/stats?uselang=de"))
    charts = doc.xpath("//svg")
    assert [c.get("aria-label") for c in charts] == [
        "Geprüfte Belege nach Einstufung", "Verteilung der Stützungswerte nach Einstufung",
        "Markierte Belege pro Tag", "Anteil der angenommenen geprüften Vorschläge",
        "Warum Vorschläge abgelehnt wurden"]
    assert [r.xpath("title")[0].text for r in charts[0].xpath(".//rect")] == [
        "gestützt: 1", "teilweise gestützt: 1", "nicht gestützt: 2", "konnte nicht geprüft werden: 0"]
    tips = {t.text for t in charts[1].xpath(".//rect/title")}
    assert "0,0–0,1: 1 nicht gestützt" in tips and "0,8–0,9: 1 gestützt" in tips
    assert re.fullmatch(r"gestützt ab 0,\d\d", charts[1].xpath(".//text[@class='marker-label']")[0].text)
    assert {t.text for t in charts[1].xpath(".//text[@class='legend']")} == {
        "gestützt", "teilweise gestützt", "nicht gestützt"}
    assert [t.text for t in charts[1].xpath(".//text[@class='tick']")][-1] == "1,0"  # the last bin edge
    assert sorted(t.text.split(": ")[1] for t in charts[2].xpath(".//rect/title")) == [
        "1 teilweise gestützt", "2 nicht gestützt"]
    assert charts[3].xpath(".//text[@class='ring-caption']")[0].text == "angenommen"
    assert {t.text for t in charts[3].xpath(".//title")} == {"1 von 2"}
    assert charts[4].xpath(".//rect/title")[0].text == "Die angegebene Quelle ist in Ordnung: 1"
    words = " ".join(" ".join([c.get("aria-label"), c.text_content()]) for c in charts).lower()
    assert not [w for w in ("supported", "flagged", "accepted", "dismiss", " of ", "citations") if w in words], words
    empty = page(client.get("/dashboard/stats?uselang=de&wiki=dewiki"))
    assert empty.xpath("//svg")[4].xpath(".//text")[0].text == "noch keine Ablehnungen"


def test_the_german_result_page_escapes_what_it_quotes(client, store):
    results = check_of_every_level(client, store)
    response = client.get(f"/dashboard/results/{results['partially_supported'].id}?uselang=de")
    html = response.get_data(as_text=True)
    assert "<script>alert" not in html
    doc = page(response)
    assert "Die Quelle stützt diese Wörter der Aussage nicht:" in doc.text_content()
    assert "Aussage im Zusammenhang" in doc.text_content()
