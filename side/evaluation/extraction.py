"""How well does Side pull the article out of a web page?

Everything the verifier judges is the text extracted from a cited page, so boilerplate
(menus, related links, cookie banners) becomes false evidence and a cut-off article loses
true evidence. This module scores extractors on the article-extraction benchmark of
Zyte/Scrapinghub (181 pages, hand-written ``articleBody``), with the metric of that benchmark:
bag-of-n-gram overlap between the extracted and the true body (``n=1`` is a plain
bag of words, ``n=4`` the benchmark's shingles).

Compared: trafilatura as Side runs it (:func:`side.sources.fetch.source_from_html`), trafilatura's
other modes (to justify the choice of mode), and a naive "all visible text" baseline that
shows what extraction buys.
"""

from __future__ import annotations

import gzip
import logging
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from side.data import read_json_object
from side.errors import DataNotFoundError, InputError, SideError

__all__ = [
    "BENCHMARK_SUBDIR", "Extractor", "Page", "PageScore", "ExtractorResult", "tokenize", "ngram_counts",
    "overlap", "benchmark_dir", "load_pages", "side_extractor", "trafilatura_extractor",
    "naive_extractor", "default_extractors", "score_extractor", "evaluate_extraction",
]

log = logging.getLogger(__name__)

#: Location of the benchmark under the shared data directory.
BENCHMARK_SUBDIR = Path("fixtures") / "web_html" / "article_extraction_benchmark"

_TOKEN = re.compile(r"\w+", re.UNICODE)

Extractor = Callable[[bytes, str], str]


@dataclass(frozen=True)
class Page:
    key: str
    url: str
    html: bytes
    truth: str


@dataclass(frozen=True)
class PageScore:
    key: str
    tp: int
    fp: int
    fn: int
    seconds: float

    @property
    def precision(self) -> float:
        return _ratio(self.tp, self.tp + self.fp, empty=1.0 if self.fn == 0 else 0.0)

    @property
    def recall(self) -> float:
        return _ratio(self.tp, self.tp + self.fn, empty=1.0)

    @property
    def f1(self) -> float:
        return _f1(self.precision, self.recall)


@dataclass
class ExtractorResult:
    """Scores of one extractor: macro = mean over pages, micro = pooled n-gram counts."""

    name: str
    pages: int
    macro_precision: float
    macro_recall: float
    macro_f1: float
    micro_precision: float
    micro_recall: float
    micro_f1: float
    empty_pages: int
    mean_ms: float
    per_page: list[PageScore] = field(default_factory=list, repr=False)

    def to_dict(self, per_page: bool = False) -> dict:
        out = asdict(self)
        out.pop("per_page")
        if per_page:
            out["per_page"] = [asdict(p) | {"f1": p.f1} for p in self.per_page]
        return out


def _ratio(num: float, den: float, empty: float) -> float:
    return num / den if den else empty


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def tokenize(text: str) -> list[str]:
    """Word tokens as in the benchmark (``\\w+``); lower-cased so case noise does not count."""
    return _TOKEN.findall((text or "").lower())


def ngram_counts(text: str, n: int = 1) -> Counter[tuple[str, ...]]:
    tokens = tokenize(text)
    if n <= 1:
        return Counter((t,) for t in tokens)
    return Counter(tuple(tokens[i : i + n]) for i in range(max(0, len(tokens) - n + 1)))


