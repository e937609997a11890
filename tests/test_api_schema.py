"""Schemathesis against the OpenAPI document the app serves (``/api/v1/openapi.json``).

Valid and invalid requests generated from the document go to the app (WSGI, real SQLite
store, real Redis queue); each response must be a documented status with a body matching its
schema, never a 5xx, invalid input must be refused and valid input accepted. This is what
keeps the document and the validation code from drifting apart.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import CHECKS, is_check_class, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.generation import GenerationMode

from gadget.server.api.openapi import WIKITEXT_FORMAT

from webapp import make_config, running_app

#: Examples per operation and generation mode; enough to hit every field's limits.
MAX_EXAMPLES = 40
#: What valid input may get besides 2xx: a missing login or CSRF token, an unknown result,
#: feedback already given, the rate limit. Never 422: a valid wikitext snippet cites a source.
POSITIVE_STATUSES = ["2xx", "401", "403", "404", "409", "429"]
#: An invalid request may also be refused for its size alone (413): a string one past its
#: maxLength, of characters JSON escapes as 12 bytes each, outgrows the body limit.
NEGATIVE_STATUSES = ["400", "403", "404", "405", "413", "415", "422", "429"]


#: The document's ``wikitext`` format: text that cites one to five sources, each after a sentence.
SENTENCE = st.from_regex(r"[A-Z][a-z]{2,12}( [a-z]{2,12}){2,8}", fullmatch=True)
CITED = st.tuples(SENTENCE, st.integers(0, 10**6)).map(
    lambda pair: f"{pair[0]}.<ref>{{{{cite web |url=https://example.org/{pair[1]} |title=Source}}}}</ref>")
schemathesis.openapi.format(WIKITEXT_FORMAT, st.lists(CITED, min_size=1, max_size=5).map(" ".join))


def all_checks() -> list:
    """Every check schemathesis has, as ``--checks all`` runs them on one case (check classes
    belong to stateful runs)."""
    load_all_checks()
    return [check for check in CHECKS.get_all() if not is_check_class(check)]


@pytest.fixture(scope="module")
def app(tmp_path_factory, redis_server):
    config = make_config(tmp_path_factory.mktemp("schema"), redis_server.url, rate_limit="100000/minute")
    with running_app(config) as app:
        yield app


@pytest.fixture(scope="module")
def api_schema(app):
    config = SchemathesisConfig.from_dict({
        "checks": {"positive_data_acceptance": {"expected-statuses": POSITIVE_STATUSES},
                   "negative_data_rejection": {"expected-statuses": NEGATIVE_STATUSES}},
    })
    return schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app, config=config)


#: Every operation of the document (the test below also checks that this list is complete).
OPERATIONS = ["POST /api/v1/checks", "GET /api/v1/checks/{check_id}", "GET /api/v1/pages/{wiki}/{title}",
              "POST /api/v1/feedback", "GET /healthz", "GET /metrics"]
#: Operations that take input: the ones invalid requests can be made for.
WITH_INPUT = OPERATIONS[:4]
CASES = ([pytest.param(label, GenerationMode.POSITIVE, id=f"{label} valid") for label in OPERATIONS]
         + [pytest.param(label, GenerationMode.NEGATIVE, id=f"{label} invalid") for label in WITH_INPUT])


def test_every_operation_is_exercised(api_schema):
    labels = {result.ok().label for result in api_schema.get_all_operations()}
    assert labels == set(OPERATIONS)


# schemathesis.pytest.from_fixture does not run under pytest 9 (it reads Function._nodeid), so
# the cases are drawn from each operation's hypothesis strategy directly.
@pytest.mark.parametrize("label, mode", CASES)
def test_api_conforms_to_its_openapi_document(api_schema, label, mode):
    operation = api_schema.find_operation_by_label(label)

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case):
        case.call_and_validate(checks=all_checks())

    run()
