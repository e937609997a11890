"""Retrieval quality: SciFact open retrieval, WiCE cited-page recovery, evidence-sentence ranking.

Three questions, one per task:

- ``scifact``: does the engine find the evidence abstracts of a claim among all 5,183?
  (R@3, R@10, nDCG@10; recall is the fraction of a claim's evidence documents found.)
- ``wice-recovery``: Side's Table 4 protocol. Every cited page of the WiCE file is a document
  split into passages; queried with the claim's context as Side queries, is the page the
  claim actually cites ranked first (P@1), in the top 10 (SR@10), in the top 100 (SR@100)?
  Identical pages are one document, so finding either counts.
- ``evidence``: inside the cited page, are WiCE's gold supporting sentences ranked at the top
  (R@5, nDCG@5)? This is the "pick evidence first" step of the verifier.
- ``own-sources``: among the pages an article cites (WiCE claims grouped by article), is the
  claim's own page ranked first by the verifier's support score (hit@1, hit@3, hit@10)? This is
  how :class:`side.pipeline.Pipeline` finds, for a weak citation, another of the article's
  sources that supports the claim.

The first three tasks compare BM25, dense, and both fusions, measured in the same run; the
fourth compares the verifier with the cheap page orders it is preceded by (BM25-max,
MiniLM-max-cosine) and with chance.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from side.data import WICE_META_PREFIX, load_scifact_claims, load_wice, read_jsonl
from side.extract.claims import CIT, SEP
from side.retrieval.backends import build_retriever
from side.retrieval.corpus import (
    Document,
    build_corpus,
    documents_from_scifact,
    documents_from_wice,
    wice_page_id,
    wice_page_sentences,
)
from side.retrieval.dense import DenseIndex, embed_cached
from side.retrieval.fusion import fuse, single
from side.retrieval.retriever import Retriever
from side.retrieval.sparse import SparseIndex

__all__ = [
    "METHODS", "SCIFACT_PASSAGE_WORDS", "CONTEXT_WORDS", "WICE_PASSAGE_WORDS", "WICE_PASSAGE_STRIDE",
    "RetrievalReport", "recall_at", "success_at", "ndcg_at", "METRICS", "score_rankings", "cache_name",
    "cached_retriever", "scifact_index_dir", "scifact_retriever", "document_retrieval",
    "evaluate_scifact", "wice_queries", "evaluate_wice_recovery", "evaluate_evidence",
    "OWN_SOURCE_DEPTHS", "OwnSourceItem", "own_source_items", "evaluate_own_sources",
]

log = logging.getLogger(__name__)

#: (mode, fusion) of each compared method, in table order.
METHODS: dict[str, tuple[str, str | None]] = {
    "bm25": ("sparse", None), "dense": ("dense", None),
    "hybrid-union": ("hybrid", "union"), "hybrid-rrf": ("hybrid", "rrf"),
}

#: SciFact abstracts are short (median 192 words): one passage each, title included, measured
#: better than 100-word passages for the dense index and 4x cheaper to embed.
SCIFACT_PASSAGE_WORDS = 1000

#: Words of left context in the dense WiCE query (Side's default).
CONTEXT_WORDS = 100

#: WiCE pages become 100-word passages without overlap, like the Sphere index Side searches
#: (DPR-style chunks); it also halves the embedding cost of this evaluation on a CPU.
WICE_PASSAGE_WORDS = 100
WICE_PASSAGE_STRIDE = 100


@dataclass(frozen=True)
class RetrievalReport:
    """Metrics of one task: method -> metric -> value, with the size of what was measured."""

    task: str
    n_queries: int
    metrics: dict[str, dict[str, float]]
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "n_queries": self.n_queries, "metrics": self.metrics,
                "settings": self.settings}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetrievalReport:
        return cls(data["task"], int(data["n_queries"]), data["metrics"], data.get("settings", {}))


# --------------------------------------------------------------------------------------------
# Metrics (binary relevance)


def recall_at(ranked: Sequence[Any], gold: set[Any], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold) if gold else 0.0


def success_at(ranked: Sequence[Any], gold: set[Any], k: int) -> float:
    return 1.0 if set(ranked[:k]) & gold else 0.0


def ndcg_at(ranked: Sequence[Any], gold: set[Any], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, item in enumerate(ranked[:k]) if item in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


METRICS = {"R": recall_at, "SR": success_at, "nDCG": ndcg_at}


def score_rankings(rankings: Sequence[Sequence[Any]], golds: Sequence[set[Any]],
                   wanted: Sequence[tuple[str, int]]) -> dict[str, float]:
    """Mean of each (metric name, k) over queries, e.g. [("R", 3), ("nDCG", 10)]."""
    out = {}
    for name, k in wanted:
        label = "P@1" if (name, k) == ("SR", 1) else f"{name}@{k}"
        values = [METRICS[name](r, g, k) for r, g in zip(rankings, golds, strict=False)]
        out[label] = round(float(np.mean(values)), 4) if values else 0.0
    return out


# --------------------------------------------------------------------------------------------
# Document retrieval over an index (SciFact, WiCE recovery)


def cache_name(path: str | Path, words: int, stride: int) -> str:
    digest = hashlib.sha1(str(Path(path).resolve()).encode()).hexdigest()[:8]
    return f"{Path(path).stem}-{digest}-w{words}-s{stride}"


def cached_retriever(documents: Iterable[Document], directory: Path, words: int, stride: int,
                     encoder: Any = None, milvus: Any = None) -> Retriever:
    """Build (or reuse) the corpus and indexes of ``documents`` in ``directory``.

    ``milvus`` (a MilvusSettings) puts the index in Milvus instead, in a collection named after
    ``directory``; the corpus and the embedding cache stay in ``directory``, shared by both.
    """
    corpus = build_corpus(documents, directory, words=words, stride=stride)
    if milvus is None:
        return build_retriever(corpus, directory, encoder=encoder)
    from side.retrieval.milvus import collection_name

    settings = milvus.with_collection(collection_name(directory.name, "side_eval_"))
    return build_retriever(corpus, directory, "milvus", settings, encoder=encoder)


def scifact_index_dir(corpus_path: str | Path, cache_dir: str | Path, words: int = SCIFACT_PASSAGE_WORDS) -> Path:
    return Path(cache_dir) / cache_name(corpus_path, words, words // 2)


def scifact_retriever(corpus_path: str | Path, cache_dir: str | Path, words: int = SCIFACT_PASSAGE_WORDS,
                      encoder: Any = None, milvus: Any = None) -> Retriever:
    """The cached index of a SciFact-format abstract corpus (also used by ``side eval verify``)."""
    return cached_retriever(documents_from_scifact(corpus_path), scifact_index_dir(corpus_path, cache_dir, words),
                            words, words // 2, encoder, milvus)


def document_retrieval(documents: Sequence[Document], sparse_queries: Sequence[str],
                       dense_queries: Sequence[str], golds: Sequence[set[str]], directory: Path,
                       wanted: Sequence[tuple[str, int]], words: int = 100, stride: int = 50,
                       encoder: Any = None, milvus: Any = None) -> dict[str, dict[str, float]]:
    """Build (or reuse) an index of ``documents`` in ``directory`` and score every method.

    ``milvus`` (a MilvusSettings): the index is a Milvus collection (see :func:`cached_retriever`).
    """
    retriever = cached_retriever(documents, directory, words, stride, encoder, milvus)
    depth = max(k for _, k in wanted)
    vectors = retriever.embed(list(dense_queries))
    metrics = {}
    for method, (mode, fusion) in METHODS.items():
        results = retriever.search_batch(sparse_queries, vectors, k=depth, mode=mode, fusion=fusion)
        rankings = [[d.doc_id for d in row] for row in results]
        metrics[method] = score_rankings(rankings, golds, wanted)
    return metrics


def evaluate_scifact(claims_path: str | Path, corpus_path: str | Path, cache_dir: str | Path,
                     words: int = SCIFACT_PASSAGE_WORDS, encoder: Any = None, milvus: Any = None) -> RetrievalReport:
    """Open retrieval of the evidence abstracts of every SciFact claim that has evidence."""
    claims = [c for c in load_scifact_claims(claims_path) if c.evidence]
    documents = list(documents_from_scifact(corpus_path))
    texts = [c.claim for c in claims]
    golds = [set(c.evidence) for c in claims]
    directory = scifact_index_dir(corpus_path, cache_dir, words)
    metrics = document_retrieval(documents, texts, texts, golds, directory,
                                 [("R", 3), ("R", 10), ("nDCG", 10)], words, words // 2, encoder, milvus)
    return RetrievalReport("scifact", len(claims), metrics,
                           {"documents": len(documents), "passage_words": words, "index": str(directory),
                            **_backend(milvus)})


def wice_queries(record: dict[str, Any]) -> tuple[str, str]:
    """Side's (sparse, dense) queries for a WiCE claim; the claim is the sentence before the ref."""
    meta = record.get("meta") or {}
    title = meta.get("claim_title", "") or ""
    section = (meta.get("claim_section", "") or "").rstrip(".")
    claim = record["claim"]
    context = " ".join(f"{meta.get('claim_context', '') or ''} {claim}".split()[-CONTEXT_WORDS:])
    return f"{claim} {title}".strip(), f"{title}{SEP}{section}{SEP}{context}{CIT}"


