"""The evidence corpus grows from every source a check reads: real Redis (own server, AOF),
real RQ workers (in this process), a local web server, the real verifier and encoder.

A check queues one ingest job per readable source it read; the ingest worker adds them to the
index, where they can be searched. The same page read twice (same URL, or another URL with the
same text) is stored once, a "cannot check" page never, and a document whose job Redis lost is
queued again from the spool and ingested by a fresh worker.
"""

from __future__ import annotations

import json

import pytest
import redis
from rq.serializers import JSONSerializer

from service.ingest import Ingestor, get_ingest_queue, ingest_job_id, requeue_spooled
from service.queue import get_queue, redis_connection, submit
from service.store import CheckRequest, Store
from side.cli import main as side_main
from side.config import FetchConfig, ServiceConfig
from side.extract.claims import Citation, Claim
from side.pipeline import Pipeline, make_source_loader
from side.results import ReadSource, SourceCopy
from side.retrieval.corpus import Corpus, Document, build_corpus
from side.retrieval.ingest import IngestSpool, RobotsGate, ingest_documents
from side.retrieval.retriever import Retriever
from side.sources.fetch import fetch_source
from workers.ingest import IngestContext, set_ingest_context
from workers.jobs import WorkerContext, set_context
from workers.worker import SideWorker

from httpserver import LocalServer, Response, redirect


def page(title: str, paragraphs: list[str], extra: str = "") -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head><body>"
            f"<article><h1>{title}</h1>{body}</article>{extra}</body></html>").encode()


LIGHTHOUSE = page("Lighthouse of Porthkennack", [
    "The lighthouse of Porthkennack was built of granite in 1871 by the harbour trust.",
    "Its lamp was converted to electricity in 1936 and can be seen for eighteen nautical miles.",
    "The last keeper left in 1989, when the light was automated and monitored from the mainland.",
])
ORCHARD = page("The cider orchards of Tremellin", [
    "Tremellin's cider orchards cover forty hectares of south-facing slopes above the estuary.",
    "The oldest trees, of the Kingston Black variety, were planted by the abbey's monks around 1820.",
    "Each October the village holds a wassail to bless the trees for the coming harvest.",
])
PAYWALL = page("Harbour board approves new pier | The Coastal Times", [
    "The harbour board on Tuesday approved plans for a new pier, three hundred metres long, to replace "
    "the one destroyed in last winter's storm.",
    "Construction is expected to begin in the spring, the board's chair said, once the funding from the "
    "regional government has been confirmed.",
], extra="<div class=\"paywall\"><p>Subscribe to continue reading. Already a subscriber? Sign in.</p></div>")


def claim(text: str, url: str, key: str) -> Claim:
    return Claim(article_title="Porthkennack", section=("History",), text=text, left_context=text,
                 citation=Citation(id=key, kind="external_link", url=url))


@pytest.fixture(scope="module")
def verifier():
    from side.verify.verifier import Verifier

    return Verifier.load(device="cpu")


@pytest.fixture(scope="module")
def encoder():
    from side.retrieval.encoder import shared_encoder

    return shared_encoder("cpu")


@pytest.fixture
def sources():
    with LocalServer() as server:
        server.add("/lighthouse", Response(LIGHTHOUSE))
        server.add("/mirror/lighthouse-copy", Response(LIGHTHOUSE))  # the same text under another URL
        server.add("/orchards", Response(ORCHARD))
        server.add("/news/pier", Response(PAYWALL))
        yield server


@pytest.fixture
def service(redis_db) -> ServiceConfig:
    return ServiceConfig(redis_url=redis_db.url, queue="side-test", ingest_queue="side-ingest-test", retries=1,
                         retry_backoff_s=1)


@pytest.fixture
def store(tmp_path):
    store = Store.open(f"sqlite:///{tmp_path / 'side.sqlite3'}")
    yield store
    store.close()


@pytest.fixture
def connection(service) -> redis.Redis:
    return redis_connection(service.redis_url)


@pytest.fixture
def spool(tmp_path) -> IngestSpool:
    return IngestSpool(tmp_path / "var" / "ingest")


