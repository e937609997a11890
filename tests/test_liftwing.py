"""Side's Lift Wing model server (deploy/liftwing): the real KServe server, real requests.

The server runs as Lift Wing runs it (``python -m deploy.liftwing.side_verifier.model``, KServe's
``ModelServer``) on a free port of 127.0.0.1 with the shipped verifier, and is asked over HTTP:
claims with the source's text, claims whose URLs a local web server answers (Side's SSRF guard
allows 127.0.0.1 only because the test says so), a revision's refs read through a real local
MediaWiki's Action API, and bad requests, which get HTTP 400 with a message. The sources of the
URL and revision cases are the bot scenario's real pages (tests/test_bot_scenario.py).

Outside CI the module skips when KServe (the ``liftwing`` extra) is not installed; in CI that fails.
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from test_bot_scenario import BAD_CLAIM, GOOD_CLAIM, TITLE, Scenario, start_scenario

from conftest import IN_CI
from harness.liftwing import MODEL, start_model_server
from harness.pins import differing_pins, project_name, requirement_lines

REPO = Path(__file__).resolve().parent.parent
STARTUP_S = 180

EIFFEL_CLAIM = "The Eiffel Tower is 330 metres tall."
EIFFEL_SOURCE = ("Paris hosts many visitors every year. The Eiffel Tower is 330 metres (1,083 ft) tall, about the "
                 "same height as an 81-storey building. Gustave Eiffel's company designed and built the tower.")
FISH_SOURCE = ("Salmon migrate upstream to spawn in freshwater rivers. Many species of trout live in cold lakes. "
               "Fishing licences are required in most regions.")


def need_kserve() -> None:
    if importlib.util.find_spec("kserve") is None:
        message = "kserve is not installed (pip install -e '.[liftwing]')"
        if IN_CI:
            pytest.fail(message + "; CI must run the Lift Wing server tests")
        pytest.skip(message)


@pytest.fixture(scope="module")
def scenario() -> Iterator[Scenario]:
    scenario = start_scenario()
    yield scenario
    scenario.server.stop()


@pytest.fixture(scope="module")
def wiki(request: pytest.FixtureRequest):
    """The local MediaWiki, or None where it is not installed (the revision tests then skip;
    in CI the harness fails instead)."""
    try:
        return request.getfixturevalue("mediawiki")
    except pytest.skip.Exception:
        return None


@pytest.fixture(scope="module")
def server(wiki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The model server's base URL, once it says the model is ready."""
    need_kserve()
    folder = tmp_path_factory.mktemp("liftwing")
    env = {"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1", "SIDE_FETCH_WAYBACK_API": "", "SIDE_VAR_DIR": str(folder / "var"),
           "WIKI_API_URL": wiki.api if wiki is not None else "http://127.0.0.1:9/api.php"}
    with start_model_server(folder, env, STARTUP_S) as port:
        yield f"http://127.0.0.1:{port}"


def predict(server: str, body: object) -> requests.Response:
    return requests.post(f"{server}/v1/models/{MODEL}:predict", json=body, timeout=120)


def by_claim(answer: dict) -> dict[str, dict]:
    return {c["claim"]: c for c in answer["citations"]}


def test_server_says_which_model_is_ready(server):
    response = requests.get(f"{server}/v1/models/{MODEL}", timeout=5)
    assert response.status_code == 200 and response.json() == {"name": MODEL, "ready": True}


def test_claims_with_the_sources_text(server):
    answer = predict(server, {"title": "Eiffel Tower", "claims": [
        {"key": "good", "text": EIFFEL_CLAIM, "section": ["Design"], "source_text": EIFFEL_SOURCE},
        {"key": "bad", "text": EIFFEL_CLAIM, "section": ["Design"], "source_text": FISH_SOURCE},
    ]})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["model_name"] == MODEL and re.fullmatch(r"[0-9a-f]{12}", body["model_version"])
    good, bad = body["citations"]
    assert (good["key"], good["level"], good["level_text"]) == ("good", "supported", "supported")
    assert good["evidence"][0]["text"].startswith("The Eiffel Tower is 330 metres (1,083 ft) tall")
    assert good["source"] == "request" and good["url"] is None and not good["flagged"] and good["reason"] == ""
    assert (bad["key"], bad["level"], bad["level_text"]) == ("bad", "not_supported", "not supported")
    assert bad["flagged"] and bad["score"] < good["score"]
    assert all(e["text"] in FISH_SOURCE for e in bad["evidence"])


def test_claims_with_source_urls_read_through_the_fetcher(server, scenario):
    missing = scenario.server.url("/gone.html")
    answer = predict(server, {"title": TITLE, "claims": [
        {"text": GOOD_CLAIM, "section": ["Career"], "url": scenario.good_url},
        {"text": BAD_CLAIM, "section": ["Awards"], "url": scenario.bad_url},
        {"text": BAD_CLAIM, "url": missing},
        {"text": BAD_CLAIM, "url": "http://169.254.169.254/latest/meta-data/"},
    ]})
    assert answer.status_code == 200, answer.text
    good, bad, gone, metadata = answer.json()["citations"]
    assert (good["level"], good["source"], good["url"], good["source_url"]) == (
        "supported", "fetched", scenario.good_url, scenario.good_url)
    assert good["evidence"] and all(e["text"] for e in good["evidence"])
    assert (bad["level"], bad["source"]) == ("not_supported", "fetched") and bad["flagged"]
    assert gone["level"] == "cannot_check" and gone["score"] is None and "404" in gone["reason"]
    assert metadata["level"] == "cannot_check" and "refusing" in metadata["reason"]  # only 127.0.0.1 is allowed
    assert scenario.server.hits["/gone.html"] >= 1


