"""Text a wiki or a web page wrote never drives the terminal: no console markup, no hyperlink,
no escape sequence, in any command's human output (``--json`` escapes control characters itself).

The payloads are an outside probe's: a closing tag that made ``side verify`` crash with
``MarkupError``, ``[link=file:///etc/passwd]`` that became a terminal hyperlink, and ESC/BEL
sequences (window title, screen clear, clipboard write) that ``side source`` printed raw.
"""

from __future__ import annotations

import io
import logging

import pytest
from rich.console import Console

from side.cli import main
from side.cli.terminal import PrintableFormatter, printable
from side.extract.claims import Citation, Claim
from side.extract.lead import ArticleLead
from side.pipeline import ArticleResults, Result, SourceCopy, SourceStatus, Suggestion
from side.verify.lead import LeadVerdict
from side.verify.levels import VerdictLevel
from side.verify.verifier import Evidence, Verdict, VerdictLabel

from httpserver import LocalServer, Response

#: Sequences a terminal obeys: window title (OSC 0), clipboard write (OSC 52), screen clear (CSI),
#: a hyperlink (OSC 8), a bell, and the one-byte C1 form of CSI.
ESCAPES = ["\x1b]0;pwned\x07", "\x1b]52;c;ZXZpbA==\x07", "\x1b[2J", "\x1b]8;;file:///etc/passwd\x1b\\", "\x07",
           "\x9b2J"]
HOSTILE = "".join(ESCAPES)
#: What a terminal would receive if a hyperlink were made (OSC 8), or an escape let through.
HYPERLINK = "\x1b]8;"


def terminal() -> Console:
    """A console that writes what a colour terminal with hyperlinks would get."""
    return Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=400)


def assert_no_injected_escape(out: str) -> None:
    for sequence in ESCAPES:
        assert sequence not in out, repr(sequence)
    assert HYPERLINK not in out and "\x07" not in out and "\x9b" not in out


def hostile_result() -> Result:
    url = "http://news.example/a[/]b" + HOSTILE
    citation = Citation(id="c1", kind="template", url=url, title="[bold]Title[/bold]" + HOSTILE)
    claim = Claim("Port", ("History",), "[link=file:///etc/passwd]click[/link] X [/red] y." + HOSTILE,
                  "X [/red] y.", citation)
    verdict = Verdict(VerdictLabel.NOT_ENOUGH_INFO, 0.05, evidence=(Evidence("page [/dim] text" + HOSTILE, 0, 0.1),),
                      level=VerdictLevel.NOT_SUPPORTED, unsupported=("[/]" + HOSTILE,))
    suggestion = Suggestion("http://better.example/[/]", "[red]Better[/red]" + HOSTILE, 0.9,
                            Evidence("evidence [/dim]" + HOSTILE, 1, 0.9), "{{cite web |url=[/]}}" + HOSTILE)
    return Result(claim, SourceStatus.FETCHED, verdict, flagged=True, reasons=["reason [/]" + HOSTILE],
                  suggestions=[suggestion], source_copy=SourceCopy.ARCHIVE,
                  source_url="http://web.archive.org/web/1id_/[/dim]" + HOSTILE,
                  source_fallback="live copy: [/yellow]" + HOSTILE)


def test_the_verify_table_prints_markup_as_text_and_no_escape(tmp_path):
    from side.cli.verify import print_report

    console = terminal()
    print_report(ArticleResults("[/]Port" + HOSTILE, [hostile_result()]), console)
    out = console.file.getvalue()
    assert_no_injected_escape(out)
    plain = Console(file=io.StringIO(), width=1200)  # no cell wraps
    print_report(ArticleResults("[/]Port" + HOSTILE, [hostile_result()]), plain)
    text = plain.file.getvalue()
    for literal in ("[link=file:///etc/passwd]click[/link]", "X [/red] y.", "http://news.example/a[/]b",
                    "page [/dim] text", "[red]Better[/red]", "evidence [/dim]", "{{cite web |url=[/]}}",
                    "reason [/]", "live copy: [/yellow]", "[/]Port", "\\x1b]0;pwned\\x07", "\\x9b2J"):
        assert literal in text, literal
    assert "FLAG" in text and "not supported" in text and "read from archived copy" in text


