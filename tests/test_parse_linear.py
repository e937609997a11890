"""Claim extraction is linear in the wikitext's length, and reads real pages exactly as before.

Three things are checked, none of them with a clock (benchmarks/parse.py prints the times):

* the guarded tokenizer (side.extract.parse) builds mwparserfromhell's own tree: on every fixture
  article (against its C tokenizer) and on generated markup soups (against its Python one);
* the incremental claim and context (side.extract.sentences) equal cleaning the whole paragraph
  at every ref, on generated paragraphs;
* the work, counted in tokenizer reads and characters cleaned, grows linearly with the input for
  the shapes that used to take quadratic time, and the fallback readings are bounded and logged.
"""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from mwparserfromhell.parser._tokenizer import CTokenizer
from mwparserfromhell.parser.builder import Builder
from mwparserfromhell.parser.tokenizer import Tokenizer

from side.extract import parse
from side.extract.parse import (
    FALLBACK_WORK_PER_SEGMENT,
    WORK_FLOOR,
    WORK_PER_SEGMENT,
    ParseLevel,
    _Doom,
    _OverBudget,
    _Tokenizer,
    parse_wikitext,
)
from side.extract.sentences import MAX_CLAIM_CHARS, Flow, cap_claim, clean_text, last_sentence
from side.extract.wikitext import _walk_page, extract, extract_claims

from conftest import need_data

KB = 1024


@pytest.fixture(scope="module")
def articles() -> dict[str, str]:
    folder = need_data("fixtures/wikitext")
    return {path.stem: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.txt"))}


def tokens(text: str, level: ParseLevel = ParseLevel.EXACT) -> list:
    doom = _Doom(text)
    doom.level = level
    return _Tokenizer(doom).tokenize(text, skip_style_tags=level is not ParseLevel.EXACT)


# -- the tree is mwparserfromhell's own ---------------------------------------------------------

def test_real_articles_parse_to_mwparserfromhells_own_tree(articles):
    for name, text in articles.items():
        assert tokens(text) == CTokenizer().tokenize(text, 0, False), name
        assert parse_wikitext(text)[1].level is ParseLevel.EXACT, name


#: Markup that opens and closes constructs in every order. Headings, bold/italic quotes and
#: single tags (<li>) are left out: a failed attempt inside them leaves mwparserfromhell's route
#: cache (and its heading flag) in a state that changes how later text reads, which skipping a
#: doomed attempt cannot reproduce; that only decides whether some quotes read as italics.
SOUP = ["<ref>", "</ref>", "<ref name=a/>", '<ref name="b">', "<ref name='c' />", "</ref >", "</REF>", "<REF>",
        '<ref name="x>', "{{", "}}", "{{{", "}}}", "[[", "]]", "[", "]", "[http://x.example ", "http://y.example/",
        "<!--", "-->", "\n{|", "\n|}", "\n|", "\n|-", "{|", "|}", "\n", "\n\n", "<div>", "</div>", "<nowiki>",
        "</nowiki>", "<math>", "</math>", '<span class="x">', "</span>", "<br>", "|", "a", "b c", ". ", "&lt;",
        "&amp;", "&", "<", ">", "/>", '"', "'", ":", ";", "*", "#", "<. ", "x<y "]


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.lists(st.sampled_from(SOUP), min_size=1, max_size=40))
def test_doomed_openers_read_as_mwparserfromhell_reads_them(pieces):
    text = "".join(pieces)
    try:
        guarded = tokens(text)
    except _OverBudget:
        assume(False)
    assert guarded == Tokenizer().tokenize(text, 0, False)


# -- claims and contexts, cleaned once ----------------------------------------------------------

def reference_context(parts: list[str], words: int) -> str:
    """The left context as it was computed before: clean the last parts worth ``words * 20``."""
    if words <= 0:
        return ""
    picked: list[str] = []
    budget = words * 20
    for part in reversed(parts):
        picked.append(part)
        budget -= len(part)
        if budget <= 0:
            break
    tail = clean_text("".join(reversed(picked))).split(" ")
    return " ".join(tail[-words:]) if tail != [""] else ""


#: Prose pieces that exercise every cleaning rule and sentence boundary rule.
PROSE = ["word", "Word", "WORD", "x", "The", " ", "  ", "\t", "\n", ". ", "! ", "? ", "…", "...", "Dr. ", "U.S. ",
         "e.g. ", "J. ", "no. ", "'", "''", "'''", '"', "“", "”", "‘", "’", "(", ")", "( )", "(, )", ", ", "; ",
         ": ", "__NOTOC__", "__", "_", "ABC", "中文", "a.b", "[", "]", "1990", "-", " .", " ,", " )"]
