"""Name what is not supported: the words of a claim its source does not back.

A partially supported verdict is only useful to an editor who can see *which part* lacks
support ("the source has the debut, not the date"). The :class:`UnsupportedTagger` reads each
word of the claim against what the verifier has at decision time, the best evidence sentences
and the whole page, and says whether the source backs it. It is a logistic regression over
cheap lexical features (is the word, lightly stemmed and with numbers normalised, in the best
sentences, elsewhere in the page; is it a name, a number, a function word; are its neighbours
backed), fitted by ``side train unsupported`` on WiCE's ``non_supported_tokens`` *train* file,
where annotators marked the unsupported tokens of partially supported sub-claims.

Why lexical and not the cross-encoder: the annotators' unsupported tokens are overwhelmingly
names, numbers and content words that the cited page never mentions or mentions away from the
evidence; a bag of page words finds them in milliseconds, even on a 4000-sentence page, where a
transformer pass per word would not be cheap.

Output is the unsupported words grouped into short phrases, in claim order: adjacent
unsupported tokens are merged, and a phrase of only function words or punctuation is dropped.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from side.errors import ModelLoadError
from side.verify.evidence import STOPWORDS, select_evidence

__all__ = [
    "UNSUPPORTED_FILE", "TOP_EVIDENCE", "MAX_PAGE_CHARS", "FEATURES", "ClaimToken", "tokenize_claim",
    "align_tokens", "normal_forms", "PageWords", "token_features", "phrases", "retrieve_evidence",
    "UnsupportedTagger",
]

if TYPE_CHECKING:
    from side.retrieval.encoder import EmbeddingCache

#: The tagger's file in a verifier model directory (next to combiner.json).
UNSUPPORTED_FILE = "unsupported.json"
#: Best evidence sentences read as "the evidence" (the verdict shows three).
TOP_EVIDENCE = 3
#: Characters of the page read for its vocabulary: keeps a huge page's cost bounded (the
#: verifier already cuts a page to 4000 sentences of 1000 characters).
MAX_PAGE_CHARS = 400_000

FEATURES = (
    "function_word", "punctuation", "number", "capitalised", "first", "length",
    "in_top1", "in_top3", "in_candidates", "in_page", "prefix_in_page", "page_count",
    "bigram_top3", "bigram_page", "left_missing", "right_missing", "function_left_missing",
    "function_right_missing", "claim_coverage_top3", "claim_coverage_page", "missing_in_page_capitalised",
    "missing_in_page_number",
)

#: Claim tokens close to WiCE's (spaCy's): initialisms, numbers with separators, possessive 's,
#: words, then single punctuation marks.
_CLAIM_TOKEN = re.compile(r"(?:[A-Za-z]\.){2,}|\d+(?:[.,:/–-]\d+)*|'s\b|\w+|[^\w\s]")
_WORD = re.compile(r"\w+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "first": "1st", "second": "2nd", "third": "3rd",
}
_FUNCTION_WORDS = STOPWORDS | {"s", "since", "until", "while", "through", "against", "among", "within",
                               "without", "upon", "up", "out", "if", "because", "again", "further", "once"}
_PREFIX = 5


@dataclass(frozen=True)
class ClaimToken:
    """One token of the claim, with its place in the claim text (phrases are cut from the claim)."""

    text: str
    start: int
    end: int


def tokenize_claim(claim: str) -> list[ClaimToken]:
    """The claim's tokens, split close to the way WiCE's annotations are."""
    return [ClaimToken(m.group(0), m.start(), m.end()) for m in _CLAIM_TOKEN.finditer(claim)]


def align_tokens(claim: str, words: Sequence[str]) -> list[ClaimToken]:
    """Given tokens (WiCE's ``claim_tokens``) with their offsets in ``claim``; a token not found
    in order keeps the previous end as its place, so the count always matches ``words``."""
    out, pos = [], 0
    for word in words:
        at = claim.find(word, pos)
        start = pos if at < 0 else at
        end = start if at < 0 else at + len(word)
        out.append(ClaimToken(word, start, end))
        pos = end
    return out


def _stem(word: str) -> str:
    """A light, symmetric stem (the same on claim and page): plural and common verb endings."""
    word = _NUMBER_WORDS.get(word, word)
    if len(word) <= 3 or word[0].isdigit():
        return word
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("sses", "ss"), ("ches", "ch"), ("shes", "sh"), ("xes", "x"),
                         ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + repl
    return word


def normal_forms(text: str) -> list[str]:
    """Lower-cased, stemmed word forms of ``text``, thousands separators removed (1,500 = 1500)."""
    return [w if w in _FUNCTION_WORDS else _stem(w) for w in _WORD.findall(_THOUSANDS.sub("", text.lower()))]


@dataclass
class PageWords:
    """The vocabulary of some sentences: word forms, their counts, 5-letter prefixes and bigrams."""

    counts: Counter[str]
    prefixes: set[str]
    bigrams: set[tuple[str, str]]

    @classmethod
    def of(cls, sentences: Sequence[str], max_chars: int = MAX_PAGE_CHARS) -> PageWords:
        counts: Counter[str] = Counter()
        bigrams: set[tuple[str, str]] = set()
        used = 0
        for sentence in sentences:
            if used >= max_chars:
                break
            sentence = sentence[: max_chars - used]
            used += len(sentence)
            forms = [f for f in normal_forms(sentence) if f not in _FUNCTION_WORDS]
            counts.update(forms)
            bigrams.update(zip(forms, forms[1:], strict=False))
        prefixes = {f[:_PREFIX] for f in counts if len(f) > _PREFIX}
        return cls(counts, prefixes, bigrams)

    def has(self, forms: list[str]) -> bool:
        return bool(forms) and all(f in self.counts for f in forms)


def _present(forms: list[str], words: PageWords) -> bool:
    """Every word form of a token is in ``words`` (a token with none is trivially present)."""
    return not forms or words.has([f for f in forms if f not in _FUNCTION_WORDS] or forms)


def token_features(tokens: Sequence[ClaimToken], evidence: Sequence[str], page: Sequence[str],
                   page_words: PageWords | None = None) -> np.ndarray:
    """One row of :data:`FEATURES` per claim token.

    ``evidence`` is the verifier's candidates, best first (the first :data:`TOP_EVIDENCE` are
    the verdict's evidence); ``page`` the source's sentences (``page_words`` its vocabulary,
    when the caller has it already).
    """
    top1 = PageWords.of(evidence[:1])
    top3 = PageWords.of(evidence[:TOP_EVIDENCE])
    candidates = PageWords.of(evidence)
    whole = page_words or PageWords.of(page)
    forms = [normal_forms(t.text) for t in tokens]
    content = [[f for f in fs if f not in _FUNCTION_WORDS] for fs in forms]
    is_function = [bool(fs) and not c for fs, c in zip(forms, content, strict=True)]
    is_punct = [not fs for fs in forms]
    in_top3 = [_present(c, top3) for c in content]
    in_page = [_present(c, whole) for c in content]
    words = [i for i, c in enumerate(content) if c]  # tokens with a content word, in order
    cov_top3 = float(np.mean([in_top3[i] for i in words])) if words else 1.0
    cov_page = float(np.mean([in_page[i] for i in words])) if words else 1.0
    rows = []
    for i, token in enumerate(tokens):
        previous = max((j for j in words if j < i), default=None)
        following = min((j for j in words if j > i), default=None)
        left_missing = previous is not None and not in_top3[previous]
        right_missing = following is not None and not in_top3[following]
        left_bigram = previous is not None and content[i] and content[previous] and (
            content[previous][-1], content[i][0])
        right_bigram = following is not None and content[i] and content[following] and (
            content[i][-1], content[following][0])
        bigrams = [b for b in (left_bigram, right_bigram) if b]
        has_digit = any(ch.isdigit() for ch in token.text)
        capital = i > 0 and token.text[:1].isupper()
        page_count = max((whole.counts.get(f, 0) for f in content[i]), default=0) if content[i] else 0
        prefix = bool(content[i]) and all(
            f in whole.counts or (len(f) > _PREFIX and f[:_PREFIX] in whole.prefixes) for f in content[i])
        rows.append([
            float(is_function[i]), float(is_punct[i]), float(has_digit), float(capital), float(i == 0),
            math.log1p(len(token.text)),
            float(_present(content[i], top1)), float(in_top3[i]), float(_present(content[i], candidates)),
            float(in_page[i]), float(prefix), math.log1p(page_count),
            float(any(b in top3.bigrams for b in bigrams)), float(any(b in whole.bigrams for b in bigrams)),
            float(left_missing), float(right_missing),
            float(is_function[i] and left_missing), float(is_function[i] and right_missing),
            cov_top3, cov_page, float(capital and not in_page[i]), float(has_digit and not in_page[i]),
        ])
    return np.array(rows, dtype=np.float64).reshape(len(tokens), len(FEATURES))


def _is_content(token: ClaimToken) -> bool:
    return any(f not in _FUNCTION_WORDS for f in normal_forms(token.text))


def phrases(claim: str, tokens: Sequence[ClaimToken], unsupported: Sequence[bool]) -> tuple[str, ...]:
    """Adjacent unsupported tokens as phrases cut from the claim, in claim order; leading and
    trailing function words and punctuation are trimmed, and a phrase with no content word dropped."""
    out: list[str] = []
    run: list[ClaimToken] = []
    for token, flag in [*zip(tokens, unsupported, strict=True), (None, False)]:
        if flag and token is not None:
            run.append(token)
            continue
        while run and not _is_content(run[0]):
            run.pop(0)
        while run and not _is_content(run[-1]):
            run.pop()
        if run:
            out.append(claim[run[0].start : run[-1].end])
        run = []
    return tuple(out)


def retrieve_evidence(claim: str, page: list[str], embeddings: EmbeddingCache, k: int = 8) -> list[str]:
    """The verifier's candidate sentences for ``claim`` (bi-encoder + BM25, best first): what the
    tagger reads at decision time, for training and evaluation without the cross-encoder."""
    if not page:
        return []
    vectors = embeddings.encode(page, batch_size=64)
    claim_vector = embeddings.encode([claim])[0]
    return [c.text for c in select_evidence(claim, page, vectors, claim_vector, k).candidates]


@dataclass
class UnsupportedTagger:
    """Logistic regression over :data:`FEATURES`, stored as JSON (no pickle).

    ``threshold`` is the probability above which a token is called unsupported, chosen on
    train data (out-of-fold) for the best token F1.
    """

    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    threshold: float = 0.5
    info: dict[str, Any] = field(default_factory=dict)

    def probabilities(self, tokens: Sequence[ClaimToken], evidence: Sequence[str], page: Sequence[str],
                      page_words: PageWords | None = None) -> np.ndarray:
        """P(unsupported) per token."""
        if not tokens:
            return np.zeros(0)
        x = token_features(tokens, evidence, page, page_words)
        z = ((x - np.array(self.mean)) / np.array(self.scale)) @ np.array(self.coef) + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))

    def labels(self, tokens: Sequence[ClaimToken], evidence: Sequence[str], page: Sequence[str],
               page_words: PageWords | None = None) -> list[bool]:
        """Unsupported or not, per token (punctuation never is)."""
        probs = self.probabilities(tokens, evidence, page, page_words)
        return [bool(p >= self.threshold) and bool(_WORD.search(t.text)) for t, p in zip(tokens, probs, strict=True)]

    def tag(self, claim: str, evidence: Sequence[str], page: Sequence[str],
            page_words: PageWords | None = None) -> tuple[str, ...]:
        """The claim's unsupported words as short phrases, in claim order."""
        tokens = tokenize_claim(claim)
        return phrases(claim, tokens, self.labels(tokens, evidence, page, page_words))

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"features": list(FEATURES), **asdict(self)}, indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> UnsupportedTagger | None:
        """The tagger at ``path``; None when there is none. A file fitted on other features
        is an error: silently naming no words would look like full support."""
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
            features = tuple(data.pop("features", ()))
            tagger = cls(**data)
        except (ValueError, TypeError) as exc:
            raise ModelLoadError(f"unreadable unsupported-words tagger {path}: {exc}") from exc
        if features != FEATURES or len(tagger.coef) != len(FEATURES):
            raise ModelLoadError(f"{path} was fitted on other features; rebuild it with `side train unsupported`")
        return tagger