def overlap(truth: str, predicted: str, n: int = 1) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives) of n-gram bags."""
    true_bag, pred_bag = ngram_counts(truth, n), ngram_counts(predicted, n)
    tp = sum((true_bag & pred_bag).values())
    return tp, sum(pred_bag.values()) - tp, sum(true_bag.values()) - tp


# --- data -------------------------------------------------------------------------------------


def benchmark_dir(data_dir: Path) -> Path:
    path = Path(data_dir) / BENCHMARK_SUBDIR
    if not (path / "ground-truth.json").is_file() or not (path / "html").is_dir():
        raise DataNotFoundError(
            f"article extraction benchmark not found at {path} (set SIDE_DATA_DIR or --data-dir)"
        )
    return path


def load_pages(root: Path, limit: int | None = None) -> list[Page]:
    """Benchmark pages in key order; ``root`` is the benchmark folder (see :func:`benchmark_dir`)."""
    truth = read_json_object(root / "ground-truth.json", "the extraction benchmark's")
    pages: list[Page] = []
    for key in sorted(truth):
        path = root / "html" / f"{key}.html.gz"
        if not path.is_file():
            log.warning("benchmark page %s has no HTML file; skipped", key)
            continue
        entry = truth[key]
        if not isinstance(entry, dict) or not isinstance(entry.get("articleBody", ""), str):
            raise InputError(f"{root / 'ground-truth.json'}: the entry of {key} has no articleBody text")
        try:
            html = gzip.decompress(path.read_bytes())
        except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
            raise InputError(f"{path} is not a gzip file ({exc})") from exc
        pages.append(Page(key, str(entry.get("url", "")), html, entry.get("articleBody", "")))
        if limit is not None and len(pages) >= limit:
            break
    return pages


# --- extractors -------------------------------------------------------------------------------


def side_extractor(html: bytes, url: str) -> str:
    """Side's own path: what :func:`side.sources.fetch.source_from_html` keeps."""
    from side.sources.fetch import source_from_html

    return source_from_html(html, url).text


def trafilatura_extractor(mode: str) -> Extractor:
    def extract(html: bytes, url: str) -> str:
        from side.sources.fetch import extract_html

        return extract_html(html, url, mode=mode)[0]

    return extract


def naive_extractor(html: bytes, url: str) -> str:
    """All visible text: the document minus script/style/template, as a floor to beat."""
    import lxml.html

    tree = lxml.html.document_fromstring(html)
    for bad in tree.xpath("//script|//style|//noscript|//template|//head"):
        bad.drop_tree()
    return tree.text_content()


def default_extractors() -> dict[str, Extractor]:
    from side.sources.fetch import HTML_EXTRACTION_MODE

    extractors: dict[str, Extractor] = {f"side (trafilatura {HTML_EXTRACTION_MODE})": side_extractor}
    for mode in ("recall", "balanced", "precision"):  # text only, no sentence splitting
        extractors[f"trafilatura {mode}"] = trafilatura_extractor(mode)
    extractors["naive visible text"] = naive_extractor
    return extractors


# --- scoring ----------------------------------------------------------------------------------


def score_extractor(name: str, extract: Extractor, pages: Iterable[Page], n: int = 1) -> ExtractorResult:
    scores: list[PageScore] = []
    empty = 0
    for page in pages:
        start = time.perf_counter()
        try:
            text = extract(page.html, page.url) or ""
        except (SideError, ValueError) as exc:  # "no text" is a result, not a crash
            log.debug("%s: %s on %s", name, exc, page.key)
            text = ""
        elapsed = time.perf_counter() - start
        empty += not text.strip()
        scores.append(PageScore(page.key, *overlap(page.truth, text, n), seconds=elapsed))
    if not scores:
        raise DataNotFoundError("no benchmark pages to evaluate")
    tp = sum(s.tp for s in scores)
    fp = sum(s.fp for s in scores)
    fn = sum(s.fn for s in scores)
    micro_p, micro_r = _ratio(tp, tp + fp, 0.0), _ratio(tp, tp + fn, 0.0)
    return ExtractorResult(
        name=name,
        pages=len(scores),
        macro_precision=statistics.fmean(s.precision for s in scores),
        macro_recall=statistics.fmean(s.recall for s in scores),
        macro_f1=statistics.fmean(s.f1 for s in scores),
        micro_precision=micro_p,
        micro_recall=micro_r,
        micro_f1=_f1(micro_p, micro_r),
        empty_pages=empty,
        mean_ms=1000 * statistics.fmean(s.seconds for s in scores),
        per_page=scores,
    )


def evaluate_extraction(
    data_dir: Path,
    limit: int | None = None,
    n: int = 1,
    extractors: dict[str, Extractor] | None = None,
) -> list[ExtractorResult]:
    """Score every extractor on the benchmark under ``data_dir`` (first ``limit`` pages)."""
    pages = load_pages(benchmark_dir(data_dir), limit)
    log.info("scoring extraction on %d benchmark pages (n=%d)", len(pages), n)
    return [score_extractor(name, fn, pages, n) for name, fn in (extractors or default_extractors()).items()]
