"""Tagged claims read from wikitext: {{failed verification}}, {{citation needed}} and kin."""

from __future__ import annotations

from side.extract.claims import Claim
from side.extract.tagged import (
    BETTER_SOURCE_NEEDED,
    CITATION_NEEDED,
    CITATION_NEEDED_SPAN,
    FAILED_VERIFICATION,
    SkipReason,
    find_tagged,
)

PAGE = """The bridge is long.<ref>{{cite web|url=http://a.example/x|title=A}}</ref>\
{{fv|date=May 2024|reason=Says 1931}} It is red.{{cn|date=June 2023}}

== History ==
Some text. It opened in 1932.<ref name="b">{{cite web|url=http://b.example|title=B}}</ref>

=== Later ===
It fell in 1990.<ref name="b"/> {{Better source needed|date=2020}} \
{{citation needed span|It was rebuilt in 1999.|date=May 2021}}

== Legacy ==
Tourists came.<ref>{{cite web|url=http://c.example|title=C}}</ref> Many stayed.{{Template:Citation_needed}}
"""


def test_each_tag_gives_its_claim_citation_and_section():
    page = find_tagged(PAGE, "Bridge")
    got = [(c.template, c.text, c.section_index, c.citation.url if c.citation else None) for c in page.claims]
    assert got == [
        (FAILED_VERIFICATION, "The bridge is long.", 0, "http://a.example/x"),
        (CITATION_NEEDED, "It is red.", 0, None),
        (BETTER_SOURCE_NEEDED, "It fell in 1990.", 2, "http://b.example"),  # the named ref's definition
        (CITATION_NEEDED_SPAN, "It was rebuilt in 1999.", 2, None),
        (CITATION_NEEDED, "Many stayed.", 3, None),  # text between the ref and the tag: uncited
    ]
    fv = page.claims[0]
    assert (fv.date, fv.reason, fv.written) == ("May 2024", "Says 1931", "fv")
    assert page.claims[2].section == ("History", "Later")
    after_heading = find_tagged("A.<ref>{{cite web|url=http://a.example}}</ref>\n== H ==\nB.{{cn}}", "T").claims
    assert [(c.text, c.citation) for c in after_heading] == [("B.", None)]
    assert not page.skipped


def test_claim_keeps_the_tag_through_the_store_format():
    tagged = find_tagged(PAGE, "Bridge").claims[1]
    claim = tagged.claim("Bridge", category="All articles with unsourced statements")
    assert claim.citation.url is None and claim.citation.kind == "text"
    again = Claim.from_dict(claim.to_dict())
    assert again.extra["tag"] == {"template": CITATION_NEEDED, "date": "June 2023", "reason": "", "written": "cn",
                                  "section_index": 0, "category": "All articles with unsourced statements"}
    assert again.key == claim.key


def test_tags_in_unexpected_forms_are_skipped_with_a_reason():
    page = find_tagged("{{citation needed}} starts the page.\n\n{{Infobox|x=Foo.{{cn}}}}\n\n"
                       "Text.{{citation needed span|date=May 2020}} More.{{fv|date=2020\n\nEnd.", "T")
    assert page.claims == ()
    assert page.skipped == {SkipReason.NO_TEXT: 1, SkipReason.NESTED: 1, SkipReason.SPAN_WITHOUT_TEXT: 1,
                            SkipReason.UNCLOSED: 1}
    # another template left open is not a tag: nothing skipped, no reason counted (not even 0 times)
    other = find_tagged("It is red.{{cn}} Then {{convert|3 words.", "T")
    assert [c.text for c in other.claims] == ["It is red."] and dict(other.skipped) == {}


def test_other_templates_and_aliases_are_configurable():
    text = "A claim.{{Dubious|date=2020}} Another.{{cn}}"
    assert [c.text for c in find_tagged(text, "T").claims] == ["Another."]
    only = find_tagged(text, "T", aliases={"dubious": "dubious"})
    assert [(c.template, c.text) for c in only.claims] == [("dubious", "A claim.")]


def test_plain_claims_are_unchanged_by_the_tag_field():
    from side.extract.wikitext import extract_claims

    claim = extract_claims(PAGE, "Bridge")[0]
    assert "tag" not in claim.to_dict()
