"""Side's citation verifier as a Lift Wing inference service (KServe model server).

``POST /v1/models/side-verifier:predict`` answers, for each use of a citation, whether the cited
source supports the claim: the verdict level (supported / partially supported / not supported /
cannot check), its support score, the source's evidence sentences, why the source cannot be
checked where it cannot, and better sources from the evidence index where one is mounted.
The request is a revision's ref (``{"lang", "rev_id", "ref"}``: the wikitext is read through
the wiki's Action API) or claims sent with their context, cited URL and/or the source's text
(see :mod:`request`). The answer comes in the response: no queue, no store.

The verification is Side's own :class:`side.pipeline.Pipeline`, loaded once: sources are fetched
behind Side's SSRF guard within the check's time budget (``SIDE_FETCH_*``), dead pages are read
from their archived copies, and one request's citations are scored as one batch. Configuration
follows Lift Wing's model servers: ``MODEL_NAME`` (default ``side-verifier``), ``MODEL_PATH``
(the verifier's folder; default the model shipped in the package), ``INDEX_PATH`` (an evidence
index for suggestions; none by default), ``WIKI_API_URL`` (the Action API, ``{lang}`` filled in;
on Lift Wing the internal API gateway), ``LANGUAGES`` (the wikis' language codes the model reads,
comma-separated; default ``en,simple,test``: any other ``lang`` is answered 400) and Side's own
``SIDE_*`` settings.

Run it with ``python -m deploy.liftwing.side_verifier.model`` from the repository root
(``--http_port`` and KServe's other options apply).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import hashlib
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kserve
from kserve.errors import InferenceError, InvalidInput

from deploy.liftwing.side_verifier.request import (
    DEFAULT_LANGUAGES,
    LANG_PATTERN,
    MAX_CLAIMS,
    ClaimsRequest,
    RevisionRequest,
    parse_request,
)
from side.config import Config, load_config
from side.extract.claims import Citation, Claim
from side.extract.wikiapi import PageNotFoundError, WikiUnavailableError, fetch_page
from side.extract.wikitext import extract_claims
from side.pipeline import CheckSources, LoadedSource, Pipeline, ReadPlan, Result, SourceLoader, SourceStatus
from side.sources.fetch import MAX_SENTENCES
from side.text import split_sentences
from side.verify.crossencoder import DEFAULT_MODEL_DIR
from side.verify.levels import VerdictLevel

__all__ = [
    "DEFAULT_MODEL_NAME", "DEFAULT_WIKI_API", "USER_AGENT", "GIVEN_TEXT", "GIVEN_TEXTS_KEPT", "Prepared",
    "GivenSources", "SideVerifierModel", "model_version", "claims_of_request", "claims_of_ref", "citation_output",
    "languages", "main",
]

logging.basicConfig(level=kserve.constants.KSERVE_LOGLEVEL)
log = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "side-verifier"
#: The public Action API of a Wikipedia; Lift Wing points this at its internal API gateway.
DEFAULT_WIKI_API = "https://{lang}.wikipedia.org/w/api.php"
USER_AGENT = "WMF ML side-verifier isvc (Lift Wing; citation verification)"
#: Where a source's text came from when the request carried it.
GIVEN_TEXT = "request"
#: Source texts (at most MAX_SOURCE_TEXT characters each) kept split into sentences.
GIVEN_TEXTS_KEPT = 64
#: The key a claim's given text is filed under when the claim has no URL (never fetched).
_TEXT_KEY = "urn:side:source-text:{n}"


@dataclass
class Prepared:
    """A validated request, turned into the claims to verify."""

    request: RevisionRequest | ClaimsRequest
    claims: list[Claim]
    #: Source texts the request carried, by the key the claim's citation URL holds.
    given: dict[str, LoadedSource] = field(default_factory=dict)
    #: Per claim: its ref's number in the reference list (revision requests only).
    ref_numbers: list[int | None] = field(default_factory=list)
    title: str = ""


class GivenSources:
    """The request's own source texts, then the pipeline's loader (corpus, fetch, archive).

    A source sent with the request is what the caller says the cited page reads; it is scored
    as is, never fetched. Every other URL goes to ``fallback``, all of them at once within the
    check's budget as usual (:meth:`side.pipeline.CheckSources.load_plans`)."""

    def __init__(self, given: dict[str, LoadedSource], fallback: SourceLoader) -> None:
        self.given = given
        self.fallback = fallback

    def __call__(self, url: str) -> tuple[SourceStatus, list[str], str, str]:
        return self.load_plans([ReadPlan(url)])[url].as_tuple()

    def load_plans(self, plans: Iterable[ReadPlan]) -> dict[str, LoadedSource]:
        plans = list(plans)
        out = {p.url: self.given[p.url] for p in plans if p.url in self.given}
        rest = [p for p in plans if p.url not in self.given]
        if rest and isinstance(self.fallback, CheckSources):
            out.update(self.fallback.load_plans(rest))
        else:
            out.update({p.url: LoadedSource.from_tuple(self.fallback(p.url)) for p in rest})
        return out


