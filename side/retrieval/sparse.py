"""The sparse half of retrieval: BM25 (bm25s) over passages, with a stemmer.

Stemming: PyStemmer's Snowball when installed, else a light plural stripper built in. The index
is saved as bm25s's own ``.npy`` + JSON files, never pickled.

Pruning (``retrieval.bm25_max_postings``). bm25s adds every posting of every query word into an
array as long as the corpus and selects the top k from all of it, so a query's cost grows with
the corpus: 160–250 ms at 1M passages (docs/scale.md). With ``max_postings`` M > 0, each word's
posting list is cut, when the index is loaded, to its M highest-scoring passages (impact-ordered
static pruning, Carmel et al., SIGIR 2001, term-centric), and queries sum only the kept postings
of their words (:func:`score_top_k`): at most M per word, whatever the corpus size. The stored
index stays whole, so M can change without a rebuild.
Lists no longer than M are untouched, and when no list is longer than M, queries go through
bm25s unchanged: a corpus of at most M passages gives exactly the unpruned results.

What pruning can change, bounded: a passage's pruned score s' is its BM25 score s less the
contributions of the words whose list lost it, each at most that word's highest dropped score
θ, so ``s' <= s <= s' + sum(θ of the query's pruned words)``. A passage in the full top k but
not in the pruned one therefore has s at most the pruned k-th score plus that sum
(:func:`score_top_k` returns the sum).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from side.data import read_json_object
from side.errors import IndexNotFoundError, InputError

__all__ = ["PrunedPostings", "SparseIndex", "analysed_texts", "light_stem", "make_stemmer", "prune_postings",
           "quiet_bm25s", "score_top_k"]

log = logging.getLogger(__name__)

#: bm25s sets its own logger to DEBUG on import, which floods the CLI with one line per index
#: built; it is brought back to the levels of its parent loggers.
_BM25S_LOGGER = "bm25s"


def quiet_bm25s():
    """Import bm25s without JAX, and undo the DEBUG level it sets on its own logger at import time.

    Where JAX is installed, bm25s runs a JAX computation when it is imported (a warm-up of
    ``jax.lax.top_k`` in ``bm25s.selection``). JAX's first computation starts its backends, and on
    a GPU host that reserves 75% of the GPU's memory for the process: every Side process would
    hold most of the GPU beside the verifier, and a second worker on the same GPU fails to load
    (seen on an H200 whose image has JAX: CUDA_ERROR_OUT_OF_MEMORY). So bm25s is imported with
    JAX hidden from it, and selects its top k with numpy, as it does where JAX is not installed:
    the same results on every machine. JAX itself stays importable for the rest of the process.
    """
    if "bm25s" not in sys.modules and "jax" not in sys.modules:
        sys.modules["jax"] = None  # type: ignore[assignment]  # makes `import jax` raise ImportError
        try:
            import bm25s  # noqa: F401
        finally:
            del sys.modules["jax"]
    import bm25s

    logging.getLogger(_BM25S_LOGGER).setLevel(logging.NOTSET)
    return bm25s


def light_stem(word: str) -> str:
    """Harman's S-stemmer: plural endings only, so it never merges unrelated words."""
    if len(word) > 4 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def _light_stem_words(words: list[str]) -> list[str]:
    return [light_stem(w) for w in words]


def make_stemmer(name: str = "auto") -> tuple[str, Any]:
    """(resolved name, stemmer for bm25s): ``auto`` picks ``snowball`` if PyStemmer is installed."""
    if name in ("auto", "snowball"):
        try:
            import Stemmer
        except ImportError:
            if name == "snowball":
                raise InputError("this index was stemmed with PyStemmer, which is not installed") from None
            return "light", _light_stem_words
        return "snowball", Stemmer.Stemmer("english")
    if name == "light":
        return "light", _light_stem_words
    if name == "none":
        return "none", None
    raise InputError(f"unknown stemmer {name!r} (auto, snowball, light, none)")


def analysed_texts(texts: Sequence[str], stemmer: str = "auto") -> tuple[str, list[str]]:
    """(resolved stemmer, texts as the words BM25 indexes): lowercased, stopwords out, stemmed.

    The same analysis as :class:`SparseIndex`, written back as space-separated words, for an
    index that runs BM25 itself (Milvus) on text split at spaces.
    """
    bm25s = quiet_bm25s()
    name, stem = make_stemmer(stemmer)
    tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=stem, return_ids=False, show_progress=False)
    return name, [" ".join(words) for words in tokens]