EVENT = st.one_of(st.sampled_from(PROSE).map(lambda piece: ("text", piece)),
                  st.just(("ref", "")), st.just(("break", "")),
                  st.tuples(st.just("long"), st.sampled_from(PROSE), st.integers(50, 1500)))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.lists(EVENT, min_size=1, max_size=120), st.sampled_from([0, 1, 5, 100]))
def test_claims_and_contexts_equal_cleaning_the_whole_paragraph(events, words):
    flow = Flow()
    paragraph: list[str] = []
    for event in events:
        kind, piece = event[0], event[1]
        if kind == "text" or kind == "long":
            text = piece * (event[2] if kind == "long" else 1)
            flow.add(text)
            paragraph.append(text)
        elif kind == "break":
            flow.paragraph_break()
            paragraph = []
        else:
            assert flow.sentence() == cap_claim(last_sentence(clean_text("".join(paragraph))))
            assert flow.left_context(words) == reference_context(flow.parts, words)


def test_a_sentence_without_end_keeps_its_last_characters():
    flow = Flow()
    for n in range(3000):
        flow.add(f"item {n}, ")
    claim, whole = flow.sentence(), clean_text("".join(flow.parts))
    assert claim == cap_claim(whole)
    assert MAX_CLAIM_CHARS - 20 < len(claim) <= MAX_CLAIM_CHARS
    assert whole.endswith(" " + claim)  # from a word start


# -- work grows linearly ------------------------------------------------------------------------

def repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


SHAPES = {
    "unclosed ref": "Some claim here. <ref>{{cite web |url=https://e.example/x |title=T}} more words ",
    "unclosed named ref": 'Claim. <ref name="n">[https://e.example/x X] more ',
    "one paragraph": "A sentence about one fact of the article.<ref>[https://e.example/a A]</ref> ",
    "no full stop": "a fact without an end<ref>[https://e.example/a A]</ref> ",
    "unclosed template": "words {{x|y ",
    "nested template": "{{a|{{b}} text ",
    "template closed in a ref": "Text {{a|<ref>x}}</ref> ",
    "ref with an open quote": 'Fact.<ref name="a>b</ref> ',
    "unclosed comment": "w <!-- x ",
    "unclosed table": "\n{|\n| x ",
    "list items and quotes": "<li>a ''''b ",
    "italics in refs": "b c</ref><ref>''<span>",
    "heading closures": "\n== a = b = c = d ",
    "punctuation only": ". . ! ?<ref name=a/> ",
    "no spaces": "中文中文a.b. A中文<ref name=a/>",
}


def work(text: str) -> tuple[int, int]:
    """Tokenizer reads and characters cleaned for one extraction."""
    walker = _walk_page(text, 100)
    assert walker.report is not None
    return walker.report.work, walker.main.work


#: Reads per segment no page can exceed: the exact reading's budget and both fallbacks'.
MAX_READS = WORK_PER_SEGMENT + 2 * FALLBACK_WORK_PER_SEGMENT


@pytest.mark.parametrize("shape", SHAPES)
def test_work_grows_linearly(shape, caplog):
    caplog.set_level(logging.ERROR)
    # Sizes past the point where every claim is capped, so that the ratio is the asymptotic one.
    size = 64 * KB if shape == "no full stop" else 16 * KB
    small, large = (work(repeat(SHAPES[shape], n)) for n in (size, 4 * size))
    # Four times the input: linear work is about four times as much, quadratic sixteen.
    assert large[0] <= 5 * small[0], (small, large)
    assert large[1] <= 5 * small[1] + 10 * KB, (small, large)
    segments = parse_wikitext(repeat(SHAPES[shape], 4 * size))[1].segments
    assert large[0] <= 3 * WORK_FLOOR + MAX_READS * segments


def test_refs_after_one_long_text_grow_linearly():
    def page(refs: int) -> str:
        return "word " * 20_000 + "More.<ref>[https://e.example/a A]</ref> w" * refs

    small, large = work(page(500)), work(page(2000))
    # The long text is cleaned once; each ref then costs about the same.
    assert large[1] - small[1] <= 4.5 * (small[1] - work(page(0))[1]), (small, large)


def test_real_articles_repeated_grow_linearly(articles, caplog):
    caplog.set_level(logging.ERROR)
    corpus = "".join(text + "\n\n" for text in articles.values() if len(text) < 30 * KB)
    once, thrice = _walk_page(corpus, 100), _walk_page(corpus * 3, 100)
    assert once.report is not None and thrice.report is not None
    assert once.report.level is ParseLevel.EXACT
    # The parse level may differ (three copies of a stray opener are more than the exact reading
    # tries), so the tokenizer's reads are bounded per segment rather than compared.
    assert thrice.report.segments == 3 * once.report.segments
    assert thrice.report.work <= MAX_READS * thrice.report.segments
    assert thrice.main.work <= 3.3 * once.main.work