def model_version(model_dir: Path) -> str:
    """A short fingerprint of the verifier's files: responses say which model answered."""
    digest = hashlib.sha256()
    for name in ("verifier.json", "combiner.json", "verifier.safetensors"):
        path = model_dir / name
        if path.is_file():
            with path.open("rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()[:12]


@functools.lru_cache(maxsize=GIVEN_TEXTS_KEPT)
def _given_source(text: str) -> LoadedSource:
    """A text the request carried, as a read source (the pipeline scores what it reads; the
    response says ``"source": "request"`` for it, see :func:`citation_output`).

    Kept for the next request that sends the same text (a caller checks an article's refs one
    by one, and several cite the same source): splitting a page into sentences costs tens of
    milliseconds (benchmarks/liftwing.py), a tenth of a citation's latency budget. A text sent
    with a URL is what the caller says that page reads, as a fetched page is in the fetch cache."""
    return LoadedSource(SourceStatus.FETCHED, tuple(split_sentences(text, limit=MAX_SENTENCES)))


def claims_of_request(request: ClaimsRequest) -> Prepared:
    """Claims sent by the caller as Claims, each citation keyed by its URL (or its text's key)."""
    claims: list[Claim] = []
    given: dict[str, LoadedSource] = {}
    for n, item in enumerate(request.claims):
        url = item.url or None
        if item.source_text is not None:
            url = url or _TEXT_KEY.format(n=n)
            given.setdefault(url, _given_source(item.source_text))
        body = item.url or item.citation_title or item.source_text or item.text
        citation = Citation(id=hashlib.sha1(body.encode("utf-8")).hexdigest()[:16],
                            kind="bare_url" if item.url and not item.citation_title else "template",
                            url=url, title=item.citation_title or None)
        claims.append(Claim(article_title=request.title, section=item.section, text=item.text,
                            left_context=item.left_context, citation=citation, extra={"key": item.key}))
    return Prepared(request, claims, given, [None] * len(claims), request.title)


def _http_url(citation: Citation) -> Citation:
    """A protocol-relative URL (valid wikitext) read as https; other schemes are left to the
    fetcher's guard, which refuses them with a reason."""
    url = citation.url
    if url and url.startswith("//"):
        return dataclasses.replace(citation, url="https:" + url)
    return citation


def claims_of_ref(request: RevisionRequest, claims: list[Claim]) -> tuple[list[Claim], list[int | None]]:
    """The uses of the ref ``request.ref`` names (by name, or by number in the reference list:
    citations numbered in order of first use, as MediaWiki numbers them), or of every ref."""
    numbers: dict[str, int] = {}
    for claim in claims:
        numbers.setdefault(claim.citation.id, len(numbers) + 1)
    if request.ref is None:
        chosen = claims
    elif isinstance(request.ref, int):
        if request.ref > len(numbers):
            raise InvalidInput(f"ref: revision {request.rev_id} has {len(numbers)} references, so no number "
                               f"{request.ref}")
        chosen = [c for c in claims if numbers[c.citation.id] == request.ref]
    else:
        chosen = [c for c in claims if c.citation.name == request.ref]
        if not chosen:
            names = sorted({c.citation.name for c in claims if c.citation.name})
            known = f" (its named refs: {', '.join(names[:20])})" if names else " (it has no named refs)"
            raise InvalidInput(f"ref: revision {request.rev_id} has no ref named {request.ref!r}{known}")
    if len(chosen) > MAX_CLAIMS:
        raise InvalidInput(f"revision {request.rev_id} has {len(chosen)} citation uses, more than {MAX_CLAIMS} "
                           "per request: name one ref with 'ref'")
    return ([dataclasses.replace(c, citation=_http_url(c.citation)) for c in chosen],
            [numbers[c.citation.id] for c in chosen])


def citation_output(result: Result, given: bool, ref_number: int | None) -> dict[str, Any]:
    """One citation use as the service answers it, from :meth:`Result.to_dict`."""
    data = result.to_dict()
    claim = result.claim
    checked = result.level is not VerdictLevel.CANNOT_CHECK and result.verdict is not None
    url = claim.citation.url if claim.citation.url and not claim.citation.url.startswith("urn:") else None
    out: dict[str, Any] = {
        "key": claim.extra.get("key") or claim.key,
        "claim": claim.text,
        "url": url,
        "level": str(result.level),
        "level_text": result.level.text,
        "score": round(result.verdict.score, 4) if checked and result.verdict else None,
        "evidence": data["verdict"]["evidence"] if checked else [],
        "unsupported": data["verdict"]["unsupported"] if data["verdict"] else [],
        "reason": result.level_reason,
        "flagged": result.flagged,
        "reportable": result.reportable,
        "reasons": data["reasons"],
        "source": GIVEN_TEXT if given else str(result.source_status),
        "source_url": data["source_url"] or None,
        "source_copy": data["source_copy"],
        "suggestions": data["suggestions"],
    }
    if ref_number is not None:
        out["ref"] = {"number": ref_number, "name": claim.citation.name}
    return out


class SideVerifierModel(kserve.Model):
    """The verifier and its sources' loader, loaded once; one request's citations, one batch."""

    def __init__(self, name: str, model_path: str | None = None, index_path: str | None = None,
                 wiki_api: str = DEFAULT_WIKI_API, config: Config | None = None,
                 languages: frozenset[str] = DEFAULT_LANGUAGES) -> None:
        super().__init__(name)
        self.name = name
        self.model_path = Path(model_path) if model_path else DEFAULT_MODEL_DIR
        self.index_path = index_path or None
        self.wiki_api = wiki_api
        #: The ``lang`` codes answered; any other is refused before the wiki is asked.
        self.languages = languages
        self.config = config or load_config()
        self.pipeline: Pipeline | None = None
        self.model_version = ""
        #: One verification at a time: a batch already uses every core the pod has.
        self._verifying = asyncio.Lock()
        self.ready = False

    def load(self) -> bool:
        self.pipeline = Pipeline.from_config(self.config, model_dir=self.model_path, index_dir=self.index_path,
                                             use_index=self.index_path is not None)
        self.model_version = model_version(self.model_path)
        log.info("%s: verifier %s (version %s), evidence index %s", self.name, self.model_path,
                 self.model_version, self.index_path or "none")
        self.ready = True
        return self.ready

    def _revision_claims(self, request: RevisionRequest) -> Prepared:
        """The revision's wikitext from the wiki's API, and the claims of the ref asked for."""
        api_url = self.wiki_api.format(lang=request.lang)
        try:
            page = fetch_page(api_url, "", wiki=request.wiki_db, revision=request.rev_id, user_agent=USER_AGENT)
        except PageNotFoundError as exc:
            raise InvalidInput(f"rev_id: {exc}") from None
        except WikiUnavailableError as exc:
            log.error("revision %s (%s): %s", request.rev_id, request.lang, exc)
            raise InferenceError(f"could not read revision {request.rev_id} from the MediaWiki API of "
                                 f"{request.wiki_db}; try again later") from None
        claims, numbers = claims_of_ref(request, extract_claims(page.text, page.title, self.config.context_words))
        return Prepared(request, claims, {}, numbers, page.title)

    async def preprocess(self, payload: dict[str, Any] | bytes, headers: dict[str, str] | None = None) -> Prepared:
        request = parse_request(payload, self.languages)
        if isinstance(request, RevisionRequest):
            log.info("request for revision %s (%s), ref %r", request.rev_id, request.lang, request.ref)
            return await asyncio.to_thread(self._revision_claims, request)
        return await asyncio.to_thread(claims_of_request, request)  # splits source texts into sentences

    def _verify(self, prepared: Prepared) -> list[Result]:
        """Every claim of the request in one :meth:`Pipeline.verify_claims` call."""
        assert self.pipeline is not None, "load() first"
        pipeline = self.pipeline
        if prepared.given:
            pipeline = copy.copy(pipeline)
            pipeline.load_source = GivenSources(prepared.given, self.pipeline.load_source)
        return pipeline.verify_claims(prepared.claims)

    async def predict(self, prepared: Prepared, headers: dict[str, str] | None = None) -> dict[str, Any]:
        async with self._verifying:
            results = await asyncio.to_thread(self._verify, prepared)
        request = prepared.request
        answer: dict[str, Any] = {"model_name": self.name, "model_version": self.model_version}
        if isinstance(request, RevisionRequest):
            answer.update(wiki_db=request.wiki_db, revision_id=request.rev_id, page_title=prepared.title)
        else:
            answer.update(lang=request.lang, page_title=prepared.title)
        answer["citations"] = [
            citation_output(result, (result.claim.citation.url or "") in prepared.given, number)
            for result, number in zip(results, prepared.ref_numbers, strict=True)
        ]
        return answer


def languages(setting: str) -> frozenset[str]:
    """``LANGUAGES`` (``en,simple``) as a set of codes; empty means the shipped model's."""
    codes = frozenset(code.strip() for code in setting.split(",") if code.strip())
    bad = sorted(code for code in codes if not re.match(LANG_PATTERN, code))
    if bad:
        raise SystemExit(f"LANGUAGES: not Wikipedia language codes: {', '.join(bad)}")
    return codes or DEFAULT_LANGUAGES


def main() -> None:
    model = SideVerifierModel(
        name=os.environ.get("MODEL_NAME") or DEFAULT_MODEL_NAME,
        model_path=os.environ.get("MODEL_PATH") or None,
        index_path=os.environ.get("INDEX_PATH") or None,
        wiki_api=os.environ.get("WIKI_API_URL") or DEFAULT_WIKI_API,
        languages=languages(os.environ.get("LANGUAGES", "")),
    )
    model.load()
    kserve.ModelServer(workers=1).start([model])


if __name__ == "__main__":
    main()