def evaluate_wice_recovery(claims_path: str | Path, cache_dir: str | Path,
                           encoder: Any = None, milvus: Any = None) -> RetrievalReport:
    """Side's Table 4: rank every WiCE cited page for each claim; is the cited one on top?"""
    records = [r for r in read_jsonl(claims_path) if r.get("evidence")]
    documents = list(documents_from_wice(claims_path))
    queries = [wice_queries(r) for r in records]
    golds = [{wice_page_id(r["evidence"])} for r in records]
    words, stride = WICE_PASSAGE_WORDS, WICE_PASSAGE_STRIDE
    directory = Path(cache_dir) / cache_name(claims_path, words, stride)
    metrics = document_retrieval(documents, [q[0] for q in queries], [q[1] for q in queries], golds,
                                 directory, [("SR", 1), ("SR", 10), ("SR", 100)], words, stride, encoder, milvus)
    return RetrievalReport("wice-recovery", len(records), metrics,
                           {"documents": len(documents), "passage_words": words, "passage_stride": stride,
                            "index": str(directory), **_backend(milvus)})


def _backend(milvus: Any) -> dict[str, str]:
    """The report's record of where the index was: embedded, or the Milvus URI and dense index."""
    if milvus is None:
        return {"backend": "embedded"}
    return {"backend": "milvus", "milvus_uri": milvus.uri, "milvus_index": milvus.index}


