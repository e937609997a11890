"""``side index build|info|stats`` and ``side search``: build the evidence index, look things up in it.

``side index stats`` says how big the corpus is and how it grows (documents added per day by
fetch time, as sources read by checks join it: :mod:`side.retrieval.ingest`) and from where.

``side index build --demo`` indexes the demo set shipped with Side (:mod:`side.demo`: SciFact
abstracts, no shared data needed), enough to see verdicts, evidence and suggestions offline on
the demo article. ``--demo --dataset wice`` adds the WiCE cited pages of the shared data, which
``side index demo-article`` cites. Passages of a demo build do not overlap (stride = passage
length): embedding is the whole cost on a CPU. For the same reason each page of a demo build is
cut to its first ``DEMO_MAX_WORDS`` words (``--max-words`` changes it; 0 keeps whole pages).
"""

from __future__ import annotations

import argparse
import itertools
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from side.cli.checks import at_least, folder_to_write
from side.cli.jsonout import json_text
from side.cli.terminal import printable
from side.config import Config
from side.errors import InputError

__all__ = [
    "DATASETS", "DEMO_MAX_WORDS", "add_backend_argument", "register", "run_build",
    "truncate_document", "run_demo_article", "run_info", "run_stats", "run_search", "open_retriever", "milvus_settings",
]

if TYPE_CHECKING:
    from side.retrieval.corpus import Document
    from side.retrieval.fusion import DocumentHit
    from side.retrieval.milvus import MilvusSettings
    from side.retrieval.retriever import Retriever

log = logging.getLogger(__name__)

DATASETS = ("wice", "scifact", "web_html")

#: Words kept of each page by ``--demo``: the demo shows the workflow, not full-page recall.
DEMO_MAX_WORDS = 300


def add_backend_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=("embedded", "milvus"),
                        help="where the index lives (default: config retrieval.backend)")


def backend_of(args: argparse.Namespace, config: Config) -> str:
    return getattr(args, "backend", None) or config.retrieval.backend


def milvus_settings(args: argparse.Namespace, config: Config) -> MilvusSettings | None:
    """The configured Milvus URI and collection when the milvus backend is chosen, else None."""
    if backend_of(args, config) != "milvus":
        return None
    from side.retrieval.milvus import MilvusSettings

    return MilvusSettings.from_config(config)


def open_retriever(args: argparse.Namespace, config: Config, index_dir: Path) -> Retriever:
    """The index of ``index_dir`` in the chosen backend, with the configured retrieval settings."""
    from side.retrieval.backends import load_retriever

    settings = config.retrieval
    return load_retriever(index_dir, backend_of(args, config), milvus_settings(args, config),
                          encoder_model=config.encoder.model,
                          k_sparse=settings.k_sparse, k_dense=settings.k_dense, fusion=settings.fusion,
                          bm25_max_postings=settings.bm25_max_postings)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("index", help="build or inspect the evidence index")
    commands = parser.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    build = commands.add_parser("build", help="build (or update) the evidence index")
    build.add_argument("--jsonl", action="extend", nargs="+", default=[], metavar="FILE",
                       help="JSONL documents with url, title, text (repeatable)")
    build.add_argument("--dataset", action="extend", nargs="+", default=[], choices=DATASETS,
                       help="a shared dataset's documents (repeatable)")
    build.add_argument("--demo", action="store_true", help="the demo set shipped with Side (SciFact abstracts; "
                       "no shared data needed)")
    build.add_argument("--dump", type=Path, metavar="FILE", help="MediaWiki XML dump (.xml or .xml.bz2): fetch "
                       "and index every source its articles cite (robots.txt, crawl.* settings; resumable)")
    build.add_argument("--limit", type=int, help="with --dump: fetch at most N sources in this run")
    build.add_argument("--dry-run", action="store_true", help="with --dump: list the cited URLs, fetch nothing")
    build.add_argument("--out", type=Path, help="index directory (default: the configured index_dir)")
    add_backend_argument(build)
    build.add_argument("--faiss", metavar="SPEC", help="dense index of the embedded backend: flat, hnsw, ivf or "
                       "ivfpq, optionally with parameters, e.g. hnsw:ef_search=64 (default: retrieval.faiss_index)")
    build.add_argument("--words", type=int, help="passage length in words")
    build.add_argument("--stride", type=int, help="words between passage starts")
    build.add_argument("--max-words", type=int, help=f"keep the first N words of each page "
                       f"(default: all; {DEMO_MAX_WORDS} with --demo; 0: all)")
    build.set_defaults(func=run_build)
    info = commands.add_parser("info", help="describe the evidence index")
    info.add_argument("--out", type=Path, help="index directory (default: the configured index_dir)")
    add_backend_argument(info)
    info.set_defaults(func=run_info)
    stats = commands.add_parser("stats", help="corpus size, growth per day and top domains")
    stats.add_argument("--out", type=Path, help="index directory (default: the configured index_dir)")
    stats.add_argument("--days", type=int, default=14, help="days of growth to show, latest last (default 14; "
                       "0: all)")
    stats.add_argument("--top", type=int, default=10, help="domains to name (default 10)")
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.set_defaults(func=run_stats)

    demo = commands.add_parser(
        "demo-article", help="write a demo article of real WiCE claims citing pages of the demo index",
        description="Write wikitext made of one article's real WiCE dev claims, each cited with the "
        "page WiCE pairs it with, under the wice:<id> URL that `side index build --demo --dataset wice` "
        "gives that page. Offline, `side verify` cannot fetch a real article's sources; on this article it reads "
        "them from the index, so the verdicts, evidence and suggestions show.")
    demo.add_argument("--title", default=None, help="WiCE article title (default: Starbucks, whose three "
                      "claims are supported, partially supported and not supported)")
    demo.add_argument("--out", type=Path, help="wikitext file to write (default: standard output)")
    demo.set_defaults(func=run_demo_article)

    search = sub.add_parser("search", help="look a claim up in the evidence index")
    search.add_argument("query", help="sparse query (for Side: the claim sentence and article title)")
    search.add_argument("--dense-query", help="separate dense query (default: the same text)")
    search.add_argument("--k", type=int, default=10, help="documents to show (default 10)")
    search.add_argument("--mode", choices=("sparse", "dense", "hybrid"), default="hybrid")
    search.add_argument("--fusion", choices=("union", "rrf"), help="hybrid fusion (default: config)")
    search.add_argument("--index", type=Path, help="index directory (default: the configured index_dir)")
    add_backend_argument(search)
    search.add_argument("--json", action="store_true", help="print JSON")
    search.set_defaults(func=run_search)


