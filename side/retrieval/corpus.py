"""The evidence corpus: Documents split into Passages, kept on disk in one directory.

Side retrieves ~100-word passages, not whole pages, because a long page has many topics and a
single embedding of it says little about any one. A corpus directory holds:

- ``documents.jsonl``: one :class:`Document` per line,
- ``passages.jsonl``: one :class:`Passage` per line, ids contiguous from 0 in file order,
- ``manifest.json``: the passage settings, each document's content hash and a fingerprint.

Building is incremental so that adding a few pages to a large corpus costs only those pages:
unchanged documents keep their passages, changed ones are re-passaged, new ones are appended.
Documents not in a later input are kept (a corpus grows; delete the directory to start over).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from side.data import WICE_META_PREFIX, read_json_object, read_jsonl, read_jsonl_lines, require_file
from side.errors import IndexNotFoundError, InputError
from side.text import split_sentences, window_sentences

__all__ = [
    "CORPUS_FORMAT", "DOCUMENTS_FILE", "PASSAGES_FILE", "MANIFEST_FILE", "sha1",
    "Document", "Passage", "passages_of", "Corpus", "build_corpus", "documents_from_jsonl", "wice_title",
    "wice_page_sentences", "wice_page_id", "documents_from_wice", "documents_from_scifact", "documents_from_web_html",
]

log = logging.getLogger(__name__)

#: Bumped when the on-disk layout changes, so an old directory is rebuilt rather than misread.
CORPUS_FORMAT = 1

DOCUMENTS_FILE = "documents.jsonl"
PASSAGES_FILE = "passages.jsonl"
MANIFEST_FILE = "manifest.json"

def sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Document:
    """One source page. ``sentences`` may be given when the data is already split (datasets);
    ``fetched_at`` says when a page fetched from the web was read (ISO 8601, "" for datasets),
    ``date`` when it was published, if the fetcher found that ("" otherwise)."""

    doc_id: str
    url: str
    title: str
    text: str
    sentences: tuple[str, ...] = field(default=(), compare=False)
    fetched_at: str = field(default="", compare=False)
    date: str = field(default="", compare=False)

    @property
    def content_hash(self) -> str:
        """What decides whether the document must be re-passaged."""
        return sha1(f"{self.url}\x1f{self.title}\x1f{self.text}")

    def split(self) -> list[str]:
        return list(self.sentences) if self.sentences else split_sentences(self.text)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["sentences"] = list(self.sentences)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Document:
        return cls(str(data["doc_id"]), data.get("url", ""), data.get("title", ""), data.get("text", ""),
                   tuple(data.get("sentences") or ()), str(data.get("fetched_at") or ""), str(data.get("date") or ""))


@dataclass(frozen=True)
class Passage:
    """Sentences ``[sentence_start, sentence_end)`` of a document: the unit that is retrieved."""

    passage_id: int
    doc_id: str
    url: str
    title: str
    text: str
    sentence_start: int
    sentence_end: int

    @property
    def index_text(self) -> str:
        """Text given to BM25 and the encoder: the title names the page's topic, the text rarely does."""
        return f"{self.title}. {self.text}" if self.title else self.text

    @property
    def content_hash(self) -> str:
        """Key of this passage's embedding: identical text is never embedded twice."""
        return sha1(self.index_text)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Passage:
        return cls(int(data["passage_id"]), str(data["doc_id"]), data.get("url", ""), data.get("title", ""),
                   data["text"], int(data["sentence_start"]), int(data["sentence_end"]))


def passages_of(document: Document, words: int = 100, stride: int = 50, first_id: int = 0) -> list[Passage]:
    """The overlapping passages of one document, numbered from ``first_id``."""
    windows = window_sentences(document.split(), words=words, stride=stride)
    return [
        Passage(first_id + i, document.doc_id, document.url, document.title, w.text, w.start, w.end)
        for i, w in enumerate(windows)
    ]


def _write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(path)