@pytest.fixture
def checker(verifier, tmp_path, store, connection, service, spool):
    """A check worker's context: the real Pipeline fetching from 127.0.0.1, handing to the spool."""
    fetch = FetchConfig(allow_hosts=["127.0.0.1"], timeout_s=5)
    loader = make_source_loader(None, lambda url, deadline=None: fetch_source(url, fetch, tmp_path / "cache",
                                                                             deadline))
    set_context(WorkerContext(store, Pipeline(verifier, None, loader),
                              Ingestor(spool, get_ingest_queue(connection, service), service, RobotsGate(fetch))))
    yield
    set_context(None)


@pytest.fixture
def index_dir(tmp_path, encoder, spool):
    directory = tmp_path / "index"
    set_ingest_context(IngestContext(directory, spool, encoder))
    yield directory
    set_ingest_context(None)


def run_burst(connection, queue, spool=None, requeue_after_s: float = 300) -> SideWorker:
    worker = SideWorker([queue], connection=connection, serializer=JSONSerializer, spool=spool,
                        service=ServiceConfig(), requeue_after_s=requeue_after_s)
    worker.work(burst=True)
    return worker


def check(store, connection, service, revision: int, claims: list[Claim]) -> str:
    queue = get_queue(connection, service)
    record, enqueued = submit(store, queue, CheckRequest(wiki="enwiki", title="Porthkennack", revision=revision,
                                                         claims=claims, origin="bot"), service)
    assert enqueued
    run_burst(connection, queue)
    done = store.check(record.id)
    assert done.status == "done", done.error
    return record.id


def test_sources_a_check_reads_are_ingested_and_searchable(checker, index_dir, store, connection, service,
                                                           spool, sources):
    lighthouse, copy, orchards = sources.url("/lighthouse"), sources.url("/mirror/lighthouse-copy"), \
        sources.url("/orchards")
    first = check(store, connection, service, 1, [
        claim("The lighthouse was built in 1871.", lighthouse, "c1"),
        claim("The lighthouse was automated in 1989.", lighthouse, "c2"),  # one URL cited twice
        claim("The orchards cover forty hectares.", orchards, "c3"),
        claim("The pier will be three hundred metres long.", sources.url("/news/pier"), "c4"),  # cannot check
    ])
    assert [r.source_status for r in store.results(first)].count("cannot_check") == 1
    ingest = get_ingest_queue(connection, service)
    assert len(spool) == 2 and ingest.count == 2  # one job per readable source, none for the paywall
    assert sorted(ingest.job_ids) == sorted(ingest_job_id(i) for i in spool.ids())

    check(store, connection, service, 2, [claim("The lamp was electrified in 1936.", copy, "c1"),
                                          claim("The orchards cover forty hectares.", orchards, "c2")])
    assert len(spool) == 3 and ingest.count == 3  # the copy is a new URL; the orchards' job is pending

    run_burst(connection, ingest)
    assert len(spool) == 0 and ingest.count == 0
    corpus = Corpus.load(index_dir)
    assert sorted(d.url for d in corpus.documents) == sorted([lighthouse, orchards])  # the copy: stored once
    assert all(d.fetched_at for d in corpus.documents)
    assert not any("pier" in d.text for d in corpus.documents)
    hits = Retriever.load(index_dir).search("When was the lighthouse lamp converted to electricity?", k=1)
    assert hits[0].url == lighthouse
    hits = Retriever.load(index_dir).search("Kingston Black cider apple trees planted by monks", k=1)
    assert hits[0].url == orchards

    check(store, connection, service, 3, [claim("The orchards cover forty hectares.", orchards, "c1")])
    run_burst(connection, ingest)  # read again by a worker whose corpus predates it: no second copy
    assert len(Corpus.load(index_dir)) == 2 and len(spool) == 0


#: Crawlers (Side's SideBot among them) may not fetch /private/; its group is matched by product token.
ROBOTS = b"User-agent: *\nDisallow: /private/\n\nUser-agent: sidebot\nDisallow: /private/\nDisallow: /keep-out\n"