# --------------------------------------------------------------------------------------------
# Evidence sentences inside the cited page


def _sentence_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _rank_sentences(claim: str, candidates: list[int], sentences: list[str], vectors: np.ndarray,
                    query: np.ndarray) -> dict[str, list[int]]:
    """Candidate sentence indices ranked by each method."""
    n = len(candidates)
    sparse = SparseIndex.build([sentences[i] for i in candidates]).retrieve([claim], n)
    dense = DenseIndex.build(vectors).retrieve(query[None, :], n)
    rows = {
        "bm25": single(sparse[0][0], sparse[1][0], dense=False),
        "dense": single(dense[0][0], dense[1][0], dense=True),
        "hybrid-union": fuse((sparse[0][0], sparse[1][0]), (dense[0][0], dense[1][0]), "union"),
        "hybrid-rrf": fuse((sparse[0][0], sparse[1][0]), (dense[0][0], dense[1][0]), "rrf"),
    }
    return {m: [candidates[p] for p, *_ in row] for m, row in rows.items()}


def evaluate_evidence(claims_path: str | Path, cache_dir: str | Path, encoder: Any = None,
                      k: int = 5) -> RetrievalReport:
    """Rank each cited page's sentences for its claim against WiCE's gold supporting sentences."""
    items = []
    for claim in load_wice(claims_path):
        candidates = [i for i, s in enumerate(claim.evidence) if s.strip() and not s.startswith(WICE_META_PREFIX)]
        gold = claim.gold_sentences & set(candidates)
        if gold:
            items.append((claim, candidates, gold))
    texts = sorted({c.evidence[i] for c, cands, _ in items for i in cands} | {c.claim for c, _, _ in items})
    vectors = embed_cached([_sentence_key(t) for t in texts], texts,
                           Path(cache_dir) / cache_name(claims_path, 0, 0) / "sentences", encoder)
    row_of = {t: i for i, t in enumerate(texts)}
    rankings: dict[str, list[list[int]]] = {m: [] for m in METHODS}
    for claim, candidates, _ in tqdm(items, desc="ranking evidence", unit="claim", disable=None):
        cand_vectors = vectors[[row_of[claim.evidence[i]] for i in candidates]]
        ranked = _rank_sentences(claim.claim, candidates, list(claim.evidence), cand_vectors,
                                 vectors[row_of[claim.claim]])
        for method, order in ranked.items():
            rankings[method].append(_complete(order, candidates))
    golds = [gold for _, _, gold in items]
    metrics = {m: score_rankings(r, golds, [("R", k), ("nDCG", k)]) for m, r in rankings.items()}
    return RetrievalReport("evidence", len(items), metrics, {"candidates": "page sentences, meta lines skipped"})


def _complete(order: list[int], candidates: list[int]) -> list[int]:
    """BM25 leaves sentences sharing no word unranked; they follow in page order."""
    seen = set(order)
    return order + [c for c in candidates if c not in seen]


# --------------------------------------------------------------------------------------------
# The article's own sources: which of the pages an article cites supports the claim?

#: The ranks at which the claim's own page is looked for.
OWN_SOURCE_DEPTHS = (1, 3, 10)


@dataclass(frozen=True)
class OwnSourceItem:
    """A WiCE claim with its article's cited pages (page ids, in id order) and its own page's id."""

    record: dict[str, Any]
    pool: tuple[str, ...]
    gold: str