def _documents(args: argparse.Namespace, config: Config) -> Iterator:
    from side.retrieval import corpus

    data = Path(config.data_dir)
    sources = [corpus.documents_from_jsonl(p) for p in args.jsonl]
    if args.dump is not None:
        from side.retrieval.dump import dump_documents

        sources.append(iter(dump_documents(args.dump, config, limit=args.limit)))
    if args.demo:
        from side.demo import demo_documents

        sources.append(demo_documents())
    for name in dict.fromkeys(args.dataset):
        if name == "wice":
            sources.append(corpus.documents_from_wice(data / "wice" / "claim_dev.jsonl"))
        elif name == "scifact":
            sources.append(corpus.documents_from_scifact(data / "scifact" / "corpus.jsonl"))
        else:
            sources.append(corpus.documents_from_web_html(data / "fixtures" / "web_html"))
    if not sources:
        raise InputError("nothing to index: give --jsonl FILE, --dataset NAME, --dump FILE or --demo")
    return itertools.chain.from_iterable(sources)


def run_build(args: argparse.Namespace, config: Config) -> int:
    from side.retrieval.backends import build_retriever
    from side.retrieval.corpus import build_corpus
    from side.retrieval.encoder import shared_encoder
    from side.threads import apply_inference_threads

    at_least(1, words=args.words, stride=args.stride, max_words=args.max_words, limit=args.limit)
    if args.dry_run:
        return _list_cited(args.dump)
    backend, milvus = backend_of(args, config), milvus_settings(args, config)
    from side.retrieval.dense import FaissSpec

    FaissSpec.parse(args.faiss or config.retrieval.faiss_index)  # a bad spec is reported before any work
    if milvus is not None:
        from side.retrieval.milvus import check_server

        check_server(milvus)  # an unreachable server or unsupported index is reported before any work
    started = time.perf_counter()
    out = args.out or config.index_dir
    folder_to_write(out)
    words = args.words or config.retrieval.passage_words
    stride = args.stride or (words if args.demo else config.retrieval.passage_stride)
    max_words = DEMO_MAX_WORDS if args.max_words is None and args.demo else (args.max_words or 0)
    documents = _documents(args, config)
    if max_words:
        documents = (truncate_document(d, max_words) for d in documents)
    corpus = build_corpus(documents, out, words=words, stride=stride)
    apply_inference_threads(config.verifier.threads)
    encoder = shared_encoder(config.verifier.device, config.verifier.precision, config.encoder.model)
    build_retriever(corpus, out, backend, milvus, encoder, faiss_index=args.faiss or config.retrieval.faiss_index)
    where = f" in Milvus collection {milvus.collection} at {milvus.uri}" if milvus else ""
    print(f"index {out}{where}: {len(corpus)} documents, {len(corpus.passages)} passages "
          f"({time.perf_counter() - started:.0f} s)")
    return 0


