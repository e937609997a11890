"""Each priority signal's effect on the patrol queue: precision of its top 10%, per signal.

The queue is ordered by :func:`side.priority.priority` (see :mod:`side.priority`). Here the
order by failure likelihood alone (the peer, measured in the same run on the same scores) is
compared with failure likelihood plus each signal on its own and all kept signals together.
"Needs review" is the gold level partially or not supported; precision@10% is the share of the
queue's first 10% (rounded up) that needs review.

Data, and what each carries:
- **WiCE dev** (``wice/claim_dev.jsonl``): real Wikipedia claims with the page they cite. The
  records hold no URL and no wiki history, so URL depth and reference age/survival are unknown
  for every item (the priority gives them a neutral value). Domain reliability is looked up by
  the cited page's own site name (``(meta data) PUBLISHER`` or the title's ``– Site`` suffix)
  against the perennial-sources names, since no domain is given: a proxy, reported with its
  coverage.
- **Citation-Integrity dev** (evaluation only, unknown licence): biomedical citing sentences and
  the cited article; no URL, no site, no wiki history: every signal is neutral there, which the
  table shows as coverage 0.

Weights cannot be chosen on train data: WiCE's only train split (``non_supported_tokens_train``)
is partially supported throughout, so "needs review" is constant there and no ordering can be
told apart. The shipped weights are therefore the a-priori ones in ``[priority]``
(side/config.py), and this script shows whether each one helps on dev.

Result (2026-11-24, shared 2-core CPU, load 20-26): no signal fires on either dev set, so none
changes the top 10% (WiCE dev P@10% 0.886, Citation-Integrity dev 0.594, failure likelihood
alone and every variant alike). The site-name proxy finds 15 WiCE dev pages on the list, all
generally reliable (risk 0). The reach line shows how rarely the URL signals fire on real
citation URLs. The weights stay the a-priori ones; these sets can neither confirm nor refute them.

The verifier's scores are computed once and cached under ``var/priority/`` (minutes of CPU for
WiCE dev); later runs take a second.

    nice -n 10 .venv/bin/python benchmarks/priority.py [--model DIR] [--rescore]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tqdm import tqdm

from side.config import PriorityConfig, load_config
from side.data import WICE_META_PREFIX, load_scifact_claims, load_scifact_corpus, load_wice
from side.evaluation.verify import (
    CITATION_MARKER,
    citation_integrity_level,
    wice_query,
    wice_sentences,
)
from side.priority import (
    PrioritySignals,
    ReferenceHistory,
    Reliability,
    load_perennial_sources,
    priority,
    url_depth_of,
)
from side.verify.levels import VerdictLevel
from side.verify.verifier import Query

log = logging.getLogger("benchmarks.priority")

#: The share of the queue a patroller works through.
TOP_SHARE = 0.10
NEEDS_REVIEW = {VerdictLevel.PARTIALLY_SUPPORTED.value, VerdictLevel.NOT_SUPPORTED.value}


@dataclass(frozen=True)
class Item:
    """One scored citation of an evaluation set, with what the data says about its source."""

    id: str
    gold: str
    failure_likelihood: float | None
    site: str = ""


def site_name(evidence: list[str] | tuple[str, ...]) -> str:
    """The cited page's own site name: ``(meta data) PUBLISHER``, else the title's last
    ``– Site`` / ``| Site`` part ("" when neither is there)."""
    meta = {s[len(WICE_META_PREFIX):].split(":", 1)[0]: s.split(":", 1)[1].strip()
            for s in evidence[:8] if s.startswith(WICE_META_PREFIX) and ":" in s}
    if meta.get("PUBLISHER"):
        return meta["PUBLISHER"]
    parts = re.split(r"\s+[–—|-]\s+", meta.get("TITLE", ""))
    return parts[-1].strip() if len(parts) > 1 else ""


def _score_wice(verifier, path: Path) -> list[Item]:
    claims = load_wice(path)
    items: list[Item] = []
    with tqdm(total=len(claims), desc="WiCE dev", unit="claim") as bar:
        for start in range(0, len(claims), 16):
            batch = claims[start:start + 16]
            prepared = verifier.run([(wice_query(c), wice_sentences(c)) for c in batch])
            for claim, item in zip(batch, prepared, strict=True):
                verdict = item.decided
                fl = None if verdict.level is VerdictLevel.CANNOT_CHECK else round(1.0 - verdict.score, 4)
                items.append(Item(claim.id, claim.label, fl, site_name(claim.evidence)))
            bar.update(len(batch))
    return items


def _score_citation_integrity(verifier, folder: Path) -> list[Item]:
    corpus = load_scifact_corpus(folder / "corpus.jsonl")
    claims = load_scifact_claims(folder / "claims_dev.jsonl")
    items: list[Item] = []
    for claim in tqdm(claims, desc="Citation-Integrity dev", unit="claim"):
        text = CITATION_MARKER.sub("", claim.claim).strip()
        doc_ids = [d for d in (claim.evidence or claim.cited_doc_ids) if d in corpus]
        for doc_id, item in zip(doc_ids, verifier.run([(Query(text), list(corpus[d].sentences)) for d in doc_ids]),
                                strict=True):
            verdict = item.decided
            fl = None if verdict.level is VerdictLevel.CANNOT_CHECK else round(1.0 - verdict.score, 4)
            items.append(Item(f"{claim.id}:{doc_id}", citation_integrity_level(claim, doc_id), fl))
    return items


def cached_items(name: str, cache: Path, score) -> list[Item]:
    """The items of one set from ``cache`` (JSON), scoring them first when it is absent."""
    if cache.is_file():
        return [Item(**row) for row in json.loads(cache.read_text(encoding="utf-8"))]
    items = score()
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps([vars(i) for i in items]), encoding="utf-8")
    log.info("cached %d %s scores in %s", len(items), name, cache)
    return items


def top_of(keys: list[float], share: float = TOP_SHARE) -> list[int]:
    """Indices of the first ``share`` of a queue ordered by ``keys`` (highest first, ties by position)."""
    order = sorted(range(len(keys)), key=lambda n: (-keys[n], n))
    return order[: max(1, math.ceil(share * len(keys)))]


def precision_at(items: list[Item], keys: list[float], share: float = TOP_SHARE) -> float:
    """Share of the first ``share`` of ``items`` (ordered by ``keys``, highest first) that needs review."""
    top = top_of(keys, share)
    return sum(items[n].gold in NEEDS_REVIEW for n in top) / len(top)


def signals_of(item: Item, names: dict[str, Reliability]) -> PrioritySignals:
    """What the data gives: failure likelihood, and reliability by site name (no URL, no history)."""
    reliability = names.get(_norm(item.site), Reliability.UNLISTED) if item.site else Reliability.UNLISTED
    return PrioritySignals(item.failure_likelihood, url="", reliability=reliability,
                           history=ReferenceHistory.unknown())


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", name.casefold()).strip().removeprefix("the ").strip()


def table(name: str, items: list[Item], weights: PriorityConfig, names: dict[str, Reliability]) -> list[str]:
    """One row per ordering: failure likelihood alone, each signal on its own, all together."""
    scored = [i for i in items if i.failure_likelihood is not None]
    signals = [signals_of(i, names) for i in scored]
    base = [s.failure_likelihood or 0.0 for s in signals]
    off = replace(weights, generic_url=0.0, reliability=0.0, young_reference=0.0)
    variants = {"failure likelihood alone (peer)": off,
                "+ URL depth (generic URL)": replace(off, generic_url=weights.generic_url),
                "+ domain reliability (RSP)": replace(off, reliability=weights.reliability),
                "+ reference age / survival": replace(off, young_reference=weights.young_reference),
                "all signals (shipped weights)": weights}
    coverage = {"+ URL depth (generic URL)": (sum(s.url_depth is not None for s in signals),
                                              sum(s.url_depth == 0 for s in signals)),
                "+ domain reliability (RSP)": (sum(s.reliability is not Reliability.UNLISTED for s in signals),
                                               sum(s.reliability.risk > 0 for s in signals)),
                "+ reference age / survival": (sum(s.history.known for s in signals),
                                               sum(s.history.youth > 0 for s in signals))}
    reviewed = sum(i.gold in NEEDS_REVIEW for i in scored)
    lines = [f"{name}: {len(scored)} scored citations ({len(items) - len(scored)} cannot check left out), "
             f"{reviewed} need review (base rate {reviewed / max(1, len(scored)):.3f}); "
             f"top 10% = {max(1, math.ceil(TOP_SHARE * len(scored)))}"]
    peer, peer_top = precision_at(scored, base), set(top_of(base))
    for label, w in variants.items():
        keys = [priority(s, w).score or 0.0 for s in signals]
        p = precision_at(scored, keys)
        moved = len(set(top_of(keys)) - peer_top)
        cov = coverage.get(label)
        cov_text = "" if cov is None else f"  signal known for {cov[0]}/{len(scored)}, raises {cov[1]}"
        lines.append(f"  {label:34s} P@10% {p:.3f}  change {p - peer:+.3f}  moved into top {moved}{cov_text}")
    return lines


def site_reliability(sources) -> dict[str, Reliability]:
    """Reliability by normalised source name; a name listed with several statuses is no consensus
    (as :meth:`side.priority.PerennialSources.lookup` treats a domain)."""
    grouped: dict[str, set[Reliability]] = {}
    for entry in sources.entries:
        grouped.setdefault(_norm(entry.name), set()).add(entry.reliability)
    return {name: next(iter(found)) if len(found) == 1 else Reliability.NO_CONSENSUS
            for name, found in grouped.items()}


def real_citation_coverage(path: Path, sources) -> str:
    """How often each URL signal would fire on real Wikipedia citations (WikiFactCheck-English dev's
    cited URLs: no labels, so this is reach, not effect)."""
    import csv

    with path.open(encoding="utf-8", newline="") as handle:
        urls = [row.get("url", "") for row in csv.DictReader(handle, delimiter="\t")]
    depths = [url_depth_of(u) for u in urls]
    statuses = [sources.reliability(u) for u in urls]
    listed = {r: statuses.count(r) for r in Reliability if r is not Reliability.UNLISTED and statuses.count(r)}
    return (f"Reach on real citations (WikiFactCheck-English dev, {len(urls)} cited URLs, no labels): "
            f"generic URL {depths.count(0)}, unreadable URL {depths.count(None)}; WP:RSP "
            + ", ".join(f"{r.text} {n}" for r, n in listed.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="verifier model folder (default: the shipped one)")
    parser.add_argument("--rescore", action="store_true", help="score again instead of reading var/priority/")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    config = load_config()
    data, cache = Path(config.data_dir), Path(config.var_dir) / "priority"
    for needed in (data / "wice" / "claim_dev.jsonl", data / "citation_integrity" / "claims_dev.jsonl"):
        if not needed.is_file():
            print(f"missing {needed}: set SIDE_DATA_DIR to the shared data folder", file=sys.stderr)
            return 2
    if args.rescore:
        for old in cache.glob("*.json"):
            old.unlink()
    verifier = None

    def load_verifier():
        nonlocal verifier
        if verifier is None:
            from side.verify.verifier import Verifier
            verifier = Verifier.from_config(config, args.model)
        return verifier

    wice = cached_items("WiCE dev", cache / "wice_dev.json",
                        lambda: _score_wice(load_verifier(), data / "wice" / "claim_dev.jsonl"))
    citint = cached_items("Citation-Integrity dev", cache / "citation_integrity_dev.json",
                          lambda: _score_citation_integrity(load_verifier(), data / "citation_integrity"))
    sources = load_perennial_sources(config.priority.perennial_sources or None)
    names = site_reliability(sources)
    print(f"WP:RSP copy of {sources.source_date}: {len(sources.entries)} domain rows; weights generic_url "
          f"{config.priority.generic_url}, reliability {config.priority.reliability}, young_reference "
          f"{config.priority.young_reference}")
    train = data / "wice" / "non_supported_tokens_train.jsonl"
    if train.is_file():
        labels = {c.label for c in load_wice(train)}
        print(f"Train data to choose weights on: WiCE non_supported_tokens_train, labels {sorted(labels)}: "
              f"{'needs review is constant, so no weight can be chosen there' if len(labels) == 1 else 'usable'}")
    for line in table("WiCE dev", wice, config.priority, names) + table(
            "Citation-Integrity dev (evaluation only)", citint, config.priority, names):
        print(line)
    wfc = data / "wikifactcheck_english" / "wfc_dev.tsv"
    if wfc.is_file():
        print(real_citation_coverage(wfc, sources))
    return 0


if __name__ == "__main__":
    sys.exit(main())
