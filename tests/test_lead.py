"""Lead claims grounded in the body: the lead's uncited sentences read from wikitext, checked
against the article's own body with the real verifier, stored, and through ``side lead``.

``tests/fixtures/lead_article.wikitext`` is written like a real biography: an infobox with a ref
inside, a hatnote-style short description, a file caption, cited and uncited lead sentences
(a ``<ref>``, a named ref, a ref inside a sentence, an ``{{sfn}}``, a ``{{citation needed}}``),
a body that states some lead sentences, contradicts one and lacks another, and reference and
link sections.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from side.cli import main
from side.extract.lead import ArticleLead, BodySentence, LeadClaim, read_lead
from side.verify.lead import NO_BODY, NOT_ENGLISH, LeadVerdict, check_lead
from side.verify.levels import VerdictLevel
from side.verify.verifier import Verifier

from conftest import need_data

ARTICLE = Path(__file__).parent / "fixtures" / "lead_article.wikitext"


@pytest.fixture(scope="module")
def article() -> ArticleLead:
    return read_lead(ARTICLE.read_text(encoding="utf-8"), "Jane Example")


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier.load(device="cpu")


# -- reading the lead ---------------------------------------------------------------------------

def test_uncited_lead_sentences_are_the_claims_and_cited_ones_are_skipped(article):
    assert [c.text for c in article.claims] == [
        "Jane Example (born March 2, 1950) is an American novelist and essayist.",
        "She studied English literature at Smith College.",
        "She was born in Chicago, Illinois, to a family of dairy farmers.",
        "She is a member of the Norwegian Academy of Science and Letters.",  # {{citation needed}} is no citation
    ]
    # the <ref name>, the ref inside "Her second novel,<ref>…</ref> …" and the {{sfn}} each cite a sentence
    assert (article.sentences, article.cited) == (7, 3)
    assert [c.position for c in article.claims] == [0, 1, 4, 5]


def test_infobox_caption_templates_and_ref_bodies_are_not_claims(article):
    text = " ".join(c.text for c in article.claims) + " ".join(b.text for b in article.body)
    for never in ("Novelist, essayist", "Profile of Jane Example", "photographed by her editor", "cite",
                  "American novelist}}", "Pulitzer Prizes announced", "Lives of American Writers", "Official website"):
        assert never not in text


def test_body_sentences_keep_their_section_and_skip_reference_sections(article):
    by_text = {b.text: b.section for b in article.body}
    assert by_text["She studied English literature at Smith College, graduating in 1972."] == ("Early life",)
    assert by_text["She has written essays for The Atlantic and Harper's Magazine since 1990."] == ("Career", "Essays")
    assert not any(section[0] in ("References", "External links") for section in by_text.values())


def test_a_page_without_headings_is_all_lead_and_has_no_body():
    lead = read_lead("'''Foo''' is a village in Kent. It has a church.<ref>x</ref>", "Foo")
    assert [c.text for c in lead.claims] == ["Foo is a village in Kent."] and lead.body == ()


def test_odd_input_gives_an_empty_lead_not_an_error():
    assert read_lead("", "Empty").claims == ()
    assert read_lead("{{Infobox|name=<ref>x</ref>\n== a ==\n<ref>never closed", "Broken").claims == ()


def test_real_article_lead(data_dir):
    path = need_data("fixtures/wikitext/Elizabeth-Gilbert.txt")
    lead = read_lead(path.read_text(encoding="utf-8"), "Elizabeth Gilbert")
    # the first sentence is uncited, the second carries a <ref>; the infobox says nothing
    assert [c.text[:30] for c in lead.claims] == ["Elizabeth M. Gilbert (born Jul"]
    assert lead.cited == 1 and "Waterbury" not in lead.claims[0].text
    assert lead.body[0] == BodySentence("Gilbert was born in Waterbury, Connecticut.", ("Early life",))


def test_article_lead_round_trips_through_dict(article):
    assert ArticleLead.from_dict(json.loads(json.dumps(article.to_dict()))) == article


# -- checking it against the body ---------------------------------------------------------------

def test_body_support_contradiction_and_absence(verifier, article):
    verdicts = {v.claim: v for v in check_lead(verifier, article)}
    stated = verdicts["She studied English literature at Smith College."]
    assert stated.level is VerdictLevel.SUPPORTED
    assert (stated.nearest, stated.nearest_section) == (
        "She studied English literature at Smith College, graduating in 1972.", ("Early life",))
    contradicted = verdicts["She was born in Chicago, Illinois, to a family of dairy farmers."]
    assert contradicted.level is VerdictLevel.NOT_SUPPORTED
    assert contradicted.nearest.startswith("Example was born in Boston")  # what the body says instead
    lacking = verdicts["She is a member of the Norwegian Academy of Science and Letters."]
    assert lacking.level is VerdictLevel.NOT_SUPPORTED and lacking.score < stated.score
    assert all(v.reason == "" and v.score is not None for v in verdicts.values())


def test_empty_body_and_foreign_article_cannot_be_checked(verifier):
    alone = read_lead("'''Foo''' is a village in Kent. It has a church with a tall tower.", "Foo")
    assert [(v.level, v.score, v.reason) for v in check_lead(verifier, alone)] == [
        (VerdictLevel.CANNOT_CHECK, None, NO_BODY)] * 2
    german = ArticleLead("Bazooka", (LeadClaim("Die Bazooka ist eine reaktive Panzerbüchse der Armee.", 0),),
                         (BodySentence("Die Waffe wurde im Jahre 1942 entwickelt und eingesetzt.", ("Geschichte",)),))
    assert [v.reason for v in check_lead(verifier, german)] == [NOT_ENGLISH]
    assert check_lead(verifier, ArticleLead("Cited", (), german.body, 1, 1)) == []


def test_lead_verdict_round_trips_through_dict():
    verdict = LeadVerdict("A claim.", 3, VerdictLevel.PARTIALLY_SUPPORTED, 0.41, "Body.", ("A", "B"))
    assert LeadVerdict.from_dict(json.loads(json.dumps(verdict.to_dict()))) == verdict


# -- side lead ----------------------------------------------------------------------------------

def test_side_lead_json(capsys):
    assert main(["-q", "lead", str(ARTICLE), "--title", "Jane Example", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["title"], out["lead_sentences"], out["cited"]) == ("Jane Example", 7, 3)
    assert [c["position"] for c in out["claims"]] == [0, 1, 4, 5]
    assert {c["level"] for c in out["claims"]} <= set(VerdictLevel)


@pytest.mark.parametrize("args, message", [
    (["lead", "/nonexistent/Foo.wikitext"], "no such file: /nonexistent/Foo.wikitext"),
    (["lead"], "give a wikitext file, or --title T with --wiki enwiki|local"),
    (["lead", "x.wikitext", "--revision", "3"], "--api and --revision only apply with --wiki"),
])
def test_side_lead_bad_input_is_one_line_and_exit_2(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"side: error: {message}"]


def test_side_lead_binary_file_is_refused(tmp_path, capsys):
    path = tmp_path / "photo.wikitext"
    path.write_bytes(b"\xff\xd8\xff\xe0 not text")
    assert main(["lead", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"side: error: {path} is not UTF-8 text")