def own_source_items(records: Iterable[dict[str, Any]]) -> tuple[list[OwnSourceItem], dict[str, tuple[str, ...]],
                                                                 int]:
    """Every claim whose article cites two pages or more, with that article's pool; the pages'
    sentences by id; and how many claims were left out because their article cites one page.

    A pool is ordered by page id (a hash), not by first citation, so that ties never favour
    the claim's own page.
    """
    records = [r for r in records if r.get("evidence")]
    pages: dict[str, tuple[str, ...]] = {}
    by_article: dict[str, set[str]] = {}
    for record in records:
        page = wice_page_id(record["evidence"])
        pages[page] = wice_page_sentences(record["evidence"])
        by_article.setdefault((record.get("meta") or {}).get("claim_title", "") or "", set()).add(page)
    items, single = [], 0
    for record in records:
        pool = tuple(sorted(by_article[(record.get("meta") or {}).get("claim_title", "") or ""]))
        if len(pool) < 2:
            single += 1
            continue
        items.append(OwnSourceItem(record, pool, wice_page_id(record["evidence"])))
    return items, pages, single


def _hits(rankings: Sequence[Sequence[str]], golds: Sequence[str]) -> dict[str, float]:
    return {f"hit@{k}": round(float(np.mean([success_at(r, {g}, k) for r, g in zip(rankings, golds, strict=False)])),
                              4) if golds else 0.0 for k in OWN_SOURCE_DEPTHS}


def evaluate_own_sources(claims_path: str | Path, verifier: Any, preselect: int = 3) -> RetrievalReport:
    """For each claim, rank its article's cited pages by the verifier's support score: is the
    claim's own page at 1, in the top 3, in the top 10?

    Baselines from the same run: the page's best BM25 sentence, its best bi-encoder cosine, the
    pipeline's order (BM25 picks ``preselect`` pages, the verifier ranks those first), and
    chance (the expected hit of a random order). Claims whose article cites one page only are
    left out (counted in the settings, with the pool sizes).
    """
    from side.retrieval.pool import bm25_max, cosine_max, order_by
    from side.verify.verifier import Query

    items, pages, single = own_source_items(read_jsonl(claims_path))
    queries = [Query(i.record["claim"], *_wice_context(i.record)) for i in items]
    pairs = [(q, list(pages[p])) for q, i in zip(queries, items, strict=False) for p in i.pool]
    scored = [v for start in tqdm(range(0, len(pairs), 32), desc="verifying pages", unit="batch", disable=None)
              for v in verifier.verify_many(pairs[start : start + 32])]
    rankings: dict[str, list[list[str]]] = {"verifier": [], "bm25-max": [], "minilm-max-cos": [],
                                            f"bm25-top{preselect}+verifier": []}
    offset = 0
    for item in tqdm(items, desc="ranking own sources", unit="claim", disable=None):
        support = [v.score for v in scored[offset : offset + len(item.pool)]]
        offset += len(item.pool)
        texts = [pages[p] for p in item.pool]
        bm25 = bm25_max(item.record["claim"], texts)
        cosine = cosine_max(verifier.embeddings.encode, item.record["claim"], texts)
        rankings["verifier"].append([item.pool[n] for n in order_by(support)])
        rankings["bm25-max"].append([item.pool[n] for n in order_by(bm25)])
        rankings["minilm-max-cos"].append([item.pool[n] for n in order_by(cosine)])
        chosen = order_by(bm25)[:preselect]
        rest = [n for n in order_by(bm25) if n not in chosen]
        rankings[f"bm25-top{preselect}+verifier"].append(
            [item.pool[n] for n in sorted(chosen, key=lambda n: -support[n]) + rest])
    golds = [i.gold for i in items]
    metrics = {method: _hits(r, golds) for method, r in rankings.items()}
    sizes = [len(i.pool) for i in items]
    metrics["chance"] = {f"hit@{k}": round(float(np.mean([min(k, n) / n for n in sizes])), 4) if sizes else 0.0
                         for k in OWN_SOURCE_DEPTHS}
    supported = [n for n, i in enumerate(items) if i.record.get("label") == "supported"]
    metrics["verifier (supported claims)"] = _hits([rankings["verifier"][n] for n in supported],
                                                   [golds[n] for n in supported])
    histogram = {str(size): sizes.count(size) for size in sorted(set(sizes))}
    return RetrievalReport("own-sources", len(items), metrics, {
        "claims_left_out_single_page": single, "articles": len({i.pool for i in items}),
        "supported_claims": len(supported), "pool_size_mean": round(float(np.mean(sizes)), 2) if sizes else 0.0,
        "pool_size_max": max(sizes, default=0), "claims_by_pool_size": histogram, "preselect": preselect,
        "pairs_verified": len(scored)})


def _wice_context(record: dict[str, Any]) -> tuple[str, str, str]:
    """(title, section, context) of a WiCE claim, as the verifier reads them."""
    meta = record.get("meta") or {}
    return (meta.get("claim_title", "") or "", (meta.get("claim_section", "") or "").rstrip("."),
            meta.get("claim_context", "") or "")