def _list_cited(dump: Path | None) -> int:
    """Print the URLs a dump cites, one a line, as ``--dump`` would fetch them (offline)."""
    from side.extract.dump import iter_cited_urls

    if dump is None:
        raise InputError("--dry-run lists what a dump cites: give --dump FILE")
    count = 0
    for cited in iter_cited_urls(dump):
        print(printable(cited.fetch_url))
        count += 1
    log.info("%s cites %d distinct URLs", dump, count)
    return 0


def truncate_document(document: Document, max_words: int) -> Document:
    """The document cut after the sentence that reaches ``max_words`` words."""
    from side.retrieval.corpus import Document
    from side.text import count_words

    kept, total = [], 0
    for sentence in document.split():
        if total >= max_words:
            break
        kept.append(sentence)
        total += count_words(sentence)
    return Document(document.doc_id, document.url, document.title, "\n".join(kept), tuple(kept),
                    document.fetched_at, document.date)


def run_demo_article(args: argparse.Namespace, config: Config) -> int:
    from side.demo import DEFAULT_TITLE, demo_article

    text = demo_article(Path(config.data_dir) / "wice" / "claim_dev.jsonl", args.title or DEFAULT_TITLE)
    if args.out is None:
        print(printable(text), end="")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    log.info("demo article written to %s", args.out)
    return 0


def run_info(args: argparse.Namespace, config: Config) -> int:
    out = args.out or config.index_dir
    keys: tuple[str, ...]
    if backend_of(args, config) == "milvus":
        from side.retrieval.milvus import read_milvus_meta

        meta, keys = read_milvus_meta(out), ("n_documents", "n_passages", "uri", "collection", "index", "stemmer",
                                             "dim", "fingerprint")
    else:
        from side.retrieval.retriever import read_index_meta

        meta, keys = read_index_meta(out), ("n_documents", "n_passages", "faiss", "stemmer", "dim", "fingerprint")
    print(f"index {out}")
    for key in keys:
        print(f"  {key}: {meta.get(key)}")
    return 0


def run_stats(args: argparse.Namespace, config: Config) -> int:
    from side.retrieval.ingest import corpus_stats

    at_least(0, days=args.days, top=args.top)
    out = args.out or config.index_dir
    stats = corpus_stats(out, top=args.top, days=args.days)
    if args.json:
        print(json_text(stats.to_dict(), indent=1))
        return 0
    print(f"corpus {out}: {stats.documents} documents, {stats.passages} passages")
    print(f"added per day (by fetch time; {stats.unfetched} documents from datasets have none):")
    for day, n in stats.per_day:
        print(f"  {day}: {n}")
    if not stats.per_day:
        print("  none yet")
    print(f"top domains ({stats.not_web} documents have no web URL):")
    for domain, n in stats.domains:
        print(printable(f"  {domain}: {n}"))
    if not stats.domains:
        print("  none")
    return 0


def run_search(args: argparse.Namespace, config: Config) -> int:
    at_least(1, k=args.k)
    retriever = open_retriever(args, config, args.index or config.index_dir)
    hits = retriever.search(args.query, args.dense_query, k=args.k, mode=args.mode, fusion=args.fusion)
    if args.json:
        print(json_text([_brief(h) for h in hits], indent=1, ensure_ascii=False))
        return 0
    _print_table(args.query, hits)
    return 0


def _brief(hit: DocumentHit) -> dict:
    return {"doc_id": hit.doc_id, "url": hit.url, "title": hit.title, "score": round(hit.score, 4),
            "passage": hit.best_passage.text, "passage_id": hit.best_passage.passage_id}


def _print_table(query: str, hits: list) -> None:
    """The hits as a table; titles, URLs and passages come from web pages, so they are printed as
    text (:mod:`side.cli.terminal`), never as console markup."""
    from rich.console import Console
    from rich.table import Table

    from side.cli.terminal import plain

    table = Table(title=plain(f"search: {query}"), show_lines=True)
    for name in ("#", "score", "document", "best passage"):
        table.add_column(name, overflow="fold")
    for rank, hit in enumerate(hits, 1):
        passage = hit.best_passage.text
        table.add_row(str(rank), f"{hit.score:.3f}", plain(f"{hit.title}\n{hit.url}"),
                      plain(passage if len(passage) <= 300 else passage[:300] + "…"))
    Console().print(table if hits else "no documents found")