class Corpus:
    """Documents and their passages, loaded from (or just written to) a directory."""

    def __init__(self, directory: str | Path, documents: list[Document], passages: list[Passage],
                 manifest: dict[str, Any]) -> None:
        self.directory = Path(directory)
        self.documents = documents
        self.passages = passages
        self.manifest = manifest
        self._by_doc: dict[str, list[Passage]] = {}
        for passage in passages:
            self._by_doc.setdefault(passage.doc_id, []).append(passage)
        self._docs = {d.doc_id: d for d in documents}

    @property
    def fingerprint(self) -> str:
        """Changes whenever any passage changes; indexes record it to know they are current."""
        return str(self.manifest.get("fingerprint", ""))

    def __len__(self) -> int:
        return len(self.documents)

    def document(self, doc_id: str) -> Document:
        return self._docs[doc_id]

    def passages_for(self, doc_id: str) -> list[Passage]:
        return list(self._by_doc.get(doc_id, []))

    @staticmethod
    def exists(directory: str | Path) -> bool:
        return (Path(directory) / MANIFEST_FILE).is_file()

    @classmethod
    def load(cls, directory: str | Path) -> Corpus:
        directory = Path(directory)
        if not cls.exists(directory):
            raise IndexNotFoundError(f"no corpus in {directory} (run `side index build`)")
        manifest = read_json_object(directory / MANIFEST_FILE, "the corpus's")
        try:
            documents = [Document.from_dict(r) for r in read_jsonl(directory / DOCUMENTS_FILE)]
            passages = [Passage.from_dict(r) for r in read_jsonl(directory / PASSAGES_FILE)]
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"the corpus in {directory} is damaged ({type(exc).__name__}: {exc}); "
                             "build the index again") from exc
        return cls(directory, documents, passages, manifest)

    def save(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        _write_jsonl(self.directory / DOCUMENTS_FILE, (d.to_dict() for d in self.documents))
        _write_jsonl(self.directory / PASSAGES_FILE, (p.to_dict() for p in self.passages))
        (self.directory / MANIFEST_FILE).write_text(json.dumps(self.manifest, indent=1), encoding="utf-8")


def _previous(directory: Path, words: int, stride: int) -> Corpus | None:
    """The corpus already in ``directory`` if it was built with the same settings."""
    if not Corpus.exists(directory):
        return None
    old = Corpus.load(directory)
    same = (old.manifest.get("format") == CORPUS_FORMAT and old.manifest.get("words") == words
            and old.manifest.get("stride") == stride)
    if not same:
        log.info("passage settings changed; rebuilding the corpus in %s", directory)
        return None
    return old


def build_corpus(documents: Iterable[Document], directory: str | Path, words: int = 100,
                 stride: int = 50) -> Corpus:
    """Passage ``documents`` into ``directory``, redoing only new or changed documents."""
    directory = Path(directory)
    old = _previous(directory, words, stride)
    hashes: dict[str, str] = dict(old.manifest["documents"]) if old else {}
    merged: dict[str, Document] = {d.doc_id: d for d in old.documents} if old else {}
    split: dict[str, list[Passage]] = {d: old.passages_for(d) for d in merged} if old else {}
    changed = 0
    for doc in documents:
        digest = doc.content_hash
        if hashes.get(doc.doc_id) == digest:
            continue
        merged[doc.doc_id] = doc
        hashes[doc.doc_id] = digest
        split[doc.doc_id] = passages_of(doc, words, stride)
        changed += 1
    if old is not None and changed == 0:
        log.info("corpus in %s is up to date (%d documents)", directory, len(old))
        return old
    passages = _renumber(p for doc_id in merged for p in split[doc_id])
    manifest = {
        "format": CORPUS_FORMAT, "words": words, "stride": stride, "documents": hashes,
        "n_documents": len(merged), "n_passages": len(passages),
        "fingerprint": sha1("\n".join(p.content_hash + p.doc_id for p in passages)),
    }
    corpus = Corpus(directory, list(merged.values()), passages, manifest)
    corpus.save()
    log.info("corpus in %s: %d documents (%d new or changed), %d passages",
             directory, len(merged), changed, len(passages))
    return corpus


def _renumber(passages: Iterable[Passage]) -> list[Passage]:
    out = []
    for i, p in enumerate(passages):
        out.append(p if p.passage_id == i else Passage(i, p.doc_id, p.url, p.title, p.text,
                                                        p.sentence_start, p.sentence_end))
    return out


# --------------------------------------------------------------------------------------------
# Document loaders: each yields Documents from a file in a known schema.


def documents_from_jsonl(path: str | Path) -> Iterator[Document]:
    """Records with ``url``, ``title`` and ``text`` (``doc_id`` optional, defaulting to the URL).
    A record whose id an earlier one had replaces it in the index; the log says how many did."""
    path = require_file(path)
    number, seen, repeats = 0, set(), 0
    for number, record in read_jsonl_lines(path):
        missing = [k for k in ("url", "title", "text") if k not in record]
        if missing:
            raise InputError(f"{path}:{number}: missing field(s) {', '.join(missing)}")
        wrong = [k for k in ("url", "title", "text") if not isinstance(record[k], str | None)]
        wrong += ["doc_id"] if type(record.get("doc_id")) not in (str, int, type(None)) else []
        if wrong:
            raise InputError(f"{path}:{number}: {', '.join(wrong)} must be text")
        if not (record["url"] or "").strip():
            raise InputError(f"{path}:{number}: url is empty")
        doc_id = str(record.get("doc_id") or record["url"])
        repeats += doc_id in seen
        seen.add(doc_id)
        yield Document(doc_id, record["url"], record["title"] or "", record["text"] or "")
    if not number:
        raise InputError(f"{path}: no documents in it")
    if repeats:
        log.warning("%s: %d records repeat the doc_id (or url) of an earlier one; the last of each is indexed",
                    path, repeats)


def wice_title(evidence: Iterable[str]) -> str:
    """The page title from WiCE's ``(meta data) TITLE:`` pseudo-sentence, or ""."""
    for sentence in evidence:
        if sentence.startswith(WICE_META_PREFIX):
            body = sentence[len(WICE_META_PREFIX):].strip()
            if body.upper().startswith("TITLE:"):
                return body[len("TITLE:"):].strip()
    return ""


def wice_page_sentences(evidence: Iterable[str]) -> tuple[str, ...]:
    """The sentences of a WiCE page: its evidence without the ``(meta data)`` lines and blanks."""
    return tuple(s for s in evidence if s.strip() and not s.startswith(WICE_META_PREFIX))


def wice_page_id(evidence: Iterable[str]) -> str:
    """Stable document id of a WiCE page: identical page text gives one document."""
    return "wice:" + sha1("\n".join(evidence))[:16]


def documents_from_wice(path: str | Path) -> Iterator[Document]:
    """Each distinct cited page of a WiCE claim file (``(meta data)`` lines are not passaged).

    WiCE has no URLs, so the url is the synthetic ``wice:<claim id>`` of the first claim citing
    the page, and the doc id a hash of the page text (several claims may cite one page).
    """
    seen: set[str] = set()
    for number, record in enumerate(read_jsonl(path), 1):
        evidence = record.get("evidence") or []
        doc_id = wice_page_id(evidence)
        if doc_id in seen or not evidence:
            continue
        seen.add(doc_id)
        claim_id = (record.get("meta") or {}).get("id", number)
        sentences = wice_page_sentences(evidence)
        yield Document(doc_id, f"wice:{claim_id}", wice_title(evidence), "\n".join(sentences), sentences)


def documents_from_scifact(corpus_path: str | Path) -> Iterator[Document]:
    """SciFact abstracts; the url is a synthetic ``scifact:<doc_id>``."""
    for record in read_jsonl(corpus_path):
        doc_id = str(record["doc_id"])
        sentences = tuple(s.strip() for s in record.get("abstract") or [] if s.strip())
        yield Document(doc_id, f"scifact:{doc_id}", record.get("title", "") or "", " ".join(sentences),
                       sentences)


def _html_text(html: bytes, url: str) -> tuple[str, str]:
    """(title, text) of a page: side.sources.fetch when present, else lxml's plain text."""
    try:
        from side.sources.fetch import source_from_html
    except ImportError:
        pass
    else:
        try:
            source = source_from_html(html, url)
            return source.title, source.text
        except Exception as exc:  # noqa: BLE001 - one bad fixture page must not stop the corpus
            log.warning("%s: extraction failed (%s); using plain text", url, exc)
    import lxml.html

    tree = lxml.html.fromstring(html)
    for bad in tree.xpath("//script|//style|//noscript"):
        bad.drop_tree()
    title = (tree.findtext(".//title") or "").strip()
    return title, tree.text_content()


def _html_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.name.endswith((".html", ".htm", ".html.gz")))


def _page_urls(directory: Path) -> dict[str, str]:
    """URLs known for fixture pages (article-extraction-benchmark's ground-truth.json)."""
    urls: dict[str, str] = {}
    for truth in directory.rglob("ground-truth.json"):
        for key, value in json.loads(truth.read_text(encoding="utf-8")).items():
            if isinstance(value, dict) and value.get("url"):
                urls[key] = value["url"]
    return urls


def documents_from_web_html(directory: str | Path) -> Iterator[Document]:
    """Saved web pages (``.html`` or ``.html.gz``) under ``directory``, text as Side extracts it."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"not a directory: {directory}")
    urls = _page_urls(directory)
    for path in _html_files(directory):
        stem = path.name.split(".html")[0]
        raw = path.read_bytes()
        html = gzip.decompress(raw) if path.name.endswith(".gz") else raw
        url = urls.get(stem) or f"file:{path.relative_to(directory)}"
        title, text = _html_text(html, url)
        if text.strip():
            yield Document(url, url, title or stem, text)
