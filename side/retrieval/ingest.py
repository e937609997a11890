"""A corpus that grows from every source Side reads.

Each readable source a check fetches (the live page or its archived copy; never a "cannot
check" page, see :mod:`side.sources.states`) becomes a :class:`~side.retrieval.corpus.Document`
(:func:`document_of`) and joins the evidence corpus. Workers do not index: a check writes the
document to the :class:`IngestSpool` (one JSON file per document, written atomically) and
queues an ingest job naming it; the ingest worker appends spooled documents to the corpus and
updates the index incrementally (:func:`ingest_documents`), several per update, and only then
removes them from the spool. So a crash anywhere (a check worker after spooling, Redis losing
its jobs, the ingest worker mid-update) loses no document: what is spooled stays until it is
in the index, and a maintenance pass queues again what has no job.

Politeness: a source joins the corpus only when its site's robots.txt lets Side's user agent
fetch it (:class:`RobotsGate`), the rule ``side index build --dump`` follows
(:mod:`side.sources.crawl`). A check still reads a cited page whatever robots.txt says (an
editor asked for that one page, as a browser would); keeping a copy for everyone's searches is
what a crawler does, and robots.txt is where a site says no to that.

Deduplication: a document whose canonical URL (:func:`url_key`) or whose text
(:func:`text_key`, whitespace-normalised) is already in the corpus is stored once.

:func:`corpus_stats` describes a corpus's size, its growth per day (documents by fetch date)
and its top domains, for ``side index stats``.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from side.data import read_json_object, read_jsonl
from side.errors import IndexNotFoundError
from side.extract.dump import canonical_url
from side.retrieval.corpus import DOCUMENTS_FILE, MANIFEST_FILE, Corpus, Document, build_corpus, sha1

if TYPE_CHECKING:
    from side.config import FetchConfig
    from side.pipeline import ReadSource
    from side.sources.crawl import RobotsCache

__all__ = [
    "DOC_PREFIX", "ROBOTS_TTL_S", "url_key", "text_key", "document_of", "RobotsGate", "IngestSpool", "IngestReport",
    "corpus_dir_of", "index_lock", "ingest_documents", "CorpusStats", "corpus_stats",
]

log = logging.getLogger(__name__)

#: Doc ids of documents read by checks: ``web-`` and 16 hex digits of the canonical URL's hash
#: (safe as a file name and an RQ job id).
DOC_PREFIX = "web-"
_LOCK_FILE = ".ingest.lock"


def url_key(url: str) -> str:
    """What makes two URLs one page: the canonical URL (scheme and host lower case, no default
    port, no fragment), or the URL as written when it is not http(s)."""
    return canonical_url(url) or url.strip()


def text_key(text: str) -> str:
    """What makes two pages one text: the hash of their text with every run of whitespace (line
    breaks too: extractors differ in them) made one space."""
    return sha1(" ".join(text.split()))


def document_of(read: ReadSource) -> Document:
    """The corpus Document of a source a check read: its text, the URL read (after redirects),
    title, published date (if the fetcher found one) and fetch time."""
    return Document(DOC_PREFIX + sha1(url_key(read.url))[:16], read.url, read.title, read.text,
                    tuple(read.sentences), read.fetched_at, read.date)


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, as robots.txt applies to it."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


#: Seconds a site's robots.txt, once read, decides for a long-running worker before it is read
#: again (a site may change it; one that could not be read is tried again after as long).
ROBOTS_TTL_S = 3600.0


class RobotsGate:
    """Which sources a check read may join the corpus: those whose site's robots.txt lets
    ``fetch.user_agent`` fetch them, read and matched as ``side index build --dump`` does
    (:class:`side.sources.crawl.RobotsCache`: once per origin, through the fetch guard; missing
    allows everything, unreadable forbids everything).

    Every URL the copy came from must be allowed: for the live page the URL as cited (what was
    requested) and the URL read after redirects; for an archived copy the snapshot read. Each
    origin's answer is kept :data:`ROBOTS_TTL_S` seconds, so a worker asks a site once an hour
    at most, not once per check; the origins of one batch are asked in parallel.
    """

    def __init__(self, fetch: FetchConfig, ttl_s: float = ROBOTS_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.fetch, self.ttl_s, self._clock = fetch, ttl_s, clock
        self._lock = threading.Lock()
        self._cache: RobotsCache | None = None
        self._since = 0.0

    def _robots(self) -> RobotsCache:
        """The robots.txt cache, replaced by an empty one once older than ``ttl_s``."""
        from side.sources.crawl import HostPacer, RobotsCache

        with self._lock:
            now = self._clock()
            if self._cache is None or now - self._since >= self.ttl_s:
                self._cache, self._since = RobotsCache(self.fetch, HostPacer(0.0)), now
            return self._cache

    @staticmethod
    def urls_of(read: ReadSource) -> tuple[str, ...]:
        """The URLs ``read`` was requested at and read from, each once."""
        from side.results import SourceCopy

        urls = (read.cited_url, read.url) if read.copy is SourceCopy.LIVE else (read.url,)
        return tuple(dict.fromkeys(u for u in urls if u))

    def refusal(self, read: ReadSource) -> str:
        """Why robots.txt keeps ``read`` out of the corpus; "" when every URL of it is allowed."""
        robots = self._robots()
        for url in self.urls_of(read):
            rules = robots.rules(url)
            if rules.parser is None:
                return f"robots.txt of {_origin(url)} could not be read: {rules.error}"
            if not rules.allows(self.fetch.user_agent, url):
                return f"robots.txt of {_origin(url)} disallows it"
        return ""

    def admitted(self, reads: Iterable[ReadSource]) -> list[ReadSource]:
        """The sources of ``reads`` robots.txt allows, in order; each refusal is logged."""
        reads = list(reads)
        if not reads:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(len(reads), self.fetch.concurrency))) as pool:
            refusals = list(pool.map(self.refusal, reads))
        for read, why in zip(reads, refusals, strict=True):
            if why:
                log.info("%s not added to the evidence corpus: %s", read.url, why)
        return [read for read, why in zip(reads, refusals, strict=True) if not why]


class IngestSpool:
    """Documents waiting to join the corpus: one ``<doc id>.json`` each in ``directory``.

    Writes are atomic and synced (temporary file, fsync, rename, fsync of the folder), so a
    document is either fully spooled or not at all; it leaves the spool only once ingested.
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def _path(self, doc_id: str) -> Path:
        if not doc_id or "/" in doc_id or doc_id.startswith("."):
            raise ValueError(f"not a spool id: {doc_id!r}")
        return self.directory / f"{doc_id}.json"

    def put(self, document: Document) -> bool:
        """Spool ``document``; False when a document of that id is already waiting (kept as is)."""
        path = self._path(document.doc_id)
        if path.exists():
            return False
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            json.dump(document.to_dict(), fh, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
        folder = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
        return True

    def get(self, doc_id: str) -> Document | None:
        """The spooled document, or None when it is not (or no longer) here. An unreadable file
        is set aside as ``<id>.json.bad`` with a warning, never dropped silently."""
        path = self._path(doc_id)
        try:
            return Document.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("spooled document %s is unreadable (%s); set aside as %s.bad", doc_id, exc, path.name)
            path.replace(path.with_name(path.name + ".bad"))
            return None

    def remove(self, doc_id: str) -> None:
        self._path(doc_id).unlink(missing_ok=True)

    def ids(self) -> list[str]:
        """Spooled doc ids, oldest first."""
        if not self.directory.is_dir():
            return []
        files = [p for p in self.directory.glob("*.json") if not p.name.startswith(".")]
        return [p.stem for p in sorted(files, key=lambda p: (p.stat().st_mtime, p.name))]

    def age_s(self, doc_id: str) -> float:
        """Seconds since ``doc_id`` was spooled (0 when it is gone)."""
        try:
            return max(0.0, time.time() - self._path(doc_id).stat().st_mtime)
        except FileNotFoundError:
            return 0.0

    def __len__(self) -> int:
        return len(self.ids())


@dataclass(frozen=True)
class IngestReport:
    """What one ingestion did: doc ids added, and those skipped as already in the corpus."""

    added: tuple[str, ...] = ()
    duplicates: tuple[str, ...] = ()
    documents: int = 0
    passages: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"added": list(self.added), "duplicates": list(self.duplicates), "documents": self.documents,
                "passages": self.passages}