def test_a_page_robots_txt_disallows_is_checked_but_never_joins_the_corpus(checker, index_dir, store, connection,
                                                                           service, spool, sources):
    sources.add("/robots.txt", Response(ROBOTS, content_type="text/plain"))
    sources.add("/private/lighthouse", Response(LIGHTHOUSE))
    sources.add("/keep-out", Response(page("Pier", ["The pier of Porthkennack is three hundred metres long, and "
                                                    "it was rebuilt in stone after the storm of 1904."])))
    sources.add("/go/lighthouse", redirect("/private/lighthouse"))  # allowed as cited, disallowed where it lands
    private, orchards = sources.url("/private/lighthouse"), sources.url("/orchards")
    done = check(store, connection, service, 1, [
        claim("The lighthouse was built in 1871.", private, "c1"),
        claim("The pier is three hundred metres long.", sources.url("/keep-out"), "c2"),
        claim("The lamp was electrified in 1936.", sources.url("/go/lighthouse"), "c3"),
        claim("The orchards cover forty hectares.", orchards, "c4"),
    ])
    # Every page was read and checked as the fetch rules say: robots.txt does not bind a check.
    assert [r.source_status for r in store.results(done)].count("cannot_check") == 0
    assert sources.hits["/private/lighthouse"] >= 1 and sources.hits["/keep-out"] == 1
    assert sources.hits["/robots.txt"] == 1  # read once for the origin, not once per source
    ingest = get_ingest_queue(connection, service)
    assert len(spool) == 1 and ingest.count == 1  # only the orchards were spooled and queued
    run_burst(connection, ingest)
    assert [d.url for d in Corpus.load(index_dir).documents] == [orchards]


def test_an_unreadable_robots_txt_keeps_every_page_of_its_site_out_of_the_corpus(checker, index_dir, store,
                                                                                 connection, service, spool,
                                                                                 sources):
    sources.add("/robots.txt", Response(b"down for maintenance", status=503, content_type="text/plain"))
    done = check(store, connection, service, 1, [claim("The orchards cover forty hectares.",
                                                       sources.url("/orchards"), "c1")])
    assert [r.source_status for r in store.results(done)].count("cannot_check") == 0
    assert len(spool) == 0 and get_ingest_queue(connection, service).count == 0


def test_robots_gate_reads_each_site_once_an_hour_and_judges_an_archived_copy_by_its_snapshot(sources):
    sources.add("/robots.txt", Response(b"User-agent: *\nDisallow: /private/\n", content_type="text/plain"))
    now = [0.0]
    gate = RobotsGate(FetchConfig(allow_hosts=["127.0.0.1"], timeout_s=5), ttl_s=3600, clock=lambda: now[0])
    live = ReadSource(sources.url("/lighthouse"), sources.url("/lighthouse"), "Lighthouse", "Built in 1871.")
    private = ReadSource(sources.url("/private/a"), sources.url("/private/a"), "A", "Text.")
    # An archived copy of a disallowed page, read from an allowed snapshot URL, and the reverse.
    snapshot = ReadSource(sources.url("/private/a"), sources.url("/web/2020/a"), "A", "Text.", copy=SourceCopy.ARCHIVE)
    hidden = ReadSource(sources.url("/a"), sources.url("/private/web/2020/a"), "A", "Text.", copy=SourceCopy.ARCHIVE)
    assert gate.admitted([live, private, snapshot, hidden]) == [live, snapshot]
    assert gate.admitted([live]) == [live] and sources.hits["/robots.txt"] == 1  # kept for the hour
    now[0] = 3600.0
    assert gate.admitted([live]) == [live] and sources.hits["/robots.txt"] == 2  # then read again


