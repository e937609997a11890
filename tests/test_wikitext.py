"""Claims and citations from wikitext: synthetic edge cases, real articles, fuzzed input."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from side.errors import InputError
from side.extract.claims import Citation, Claim
from side.extract.wikitext import (
    added_citations,
    citation_id,
    extract_citations,
    extract_claims,
    last_sentence,
)

from conftest import need_data
from refcount import count_ref_uses

CITE = "{{cite web|url=http://a.example/x|title=A Title|website=Example|date=2020-01-02}}"


def ref_claims(claims: list[Claim]) -> list[Claim]:
    return [c for c in claims if c.extra["marker"] == "ref"]


# -- synthetic pages: one behaviour each --------------------------------------------------


def test_cite_template_fields() -> None:
    claims = extract_claims(f"The sky is blue.<ref>{CITE}</ref>", "Sky")
    assert len(claims) == 1
    citation = claims[0].citation
    assert citation.kind == "template"
    assert citation.template == "cite web"
    assert (citation.url, citation.title, citation.website, citation.date) == (
        "http://a.example/x",
        "A Title",
        "Example",
        "2020-01-02",
    )
    assert claims[0].text == "The sky is blue."
    assert claims[0].article_title == "Sky"
    assert claims[0].section == ()


@pytest.mark.parametrize(
    ("body", "kind", "url", "title"),
    [
        (
            "{{Cite news |title=News|url=http://n.example|newspaper=The Paper}}",
            "template",
            "http://n.example",
            "News",
        ),
        ("{{citation|title=Book|publisher=Pub}}", "template", None, "Book"),
        ("http://bare.example/page", "bare_url", "http://bare.example/page", None),
        (
            "[http://link.example/p Link title] retrieved 2020",
            "external_link",
            "http://link.example/p",
            "Link title",
        ),
        ("Smith, J. (2001). ''A Book''. p. 4. {{ISBN|0-00-000000-0}}", "text", None, None),
        ("{{harvnb|Smith|2001|p=4}}", "short", None, None),
    ],
)
def test_reference_kinds(body: str, kind: str, url: str | None, title: str | None) -> None:
    (claim,) = extract_claims(f"Claim here.<ref>{body}</ref>", "T")
    assert claim.citation.kind == kind
    assert claim.citation.url == url
    if title is not None:
        assert claim.citation.title == title


def test_cite_archive_url_and_website_fallbacks() -> None:
    body = "{{cite journal|title=J|journal=Nature|year=1999|archive-url=http://archive.example/j}}"
    (claim,) = extract_claims(f"X.<ref>{body}</ref>", "T")
    assert claim.citation.website == "Nature"
    assert claim.citation.date == "1999"
    assert claim.citation.archive_url == "http://archive.example/j"


@pytest.mark.parametrize("body", [
    "{{cite web |url=http://news.example/a?id=7{{!}}8&lang=en |title=Port {{!}} Harbour |archive-url="
    "http://archive.example/2020/http://news.example/a?id=7{{ ! }}8&lang=en}}",
    "{{cite web |url=http://news.example/a?id=7{{!}}8{{=}}&lang=en |title=Port {{!}} Harbour |archive-url="
    "http://archive.example/2020/http://news.example/a?id=7{{!}}8&lang=en<!-- note -->}}",
])
def test_pipe_magic_word_in_a_cite_is_a_pipe(body: str) -> None:
    """``{{!}}`` is how a pipe is written in a template parameter: the URL keeps it, percent-encoded
    (it used to vanish, cutting ``id=7|8`` to ``id=78``), and the title reads it as ``|``."""
    (claim,) = extract_claims(f"The harbour opened in 1902.<ref>{body}</ref>", "T")
    citation = claim.citation
    assert citation.url in ("http://news.example/a?id=7%7C8&lang=en", "http://news.example/a?id=7%7C8=&lang=en")
    assert citation.title == "Port | Harbour"
    assert citation.archive_url == "http://archive.example/2020/http://news.example/a?id=7%7C8&lang=en"
    assert citation.id == citation_id(body)  # the id still hashes the body as written


@pytest.mark.parametrize("body", ["[http://news.example/a?id=7{{!}}8 Port]", "http://news.example/a?id=7{{!}}8"])
def test_pipe_magic_word_in_a_link_is_a_pipe(body: str) -> None:
    (claim,) = extract_claims(f"The harbour opened in 1902.<ref>{body}</ref>", "T")
    assert claim.citation.url == "http://news.example/a?id=7%7C8"


@pytest.mark.parametrize(("wikitext", "claims"), [
    # A stray closer joined two sentences and left "ref" in the claim.
    ("Alsea was founded in 1997.</ref> It runs Starbucks in Mexico.<ref>{CITE}</ref>",
     ["It runs Starbucks in Mexico."]),
    ('It runs Starbucks.<ref name="a">{CITE}</ref></ref> It runs Domino\'s.<ref name="a"/>',
     ["It runs Starbucks.", "It runs Domino's."]),
    # An opener with no closer, a closer with attributes, a <br /> left as text.
    ("The sky <ref group=note>is blue.<ref>{CITE}</ref>", ["The sky is blue."]),
    ("The sky<ref>x</ref></ref > is blue<BR />and wide.<ref>{CITE}</ref>", ["The sky", "The sky is blue and wide."]),
    ("{{Infobox port|founded=1902 </ref> by the town<ref>{CITE}</ref>}}", ["1902 by the town"]),
    # Text that only looks like a tag stays.
    ("If x<y>z then y<refs> holds.<ref>{CITE}</ref>", ["If x<y>z then y<refs> holds."]),
])
def test_markup_remnants_never_reach_the_claim(wikitext: str, claims: list[str]) -> None:
    from side.verify.unsupported import tokenize_claim

    found = extract_claims(wikitext.replace("{CITE}", CITE), "T")
    assert [c.text for c in found] == claims
    for claim in found:
        words = {token.text.lower() for token in tokenize_claim(claim.text)}
        assert not words & {"ref", "br"}, claim.text  # what the tagger could name as unsupported


def test_markup_remnants_never_reach_a_citation_title() -> None:
    # An unclosed <span> is text to the parser, markup to MediaWiki.
    cite = '{{cite web|url=http://a.example/x|title=Harbour <span class="x">report}}'
    (claim,) = extract_claims(f"X.<ref>{cite}</ref>", "T")
    assert claim.citation.title == "Harbour report"


def test_text_ref_keeps_its_plain_text_as_title() -> None:
    (claim,) = extract_claims("X.<ref>Smith, ''Big Book'', [[Oxford]] 1990.</ref>", "T")
    assert claim.citation.kind == "text"
    assert claim.citation.title == "Smith, Big Book, Oxford 1990."


def test_several_refs_after_one_sentence_share_it() -> None:
    claims = extract_claims("First one. Foo is bar.<ref>a</ref><ref>b</ref> <ref>c</ref>", "T")
    assert [c.text for c in claims] == ["Foo is bar."] * 3
    assert len({c.citation.id for c in claims}) == 3


def test_mid_sentence_ref_gives_the_fragment() -> None:
    claims = extract_claims("Before. Foo was born in 1900<ref>a</ref> and died in 1950.<ref>b</ref>", "T")
    assert claims[0].text == "Foo was born in 1900"
    assert claims[1].text == "Foo was born in 1900 and died in 1950."


def test_claim_text_is_plain() -> None:
    wikitext = (
        "'''Foo''' is a [[Bar (thing)|bar]] in [[Baz]]{{efn|a note}}<!-- hidden --> "
        "see [http://x.example the site].<ref>a</ref>"
    )
    (claim,) = extract_claims(wikitext, "T")
    assert claim.text == "Foo is a bar in Baz see the site."


def test_sentence_stays_in_its_paragraph_but_context_crosses() -> None:
    wikitext = "Para one ends here.\n\nsecond paragraph starts lower case<ref>a</ref>"
    (claim,) = extract_claims(wikitext, "T")
    assert claim.text == "second paragraph starts lower case"
    assert claim.left_context == "Para one ends here. second paragraph starts lower case"


def test_context_words_limits_left_context() -> None:
    words = " ".join(f"w{i}" for i in range(50))
    (claim,) = extract_claims(f"{words}.<ref>a</ref>", "T", context_words=7)
    assert claim.left_context.split() == [f"w{i}" for i in range(43, 49)] + ["w49."]


def test_left_context_stays_in_section() -> None:
    wikitext = "Lead text.\n== A ==\nSection text.<ref>a</ref>"
    (claim,) = extract_claims(wikitext, "T")
    assert claim.left_context == "Section text."


def test_section_paths() -> None:
    wikitext = (
        "Lead.<ref>0</ref>\n== History ==\nH.<ref>1</ref>\n=== Early [[years]] ===\nE.<ref>2</ref>\n"
        "==== Deep ====\nD.<ref>3</ref>\n=== Later ===\nL.<ref>4</ref>\n== Geography ==\nG.<ref>5</ref>"
    )
    sections = [c.section for c in extract_claims(wikitext, "T")]
    assert sections == [
        (),
        ("History",),
        ("History", "Early years"),
        ("History", "Early years", "Deep"),
        ("History", "Later"),
        ("Geography",),
    ]


def test_named_ref_reuses_share_one_citation() -> None:
    wikitext = f'A is true.<ref name="s">{CITE}</ref> B is true.<ref name=s/> C is true.<ref name="s"></ref>'
    claims = extract_claims(wikitext, "T")
    assert [c.text for c in claims] == ["A is true.", "B is true.", "C is true."]
    assert {c.citation for c in claims} == {claims[0].citation}
    assert claims[0].citation.name == "s"
    assert [c.use_index for c in claims] == [0, 1, 2]


def test_reuse_before_definition_resolves() -> None:
    claims = extract_claims(f"Early.<ref name=late /> Later.<ref name=late>{CITE}</ref>", "T")
    assert claims[0].citation == claims[1].citation
    assert claims[0].citation.url == "http://a.example/x"
    assert [c.use_index for c in claims] == [0, 1]


def test_list_defined_refs_define_but_are_not_uses() -> None:
    wikitext = (
        "Alpha.<ref name=a/> Beta.<ref name=b/>\n== Notes ==\n{{Reflist|refs=\n"
        f"<ref name=a>{CITE}</ref>\n<ref name=b>http://b.example</ref>\n"
        "}}\n"
        "<references>\n<ref name=c>Unused text ref</ref>\n</references>"
    )
    claims = extract_claims(wikitext, "T")
    assert [(c.text, c.citation.url) for c in claims] == [
        ("Alpha.", "http://a.example/x"),
        ("Beta.", "http://b.example"),
    ]
    assert count_ref_uses(wikitext) == len(claims)
    titles = {c.title for c in extract_citations(wikitext)}
    assert "Unused text ref" in titles


def test_dangling_reuse_still_yields_a_claim() -> None:
    (claim,) = extract_claims("Orphan.<ref name=nowhere/>", "T")
    assert claim.citation.name == "nowhere"
    assert claim.citation.url is None


def test_short_citations_are_uses() -> None:
    wikitext = "One.{{sfn|Smith|2001|p=1}} Two.{{Sfnp|Jones|1999}} Three.{{harvnb|Smith|2001|p=1}}"
    claims = extract_claims(wikitext, "T")
    assert [c.text for c in claims] == ["One.", "Two.", "Three."]
    assert {c.citation.kind for c in claims} == {"short"}
    assert all(c.citation.url is None for c in claims)
    assert {c.extra["marker"] for c in claims} == {"short"}


def test_refs_inside_template_parameters() -> None:
    wikitext = (
        "{{Infobox country\n| name = Foo\n| population = 67 million<ref>http://census.example</ref>\n}}\n"
        "Prose.<ref>b</ref>"
    )
    claims = extract_claims(wikitext, "T")
    assert claims[0].text == "67 million"
    assert claims[0].extra["param"] == "population"
    assert claims[0].citation.url == "http://census.example"
    assert claims[1].left_context == "Prose."


def test_refs_in_file_captions_tables_and_lists() -> None:
    wikitext = (
        "[[File:x.jpg|thumb|upright=1.2|A caption claim<ref>cap</ref>]]\n"
        "* List item claim<ref>li</ref>\n"
        "{|\n|-\n| Cell claim<ref>td</ref> || other\n|}\n"
    )
    texts = [c.text for c in extract_claims(wikitext, "T")]
    assert texts == ["A caption claim", "List item claim", "Cell claim"]
    assert count_ref_uses(wikitext) == 3


def test_refs_in_comments_and_nowiki_are_ignored() -> None:
    wikitext = "A.<!-- <ref>x</ref> --> B.<nowiki><ref>y</ref></nowiki> C.<ref>z</ref>"
    claims = extract_claims(wikitext, "T")
    assert [c.citation.raw for c in claims] == ["z"]
    assert count_ref_uses(wikitext) == 1


def test_citation_id_ignores_position_and_whitespace() -> None:
    a = extract_claims(f"X.<ref>{CITE}</ref>", "T")[0].citation
    spaced = CITE.replace("|", "\n | ").replace("=", " = ")
    b = extract_claims(f"Other text first. Y.<ref> {spaced} </ref>", "T")[0].citation
    assert a.id == b.id
    assert citation_id("a  b\n c") == citation_id("a b c")
    assert citation_id("a b") != citation_id("a c")


def test_last_sentence_skips_abbreviations_and_initials() -> None:
    assert last_sentence("One. Dr. Smith met J. R. Jones in the U.S. capital") == (
        "Dr. Smith met J. R. Jones in the U.S. capital"
    )
    assert last_sentence("It rained. Then it snowed!") == "Then it snowed!"
    assert last_sentence('He said "stop." Then left.') == "Then left."


def test_non_str_input_raises_input_error() -> None:
    with pytest.raises(InputError):
        extract_claims(b"bytes", "T")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        extract_claims("text", None)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        extract_citations(None)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        count_ref_uses(42)  # type: ignore[arg-type]


# -- added_citations ----------------------------------------------------------------------

OLD = (
    "Intro sentence.<ref name=main>{{cite web|url=http://m.example|title=Main}}</ref>\n\n"
    "== One ==\nFirst paragraph claim.<ref>http://one.example</ref>\n\n"
    "Second paragraph claim.<ref>[http://two.example Two]</ref> It continues.<ref name=main/>\n"
)


def test_added_citations_finds_a_new_ref() -> None:
    new = OLD + "\nA brand new claim.<ref>http://new.example</ref>\n"
    (added,) = added_citations(OLD, new, "T")
    assert added.text == "A brand new claim."
    assert added.citation.url == "http://new.example"


def test_added_citations_finds_a_new_use_of_a_named_ref() -> None:
    first = "First paragraph claim.<ref>http://one.example</ref>"
    new = OLD.replace(first, first + " Extra fact.<ref name=main />")
    (added,) = added_citations(OLD, new, "T")
    assert added.text == "Extra fact."
    assert added.citation.name == "main"
    assert added.use_index == 1


def test_added_citations_ignores_moves_and_whitespace() -> None:
    head, one, two = OLD.split("\n\n")
    moved = "\n\n".join([head.replace("\n== One ==", ""), two, "== One ==\n" + one])
    assert added_citations(OLD, moved, "T") == []
    reflowed = OLD.replace(" ", "  ").replace("Second paragraph claim.", "Second\nparagraph   claim.")
    reflowed = reflowed.replace("url=http://m.example", "url = http://m.example ")
    assert added_citations(OLD, reflowed, "T") == []


def test_added_citations_ignores_removed_refs() -> None:
    removed = OLD.replace("<ref>http://one.example</ref>", "")
    assert added_citations(OLD, removed, "T") == []
    assert added_citations(OLD, "", "T") == []


def test_added_citations_counts_duplicates() -> None:
    doubled = OLD + "\n\nFirst paragraph claim.<ref>http://one.example</ref>\n"
    (added,) = added_citations(OLD, doubled, "T")
    assert added.citation.url == "http://one.example"


# -- fuzzed input ---------------------------------------------------------------------------

# fmt: off
FRAGMENTS = [
    "<ref>", "</ref>", "<ref name=a>", '<ref name="a"/>', "<ref", "/>", "{{cite web|url=",
    "http://x.example", "|title=", "}}", "{{", "[[", "]]", "[", "]", "|", "==", "\n", "\n\n",
    "<!--", "-->", "''", "'''", "{{sfn|A|2000}}", "{{reflist|refs=", "<references>",
    "</references>", "{|", "|}", "* ", "<nowiki>", "{{#tag:ref|", "Text. ", "More words",
    "[[File:x.jpg|thumb|", "<gallery>", "&nbsp;", "=", ".", "\u00e9", "{{{1}}}",
]
# fmt: on
wikitext_strategy = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=40).map(
    "".join
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wikitext_strategy)
def test_mangled_wikitext_never_raises(wikitext: str) -> None:
    claims = extract_claims(wikitext, "Fuzz", context_words=20)
    assert isinstance(claims, list)
    for claim in claims:
        assert isinstance(claim, Claim)
        assert isinstance(claim.citation, Citation)
        assert claim.citation.kind in {"template", "bare_url", "external_link", "short", "text"}
        assert isinstance(claim.text, str) and isinstance(claim.left_context, str)
        assert len(claim.left_context.split()) <= 20
        assert all(isinstance(s, str) for s in claim.section)
        assert claim.use_index >= 0
        assert isinstance(claim.key, str)
    assert all(isinstance(c, Citation) for c in extract_citations(wikitext))
    assert isinstance(count_ref_uses(wikitext), int)
    assert added_citations(wikitext, wikitext, "Fuzz") == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["Foo is true.", "Bar holds", "Baz."]), min_size=1, max_size=6))
def test_use_indexes_count_reuses(sentences: list[str]) -> None:
    wikitext = " ".join(f"{s}<ref name=r>only source</ref>" for s in sentences)
    claims = extract_claims(wikitext, "T")
    assert [c.use_index for c in claims] == list(range(len(sentences)))
    assert len({c.citation.id for c in claims}) == 1


# -- the real articles ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def articles() -> dict[str, str]:
    folder = need_data("fixtures/wikitext")
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.txt"))}


@pytest.fixture(scope="module")
def parsed(articles: dict[str, str]) -> dict[str, list[Claim]]:
    return {name: extract_claims(text, name) for name, text in articles.items()}


def test_every_article_parses_and_matches_the_regex_count(articles, parsed) -> None:
    assert articles, "no wikitext fixtures found"
    mismatches = {
        name: (len(ref_claims(parsed[name])), count_ref_uses(text))
        for name, text in articles.items()
        if len(ref_claims(parsed[name])) != count_ref_uses(text)
    }
    assert mismatches == {}
    assert sum(count_ref_uses(t) for t in articles.values()) > 1000


def test_short_citations_outside_refs_match_a_regex(articles, parsed) -> None:
    ref_span = re.compile(r"<ref(?:\s[^>]*?)?(?:/>|>.*?</ref\s*>)", re.DOTALL | re.IGNORECASE)
    short = re.compile(r"\{\{\s*(?:sfnp?|sfnm|harvnb|harvp?)\s*\|", re.IGNORECASE)
    comment = re.compile(r"<!--.*?-->", re.DOTALL)
    for name, text in articles.items():
        expected = len(short.findall(ref_span.sub("", comment.sub("", text))))
        got = sum(1 for c in parsed[name] if c.extra["marker"] == "short")
        assert got == expected, name


def test_named_reuses_in_a_real_article(articles, parsed) -> None:
    text = articles["United-Kingdom"]
    reuse = re.compile(r"<ref\s+name\s*=\s*\"?([^\"/>]+?)\"?\s*/>", re.IGNORECASE)
    reused = Counter(m.group(1).strip() for m in reuse.finditer(text))
    assert reused, "expected named reuses in United-Kingdom"
    name, reuses = reused.most_common(1)[0]
    uses = [c for c in parsed["United-Kingdom"] if c.citation.name == name]
    assert len(uses) == reuses + 1
    assert len({c.citation.id for c in uses}) == 1
    assert [c.use_index for c in uses] == list(range(reuses + 1))
    assert uses[0].citation.raw, "the reused ref should resolve to its definition"


def test_cite_web_fields_in_a_real_article(articles, parsed) -> None:
    text = articles["United-Kingdom"]
    match = re.search(r"<ref>\{\{cite web\s*\|([^{}]*)\}\}</ref>", text, re.IGNORECASE)
    assert match
    pairs = (part.partition("=") for part in match.group(1).split("|"))
    fields = {key.strip().lower(): value.strip() for key, _, value in pairs}
    found = [c for c in parsed["United-Kingdom"] if c.citation.url == fields["url"]]
    assert found
    assert found[0].citation.kind == "template"
    assert found[0].citation.title == re.sub(r"\s+", " ", fields["title"]).strip()


def test_section_path_in_a_real_article(articles, parsed) -> None:
    text = articles["United-Kingdom"]
    # Claims whose opening words appear verbatim once, so the raw file can locate them.
    claims = [
        c
        for c in parsed["United-Kingdom"]
        if len(c.section) >= 2 and len(c.text) > 40 and text.count(c.text[:40]) == 1
    ]
    assert len(claims) > 10
    claim = claims[len(claims) // 2]
    position = text.find(claim.text[:40])
    headings = [
        (len(m.group(1)), m.group(2).strip())
        for m in re.finditer(r"^(={2,6})\s*(.*?)\s*\1\s*$", text[:position], re.MULTILINE)
    ]
    path: list[tuple[int, str]] = []
    for level, title in headings:
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
    assert claim.section == tuple(t for _, t in path)


def test_claims_in_a_real_article_are_plain_text(articles, parsed) -> None:
    for name, claims in parsed.items():
        # An entity-escaped "&lt;ref&gt;" is literal text on the rendered page, so it stays.
        literal_refs = "&lt;ref" in articles[name]
        for claim in claims:
            assert literal_refs or "<ref" not in claim.text, name
            assert "[[" not in claim.text and "'''" not in claim.text and "{{" not in claim.text, name
            assert len(claim.left_context.split()) <= 100


def test_reflowed_real_article_adds_nothing(articles) -> None:
    text = articles["Mozilla-Firefox"]
    reflowed = text.replace(". ", ".  ")
    assert added_citations(text, reflowed, "Mozilla Firefox") == []


def test_redirect_page_has_no_claims(articles, parsed) -> None:
    assert parsed["redirect"] == []
    assert count_ref_uses(articles["redirect"]) == 0
