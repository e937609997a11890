"""The verification engine: how well does a source support a claim, and which sentences show it.

Evidence first (see :mod:`side.verify.evidence`): BM25 shortlists at most ``shortlist`` sentences
of a long page (the best with their neighbours, so a never-seen page costs a bounded number of
embeddings), then the bi-encoder and BM25 pick the ``k`` sentences nearest the claim; the
cross-encoder judges each of them and the best three together. Document score = max over those
candidates (Side). A small logistic combiner, fitted by ``side train verifier`` on WiCE *train*
data, calibrates the cross-encoder with the signals it misses (bi-encoder similarity, lexical and
name/number coverage), because our measurements show no single signal is trustworthy on real
web pages.

Bad input never crashes: an empty claim or source, or a source in a language the English model
cannot read, gives NOT ENOUGH INFO with a reason; very long sources are cut to a bounded size.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from side.config import Config, VerifierConfig
from side.errors import ModelLoadError
from side.verify.crossencoder import (
    DEFAULT_MODEL_DIR,
    LABELS,
    REFUTES,
    SUPPORTS,
    CrossEncoder,
    Pair,
    VerdictLabel,
    read_model_json,
)
from side.verify.decompose import split_claim
from side.verify.evidence import (
    _TOKEN,
    STOPWORDS,
    Candidate,
    Selection,
    bm25_scores,
    coverage,
    lexical_shortlist,
    rrf,
    salient_coverage,
    select_evidence,
    soft_coverage,
)
from side.verify.framing import Frame, frame_note, unframed
from side.verify.levels import LevelThresholds, VerdictLevel, part_levels
from side.verify.unsupported import UNSUPPORTED_FILE, UnsupportedTagger

__all__ = [
    "COMBINER_FILE", "MAX_SENTENCES", "MAX_SOURCE_CHARS", "MAX_SENTENCE_CHARS", "MAX_EVIDENCE",
    "MIN_ENGLISH_SHARE", "FEATURES", "Evidence", "bounded_sentences", "cannot_check_reason", "Verdict",
    "not_enough_info", "Query", "english_share", "evidence_order",
    "Combiner", "Prepared", "Shortlist", "shortlist_source", "Verifier", "verdict_level",
]

if TYPE_CHECKING:
    from side.retrieval.encoder import Encoder

log = logging.getLogger(__name__)

COMBINER_FILE = "combiner.json"
#: Sentences of one source considered at most (a 10 MB page must not take minutes).
MAX_SENTENCES = 4000
#: Characters of raw source text split into sentences at most (10 MB of text must stay cheap).
MAX_SOURCE_CHARS = 400_000
#: Characters of one sentence kept.
MAX_SENTENCE_CHARS = 1000
#: Evidence sentences returned with a verdict (SciFact allows at most three rationales).
MAX_EVIDENCE = 3
#: Below this share of English function words, the source is not read as English.
MIN_ENGLISH_SHARE = 0.12

FEATURES = ("ce_support", "ce_refute", "ce_window", "cos_max", "cos_top3", "coverage", "salient", "bm25",
            "soft_coverage", "ce_partial")


@dataclass(frozen=True)
class Evidence:
    """A sentence of the source that bears on the claim."""

    text: str
    sentence_index: int
    score: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        """The inverse of :meth:`to_dict` (stored verdicts and suggestions are read back with it)."""
        return cls(text=str(data["text"]), sentence_index=int(data["sentence_index"]), score=float(data["score"]))


@dataclass(frozen=True)
class Verdict:
    """How well one Source supports a Claim: the level an editor reads, and what it rests on."""

    #: The cross-encoder's class of the best evidence (FEVER's labels): the model's vocabulary,
    #: kept for SciFact-style evaluation; people are shown :attr:`level`.
    label: VerdictLabel
    #: Calibrated support in [0, 1]: higher means better supported. Used for ranking and levels.
    score: float
    probabilities: dict[str, float] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    signals: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    #: Supported, partially supported, not supported (from :attr:`score`), or cannot check.
    level: VerdictLevel = VerdictLevel.CANNOT_CHECK
    #: For a partially supported claim, the words of the claim the source does not back.
    unsupported: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["evidence"] = [e.to_dict() for e in self.evidence]
        data["unsupported"] = list(self.unsupported)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """The inverse of :meth:`to_dict`; an unknown label or level is a ValueError, not a silent string."""
        return cls(
            label=VerdictLabel(data["label"]), score=float(data["score"]),
            probabilities=dict(data.get("probabilities", {})),
            evidence=tuple(Evidence.from_dict(e) for e in data.get("evidence", [])),
            signals=dict(data.get("signals", {})), reason=data.get("reason", ""),
            level=VerdictLevel(data.get("level") or VerdictLevel.CANNOT_CHECK),
            unsupported=tuple(str(w) for w in data.get("unsupported", ())),
        )


def verdict_level(score: float, signals: dict[str, float], cuts: LevelThresholds) -> VerdictLevel:
    """The level of a verdict under ``cuts``: from its score, or, when the verdict was reached
    from sub-claims (``part_min`` / ``part_max`` in its signals), by :func:`part_levels`, so a
    pipeline that re-levels with its own cuts applies the same rule."""
    if "part_min" in signals and "part_max" in signals:
        return part_levels(score, (signals["part_min"], signals["part_max"]), cuts)
    return cuts.level(score)


def not_enough_info(reason: str) -> Verdict:
    """A verdict that could not be reached (empty claim or source, a language the model cannot read)."""
    return Verdict(label=VerdictLabel.NOT_ENOUGH_INFO, score=0.0, reason=reason, level=VerdictLevel.CANNOT_CHECK)


@dataclass(frozen=True)
class Query:
    """What the verifier reads of a claim: the sentence and its Wikipedia context."""

    claim: str
    title: str = ""
    section: str = ""
    context: str = ""

    @property
    def left_context(self) -> str:
        """Context ending with the claim sentence, so left truncation keeps the claim."""
        if self.context and self.claim and self.context.rstrip().endswith(self.claim.strip()):
            return self.context
        return f"{self.context} {self.claim}".strip()

    def pair(self, passage: str, passage_title: str = "") -> Pair:
        context = f"{self.section} [SEP] {self.left_context}" if self.section else self.left_context
        return Pair(self.title, context, passage, passage_title)


def evidence_order(query: Query, support: np.ndarray) -> np.ndarray:
    """The judged candidates' order as evidence, best first (``support``: their P(SUPPORTS), in
    retrieval order).

    A claim read with its article (a title: every claim Side takes from Wikipedia) keeps the
    retrieval order. The cross-encoder gives such claims a SUPPORTS probability near zero whatever
    the sentence (see the model card, "what carries the verdict on WiCE"), so its ranking is noise
    there: on WiCE train sub-claims the retrieval order gives NDCG@5 0.657 against 0.614 for the
    fusion below, R@5 0.731 against 0.724. A bare claim (SciFact, Citation-Integrity: no article)
    gets the cross-encoder's rank fused with the retrieval rank, which ranks SciFact train
    rationales far better than retrieval alone (NDCG@5 0.868 against 0.709).
    """
    retrieval = np.arange(len(support))
    if query.title:
        return retrieval
    return np.argsort(-rrf(support, -retrieval.astype(np.float64)), kind="stable")


def english_share(sentences: list[str], limit: int = 3000) -> float:
    """Share of tokens that are English function words: near zero for other languages."""
    tokens = _TOKEN.findall(" ".join(sentences)[:20000].lower())[:limit]
    if not tokens:
        return 0.0
    return sum(t in STOPWORDS for t in tokens) / len(tokens)


def bounded_sentences(sentences: list[str] | tuple[str, ...]) -> list[str]:
    """The sentences the verifier reads: non-empty, each and all of them cut to a bounded size."""
    return [s[:MAX_SENTENCE_CHARS] for s in sentences if s and s.strip()][:MAX_SENTENCES]


def cannot_check_reason(claim: str, sentences: list[str]) -> str:
    """Why ``claim`` cannot be scored against ``sentences`` (from :func:`bounded_sentences`), or
    "": an empty claim or source, or a source in a language the model cannot read. Decided
    before any model runs, so evaluation can count it over a whole data set in seconds."""
    if not claim.strip():
        return "empty claim"
    if not sentences:
        return "empty source"
    if _foreign(sentences, claim):
        return "source is not in English"
    return ""


def _foreign(sentences: list[str], claim: str) -> bool:
    """An English claim against a source in another language: few English function words, and
    the language identifier names another language. Both, because English pages that are
    mostly lists of names (squads, discographies) have as few function words as foreign ones."""
    if english_share(sentences) >= MIN_ENGLISH_SHARE or english_share([claim]) < MIN_ENGLISH_SHARE:
        return False
    from side.sources.states import READABLE_LANGUAGES, WEAK_LANGUAGE_CONFIDENCE, detect_language

    code, probability = detect_language(" ".join(sentences)[:10_000])
    return code not in READABLE_LANGUAGES and probability >= WEAK_LANGUAGE_CONFIDENCE


@dataclass(frozen=True)
class Shortlist:
    """What the verifier reads of one (claim, source) before any model runs.

    The CPU part of a verdict, so that a process without the models (a reader, see
    ``side-worker --role reader``) can do it and hand it on: why the pair cannot be checked,
    or the page's BM25 for the claim and the sentences worth embedding. It indexes the
    :func:`bounded_sentences` of the source.
    """

    #: Why the claim cannot be scored against the source ("" when it can).
    reason: str = ""
    #: BM25 of every sentence for the claim (float32 values).
    lexical: tuple[float, ...] = ()
    #: Indices of the sentences to embed, in page order (:func:`lexical_shortlist`).
    embedded: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "lexical": list(self.lexical), "embedded": list(self.embedded)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Shortlist:
        return cls(str(data.get("reason") or ""), tuple(float(x) for x in data.get("lexical", ())),
                   tuple(int(i) for i in data.get("embedded", ())))


def shortlist_source(claim: str, sentences: list[str], budget: int = VerifierConfig.shortlist,
                     neighbours: int = VerifierConfig.shortlist_neighbours) -> Shortlist:
    """The :class:`Shortlist` of ``claim`` against ``sentences`` (already :func:`bounded_sentences`);
    framed restatements of the claim (:mod:`side.verify.framing`) score no BM25."""
    reason = cannot_check_reason(claim, sentences)
    if reason:
        return Shortlist(reason)
    lexical = bm25_scores(claim, unframed(claim, sentences)[0])
    return Shortlist("", tuple(float(x) for x in lexical), tuple(lexical_shortlist(lexical, budget, neighbours)))


@dataclass
class Combiner:
    """Logistic regression over :data:`FEATURES`, stored as JSON (no pickle)."""

    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    #: Below it a claim is not fully supported (partially or not supported): flagged for review.
    flag_threshold: float = 0.5
    #: High-precision cut, for reports posted on talk pages ("not supported" at least 90% precise on
    #: the train construction of ``side.training.calibration.level_items``).
    report_threshold: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    #: Below it a claim is not supported (None: the same as ``flag_threshold``).
    not_supported_threshold: float | None = None
    #: The sure flag cut (``LevelThresholds.flag``): a needs-review score below it is flagged, one
    #: from it to ``flag_threshold`` is unsure. Chosen on the train construction as the highest cut
    #: with at most 10% of supported items below it (``choose_sure_flag``); None (a combiner.json
    #: from before it): the supported cut, every needs-review level sure.
    sure_flag_threshold: float | None = None
    #: The signals it was fitted on, in the order of ``mean``, ``scale`` and ``coef``: a subset of
    #: :data:`FEATURES` (a combiner fitted before a signal was added keeps working without it).
    features: tuple[str, ...] = FEATURES

    @property
    def levels(self) -> LevelThresholds:
        not_supported = self.flag_threshold if self.not_supported_threshold is None else self.not_supported_threshold
        sure = self.flag_threshold if self.sure_flag_threshold is None else min(self.sure_flag_threshold,
                                                                                 self.flag_threshold)
        return LevelThresholds(self.flag_threshold, not_supported, min(self.report_threshold, not_supported, sure),
                               sure)

    def score(self, signals: dict[str, float]) -> float:
        x = np.array([signals[f] for f in self.features], dtype=np.float64)
        z = float(((x - self.mean) / self.scale) @ np.array(self.coef) + self.intercept)
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def save(self, path: Path) -> None:
        data = asdict(self)
        data["features"] = list(self.features)
        path.write_text(json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> Combiner | None:
        if not path.is_file():
            return None
        data = read_model_json(path)
        features = data.pop("features", ())
        if not isinstance(features, list) or not isinstance(data.get("coef", ()), list):
            raise ModelLoadError(f"{path}: features and coef are not lists")
        if not features or not set(features) <= set(FEATURES) or len(features) != len(data.get("coef", ())):
            log.warning("combiner at %s was fitted on other features; ignoring it", path)
            return None
        try:
            combiner = cls(**data, features=tuple(features))
        except TypeError as exc:  # a key this version does not know, or one missing
            raise ModelLoadError(f"{path} is not a combiner this version of Side reads ({exc})") from exc
        numbers = [*combiner.mean, *combiner.scale, *combiner.coef, combiner.intercept, combiner.flag_threshold,
                   combiner.report_threshold,
                   *([] if combiner.sure_flag_threshold is None else [combiner.sure_flag_threshold])]
        if len({len(combiner.mean), len(combiner.scale), len(features)}) != 1 or not all(
                type(n) in (int, float) for n in numbers):
            raise ModelLoadError(f"{path}: mean, scale and coef are not numbers, one per feature")
        return combiner


@dataclass
class Prepared:
    """One (query, source) with its evidence candidates, ready for the cross-encoder."""

    query: Query
    sentences: list[str]
    candidates: list[Candidate]
    verdict: Verdict | None = None
    pairs: list[Pair] = field(default_factory=list)
    selection: Selection | None = None
    #: Sentence indices of the candidates, best evidence first.
    evidence_order: list[int] = field(default_factory=list)
    #: Cross-encoder SUPPORTS/REFUTES/NEI rows, one per candidate, then one per window (the joined
    #: top-3 candidates, or the chunks of a chunk model: see :meth:`Verifier.windows`).
    probabilities: np.ndarray | None = None
    #: The cross-encoder's P(PARTIAL) for each row of :attr:`probabilities` (zeros without that class).
    partial: np.ndarray | None = None
    #: The claim's sub-claims, each prepared against the same sentences (empty: not split).
    parts: list[Prepared] = field(default_factory=list)
    #: :func:`side.verify.evidence.soft_coverage` of the claim by the candidates.
    soft_coverage: float = 0.0
    #: Sentences that repeat the claim only to deny it, report it or instruct (blanked in
    #: :attr:`sentences`; :mod:`side.verify.framing`).
    frames: tuple[Frame, ...] = ()

    @property
    def decided(self) -> Verdict:
        """The verdict, for code that reads items :meth:`Verifier.run` returned (each has one)."""
        if self.verdict is None:
            raise RuntimeError("no verdict yet: this item has not been through Verifier.run")
        return self.verdict


class Verifier:
    """Scores claims against sources; load once per process and reuse."""

    def __init__(self, cross_encoder: CrossEncoder, encoder: Encoder | None = None, combiner: Combiner | None = None,
                 k: int = 8, batch_size: int = 32, tagger: UnsupportedTagger | None = None,
                 split_claims: bool = False,
                 shortlist: int = VerifierConfig.shortlist,
                 shortlist_neighbours: int = VerifierConfig.shortlist_neighbours) -> None:
        from side.retrieval.encoder import EmbeddingCache, shared_encoder

        self.cross_encoder = cross_encoder
        self.encoder = encoder or shared_encoder(cross_encoder.device, cross_encoder.precision)
        self.embeddings = EmbeddingCache(self.encoder)
        self.combiner = combiner
        self.k = k
        self.batch_size = batch_size
        #: Names the claim's words the source does not back (None: no unsupported.json shipped).
        self.tagger = tagger
        #: Verify each sub-claim too (:func:`side.verify.decompose.split_claim`) and read the level
        #: off the parts (:func:`part_levels`); the score stays the whole claim's.
        self.split_claims = split_claims
        #: Sentences of one source embedded at most, chosen by BM25 with their neighbours (0: all).
        self.shortlist = shortlist
        self.shortlist_neighbours = shortlist_neighbours

    @classmethod
    def load(cls, model_dir: str | Path | None = None, device: str = "auto", precision: str = "auto",
             encoder_model: str = "minilm", **kwargs: Any) -> Verifier:
        """The verifier in ``model_dir``: Side's own files or a Hugging Face checkpoint (see CrossEncoder),
        with the bi-encoder ``encoder_model`` (``encoder.model``: minilm, mpnet or a directory) picking evidence.

        Without a combiner.json (a checkpoint from elsewhere has none) the score is the best
        SUPPORTS probability and the levels use the default cuts; the log says which.
        """
        model_dir = Path(model_dir) if model_dir else DEFAULT_MODEL_DIR
        cross = CrossEncoder(model_dir, device=device, precision=precision)
        kwargs.setdefault("tagger", UnsupportedTagger.load(model_dir / UNSUPPORTED_FILE))
        if kwargs.get("encoder") is None:
            from side.retrieval.encoder import shared_encoder

            kwargs["encoder"] = shared_encoder(cross.device, cross.precision, encoder_model)
        combiner = Combiner.load(model_dir / COMBINER_FILE)
        if combiner is None:
            log.info("verifier %s (%s format): no usable %s, score = best SUPPORTS probability, default level cuts",
                     model_dir, cross.format, COMBINER_FILE)
        else:
            log.info("verifier %s (%s format): combiner %s", model_dir, cross.format, COMBINER_FILE)
        return cls(cross, combiner=combiner, **kwargs)

    @classmethod
    def from_config(cls, config: Config, model_dir: str | Path | None = None, encoder_model: str | None = None,
                    split_claims: bool | None = None) -> Verifier:
        """The verifier the configuration describes (its ``[verifier]`` settings and ``encoder.model``);
        ``model_dir``, ``encoder_model`` and ``split_claims`` override them (the CLI's options)."""
        from side.threads import apply_inference_threads

        settings = config.verifier
        apply_inference_threads(settings.threads)
        return cls.load(model_dir or settings.model_dir or None, device=settings.device, precision=settings.precision,
                        encoder_model=encoder_model or config.encoder.model, batch_size=settings.batch_size,
                        shortlist=settings.shortlist, shortlist_neighbours=settings.shortlist_neighbours,
                        split_claims=settings.split_claims if split_claims is None else split_claims)

    @property
    def flag_threshold(self) -> float:
        return self.levels.supported

    @property
    def levels(self) -> LevelThresholds:
        """The cuts from support score to level (the combiner's, chosen on train data)."""
        return self.combiner.levels if self.combiner else LevelThresholds()

    def shortlist_for(self, claim: str, sentences: list[str]) -> Shortlist:
        """:func:`shortlist_source` with this verifier's shortlist settings."""
        return shortlist_source(claim, bounded_sentences(sentences), self.shortlist, self.shortlist_neighbours)

    def _prepare(self, query: Query, sentences: list[str], shortlist: Shortlist | None = None) -> Prepared:
        """``shortlist``: the pair's :class:`Shortlist` when a reader made it already. A framed
        restatement of the claim is blanked first, so no signal counts it as support."""
        sentences = bounded_sentences(sentences)
        if shortlist is None:
            shortlist = shortlist_source(query.claim, sentences, self.shortlist, self.shortlist_neighbours)
        if shortlist.reason:
            return Prepared(query, sentences, [], not_enough_info(shortlist.reason))
        sentences, found = unframed(query.claim, sentences)
        lexical = np.asarray(shortlist.lexical, dtype=np.float32)
        embedded = list(shortlist.embedded)
        vectors = self.embeddings.encode([sentences[i] for i in embedded] + [query.claim], batch_size=64)
        selection = select_evidence(query.claim, sentences, vectors[:-1], vectors[-1], self.k, lexical, embedded)
        candidates = selection.candidates
        judged = query if self.cross_encoder.query_context else replace(query, context="")
        pairs = [judged.pair(c.text) for c in candidates]
        pairs += [judged.pair(text) for text in self.windows(sentences, candidates)]
        words = self.embeddings.token_vectors([query.claim] + [c.text for c in candidates])
        soft = soft_coverage(words[0][0], words[0][1], [vectors for _, vectors in words[1:]])
        return Prepared(query, sentences, candidates, None, pairs, selection, soft_coverage=soft, frames=found)

    def windows(self, sentences: list[str], candidates: list[Candidate]) -> list[str]:
        """The passages judged beside the single candidates: for a model trained on chunks
        (``premise`` "chunk" in its verifier.json), up to :data:`side.verify.chunks.MAX_CHUNKS`
        chunks of consecutive sentences around the best candidates; otherwise the best three
        candidates joined (sentence models never saw a long premise)."""
        from side.verify.chunks import CHUNK_WORDS, MAX_CHUNKS, chunk_spans, chunk_text

        top3 = [" ".join(c.text for c in candidates[:3])]
        if self.cross_encoder.premise != "chunk":
            return top3
        words = self.cross_encoder.chunk_words or CHUNK_WORDS
        spans = chunk_spans(sentences, [c.index for c in candidates], words, MAX_CHUNKS)
        return [chunk_text(sentences, span) for span in spans] or top3

    def _split(self, item: Prepared) -> list[Prepared]:
        """The item's sub-claims against its sentences (embeddings cached: only the parts are embedded)."""
        if not self.split_claims or item.verdict is not None:
            return []
        subs = split_claim(item.query.claim)
        if len(subs) < 2:
            return []
        parts = [self._prepare(replace(item.query, claim=sub), item.sentences) for sub in subs]
        return [part for part in parts if part.verdict is None]

    def verify_text(self, query: Query, text: str) -> Verdict:
        """Verdict against raw source text, split into sentences within a bounded size."""
        from side.text import split_sentences

        return self.verify(query, split_sentences(text[:MAX_SOURCE_CHARS]))

    def verify(self, query: Query, sentences: list[str]) -> Verdict:
        return self.verify_many([(query, sentences)])[0]

    def verify_many(self, items: list[tuple[Query, list[str]]], levels: LevelThresholds | None = None,
                    shown: Sequence[bool] | None = None,
                    shortlists: Sequence[Shortlist | None] | None = None) -> list[Verdict]:
        """Verdicts for many (query, source sentences); the cross-encoder runs in shared batches.

        ``levels`` are the cuts from score to level (default :attr:`levels`; a Pipeline with a
        flag threshold of its own passes its cuts, so the unsupported words are named where the
        level is decided). ``shown[i]`` False: item i's unsupported words are never shown (a
        corpus or own-source candidate), so they are not looked for. ``shortlists[i]``: item
        i's :class:`Shortlist` when a reader made it (None: made here).
        """
        return [item.decided for item in self.run(items, levels, shown, shortlists)]

    def run(self, items: list[tuple[Query, list[str]]], levels: LevelThresholds | None = None,
            shown: Sequence[bool] | None = None,
            shortlists: Sequence[Shortlist | None] | None = None) -> list[Prepared]:
        """Like :meth:`verify_many`, keeping the candidates and baseline signals (for evaluation)."""
        given = list(shortlists) if shortlists is not None else [None] * len(items)
        prepared = [self._prepare(q, s, shortlist) for (q, s), shortlist in zip(items, given, strict=True)]
        for item in prepared:
            item.parts = self._split(item)
        judged = [p for item in prepared if item.verdict is None for p in (item, *item.parts)]
        probs, partial = self.cross_encoder.predict_partial([pair for p in judged for pair in p.pairs],
                                                            batch_size=self.batch_size)
        offset = 0
        for p in judged:
            p.probabilities = probs[offset : offset + len(p.pairs)]
            p.partial = partial[offset : offset + len(p.pairs)]
            offset += len(p.pairs)
        for n, item in enumerate(prepared):
            if item.verdict is None and item.probabilities is not None:
                parts = [self._score(self.signals(part, part.probabilities)) for part in item.parts
                         if part.probabilities is not None]
                item.verdict = self._decide(item, item.probabilities, levels or self.levels,
                                            shown is None or shown[n], parts)
        return prepared

    def signals(self, item: Prepared, probs: np.ndarray) -> dict[str, float]:
        n = len(item.candidates)
        single, windows = probs[:n], probs[n:]
        best_window = int(np.argmax(windows[:, SUPPORTS]))
        partial = item.partial[n:] if item.partial is not None else None
        cos = sorted((c.cosine for c in item.candidates), reverse=True)
        top_text = " ".join(c.text for c in item.candidates[:3])
        return {
            "ce_support": float(single[:, SUPPORTS].max()),
            "ce_refute": float(single[:, REFUTES].max()),
            "ce_window": float(windows[best_window, SUPPORTS]),
            "ce_partial": float(partial[best_window]) if partial is not None else 0.0,
            "cos_max": float(cos[0]),
            "cos_top3": float(np.mean(cos[:3])),
            "coverage": coverage(item.query.claim, top_text),
            "salient": salient_coverage(item.query.claim, " ".join(item.sentences)),
            "bm25": float(math.log1p(max(0.0, max(c.bm25 for c in item.candidates)))),
            "soft_coverage": item.soft_coverage,
        }

    def _score(self, signals: dict[str, float]) -> float:
        """The calibrated support score (the best SUPPORTS probability without a combiner)."""
        return self.combiner.score(signals) if self.combiner else max(signals["ce_support"], signals["ce_window"])

    def _unsupported(self, item: Prepared, evidence: list[str], level: VerdictLevel) -> tuple[str, ...]:
        """The claim's words the source does not back, for a verdict short of supported (cheap:
        word sets of the page, capped at :data:`side.verify.unsupported.MAX_PAGE_CHARS`)."""
        if self.tagger is None or not level.needs_review:
            return ()
        return self.tagger.tag(item.query.claim, evidence, item.sentences)

    def _decide(self, item: Prepared, probs: np.ndarray, levels: LevelThresholds, shown: bool = True,
                parts: list[float] | None = None) -> Verdict:
        """The verdict from the claim's cross-encoder rows under the cuts ``levels`` and, when the
        claim was split, its parts' scores; ``shown`` False skips naming unsupported words."""
        signals = self.signals(item, probs)
        best = int(np.argmax(probs[:, SUPPORTS]))
        score = self._score(signals)
        level_signals = dict(signals)
        if parts:
            level_signals.update(parts=float(len(parts)), part_min=min(parts), part_max=max(parts))
        if item.frames:
            level_signals["framed"] = float(len(item.frames))
        level = verdict_level(score, level_signals, levels)
        order = evidence_order(item.query, probs[: len(item.candidates), SUPPORTS])
        item.evidence_order = [item.candidates[i].index for i in order]
        evidence = tuple(
            Evidence(item.candidates[i].text, item.candidates[i].index, round(float(probs[i, SUPPORTS]), 4))
            for i in order[:MAX_EVIDENCE]
        )
        label = VerdictLabel(LABELS[int(np.argmax(probs[best]))])
        # The model's SUPPORTS stands unless the calibrated score says not supported (a partially
        # supported claim keeps it: SciFact-style evaluation reads this label, people read the level).
        if label == VerdictLabel.SUPPORTS and score < self.levels.not_supported:
            label = VerdictLabel.NOT_ENOUGH_INFO
        if signals["ce_refute"] > 0.5 and signals["ce_refute"] > signals["ce_support"]:
            label = VerdictLabel.REFUTES
        return Verdict(
            label=label, score=round(score, 4), level=level,
            unsupported=self._unsupported(item, [item.candidates[i].text for i in order], level) if shown else (),
            probabilities={name: round(float(p), 4) for name, p in zip(LABELS, probs[best], strict=False)},
            evidence=evidence, signals={k: round(v, 4) for k, v in level_signals.items()},
            reason=frame_note(item.frames) if level.needs_review else "",
        )