def test_a_document_whose_job_redis_lost_is_ingested_by_a_new_worker(checker, index_dir, store, connection,
                                                                     service, spool, sources):
    check(store, connection, service, 1, [claim("The lighthouse was built in 1871.", sources.url("/lighthouse"),
                                                "c1")])
    ingest = get_ingest_queue(connection, service)
    assert ingest.count == 1
    connection.flushall()  # Redis lost its jobs (no persistence), or was replaced, before any ingestion
    assert ingest.count == 0 and len(spool) == 1
    assert requeue_spooled(spool, ingest, service, older_than_s=60) == []  # too young: its producer may be queueing
    run_burst(connection, ingest, spool=spool, requeue_after_s=0)  # maintenance queues it, the worker ingests it
    assert len(spool) == 0
    assert [d.url for d in Corpus.load(index_dir).documents] == [sources.url("/lighthouse")]


def test_a_crash_during_ingestion_keeps_the_documents_spooled(index_dir, spool, encoder, connection, service,
                                                              monkeypatch):
    from workers import ingest as ingest_job

    document = Document("web-0123456789abcdef", "https://harbour.example/a", "Harbour", "The pier is long. " * 5,
                        fetched_at="2026-11-20T10:00:00+00:00")
    spool.put(document)

    def crash(*args, **kwargs):
        raise MemoryError("killed")

    monkeypatch.setattr(ingest_job, "ingest_documents", crash)
    with pytest.raises(MemoryError):
        ingest_job.run_ingest(document.doc_id)
    assert spool.ids() == [document.doc_id]  # still there for the retry
    monkeypatch.undo()
    assert ingest_job.run_ingest(document.doc_id)["added"] == [document.doc_id]
    assert spool.ids() == [] and ingest_job.run_ingest(document.doc_id)["skipped"]  # a second delivery: no-op


def test_same_url_or_same_text_is_stored_once(tmp_path, encoder):
    text = "The harbour was rebuilt in 1902 after a storm. The new pier is three hundred metres long."
    first = Document("a", "https://Harbour.example:443/history#top", "Harbour", text)
    again = Document("b", "https://harbour.example/history", "Harbour", text + " Updated.")
    mirror = Document("c", "https://mirror.example/h", "Harbour", "  The harbour was rebuilt in 1902 after a "
                      "storm.\nThe new pier is three hundred metres long.")
    report = ingest_documents([first, again, mirror], tmp_path, encoder=encoder)
    assert report.added == ("a",) and report.duplicates == ("b", "c")
    assert ingest_documents([again], tmp_path, encoder=encoder).added == ()
    assert len(Corpus.load(tmp_path)) == 1


def test_index_stats_prints_size_growth_and_domains(tmp_path, encoder, capsys):
    docs = [Document(f"d{n}", url, "T", f"Sentence number {n} about {url}.", fetched_at=when)
            for n, (url, when) in enumerate([
                ("https://www.news.example/a", "2026-11-20T10:00:00+00:00"),
                ("https://news.example/b", "2026-11-20T18:00:00+00:00"),
                ("https://blog.example/c", "2026-11-22T09:00:00+00:00"),
                ("wice:12", "")])]
    build_corpus(docs, tmp_path)
    assert side_main(["index", "stats", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"corpus {tmp_path}: 4 documents, 4 passages"
    assert "  2026-11-20: 2" in out and "  2026-11-22: 1" in out
    assert out.index("  news.example: 2") < out.index("  blog.example: 1")
    assert side_main(["index", "stats", "--out", str(tmp_path), "--json", "--days", "1", "--top", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["documents"] == 4 and data["passages"] == 4 and data["unfetched"] == 1 and data["not_web"] == 1
    assert data["per_day"] == [{"day": "2026-11-22", "documents": 1}]
    assert data["top_domains"] == [{"domain": "news.example", "documents": 2}]


@pytest.mark.parametrize(("argv", "message"), [
    (["index", "stats", "--out", "MISSING"], "side: error: no corpus in MISSING (run `side index build`)"),
    (["index", "stats", "--out", "MISSING", "--days", "-1"], "side: error: --days must be at least 0, not -1"),
])
def test_index_stats_bad_input_is_one_line_exit_2(argv, message, tmp_path, capsys):
    argv = [a.replace("MISSING", str(tmp_path / "none")) for a in argv]
    assert side_main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [message.replace("MISSING", str(tmp_path / "none"))]