def test_a_revisions_refs_read_through_the_wiki_api(server, wiki, scenario):
    if wiki is None:
        pytest.skip("MediaWiki is not installed (scripts/install.sh installs it)")
    title = f"{TITLE} {uuid.uuid4().hex[:6]}"
    revision = wiki.edit(title, scenario.edit, user="Alice")

    every = predict(server, {"lang": "en", "rev_id": revision})
    assert every.status_code == 200, every.text
    body = every.json()
    assert (body["wiki_db"], body["revision_id"], body["page_title"]) == ("enwiki", revision, title)
    assert [c["ref"]["number"] for c in body["citations"]] == [1, 2, 3]
    claims = by_claim(body)
    assert claims[GOOD_CLAIM]["level"] == "supported" and claims[GOOD_CLAIM]["url"] == scenario.good_url
    assert claims[BAD_CLAIM]["level"] == "not_supported" and claims[BAD_CLAIM]["reportable"]

    named = predict(server, {"lang": "en", "rev_id": revision, "ref": "nahl"}).json()["citations"]
    assert [c["ref"] for c in named] == [{"number": 1, "name": "nahl"}]
    assert named[0]["url"] == scenario.seed_url and named[0]["source"] == "fetched"
    numbered = predict(server, {"lang": "en", "rev_id": revision, "ref": 3}).json()["citations"]
    assert [(c["claim"], c["level"], c["ref"]["number"]) for c in numbered] == [(BAD_CLAIM, "not_supported", 3)]

    for body, status, message in [
        ({"lang": "en", "rev_id": revision, "ref": "nosuch"}, 400, "has no ref named 'nosuch' (its named refs: nahl)"),
        ({"lang": "en", "rev_id": revision, "ref": 4}, 400, "has 3 references, so no number 4"),
        ({"lang": "en", "rev_id": 10**9}, 400, "has no revision 1000000000"),
    ]:
        response = predict(server, body)
        assert (response.status_code, message in response.json()["error"]) == (status, True), response.text


LONG = "x" * 2001


@pytest.mark.parametrize("body, message", [
    ([1, 2], "the body must be a JSON object"),
    ({}, "send exactly one of 'rev_id' (with 'lang') or 'claims'"),
    ({"lang": "en", "rev_id": 1, "claims": []}, "send exactly one of"),
    ({"rev_id": 1}, "lang: is required"),
    ({"lang": "enwiki", "rev_id": 1}, "without the 'wiki' suffix"),
    ({"lang": "e n", "rev_id": 1}, "lang: must be a Wikipedia language code"),
    ({"lang": "en", "rev_id": "1"}, "rev_id: must be an integer"),
    ({"lang": "en", "rev_id": 0}, "rev_id: must be between 1 and"),
    ({"lang": "en", "rev_id": 1, "ref": True}, "ref: must be a ref's name"),
    ({"lang": "en", "rev_id": 1, "ref": 0}, "ref: numbers start at 1"),
    ({"lang": "en", "rev_id": 1, "page": "X"}, "unknown field(s) 'page'"),
    ({"claims": []}, "claims: must be a non-empty list"),
    ({"claims": [{"text": "a"}] * 51}, "claims: at most 50 claims per request"),
    ({"claims": [{"text": " "}]}, "claims[0].text: must not be empty"),
    ({"claims": [{"text": LONG}]}, "claims[0].text: is longer than 2000 characters"),
    ({"claims": [{"text": "a", "url": "javascript:alert(1)"}]}, "claims[0].url: must be an http(s) URL"),
    ({"claims": [{"text": "a", "source_text": "y" * 100_001}]}, "claims[0].source_text: is longer than 100000"),
    ({"claims": [{"text": "a", "source_text": "y" * 90_000}] * 5}, "source texts together are longer than 400000"),
    ({"claims": [{"text": "a", "url": "https://a.example/", "source_text": "one"},
                 {"text": "b", "url": "https://a.example/", "source_text": "two"}]},
     "claims[1].source_text: differs from claims[0]'s text for the same url"),
    ({"claims": [{"text": "a\x00"}]}, "claims[0].text: contains control characters"),
    ({"claims": [{"text": "a", "section": "x" * 256}]}, "claims[0].section: headings must be strings of at most 255"),
    ({"claims": [{"text": "a", "verdict": "supported"}]}, "claims[0]: unknown field(s) 'verdict'"),
    ({"lang": "en"}, "send exactly one of 'rev_id' (with 'lang') or 'claims'"),
    ({"claims": [{"url": "https://a.example/"}]}, "claims[0].text: is required"),
    ({"claims": [{"text": "x" * 1_000_000}]}, "claims[0].text: is longer than 2000 characters"),
    ({"claims": [{"text": "a", "source_text": "y" * 1_000_000}]}, "claims[0].source_text: is longer than 100000"),
    ({"lang": "xx", "rev_id": 1},
     "lang: 'xx' is not supported: this model verifies claims of these Wikipedias only: en, simple, test"),
    ({"lang": "de", "rev_id": 1}, "lang: 'de' is not supported"),
    ({"lang": "de", "claims": [{"text": "a", "source_text": "b"}]}, "lang: 'de' is not supported"),
])
def test_bad_requests_get_400_with_a_message(server, body, message):
    response = predict(server, body)
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]