def corpus_dir_of(index_dir: str | Path) -> Path:
    """Where the corpus of ``index_dir`` is: as its ``index.json`` says, else the folder itself."""
    index_dir = Path(index_dir)
    meta = index_dir / "index.json"
    if meta.is_file():
        from side.retrieval.retriever import read_index_meta

        return index_dir / read_index_meta(index_dir).get("corpus_dir", ".")
    return index_dir


@contextmanager
def index_lock(index_dir: str | Path) -> Iterator[None]:
    """An exclusive lock on ``index_dir`` (``flock``): one ingestion updates an index at a time."""
    index_dir = Path(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    with (index_dir / _LOCK_FILE).open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _new_documents(documents: Iterable[Document], corpus: Corpus | None) -> tuple[list[Document], list[str]]:
    """The documents whose URL and text the corpus (and the earlier ones of this batch) lacks."""
    known = corpus.documents if corpus is not None else []
    urls = {url_key(d.url) for d in known if d.url}
    texts = {text_key(d.text) for d in known}
    new, duplicates = [], []
    for doc in documents:
        keys = (url_key(doc.url), text_key(doc.text))
        if keys[0] in urls or keys[1] in texts:
            duplicates.append(doc.doc_id)
            continue
        urls.add(keys[0])
        texts.add(keys[1])
        new.append(doc)
    return new, duplicates


def ingest_documents(documents: Iterable[Document], index_dir: str | Path, backend: str = "embedded",
                     milvus: Any = None, encoder: Any = None, words: int = 100, stride: int = 50,
                     faiss_index: str = "flat") -> IngestReport:
    """Append ``documents`` to the corpus of ``index_dir`` and update its index (only new passages
    are embedded); an index is started when there is none. ``words``/``stride``/``faiss_index``
    apply to a new index; an existing one keeps its own. Hold :func:`index_lock` around it when
    several processes may ingest.

    The index is brought up to date even when every document is a duplicate: a previous
    ingestion that stopped between writing the corpus and the index is finished here.
    """
    from side.retrieval.backends import build_retriever
    from side.retrieval.retriever import read_index_meta

    index_dir = Path(index_dir)
    corpus_dir = corpus_dir_of(index_dir)
    old = Corpus.load(corpus_dir) if Corpus.exists(corpus_dir) else None
    if old is not None:
        words, stride = int(old.manifest.get("words", words)), int(old.manifest.get("stride", stride))
    try:
        faiss_index = str(read_index_meta(index_dir).get("faiss") or faiss_index)
    except IndexNotFoundError:
        pass
    new, duplicates = _new_documents(documents, old)
    if not new and old is None:
        return IngestReport(duplicates=tuple(duplicates))
    corpus = build_corpus(new, corpus_dir, words=words, stride=stride) if new else old
    assert corpus is not None
    build_retriever(corpus, index_dir, backend, milvus, encoder, faiss_index=faiss_index, progress=False)
    log.info("ingested %d documents into %s (%d already there): %d documents, %d passages",
             len(new), index_dir, len(duplicates), len(corpus), len(corpus.passages))
    return IngestReport(tuple(d.doc_id for d in new), tuple(duplicates), len(corpus), len(corpus.passages))


@dataclass(frozen=True)
class CorpusStats:
    """A corpus's size, growth and sources, as ``side index stats`` prints them."""

    documents: int
    passages: int
    #: Documents added per day (by fetch time, ``YYYY-MM-DD``), oldest first.
    per_day: list[tuple[str, int]] = field(default_factory=list)
    #: Documents without a fetch time (from datasets, not fetched by Side).
    unfetched: int = 0
    #: The most frequent web domains (``www.`` dropped), most first.
    domains: list[tuple[str, int]] = field(default_factory=list)
    #: Documents whose URL is not a web address (dataset pages such as ``wice:``).
    not_web: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"documents": self.documents, "passages": self.passages,
                "per_day": [{"day": d, "documents": n} for d, n in self.per_day], "unfetched": self.unfetched,
                "top_domains": [{"domain": d, "documents": n} for d, n in self.domains], "not_web": self.not_web}


