"""Fit the verifier's combiner and choose the cuts from support score to verdict level, on train data.

The combiner is a logistic regression over the verifier's signals, fitted on data that is not
evaluated: WiCE *train* sub-claims against their cited page (label 1: the page supports at
least part of the claim) and against the same page with the gold evidence sentences and their
neighbours removed, or another claim's page (label 0: the page does not support the claim,
as in WiCE's not_supported), plus SciFact train claims against their cited abstracts.

The level cuts are chosen on a three-level construction from the same train data
(:func:`level_items`), never on dev: WiCE's only train file holds partially supported
sub-claims with the words their page does not back marked, so

* ``partially_supported``: the sub-claim against its whole cited page (WiCE's own label);
* ``supported``: the same sub-claim with its unsupported words removed, against the same page:
  what is left is, by the annotation, backed by the page;
* ``not_supported``: the sub-claim against its page with the gold supporting sentences and their
  neighbours removed, and (every third claim) against another claim's page (one of the last few
  read, so its sentence embeddings are still cached).

``supported`` / ``not_supported`` cuts maximise macro-F1 over the three levels on that
construction (:func:`choose_cuts`); ``report_threshold`` is the highest score under which
"not supported" is still at least 90% precise there (:func:`choose_report_threshold`). The
zero-shot baselines of ``side eval verify`` (BM25-max, MiniLM max-cosine) get their cuts the same
way, stored in the combiner's ``info`` so the evaluation never tunes anything on dev.

Signals are cached under ``var/calibration`` keyed by the model weights and the items, so the
cuts can be re-chosen without rerunning the cross-encoder.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from side.data import WICE_META_PREFIX, load_scifact_claims, load_scifact_corpus, load_wice, read_jsonl
from side.evaluation.verify import LEVELS, wice_query
from side.training.holdout import fits_combiner, scifact_key, wice_key
from side.training.trainset import (
    MIN_SUPPORTED_TOKENS,
    SCIFACT_CORPUS,
    SCIFACT_TRAIN,
    WICE_TRAIN,
    supported_part,
    word_count,
)
from side.verify.crossencoder import PASSAGE_SHARE
from side.verify.levels import VerdictLevel
from side.verify.verifier import FEATURES, Combiner, Query, Verdict, Verifier

__all__ = [
    "REPORT_PRECISION", "verdicts", "signal_matrix", "fit_combiner", "LevelItem", "supported_part",
    "level_items", "joined_level_items", "Signals", "level_signals", "choose_cuts", "choose_report_threshold",
    "choose_levels", "SURE_FLAG_SHARE", "choose_sure_flag",
]

log = logging.getLogger(__name__)

#: Precision of "not supported" the talk-page report's cut must keep on the train construction.
REPORT_PRECISION = 0.9
#: The sure flag cut's budget: at most this share of supported train items is flagged.
SURE_FLAG_SHARE = 0.1


def _wice_items(data_dir: Path, rng: random.Random, holdout: float = 0.0) -> tuple[list, list[int], list[str]]:
    """The combiner's WiCE train items, their labels and how each was built (the kinds of
    :class:`LevelItem`: "page", "stripped_page", "other_page")."""
    claims = [c for c in load_wice(data_dir / WICE_TRAIN) if fits_combiner(wice_key(c.id), holdout)]
    items, labels, kinds = [], [], []
    for n, claim in enumerate(claims):
        query = wice_query(claim)
        sentences = list(claim.evidence)
        gold = claim.gold_sentences
        near = {j for i in gold for j in (i - 1, i, i + 1)}
        items.append((query, sentences))
        labels.append(1)
        kinds.append("page")
        stripped = [s for i, s in enumerate(sentences) if i not in near]
        if gold and stripped:
            items.append((query, stripped))
            labels.append(0)
            kinds.append("stripped_page")
        if n % 3 == 0:
            other = claims[rng.randrange(len(claims))]
            if other.evidence != claim.evidence:
                items.append((query, list(other.evidence)))
                labels.append(0)
                kinds.append("other_page")
    return items, labels, kinds


def _scifact_items(data_dir: Path, holdout: float = 0.0) -> tuple[list, list[int]]:
    corpus = load_scifact_corpus(data_dir / SCIFACT_CORPUS)
    items, labels = [], []
    for claim in load_scifact_claims(data_dir / SCIFACT_TRAIN):
        if not fits_combiner(scifact_key(claim.id), holdout):
            continue
        for doc_id in claim.cited_doc_ids:
            if doc_id not in corpus:
                continue
            sets = claim.evidence.get(doc_id, [])
            items.append((Query(claim.claim), list(corpus[doc_id].sentences)))
            labels.append(int(bool(sets) and sets[0]["label"] == "SUPPORT"))
    return items, labels


def verdicts(verifier: Verifier, items: list, desc: str, batch: int = 16) -> Iterator[Verdict]:
    """Verdicts in input order, in batches under a progress bar (these passes take minutes on a CPU)."""
    from tqdm import tqdm

    for start in tqdm(range(0, len(items), batch), desc=desc, unit="batch"):
        yield from verifier.verify_many(items[start : start + batch])


def signal_matrix(verifier: Verifier, items: list) -> np.ndarray:
    rows = [[v.signals.get(f, 0.0) for f in FEATURES] for v in verdicts(verifier, items, "verifier signals")]
    return np.array(rows, dtype=np.float64)


def fit_combiner(verifier: Verifier, data_dir: str | Path, seed: int = 13, cache: Path | None = None,
                 holdout: float = 0.0) -> Combiner:
    """Fit the logistic combiner on WiCE train and SciFact train signals (cached under ``cache``):
    with ``holdout``, on the claims the cross-encoder was kept from (:mod:`side.training.holdout`)."""
    from sklearn.linear_model import LogisticRegression

    data_dir = Path(data_dir)
    rng = random.Random(seed)
    wice_items, wice_labels, _ = _wice_items(data_dir, rng, holdout)
    sci_items, sci_labels = _scifact_items(data_dir, holdout)
    items = wice_items + sci_items
    x = level_signals(verifier, items, cache).features if cache else signal_matrix(verifier, items)
    y = np.array(wice_labels + sci_labels)
    mean, scale = x.mean(0), x.std(0) + 1e-6
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000, random_state=seed)
    model.fit((x - mean) / scale, y)
    fitted_on: dict[str, Any] = {"wice_train": len(wice_items), "scifact_train": len(sci_items)}
    if holdout:
        fitted_on["holdout"] = holdout
    info: dict[str, Any] = {"fitted_on": fitted_on,
                            "train_accuracy": float(model.score((x - mean) / scale, y))}
    log.info("combiner: %s", dict(zip(FEATURES, np.round(model.coef_[0], 3), strict=False)))
    return Combiner(mean.tolist(), scale.tolist(), model.coef_[0].tolist(), float(model.intercept_[0]), info=info)


@dataclass(frozen=True)
class LevelItem:
    """One (claim, source) of the three-level train construction."""

    query: Query
    sentences: tuple[str, ...]
    level: VerdictLevel
    #: The WiCE claim the sub-claim comes from: its sub-claims share a page, so folds split by it.
    group: str
    #: How the item was built: "page", "supported_part", "stripped_page", "other_page".
    kind: str


def level_items(data_dir: str | Path, seed: int = 13, scifact: bool = False, holdout: float = 0.0) -> list[LevelItem]:
    """The three-level construction from WiCE train (and, with ``scifact``, SciFact train) only;
    with ``holdout``, from the claims the cross-encoder was kept from.

    SciFact train, when asked for: a cited abstract with a SUPPORT rationale is supported, one
    without any rationale or with a REFUTE one is not supported (the claim is not backed).
    """
    data_dir = Path(data_dir)
    rng = random.Random(seed)
    records = list(read_jsonl(data_dir / WICE_TRAIN))
    pages = [tuple(s.removeprefix(WICE_META_PREFIX) for s in r.get("evidence", [])) for r in records]
    items: list[LevelItem] = []
    for n, rec in enumerate(records):
        meta = rec.get("meta", {})
        group = str(meta.get("id", n)).split("-")[0]
        if not fits_combiner(wice_key(group), holdout):
            continue
        title, section = meta.get("claim_title", "") or "", (meta.get("claim_section", "") or "").rstrip(".")
        context = meta.get("claim_context", "") or ""
        query = Query(rec["claim"], title, section, context)
        page = pages[n]
        items.append(LevelItem(query, page, VerdictLevel.PARTIALLY_SUPPORTED, group, "page"))
        part = supported_part(rec["claim"], rec["claim_tokens"], rec["non_supported_spans"])
        if word_count(part) >= MIN_SUPPORTED_TOKENS:
            items.append(LevelItem(Query(part, title, section, context), page, VerdictLevel.SUPPORTED, group,
                                   "supported_part"))
        gold = {i for group_ in rec.get("supporting_sentences", []) for i in group_}
        near = {j for i in gold for j in (i - 1, i, i + 1)}
        stripped = tuple(s for i, s in enumerate(page) if i not in near)
        if gold and stripped:
            items.append(LevelItem(query, stripped, VerdictLevel.NOT_SUPPORTED, group, "stripped_page"))
        if n % 3 == 0:  # a page read moments ago (its embeddings are still cached), for another claim
            other = next((pages[m] for m in range(n - 1 - rng.randrange(8), -1, -1) if pages[m] != page), None)
            if other:
                items.append(LevelItem(query, other, VerdictLevel.NOT_SUPPORTED, group, "other_page"))
    if scifact:
        items += _scifact_level_items(data_dir, holdout)
    return items


def _join(parts: Sequence[str]) -> str:
    """Sub-claims of one claim as one sentence, as Wikipedia writes a compound claim: "A, and B"."""
    parts = [p.strip().rstrip(".") for p in parts if p.strip()]
    return (", and ".join(parts) + ".") if parts else ""


def joined_level_items(data_dir: str | Path) -> list[LevelItem]:
    """Compound claims rebuilt from WiCE train: the annotated sub-claims of one claim joined by ", and".

    Claim-Split cut each WiCE claim into sub-claims; the train file keeps the partially supported
    ones (58 claims have two to four). Joined again they stand for a claim of several parts
    against the one page they share:

    * ``partially_supported``: all sub-claims as written ("joined_page"), and the first one's
      supported part with the others as written ("joined_mixed");
    * ``supported``: every sub-claim's supported part ("joined_supported_part");
    * ``not_supported``: all sub-claims against the page without any of their gold sentences and
      neighbours ("joined_stripped_page").

    Only :func:`level_items`' other half for what a split of a whole claim does; Side's rule for
    sub-claims (:mod:`side.verify.decompose`) finds ", and" joins, so these items are kind to it
    and their figure is an upper bound of what the split sees in real claims.
    """
    records = list(read_jsonl(Path(data_dir) / WICE_TRAIN))
    groups: dict[str, list[dict]] = {}
    for n, rec in enumerate(records):
        groups.setdefault(str(rec.get("meta", {}).get("id", n)).split("-")[0], []).append(rec)
    items: list[LevelItem] = []
    for group, recs in groups.items():
        if len(recs) < 2:
            continue
        recs.sort(key=lambda r: str(r.get("meta", {}).get("id", "")))
        meta = recs[0].get("meta", {})
        title, section = meta.get("claim_title", "") or "", (meta.get("claim_section", "") or "").rstrip(".")
        context = meta.get("claim_context", "") or ""
        page = tuple(s.removeprefix(WICE_META_PREFIX) for s in recs[0].get("evidence", []))
        full = [r["claim"] for r in recs]
        parts = [supported_part(r["claim"], r["claim_tokens"], r["non_supported_spans"]) for r in recs]

        def item(claims: Sequence[str], sentences: tuple[str, ...], level: VerdictLevel, kind: str,
                 where: tuple[str, str, str] = (title, section, context), group: str = group) -> LevelItem:
            return LevelItem(Query(_join(claims), *where), sentences, level, group, kind)

        items.append(item(full, page, VerdictLevel.PARTIALLY_SUPPORTED, "joined_page"))
        items.append(item([full[0], *parts[1:]], page, VerdictLevel.PARTIALLY_SUPPORTED, "joined_mixed"))
        if all(word_count(p) >= MIN_SUPPORTED_TOKENS for p in parts):
            items.append(item(parts, page, VerdictLevel.SUPPORTED, "joined_supported_part"))
        gold = {i for r in recs for group_ in r.get("supporting_sentences", []) for i in group_}
        near = {j for i in gold for j in (i - 1, i, i + 1)}
        stripped = tuple(s for i, s in enumerate(page) if i not in near)
        if gold and stripped:
            items.append(item(full, stripped, VerdictLevel.NOT_SUPPORTED, "joined_stripped_page"))
    return items


def _scifact_level_items(data_dir: Path, holdout: float = 0.0) -> list[LevelItem]:
    corpus = load_scifact_corpus(data_dir / SCIFACT_CORPUS)
    items = []
    for claim in load_scifact_claims(data_dir / SCIFACT_TRAIN):
        if not fits_combiner(scifact_key(claim.id), holdout):
            continue
        for doc_id in claim.cited_doc_ids:
            if doc_id in corpus:
                sets = claim.evidence.get(doc_id, [])
                level = (VerdictLevel.SUPPORTED if sets and sets[0]["label"] == "SUPPORT"
                         else VerdictLevel.NOT_SUPPORTED)
                items.append(LevelItem(Query(claim.claim), tuple(corpus[doc_id].sentences), level,
                                       f"scifact{claim.id}", "scifact"))
    return items


@dataclass(frozen=True)
class Signals:
    """What the verifier computed for each item, enough to refit and re-cut without rerunning it."""

    #: One row of :data:`FEATURES` per item.
    features: np.ndarray
    #: The zero-shot baselines' scores: BM25-max and MiniLM max-cosine over the source's sentences.
    bm25_max: np.ndarray
    cosine_max: np.ndarray
    #: The verifier's reason when it could not score an item ("empty source"...), else "".
    reasons: list[str]


def _cache_key(verifier: Verifier, items: Sequence[Any]) -> str:
    digest = hashlib.sha256()
    weights = Path(verifier.cross_encoder.model_dir) / "verifier.safetensors"
    digest.update(weights.read_bytes() if weights.is_file() else str(weights).encode())
    digest.update(str(verifier.cross_encoder.precision).encode())
    # What else decides the signals of the same weights: how pairs become tokens, the bi-encoder
    # (SIDE_ENCODER_MODEL) and which sentences it embeds and the cross-encoder judges.
    digest.update(json.dumps([verifier.cross_encoder.pairs.max_length, PASSAGE_SHARE, verifier.encoder.name,
                              verifier.k, verifier.shortlist, verifier.shortlist_neighbours,
                              verifier.split_claims, FEATURES]).encode())
    for item in items:
        query, sentences = (item.query, item.sentences) if isinstance(item, LevelItem) else item
        digest.update(json.dumps([query.claim, query.title, query.section, query.context, list(sentences)]).encode())
    return digest.hexdigest()[:16]


def level_signals(verifier: Verifier, items: Sequence[Any], cache: Path | None = None, batch: int = 16) -> Signals:
    """The verifier's signals and the baselines' scores for (query, sentences) or :class:`LevelItem` s.

    With ``cache`` (a folder), a run over the same weights, precision, settings (token budget,
    bi-encoder, shortlist: see ``_cache_key``) and items is read back.
    """
    path = cache / f"signals-{_cache_key(verifier, items)}.npz" if cache else None
    if path and path.is_file():
        data = np.load(path)
        return Signals(data["features"], data["bm25_max"], data["cosine_max"], [str(r) for r in data["reasons"]])
    from tqdm import tqdm

    pairs = [(i.query, list(i.sentences)) if isinstance(i, LevelItem) else i for i in items]
    features, bm25, cosine, reasons = [], [], [], []
    for start in tqdm(range(0, len(pairs), batch), desc="verifier signals", unit="batch"):
        for item in verifier.run(pairs[start : start + batch]):
            verdict = item.decided
            features.append([verdict.signals.get(f, 0.0) for f in FEATURES])
            bm25.append(item.selection.max_bm25 if item.selection else 0.0)
            cosine.append(item.selection.max_cosine if item.selection else 0.0)
            reasons.append(verdict.reason if verdict.level is VerdictLevel.CANNOT_CHECK else "")
    signals = Signals(np.array(features, dtype=np.float64).reshape(-1, len(FEATURES)), np.array(bm25, dtype=np.float64),
                      np.array(cosine, dtype=np.float64), reasons)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, features=signals.features, bm25_max=signals.bm25_max, cosine_max=signals.cosine_max,
                 reasons=np.array(reasons, dtype=str))
    return signals


def _candidate_cuts(score: np.ndarray, most: int = 200) -> np.ndarray:
    """Midpoints between sorted distinct scores (thinned to ``most`` quantiles), plus the extremes."""
    values = np.unique(score)
    if len(values) > most:
        values = np.unique(np.quantile(values, np.linspace(0, 1, most)))
    mids = (values[1:] + values[:-1]) / 2
    return np.concatenate([[values[0] - 1e-9], mids, [values[-1] + 1e-9]])


def choose_cuts(score: np.ndarray, levels: Sequence[str]) -> tuple[float, float, float]:
    """The (supported, not_supported) cuts with the best macro-F1 over three levels, and that F1.

    ``score >= supported`` is supported, ``score < not_supported`` not supported, partially
    supported between (as :class:`~side.verify.levels.LevelThresholds`). Ties keep the first
    pair found, lowest cuts first.
    """
    score = np.asarray(score, dtype=np.float64)
    gold = np.array([LEVELS.index(level) for level in levels])
    cuts = _candidate_cuts(score)
    best = (-1.0, float(cuts[0]), float(cuts[0]))
    for i, low in enumerate(cuts):
        for high in cuts[i:]:
            predicted = np.where(score >= high, 0, np.where(score >= low, 1, 2))
            f1 = _macro_f1(gold, predicted)
            if f1 > best[0]:
                best = (f1, float(high), float(low))
    return best[1], best[2], best[0]


def _macro_f1(gold: np.ndarray, predicted: np.ndarray) -> float:
    """Macro-F1 over the three levels for integer codes (the index in :data:`LEVELS`)."""
    matrix = np.bincount(gold * 3 + predicted, minlength=9).reshape(3, 3)
    tp = np.diag(matrix)
    denominator = matrix.sum(0) + matrix.sum(1)
    return float(np.mean(np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), 0.0)))


def choose_report_threshold(score: np.ndarray, levels: Sequence[str],
                            precision: float = REPORT_PRECISION) -> dict[str, float]:
    """The highest cut under which "not supported" keeps ``precision``, with its precision and recall.

    Scores are scanned from the lowest up; the cut is placed just above the last score where the
    running precision still reaches ``precision`` (0.0, no report, if it never does).
    """
    score = np.asarray(score, dtype=np.float64)
    negative = np.array([lv == VerdictLevel.NOT_SUPPORTED for lv in levels])
    order = np.argsort(score, kind="stable")
    hits = np.cumsum(negative[order])
    shown = np.arange(1, len(order) + 1)
    running = hits / shown
    distinct = np.r_[score[order][1:] != score[order][:-1], True]  # a cut can only fall between scores
    ok = np.flatnonzero((running >= precision) & distinct)
    if not len(ok):
        return {"report_threshold": 0.0, "precision": float("nan"), "recall": 0.0}
    last = int(ok[-1])
    above = score[order][last + 1] if last + 1 < len(order) else score[order][last] + 1e-4
    cut = float((score[order][last] + above) / 2)
    return {"report_threshold": cut, "precision": float(running[last]),
            "recall": float(hits[last] / max(1, negative.sum()))}


def choose_sure_flag(score: np.ndarray, levels: Sequence[str], share: float = SURE_FLAG_SHARE) -> dict[str, float]:
    """The sure flag cut: the highest cut with at most ``share`` of the supported items below it,
    with the share of supported items flagged (below it) and the precision of "needs review"
    (partially or not supported gold) among all items below it.

    With the supported scores sorted, at most ``k = floor(share * n)`` may fall below, so the cut is
    the (k+1)-th lowest (an item at the cut is not below it), rounded down to 4 decimals so the
    rounding never lets one more in. No supported items: 0.0, nothing flagged sure.
    """
    score = np.asarray(score, dtype=np.float64)
    supported = np.array([lv == VerdictLevel.SUPPORTED for lv in levels])
    ranked = np.sort(score[supported])
    if not len(ranked):
        return {"sure_flag_threshold": 0.0, "supported_flagged": 0.0, "precision": float("nan"), "flagged": 0}
    k = int(math.floor(share * len(ranked) + 1e-9))
    cut = float(ranked[k]) if k < len(ranked) else float(ranked[-1]) + 1e-4
    cut = math.floor(cut * 1e4) / 1e4
    below = score < cut
    return {"sure_flag_threshold": cut, "supported_flagged": float((ranked < cut).mean()),
            "precision": float((~supported[below]).mean()) if below.any() else float("nan"),
            "flagged": int(below.sum()), "unsure": int(((score >= cut) & ~supported).sum())}


def choose_levels(combiner: Combiner, signals: Signals, items: Sequence[LevelItem]) -> dict[str, Any]:
    """Set ``combiner``'s level, report and sure flag cuts (:func:`choose_sure_flag`) from the train
    construction; return what was chosen.

    Items the verifier could not score (cannot check) are left out. The baselines' cuts are
    chosen on the same items and kept in ``combiner.info["baseline_levels"]``.
    """
    keep = np.array([not r for r in signals.reasons])
    levels = [i.level.value for i, k in zip(items, keep, strict=True) if k]
    score = np.array([combiner.score(dict(zip(FEATURES, row, strict=True))) for row in signals.features[keep]])
    supported, not_supported, f1 = choose_cuts(score, levels)
    report = choose_report_threshold(score, levels)
    combiner.flag_threshold = round(supported, 4)
    combiner.not_supported_threshold = round(not_supported, 4)
    combiner.report_threshold = round(min(report["report_threshold"], not_supported), 4)
    sure = choose_sure_flag(score, levels)
    # report <= flag <= supported: a cut outside is moved to the nearer end
    combiner.sure_flag_threshold = min(max(sure["sure_flag_threshold"], combiner.report_threshold),
                                       combiner.flag_threshold)
    baselines = {}
    for name, values in (("baseline_bm25_max", signals.bm25_max), ("baseline_minilm_max_cosine", signals.cosine_max)):
        high, low, base_f1 = choose_cuts(values[keep], levels)
        baselines[name] = {"supported": round(high, 4), "not_supported": round(low, 4), "train_macro_f1": base_f1}
    counts = {level: levels.count(level) for level in LEVELS}
    chosen = {
        "train_items": counts, "train_macro_f1": f1,
        "report": {"precision": report["precision"], "recall": report["recall"], "target": REPORT_PRECISION},
        "sure_flag": {"supported_flagged": sure["supported_flagged"], "precision": sure["precision"],
                      "flagged": sure["flagged"], "target": SURE_FLAG_SHARE},
    }
    combiner.info["levels"] = chosen
    combiner.info["baseline_levels"] = baselines
    return {**chosen, "flag_threshold": combiner.flag_threshold,
            "not_supported_threshold": combiner.not_supported_threshold,
            "report_threshold": combiner.report_threshold, "sure_flag_threshold": combiner.sure_flag_threshold,
            "baseline_levels": baselines}