@dataclass(frozen=True)
class PrunedPostings:
    """bm25s's term-major score matrix (CSC: one column of passage ids and scores per word) with
    each column cut to its ``max_postings`` highest scores, in passage-id order within a column."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    #: Per word, the highest score its list dropped (0 where nothing was dropped): the bound θ.
    dropped_max: np.ndarray
    #: Words whose list was cut.
    pruned_words: int
    max_postings: int
    #: Passages in the index (the length of a whole score array).
    num_docs: int


def prune_postings(scores: dict[str, Any], max_postings: int) -> PrunedPostings:
    """Each word's ``max_postings`` best postings of bm25s's ``scores`` (ties cut arbitrarily).

    Linear in the postings: one partial sort per list longer than ``max_postings``.
    """
    if max_postings <= 0:
        raise ValueError("max_postings must be positive")
    data, indices, indptr = scores["data"], scores["indices"], np.asarray(scores["indptr"], dtype=np.int64)
    lengths = np.diff(indptr)
    long_words = np.flatnonzero(lengths > max_postings)
    dropped_max = np.zeros(len(lengths), dtype=np.float32)
    if not len(long_words):
        return PrunedPostings(data, indices, indptr, dropped_max, 0, max_postings, int(scores["num_docs"]))
    keep = np.ones(len(data), dtype=bool)
    for word in long_words:
        start, end = indptr[word], indptr[word + 1]
        # the positions after the max_postings largest: dropped
        dropped = np.argpartition(-data[start:end], max_postings - 1)[max_postings:] + start
        keep[dropped] = False
        dropped_max[word] = data[dropped].max()
    new_indptr = np.zeros_like(indptr)
    np.cumsum(np.minimum(lengths, max_postings), out=new_indptr[1:])
    return PrunedPostings(data[keep], indices[keep], new_indptr, dropped_max, len(long_words), max_postings,
                          int(scores["num_docs"]))


def score_top_k(postings: PrunedPostings, word_ids: Sequence[int], k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(passage ids, scores, bound) of one query's top ``k`` over ``postings``; a word repeated in
    the query counts again, as in bm25s. Ties are broken by passage id. ``bound`` is the sum of the
    query's θ: a passage missing here scores at most the k-th score plus it (module docstring).

    The work is the query's kept postings (at most max_postings per word), not the corpus size.
    """
    words = np.asarray(word_ids, dtype=np.int64)
    bound = float(postings.dropped_max[words].sum(dtype=np.float64))
    starts, ends = postings.indptr[words], postings.indptr[words + 1]
    if not len(words) or not (ends > starts).any():
        return np.empty(0, np.int64), np.empty(0, np.float32), bound
    passages = np.concatenate([postings.indices[a:b] for a, b in zip(starts, ends, strict=True)])
    values = np.concatenate([postings.data[a:b] for a, b in zip(starts, ends, strict=True)])
    found, totals = _sum_by_passage(passages, values, postings.num_docs)
    if len(found) > k:  # everything tied with the k-th is kept, then ordered by (score, id)
        kth = np.partition(totals, len(totals) - k)[len(totals) - k]
        chosen = np.flatnonzero(totals >= kth)
        found, totals = found[chosen], totals[chosen]
    order = np.lexsort((found, -totals))[:k]
    return found[order].astype(np.int64), totals[order], bound