# -- the fallback readings ----------------------------------------------------------------------

def test_mismatched_nesting_is_read_leniently_and_logged(caplog):
    text = repeat("Fact.<ref>[https://e.example/a A]</ref> {{a|<ref>x}}</ref> ", 32 * KB)
    with caplog.at_level(logging.WARNING, logger="side.extract.parse"):
        extraction = extract(text, "T")
    assert extraction.parse.level is ParseLevel.LENIENT
    assert "parsed as lenient" in caplog.text
    # As MediaWiki reads it (and mwparserfromhell, given the time): the refs are refs, each
    # "{{a|" is text, since the "}}" inside a ref cannot close it.
    assert {(c.citation.url, c.citation.title) for c in extraction.claims} == {("https://e.example/a", "A"),
                                                                               (None, "x}}")}
    assert all("{{a|" in c.text for c in extraction.claims if c.citation.title == "x}}")


def exact_claims(text: str) -> list[tuple[str, str, str]]:
    """Claims from mwparserfromhell's own parse (C tokenizer, however long it takes)."""
    import mwparserfromhell

    from side.extract.wikitext import _resolve, _Walker

    walker = _Walker(100)
    walker.walk(mwparserfromhell.parse(text), walker.main)
    return [(c.text, c.left_context, c.citation.id) for c in _resolve(walker, "T")]


@pytest.mark.parametrize("unit", ["Text {{a|<ref>x}}</ref> ", "Fact.<ref>[https://e.example/a A]</ref> {{a|{{b}} text ",
                                  "a. <ref>b</ref> c <ref>d "])
def test_lenient_reading_gives_the_exact_claims(unit, caplog):
    caplog.set_level(logging.ERROR)
    text = repeat(unit, 4 * KB)
    extraction = extract(text, "T")
    assert extraction.parse.level is ParseLevel.LENIENT
    assert [(c.text, c.left_context, c.citation.id) for c in extraction.claims] == exact_claims(text)


def test_refs_only_reading_pairs_refs_as_mediawiki_does():
    text = ('A.<ref>{{cite web|url=http://a.example|title=T}}</ref> B.<ref name="x">b</ref> '
            'C.<ref name="y" /> D.<ref name="z>q</ref> E <ref>unclosed')
    code = Builder().build(tokens(text, ParseLevel.REFS_ONLY))
    refs = [str(tag) for tag in code.filter_tags(matches=lambda tag: tag.tag.lower() == "ref")]
    assert refs == ["<ref>{{cite web|url=http://a.example|title=T}}</ref>", '<ref name="x">b</ref>', '<ref name="y" />']


def test_a_page_over_every_budget_is_one_text_node(monkeypatch, caplog):
    monkeypatch.setattr(parse, "WORK_FLOOR", 0)
    monkeypatch.setattr(parse, "WORK_PER_SEGMENT", 0)
    monkeypatch.setattr(parse, "FALLBACK_WORK_PER_SEGMENT", 0)
    text = "Claim.<ref>[https://e.example/a A]</ref>"
    with caplog.at_level(logging.ERROR, logger="side.extract.parse"):
        extraction = extract(text, "T")
    assert extraction.parse.level is ParseLevel.TEXT
    assert extraction.claims == ()
    assert "could not be parsed within budget" in caplog.text


def test_a_heading_line_with_hundreds_of_closures_does_not_raise(caplog):
    caplog.set_level(logging.ERROR)
    text = "== " + "a==" * 3000 + "\nClaim.<ref>[https://e.example/a A]</ref>"
    claims = extract_claims(text, "T")
    assert [c.text for c in claims] == ["Claim."]


def test_fixture_claims_are_unchanged_by_the_guarded_parse(articles):
    """The walk over mwparserfromhell's own parse (C tokenizer) gives the same claims."""
    for name in ("United-Kingdom", "anarchism", "toronto"):
        claims = extract_claims(articles[name], "T")
        assert [(c.text, c.left_context, c.citation.id) for c in claims] == exact_claims(articles[name])


def test_parse_module_is_used_for_gallery_captions():
    text = "<gallery>\nFile:A.jpg|Caption text.<ref>[https://e.example/g G]</ref>\n</gallery>"
    claims = extract_claims(text, "T")
    assert [(c.text, c.extra.get("file")) for c in claims] == [("Caption text.", "File:A.jpg")]