def test_the_lead_table_prints_markup_as_text_and_no_escape():
    from side.cli.lead import print_lead

    lead = ArticleLead("[/]Port" + HOSTILE, (), (), sentences=1)
    verdict = LeadVerdict("[link=file:///etc/passwd]x[/link]" + HOSTILE, 0, VerdictLevel.NOT_SUPPORTED, 0.1,
                          nearest="body [/dim]" + HOSTILE, nearest_section=("[/]History" + HOSTILE,))
    console = terminal()
    print_lead(lead, [verdict], console)
    out = console.file.getvalue()
    assert_no_injected_escape(out)
    assert "[link=file:///etc/passwd]x[/link]" in out and "body [/dim]" in out and "[/]History" in out
    console = terminal()
    print_lead(lead, [], console)
    assert "[/]Port" in console.file.getvalue() and HYPERLINK not in console.file.getvalue()


def test_printable_shows_controls_and_keeps_lines_and_tabs():
    assert printable("a\tb\nc\r\nd") == "a\tb\nc\nd"
    assert printable("\x1b[2J\x07\x00\x7f\x85\r") == "\\x1b[2J\\x07\\x00\\x7f\\x85\\x0d"
    assert printable("Zürich — 東京") == "Zürich — 東京"


def test_log_lines_carry_no_control_characters():
    record = logging.LogRecord("side.sources", logging.WARNING, __file__, 1, "fetching %s", (HOSTILE,), None)
    line = PrintableFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert_no_injected_escape(line)
    assert line.startswith("WARNING side.sources: fetching \\x1b]0;pwned")


@pytest.fixture()
def server(monkeypatch, tmp_path):
    monkeypatch.setenv("SIDE_FETCH_ALLOW_HOSTS", "127.0.0.1")
    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path))
    with LocalServer() as srv:
        yield srv


def test_side_source_prints_a_page_escapes_visibly(server, capsys):
    text = ("The harbour was rebuilt in 1902 after a storm destroyed the old pier." + HOSTILE
            + "\nIt now shelters the town's fishing fleet.\n").encode()
    url = server.add("/esc.txt", Response(text, content_type="text/plain; charset=utf-8"))
    assert main(["source", url, "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert_no_injected_escape(out)
    assert "rebuilt in 1902" in out and "\\x1b]52;c;ZXZpbA==\\x07" in out


def test_side_source_json_stays_exact(server, capsys):
    import json

    url = server.add("/esc.txt", Response(("The pier was rebuilt in 1902." + HOSTILE).encode(),
                                          content_type="text/plain; charset=utf-8"))
    assert main(["source", url, "--no-cache", "--json"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\x1b[2J" in json.loads(out)["text"]


def test_an_error_line_quoting_a_name_carries_no_escape(capsys):
    assert main(["verify", f"/no/such/{HOSTILE}.wikitext", "--no-index"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("side: error: no such file") and err.count("\n") == 1
    assert_no_injected_escape(err)


def test_side_verify_reports_a_claim_with_a_closing_tag(tmp_path, monkeypatch, capsys):
    """The probe's reproduction: exit 1 with MarkupError and no report before."""
    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path / "var"))
    article = tmp_path / "a.wikitext"
    article.write_text("X [/red] y.<ref>{{cite web|url=http://127.0.0.1:9/x[/]}}</ref>\n\n"
                       "[link=file:///etc/passwd]Z[/link] w.<ref>{{cite web|url=http://127.0.0.1:9/y}}</ref>\n")
    assert main(["verify", str(article), "--no-index"]) == 0
    out = capsys.readouterr().out
    assert "X [/red] y." in out and "http://127.0.0.1:9/x[/]" in out and "[link=file:///etc/passwd]Z" in out
    assert "2 citations" in out


def test_the_search_table_prints_corpus_text_as_text(capsys, monkeypatch):
    from side.cli.index import _print_table
    from side.retrieval.corpus import Passage
    from side.retrieval.fusion import DocumentHit

    monkeypatch.setenv("COLUMNS", "400")
    url, title = "http://corpus.example/[/]" + HOSTILE, "[/red]Harbour[link=file:///etc/passwd]x" + HOSTILE
    passage = Passage(0, "d1", url, title, "The pier [/dim] was rebuilt." + HOSTILE, 0, 1)
    _print_table("[/]query" + HOSTILE, [DocumentHit("d1", url, title, 0.5, passage)])
    out = capsys.readouterr().out
    assert_no_injected_escape(out)
    for literal in ("[/red]Harbour[link=file:///etc/passwd]x", "http://corpus.example/[/]", "The pier [/dim] was",
                    "search: [/]query"):
        assert literal in out, literal