def test_simple_english_is_read(server):
    answer = predict(server, {"lang": "simple", "title": "Eiffel Tower", "claims": [
        {"text": EIFFEL_CLAIM, "source_text": EIFFEL_SOURCE}]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["lang"] == "simple" and answer.json()["citations"][0]["level"] == "supported"


def test_languages_setting():
    need_kserve()
    from deploy.liftwing.side_verifier.model import languages

    assert languages("") == frozenset({"en", "simple", "test"})
    assert languages(" en, de ,") == frozenset({"en", "de"})
    with pytest.raises(SystemExit, match="not Wikipedia language codes: e n"):
        languages("en,e n")


def test_a_source_text_sent_again_is_split_once():
    need_kserve()
    from deploy.liftwing.side_verifier.model import _given_source

    first = _given_source(EIFFEL_SOURCE)
    assert first.sentences[1].startswith("The Eiffel Tower is 330 metres")
    assert _given_source("".join(EIFFEL_SOURCE)) is first and _given_source(FISH_SOURCE) is not first


def test_a_body_that_is_not_json_gets_400(server):
    for data, headers in [(b"not json", {}), (b"{bad", {"Content-Type": "application/json"})]:
        response = requests.post(f"{server}/v1/models/{MODEL}:predict", data=data, headers=headers, timeout=10)
        assert response.status_code == 400 and response.json()["error"], response.text


def test_the_image_installs_what_the_library_and_the_extra_need():
    """deploy/liftwing's requirements.txt pins exactly the dependencies of ``side`` and its
    ``liftwing`` extra (blubber installs the image from that file, not from pyproject.toml)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = {project_name(r) for r in project["dependencies"] + project["optional-dependencies"]["liftwing"]}
    pinned = requirement_lines(REPO / "deploy" / "liftwing" / "side_verifier" / "requirements.txt")
    assert {project_name(p) for p in pinned} == wanted
    assert all("==" in p for p in pinned), "the image pins every version"


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-test.txt"])
def test_the_image_pins_the_versions_the_tests_run(name):
    """Each pin is the version installed here (a local build label such as torch's ``+cpu`` aside);
    a package not installed here (kserve without the extra) is not compared."""
    assert differing_pins(REPO / "deploy" / "liftwing" / "side_verifier" / name) == {}, "pinned, installed"


def test_blubber_builds_tests_and_serves_the_model_from_a_model_path():
    """deploy/liftwing/blubber.yaml in today's inference-services shape: build, production and test
    variants, the venv copied from the build, and the verifier read from MODEL_PATH, not baked in."""
    import yaml

    text = (REPO / "deploy" / "liftwing" / "blubber.yaml").read_text(encoding="utf-8")
    assert re.match(r"# syntax=docker-registry\.wikimedia\.org/repos/releng/blubber/buildkit:v\d+\.\d+\.\d+\n", text)
    blubber = yaml.safe_load(text)
    assert blubber["version"] == "v4" and set(blubber["variants"]) == {"build", "production", "test"}
    assert blubber["runs"]["environment"]["MODEL_PATH"] == "/mnt/models"
    build, production, test = (blubber["variants"][v] for v in ("build", "production", "test"))
    python = next(b["python"] for b in build["builders"] if "python" in b)
    assert python["requirements"] == ["deploy/liftwing/side_verifier/requirements.txt"]
    assert {"requirements": ["side"], "command": ["rm", "-rf", "side/models/verifier"]} in [
        b["custom"] for b in build["builders"] if "custom" in b]
    local = [c["source"] for c in production["copies"] if c["from"] == "local"]
    assert local == ["deploy/liftwing/side_verifier"], "the library comes from the build, without the weights"
    assert {"from": "build", "source": "/srv/side_verifier/side", "destination": "side"} in production["copies"]
    module = production["entrypoint"][-1]
    assert production["entrypoint"][:2] == ["python3", "-m"] and importlib.util.find_spec(module) is not None
    for variant in (production, test):
        for copy in variant["copies"]:
            assert copy["from"] == "build" or (REPO / copy["source"]).exists(), copy
    test_python = next(b["python"] for b in test["builders"] if "python" in b)
    assert all((REPO / r).is_file() for r in test_python["requirements"])
    assert test["entrypoint"][-1] == "tests/test_liftwing.py" and test["runs"]["environment"]["MODEL_PATH"] == ""