def _sum_by_passage(passages: np.ndarray, values: np.ndarray, num_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """(distinct passages, ascending; the sum of each one's values), as float32 like bm25s.

    Sorting the P postings costs ~P log P, one pass over a corpus-long array ~N: the cheaper is
    used (sorting while P log2 P < 2N, the crossover measured with numpy on this project's CPU),
    so a query costs the smaller of the two.
    """
    if len(passages) * max(1, int(len(passages)).bit_length()) < 2 * num_docs:
        found, where = np.unique(passages, return_inverse=True)
        return found, np.bincount(where, weights=values, minlength=len(found)).astype(np.float32)
    sums = np.bincount(passages, weights=values, minlength=num_docs)
    found = np.flatnonzero(sums)
    return found, sums[found].astype(np.float32)


class SparseIndex:
    """BM25 (bm25s, Lucene variant) over texts; ids are positions in the list it was built from.

    ``max_postings`` > 0 prunes each word's postings to its best ``max_postings`` for queries
    (module docstring); 0 queries whole lists.
    """

    def __init__(self, bm25: Any, stemmer: str, size: int, max_postings: int = 0) -> None:
        if max_postings < 0:
            raise InputError(f"bm25_max_postings must be >= 0 (0: no pruning), not {max_postings}")
        self.bm25 = bm25
        self.stemmer_name, self._stemmer = make_stemmer(stemmer)
        self.size = size
        self.max_postings = max_postings
        #: False once the whole lists were let go for the pruned ones (:meth:`load`).
        self.whole = True
        #: The pruned lists, or None when queries use bm25s's whole lists (pruning off, or no list
        #: longer than max_postings: then results are bm25s's exactly).
        self.pruned: PrunedPostings | None = None
        if bm25 is not None and max_postings > 0:
            pruned = prune_postings(bm25.scores, max_postings)
            if pruned.pruned_words:
                self.pruned = pruned
                log.info("BM25: %d word lists cut to their best %d postings (%d of %d postings kept)",
                         pruned.pruned_words, max_postings, len(pruned.data), len(bm25.scores["data"]))

    @classmethod
    def build(cls, texts: Sequence[str], stemmer: str = "auto", progress: bool = False,
              max_postings: int = 0) -> SparseIndex:
        bm25s = quiet_bm25s()
        name, stem = make_stemmer(stemmer)
        tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=stem, show_progress=progress)
        return cls.from_tokens(tokens, name, progress, max_postings)

    @classmethod
    def from_tokens(cls, tokens: Any, stemmer: str, progress: bool = False, max_postings: int = 0) -> SparseIndex:
        """The index of texts already analysed by bm25s.tokenize with ``stemmer`` (a ``Tokenized``),
        for a caller that can analyse repeated texts once (benchmarks/scale.py)."""
        bm25s = quiet_bm25s()
        if not tokens.vocab:  # nothing but stopwords: bm25s cannot index it, nothing can match
            return cls(None, stemmer, len(tokens.ids))
        bm25 = bm25s.BM25()
        bm25.index(tokens, show_progress=progress)
        return cls(bm25, stemmer, len(tokens.ids), max_postings)

    def with_max_postings(self, max_postings: int) -> SparseIndex:
        """The same index, queried with another pruning (the stored lists are shared, not copied)."""
        self._need_whole("pruned again")
        return SparseIndex(self.bm25, self.stemmer_name, self.size, max_postings)

    def _need_whole(self, what: str) -> None:
        if not self.whole:
            raise ValueError(f"this BM25 index holds pruned lists only (loaded with max_postings "
                             f"{self.max_postings}): it cannot be {what}")

    def tokenize(self, queries: Sequence[str]) -> list[list[str]]:
        bm25s = quiet_bm25s()
        return bm25s.tokenize(list(queries), stopwords="en", stemmer=self._stemmer,
                              return_ids=False, show_progress=False)

    def retrieve(self, queries: Sequence[str], k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """(ids, scores), each shaped (n_queries, min(k, size)); ids -1 where nothing matched."""
        k = min(k, self.size)
        ids = np.full((len(queries), k), -1, dtype=np.int64)
        scores = np.zeros((len(queries), k), dtype=np.float32)
        vocab = self.bm25.vocab_dict if self.bm25 is not None else {}
        tokens = [[t for t in q if t in vocab] for q in self.tokenize(queries)]
        rows = [i for i, t in enumerate(tokens) if t]
        if self.pruned is not None and k > 0:
            for i in rows:
                found, values, _ = score_top_k(self.pruned, [vocab[t] for t in tokens[i]], k)
                ids[i, :len(found)], scores[i, :len(found)] = found, values
        elif rows and k > 0:
            found, values = self.bm25.retrieve([tokens[i] for i in rows], k=k, show_progress=False,
                                               n_threads=1)
            ids[rows], scores[rows] = found, values
        ids[scores <= 0] = -1
        return ids, scores

    def save(self, directory: str | Path) -> None:
        self._need_whole("saved")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if self.bm25 is not None:
            self.bm25.save(str(directory), show_progress=False)
        meta = {"stemmer": self.stemmer_name, "stopwords": "en", "size": self.size,
                "empty": self.bm25 is None}
        (directory / "sparse.json").write_text(json.dumps(meta), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path, max_postings: int = 0) -> SparseIndex:
        directory = Path(directory)
        if not (directory / "sparse.json").is_file():
            raise IndexNotFoundError(f"no sparse index in {directory}")
        meta = read_json_object(directory / "sparse.json", "the sparse index's")
        bm25s = quiet_bm25s()
        # pruning reads the whole lists once, memory-mapped, and keeps only its copy in memory
        mapped = max_postings > 0
        bm25 = None if meta.get("empty") else bm25s.BM25.load(str(directory), show_progress=False, mmap=mapped)
        index = cls(bm25, meta["stemmer"], int(meta["size"]), max_postings)
        if bm25 is not None and mapped:
            index._settle_lists()
        return index

    def _settle_lists(self) -> None:
        """After a memory-mapped load: keep the pruned lists alone when some were cut (queries
        never read the whole ones again), else read the whole ones into memory. Either way no
        mapping of the files stays open, so rewriting the index on disk cannot disturb this one."""
        scores = self.bm25.scores
        if self.pruned is not None:
            self.bm25.scores = {"data": self.pruned.data, "indices": self.pruned.indices,
                                "indptr": self.pruned.indptr, "num_docs": scores["num_docs"]}
            self.whole = False
        else:
            self.bm25.scores = {k: np.array(v) if isinstance(v, np.ndarray) else v for k, v in scores.items()}
