"""The article and sources of the bot's end-to-end scenario, built from real shared data.

The supported citation points at a page made of the real source text that WiCE annotated as
supporting its claim (dev01190: a hockey league's announcement of Todd Watson's hiring); the
unsupported one points at a real, unrelated web page from ``fixtures/web_html`` (the Python
blog's 3.6.0 release post). Both are served by a local HTTP server, so the worker reads them
through Side's fetcher exactly as it reads the web. The verifier gives the pair a wide margin
(checked in ``test_scenario_is_a_clear_case``): ~0.9 for the supported citation, not
supported and reportable (under the talk-page operating point) for the other.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import need_data
from httpserver import LocalServer, Response

WICE_ID = "dev01190"
UNRELATED_PAGE = "fixtures/web_html/trafilatura_tests_cache/blog.python.org.html"
TITLE = "Todd Watson"
GOOD_CLAIM = ("Todd Watson is the head coach of the Odessa Jackalopes in the North American Hockey League "
              "(NAHL) since 2019.")
BAD_CLAIM = "In 2002 Watson was named NAHL Coach of the Year."

ARTICLE = """'''Todd Watson''' is an ice hockey coach.

== Career ==
Watson is a graduate of the University of Michigan-Dearborn.<ref name="nahl">{{cite web |url=SEED_URL \
|title=Jackalopes hire Todd Watson as new Head Coach |website=North American Hockey League}}</ref>

== References ==
<references />
"""

EDIT = """'''Todd Watson''' is an ice hockey coach.

== Career ==
Watson is a graduate of the University of Michigan-Dearborn.<ref name="nahl">{{cite web |url=SEED_URL \
|title=Jackalopes hire Todd Watson as new Head Coach |website=North American Hockey League}}</ref>

GOOD_CLAIM<ref>{{cite web |url=GOOD_URL |title=Jackalopes hire Todd Watson as new Head Coach |website=NAHL}}</ref>

== Awards ==
BAD_CLAIM<ref>{{cite web |url=BAD_URL |title=Coaching awards}}</ref>

== References ==
<references />
"""


def wice_record(data_dir: Path, record_id: str = WICE_ID) -> dict:
    with (data_dir / "wice" / "claim_dev.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            if record.get("meta", {}).get("id") == record_id:
                return record
    raise LookupError(record_id)


def evidence_page(record: dict) -> bytes:
    """The WiCE source sentences as the article page they were taken from."""
    title = next((s.split("TITLE:", 1)[1].strip() for s in record["evidence"] if s.startswith("(meta data)")), "")
    paragraphs = [s for s in record["evidence"] if not s.startswith("(meta data)") and not s.startswith("#")]
    body = "\n".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    return (f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title></head><body><article>"
            f"<h1>{html.escape(title)}</h1>\n{body}\n</article></body></html>").encode()


@dataclass
class Scenario:
    server: LocalServer
    seed_url: str
    good_url: str
    bad_url: str

    @property
    def article(self) -> str:
        return ARTICLE.replace("SEED_URL", self.seed_url)

    @property
    def edit(self) -> str:
        return (EDIT.replace("SEED_URL", self.seed_url).replace("GOOD_URL", self.good_url)
                .replace("BAD_URL", self.bad_url).replace("GOOD_CLAIM", GOOD_CLAIM).replace("BAD_CLAIM", BAD_CLAIM))

    @property
    def bad_only_edit(self) -> str:
        """The edit without the supported citation: half the worker's time, for the rule tests."""
        good = GOOD_CLAIM + "<ref>{{cite web |url=" + self.good_url
        return "\n".join(line for line in self.edit.splitlines() if not line.startswith(good))


def start_scenario() -> Scenario:
    data_dir = need_data("")
    record = wice_record(data_dir)
    server = LocalServer().start()
    page = Response(evidence_page(record))
    return Scenario(server, server.add("/nahl/news/2019/05/watson-hired.html", page),
                    server.add("/sports/odessa/2019/jackalopes-coach.html", page),
                    server.add("/2016/12/python-360-is-now-available.html",
                               Response((data_dir / UNRELATED_PAGE).read_bytes())))


@pytest.fixture(scope="module")
def scenario():
    scenario = start_scenario()
    yield scenario
    scenario.server.stop()


def test_scenario_is_a_clear_case(scenario, tmp_path):
    """The supported citation is supported (above the supported cut), the other is not supported and
    reportable: the only one the bot's policy lets through."""
    from bot.policy import report_threshold
    from side.config import FetchConfig
    from side.extract.wikitext import added_citations
    from side.pipeline import Pipeline, make_source_loader
    from side.sources.fetch import fetch_source
    from side.verify.levels import VerdictLevel
    from side.verify.verifier import Verifier

    claims = added_citations(scenario.article, scenario.edit, TITLE)
    assert [c.text for c in claims] == [GOOD_CLAIM, BAD_CLAIM]
    verifier = Verifier.load(device="cpu")
    config = FetchConfig(allow_hosts=["127.0.0.1"], timeout_s=5)
    pipeline = Pipeline(verifier, None, make_source_loader(None, lambda u: fetch_source(u, config, tmp_path)))
    good, bad = pipeline.verify_claims(claims)
    assert good.level is VerdictLevel.SUPPORTED and good.verdict.score > verifier.flag_threshold and not good.flagged
    assert bad.flagged and bad.level is VerdictLevel.NOT_SUPPORTED and bad.reportable
    assert bad.verdict.score < verifier.levels.report
    assert report_threshold(-1.0) is None  # the bot reports on the stored ``reportable``
