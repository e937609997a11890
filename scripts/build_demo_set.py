"""Write the demo set shipped in side/demo_data from SciFact (run from the repository root).

    SIDE_DATA_DIR=../shared/data .venv/bin/python scripts/build_demo_set.py

The demo article cites, for each claim of ``ARTICLE``, the abstract named there: for most claims
one that SciFact's annotators found supporting it, for some one that the claim's own citing
sentence cited but that does not back it (SciFact's ``cited_doc_ids`` without evidence). The
sources are every abstract the article's claims cite or are supported by, then abstracts cited by
other SciFact dev claims as distractors, up to ``SOURCES``. Verdicts are Side's own: the script
writes the input, never a report.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from side.config import load_config
from side.data import load_scifact_claims, load_scifact_corpus
from side.demo import DEMO_ARTICLE, DEMO_SOURCES
from side.errors import SideError
from side.pipeline import cite_web

#: (section, SciFact dev claim id, the doc id the article cites for it).
ARTICLE = [
    ("Nutrition", 960, "8780599"),
    ("Environment", 399, "791050"),
    ("Obesity", 873, "1180972"),  # the cited adoption study finds genetic effects: it refutes the claim
    ("Sleep", 641, "31554917"),  # cited by the claim's citing sentence, but about circadian rhythm disorders
    ("Cell biology", 967, "2119889"),  # cited by the claim's citing sentence, but about other inhibitors
]
#: Abstracts in the demo set.
SOURCES = 60
#: The access date written in the article's citations (fixed, so the file does not change).
ACCESS_DATE = date(2026, 11, 28)
LEAD = ("'''Scientific claims''' is Side's demo article: each sentence is a claim of the SciFact dataset, "
        "cited to the abstract of a paper.")


def url_of(doc_id: str) -> str:
    """SciFact's doc ids are Semantic Scholar corpus ids."""
    return f"https://api.semanticscholar.org/CorpusID:{doc_id}"


def main() -> None:
    scifact = Path(load_config().data_dir) / "scifact"
    try:
        corpus = load_scifact_corpus(scifact / "corpus.jsonl")
        claims = {c.id: c for c in load_scifact_claims(scifact / "claims_dev.jsonl")}
    except SideError as exc:
        raise SystemExit(f"build_demo_set: {exc}") from exc
    wanted: dict[str, None] = {}
    for _, claim_id, doc_id in ARTICLE:
        wanted |= dict.fromkeys([doc_id, *claims[claim_id].cited_doc_ids, *claims[claim_id].evidence])
    for claim in sorted(claims.values(), key=lambda c: c.id):
        for doc_id in claim.cited_doc_ids:
            if len(wanted) < SOURCES:
                wanted[doc_id] = None
    with DEMO_SOURCES.open("w", encoding="utf-8") as out:
        for doc_id in sorted(wanted, key=int):
            doc = corpus[doc_id]
            record = {"url": url_of(doc_id), "title": doc.title, "sentences": list(doc.sentences)}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    lines, section = [LEAD], None
    for name, claim_id, doc_id in ARTICLE:
        if name != section:
            section = name
            lines += ["", f"== {name} =="]
        cite = cite_web(url_of(doc_id), corpus[doc_id].title, "Semantic Scholar", ACCESS_DATE)
        lines += ["", f"{claims[claim_id].claim}<ref>{cite}</ref>"]
    lines += ["", "== References ==", "<references />"]
    DEMO_ARTICLE.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{DEMO_SOURCES}: {len(wanted)} abstracts; {DEMO_ARTICLE}: {len(ARTICLE)} claims")


if __name__ == "__main__":
    main()
