"""The sparse half of retrieval: BM25 (bm25s) over passages, with a stemmer.

Stemming: PyStemmer's Snowball when installed, else a light plural stripper built in. The index
is saved as bm25s's own ``.npy`` + JSON files, never pickled.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from side.errors import IndexNotFoundError, InputError

__all__ = ["SparseIndex", "analysed_texts", "light_stem", "make_stemmer", "quiet_bm25s"]

log = logging.getLogger(__name__)

#: bm25s sets its own logger to DEBUG on import, which floods the CLI with one line per index
#: built; it is brought back to the levels of its parent loggers.
_BM25S_LOGGER = "bm25s"


def quiet_bm25s():
    """Import bm25s and undo the DEBUG level it sets on its own logger at import time."""
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


class SparseIndex:
    """BM25 (bm25s, Lucene variant) over texts; ids are positions in the list it was built from."""

    def __init__(self, bm25: Any, stemmer: str, size: int) -> None:
        self.bm25 = bm25
        self.stemmer_name, self._stemmer = make_stemmer(stemmer)
        self.size = size

    @classmethod
    def build(cls, texts: Sequence[str], stemmer: str = "auto", progress: bool = False) -> SparseIndex:
        bm25s = quiet_bm25s()
        name, stem = make_stemmer(stemmer)
        tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=stem, show_progress=progress)
        if not tokens.vocab:  # nothing but stopwords: bm25s cannot index it, nothing can match
            return cls(None, name, len(texts))
        bm25 = bm25s.BM25()
        bm25.index(tokens, show_progress=progress)
        return cls(bm25, name, len(texts))

    def tokenize(self, queries: Sequence[str]) -> list[list[str]]:
        import bm25s

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
        if rows and k > 0:
            found, values = self.bm25.retrieve([tokens[i] for i in rows], k=k, show_progress=False,
                                               n_threads=1)
            ids[rows], scores[rows] = found, values
        ids[scores <= 0] = -1
        return ids, scores

    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if self.bm25 is not None:
            self.bm25.save(str(directory), show_progress=False)
        meta = {"stemmer": self.stemmer_name, "stopwords": "en", "size": self.size,
                "empty": self.bm25 is None}
        (directory / "sparse.json").write_text(json.dumps(meta), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path) -> SparseIndex:
        directory = Path(directory)
        if not (directory / "sparse.json").is_file():
            raise IndexNotFoundError(f"no sparse index in {directory}")
        meta = json.loads((directory / "sparse.json").read_text(encoding="utf-8"))
        bm25s = quiet_bm25s()
        bm25 = None if meta.get("empty") else bm25s.BM25.load(str(directory), show_progress=False)
        return cls(bm25, meta["stemmer"], int(meta["size"]))