def _domain(url: str) -> str | None:
    canonical = canonical_url(url)
    if canonical is None:
        return None
    host = urlsplit(canonical).netloc
    return host.removeprefix("www.")


def corpus_stats(index_dir: str | Path, top: int = 10, days: int = 0) -> CorpusStats:
    """Stats of the corpus of ``index_dir`` (its documents and manifest only; passages are not
    read). ``days`` > 0 keeps the last that many days with growth; ``top`` domains are named."""
    corpus_dir = corpus_dir_of(index_dir)
    if not Corpus.exists(corpus_dir):
        raise IndexNotFoundError(f"no corpus in {index_dir} (run `side index build`)")
    manifest = read_json_object(corpus_dir / MANIFEST_FILE, "the corpus's")
    per_day: Counter[str] = Counter()
    domains: Counter[str] = Counter()
    documents = unfetched = not_web = 0
    for record in read_jsonl(corpus_dir / DOCUMENTS_FILE):
        documents += 1
        fetched = str(record.get("fetched_at") or "")
        if fetched:
            per_day[fetched[:10]] += 1
        else:
            unfetched += 1
        domain = _domain(str(record.get("url") or ""))
        if domain is None:
            not_web += 1
        else:
            domains[domain] += 1
    growth = sorted(per_day.items())
    return CorpusStats(documents, int(manifest.get("n_passages", 0)), growth[-days:] if days > 0 else growth,
                       unfetched, sorted(domains.items(), key=lambda kv: (-kv[1], kv[0]))[:top], not_web)
