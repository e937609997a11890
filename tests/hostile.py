"""Hostile content for tests and benchmarks, built here rather than stored: PDF bombs, bad pages.

:func:`pdf` writes a valid PDF (offsets computed) with one page per content stream, so a test
can put a compression bomb or a token bomb on a page next to ordinary text pages.
:func:`bad_inputs` are the pages a cited URL may serve that are no document to check: an empty
page, a 10 MB page, one over the fetcher's size cap, binary junk, a page in Thai
(tests/test_source_states.py and benchmarks/bad_input.py serve them over HTTP).
:func:`huge_revisions` are the largest revisions a wiki takes (2 MiB of wikitext), the bot's
worst input (tests/test_bot_limits.py, benchmarks/bad_input.py).
"""

from __future__ import annotations

import functools
import random
import zlib
from dataclasses import dataclass

__all__ = ["Deflated", "decompression_bomb", "pdf", "pdf_document", "text_page", "token_bomb", "HARBOUR",
           "THAI", "BadInput", "html_article", "sized_page", "bad_inputs", "REVISION_BYTES", "huge_revisions"]


@dataclass(frozen=True)
class Deflated:
    """A content stream compressed already (so a 100 MB bomb never sits in memory)."""

    data: bytes


def pdf(*contents: bytes | Deflated, compress: bool = True) -> bytes:
    """A PDF with one page per content stream (FlateDecode when ``compress``), offsets computed."""
    n = len(contents)
    font = 3 + 2 * n
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(n)), n)]
    for i, content in enumerate(contents):
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                       b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (4 + 2 * i, font))
        deflated = isinstance(content, Deflated) or compress
        if isinstance(content, Deflated):
            data = content.data
        else:
            data = zlib.compress(content, 9) if compress else content
        head = b"<< /Length %d%s >>" % (len(data), b" /Filter /FlateDecode" if deflated else b"")
        objects.append(head + b"\nstream\n" + data + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return pdf_document(objects)


def pdf_document(objects: list[bytes], info: int | None = None) -> bytes:
    """The PDF file holding ``objects`` (numbered from 1, object 1 the catalog): the body, a
    cross-reference table with the real offsets, and a trailer naming object ``info`` as the
    document information dictionary when given."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    extra = b" /Info %d 0 R" % info if info else b""
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, extra, xref)
    return bytes(out)


def text_page(text: str) -> bytes:
    return f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")


@functools.cache
def decompression_bomb(size: int = 100_000_000) -> Deflated:
    """``size`` bytes of spaces in a ~100 KB stream (for 100 MB): over pypdf's decompression
    limit, and over Side's tighter one."""
    compressor = zlib.compressobj(9)
    chunk = b" " * 1_000_000
    return Deflated(b"".join(compressor.compress(chunk) for _ in range(size // len(chunk))) + compressor.flush())


def token_bomb(operators: int = 120_000) -> bytes:
    """About 8 tokens per text operator (~1 million for the default) in a stream that compresses
    to ~16 KB: over the content-stream parsing limit."""
    return b"BT /F1 12 Tf 72 720 Td (Hello world) Tj ET\n" * operators


#: An English article's paragraphs; the first sentence is the claim the bad pages are cited for.
HARBOUR = [
    "The harbour was rebuilt in 1902 after a storm destroyed the old pier and most of the fishing fleet.",
    "The new pier, built of granite from the quarry above the town, is three hundred metres long.",
    "It now shelters the town's fishing fleet and a lifeboat station, which was opened in 1911.",
    "A lighthouse was added at the end of the pier in 1925, and its light can be seen for twelve miles.",
]

THAI = ("กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทยและเป็นเมืองที่มีประชากรมากที่สุดในประเทศ "
        "แม่น้ำเจ้าพระยาไหลผ่านใจกลางเมืองก่อนจะไหลลงสู่อ่าวไทย "
        "อาหารไทยมีชื่อเสียงไปทั่วโลกเพราะมีรสชาติที่หลากหลายทั้งเปรี้ยวหวานเค็มและเผ็ด")


def html_article(paragraphs: list[str], title: str = "Harbour history") -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>"
            f"<article><h1>{title}</h1>{body}</article></body></html>").encode()


def sized_page(size: int) -> bytes:
    """The harbour article repeated to just under ``size`` bytes (its start states the claim)."""
    unit = len(html_article(HARBOUR)) - len(html_article([]))
    return html_article(HARBOUR * max(1, (size - len(html_article([]))) // unit))


@dataclass(frozen=True)
class BadInput:
    """A page no claim can be checked against, as a server serves it."""

    name: str
    body: bytes
    #: The Content-Type header (None: not sent).
    content_type: str | None = "text/html; charset=utf-8"


def bad_inputs(max_bytes: int = 10 * 1024 * 1024) -> list[BadInput]:
    """The bad pages, each as it comes over HTTP. ``max_bytes`` is the fetcher's size cap: the
    10 MB page (10,000,000 bytes) is under the default cap, the next one is over it."""
    junk = random.Random(7).randbytes(1_000_000)
    return [
        BadInput("empty page", b""),
        BadInput("10 MB page", sized_page(min(10_000_000, max_bytes))),
        BadInput("page over the size cap", sized_page(max_bytes + 1_000_000)),
        BadInput("binary junk as HTML", junk),
        BadInput("binary junk as text", junk, "text/plain"),
        BadInput("binary download", junk, "application/octet-stream"),
        BadInput("Thai page", html_article([THAI] * 4, title="กรุงเทพมหานคร")),
    ]


#: MediaWiki's default page limit ($wgMaxArticleSize, 2048 KiB): the largest revision a wiki takes.
REVISION_BYTES = 2 * 1024 * 1024


def _cited_sentence(n: int) -> str:
    """A sentence of an article with a full citation, as editors write them (sections every 20)."""
    heading = f"\n\n== Section {n // 20} ==\n" if n % 20 == 0 else ""
    return (f"{heading}{HARBOUR[n % len(HARBOUR)]}<ref>{{{{cite web |url=https://news{n % 50}.example.org/"
            f"{1990 + n % 30}/harbour-{n} |title=Harbour report {n} |website=The Coast News {n % 50} "
            f"|date={1 + n % 28} May {1990 + n % 30} |access-date=1 January 2020}}}}</ref> ")


def huge_revisions(size: int = REVISION_BYTES) -> dict[str, str]:
    """Revisions of ``size`` bytes: one reused named ref repeated (149,796 citation uses at
    2 MiB), and prose whose every sentence has a ``{{cite web}}`` (about 7,000 at 2 MiB)."""
    unit = "a<ref name=n/>"
    cited, length, n = [], 0, 0
    while length + len(_cited_sentence(n)) <= size:
        cited.append(_cited_sentence(n))
        length += len(cited[-1])
        n += 1
    return {"2 MiB of <ref name=n/>": unit * (size // len(unit)), "2 MiB of cited prose": "".join(cited)}
