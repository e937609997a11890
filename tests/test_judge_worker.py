"""The LLM judge on the worker path, end to end: Redis, a real ``side-worker`` with the judge
configured, the results store, the dashboard, and the real LLM server on 127.0.0.1, which the
tests take down and throttle. No citation is lost or left without a verdict: while the judge
cannot answer each keeps Side's verdict and waits in the store, and a later job judges it."""

from __future__ import annotations

import time

import pytest
import redis
import requests

from service.store import CheckRequest
from side.extract.claims import Citation, Claim
from side.verify.levels import VerdictLevel

from alsea import alsea_sources
from harness.llm import MODEL_ALIAS

pytestmark = pytest.mark.slow

LLM = f"LLM: {MODEL_ALIAS}"


def claim(text: str, url: str, key: str) -> Claim:
    return Claim(article_title="Alsea (company)", section=("History",), text=text, left_context=text,
                 citation=Citation(id=key, kind="external_link", url=url))


@pytest.fixture(scope="module")
def sources():
    with alsea_sources() as server:
        yield server


@pytest.fixture(scope="module")
def stack(service_stack, sources, llm_server):
    origin = llm_server.url.removesuffix("/v1")
    return service_stack(env={"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1", "SIDE_JUDGE_ENDPOINT": llm_server.url,
                              "SIDE_JUDGE_ALLOW_ENDPOINTS": origin, "SIDE_JUDGE_MODEL": MODEL_ALIAS,
                              "SIDE_JUDGE_MODE": "all", "SIDE_JUDGE_RATE_PER_HOUR": "2",
                              "SIDE_JUDGE_TIMEOUT_S": "600", "SIDE_JUDGE_RETRIES": "0", "SIDE_JUDGE_MAX_TOKENS": "128",
                              "SIDE_JUDGE_RETRY_LATER_S": "2"})


def new_check(sources, revision: int, city: str) -> CheckRequest:
    """Three citations; ``city`` makes the claims differ between tests (the judge's cache would
    answer claims it has seen)."""
    claims = [claim(f"Alsea operates Starbucks in {city}.", sources.url("/alsea"), "c1"),
              claim(f"Alsea was founded in 1990 in {city}.", sources.url("/alsea"), "c2"),
              claim(f"Alsea was founded in 1990 in {city}.", sources.url("/weather"), "c3")]
    return CheckRequest(wiki="enwiki", title="Alsea (company)", revision=revision, origin="bot", claims=claims,
                        client_keys=["c1", "c2", "c3"])


def spend_no_budget(stack) -> None:
    """The clock hour turns: the judge's budget in Redis starts afresh."""
    connection = redis.Redis.from_url(stack.redis_url)
    for key in connection.scan_iter("side:judge:budget:*"):
        connection.delete(key)


def wait_judged(stack, check_id: str, timeout: float = 1800.0, new_hours: bool = False) -> list:
    """The results once none waits for the judge; ``new_hours``: the budget starts afresh each
    time it is looked at (as if an hour had passed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if new_hours:
            spend_no_budget(stack)
        results = stack.store().results(check_id)
        if results and not any(r.judge_pending for r in results) and not stack.store().pending_judgements(check_id):
            return results
        time.sleep(0.5)
    pytest.fail(f"citations of {check_id} still wait for the judge:\n{stack.worker_log.read_text()[-3000:]}")


def assert_answered(results: list) -> None:
    """Every citation got the judge's answer (or, when the small model's output was cut off or
    malformed, the note that Side's verdict stands), and each level is the judge's exactly when its
    verdict was accepted. Which verdicts a 270M model gives is not what these tests measure."""
    for result in results:
        assert not result.judge_pending
        if result.judge is None:
            assert "no usable verdict" in result.judge_note, result.judge_note
            continue
        assert result.judge.model == MODEL_ALIAS
        assert result.decided_by == (LLM if result.judge.accepted else "Side")
        if result.judge.accepted:
            assert result.level == result.judge.level
        else:
            assert LLM in result.judge_note and "Side's verdict stands" in result.judge_note


def test_verdicts_wait_while_the_endpoint_is_down_and_are_judged_when_it_is_back(stack, sources, llm_server):
    spend_no_budget(stack)
    llm_server.stop()
    try:
        record, _ = stack.submit(new_check(sources, 201, "Mexico"))
        done = stack.wait_for(record.id, timeout=1800)
        assert done.status == "done", done.error
        results = stack.store().results(record.id)
        assert len(results) == 3 and all(r.decided_by == "Side" for r in results)
        assert all(r.judge_pending and "judged later" in r.judge_note for r in results)
        assert len(stack.store().pending_judgements(record.id)) == 3
    finally:
        llm_server.start()
    judged = wait_judged(stack, record.id, new_hours=True)  # three to judge, two an hour
    assert len(judged) == 3
    assert_answered(judged)


def test_an_exhausted_budget_leaves_citations_to_be_judged_later_and_the_dashboard_names_the_llm(stack, sources):
    spend_no_budget(stack)
    record, _ = stack.submit(new_check(sources, 202, "Mexico City"))
    done = stack.wait_for(record.id, timeout=1800)
    assert done.status == "done", done.error
    results = stack.store().results(record.id)
    assert [r.judge_pending for r in results] == [False, False, True]  # a budget of 2 an hour
    third = results[2]
    assert third.judge_pending and third.decided_by == "Side" and "budget" in third.judge_note
    assert third.level is VerdictLevel.NOT_SUPPORTED and third.flagged  # Side's own: the weather page backs none of it
    time.sleep(3)
    assert stack.store().pending_judgements(record.id)  # tried again: still no budget, still kept
    spend_no_budget(stack)
    judged = wait_judged(stack, record.id)
    assert_answered(judged)

    for result in (r for r in judged if r.judge is not None):  # the dashboard names the LLM either way
        page = requests.get(f"{stack.web_url}/dashboard/results/{result.id}", timeout=30)
        assert page.status_code == 200
        decided_by = page.text.split('class="decided-by">', 1)[1].split("<", 1)[0]
        assert decided_by == result.decided_by
        assert LLM in page.text  # as the decider, or in the note saying why Side's verdict stands
    api = requests.get(f"{stack.api_url}/checks/{record.id}", timeout=30).json()["check"]
    assert {r["client_key"]: r["decided_by"] for r in api["results"]} == {r.client_key: r.decided_by for r in judged}
