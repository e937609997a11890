"""How much a weak citation's gap matters (issue 56, item 4): every result JSON carries
``missing`` and ``severity`` and the OpenAPI document names them; the dashboard shows a flag's
severity beside its level ("high: a number is not backed", "low: wording only"), and its queue
takes ``severity=high|low`` (a bad value is a 400, as the other filters' are). On the app with a
real SQLite store and a real Redis queue."""

from __future__ import annotations

import lxml.html

from side.verify.levels import VerdictLevel
from side.verify.severity import missing_and_severity

from webapp import claims_body, finish, outcome

HTML = {"Accept": "text/html"}


def page(response) -> lxml.html.HtmlElement:
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    return lxml.html.fromstring(response.get_data(as_text=True))


def graded(result):
    """What the pipeline sets on a needs-review result: what is missing, and how much it matters."""
    result.missing, result.severity = missing_and_severity(result.verdict.unsupported, result.claim.text,
                                                           result.claim.living_person)
    return result


def stored(client, store) -> tuple[str, list]:
    """One check: a flag missing a number (the claims say "operates N Starbucks stores"), a
    partially supported flag missing wording only, and a supported citation."""
    check = client.post("/api/v1/checks", json=claims_body(n=3)).get_json()["check"]
    claims = store.check(check["id"]).claims
    finish(store, check["id"], [
        graded(outcome(claims[0], 0.10, True, unsupported=("1 Starbucks",))),
        graded(outcome(claims[1], 0.10, True, label="NOT ENOUGH INFO", level=VerdictLevel.PARTIALLY_SUPPORTED,
                       unsupported=("operates",))),
        outcome(claims[2], 0.93, False, label="SUPPORTS"),
    ])
    return check["id"], store.results(check["id"])


def test_every_result_json_carries_what_is_missing_and_its_severity(client, store):
    check_id, rows = stored(client, store)
    assert [(r.missing, r.severity) for r in rows] == [("number", "high"), ("wording", "low"), (None, None)]
    results = client.get(f"/api/v1/checks/{check_id}").get_json()["check"]["results"]
    assert [(r["level"], r["missing"], r["severity"]) for r in results] == [
        ("not_supported", "number", "high"), ("partially_supported", "wording", "low"), ("supported", None, None)]


def test_the_openapi_document_names_missing_and_severity(client):
    schema = client.get("/api/v1/openapi.json").get_json()["components"]["schemas"]["Result"]
    assert {"missing", "severity"} <= set(schema["required"])
    assert schema["properties"]["severity"]["enum"] == ["high", "low", None]
    assert set(schema["properties"]["missing"]["enum"]) == {"number", "date", "name", "quotation", "wording", None}
    assert "living person" in schema["properties"]["severity"]["description"]


def severities(doc) -> list[str]:
    return [" ".join(b.text_content().split()) for b in doc.xpath("//tbody/tr//span[contains(@class, 'severity')]")]


def test_the_queue_shows_each_flag_s_severity_beside_its_level(client, store):
    _, (number, wording, _) = stored(client, store)
    doc = page(client.get("/dashboard/", headers=HTML))
    ids = [int(r.get("data-result-id")) for r in doc.xpath("//tbody/tr")]
    assert ids == [number.id, wording.id]  # not supported leads partially supported (the band)
    assert severities(doc) == ["high: a number is not backed", "low: wording only"]
    [high] = doc.xpath(f"//tr[@data-result-id='{number.id}']//span[@data-severity]")
    assert high.get("data-severity") == "high" and "severity-high" in high.get("class")
    assert "level" in high.getprevious().get("class")  # right after the level's badge
    detail = page(client.get(f"/dashboard/results/{number.id}", headers=HTML))
    assert "high: a number is not backed" in " ".join(detail.text_content().split())


def test_the_queue_filters_by_severity_from_its_select(client, store):
    _, (number, wording, _) = stored(client, store)
    doc = page(client.get("/dashboard/", headers=HTML))
    [select] = doc.xpath("//form[contains(@class, 'filters')]//select[@name='severity']")
    assert [o.get("value") for o in select.xpath("option")] == ["", "high", "low"]
    for value, expected in (("high", [number.id]), ("low", [wording.id])):
        shown = page(client.get(f"/dashboard/?severity={value}", headers=HTML))
        assert [int(r.get("data-result-id")) for r in shown.xpath("//tbody/tr")] == expected
        assert shown.xpath("//select[@name='severity']/option[@selected]/@value") == [value]
    # the view tabs (and the pager) keep the filter
    shown = page(client.get("/dashboard/?severity=high", headers=HTML))
    [tab] = shown.xpath("//nav[@class='queue-views']/a[@data-view='unsure']")
    assert "severity=high" in tab.get("href")


def test_a_bad_severity_is_refused(client, store):
    response = client.get("/dashboard/?severity=urgent", headers=HTML)
    assert response.status_code == 400 and "severity" in response.get_data(as_text=True)
    json_response = client.get("/dashboard/?severity=urgent", headers={"Accept": "application/json"})
    assert json_response.status_code == 400 and "severity" in json_response.get_json()["error"]["message"]


def test_a_gap_in_an_article_about_a_living_person_is_high_even_for_wording(client, store):
    from dataclasses import replace

    check = client.post("/api/v1/checks", json=claims_body(n=1)).get_json()["check"]
    [claim] = store.check(check["id"]).claims
    claim = replace(claim, living_person=True)
    result = graded(outcome(claim, 0.1, True, label="NOT ENOUGH INFO", level=VerdictLevel.PARTIALLY_SUPPORTED,
                            unsupported=("operates",)))
    assert (result.missing, result.severity) == ("wording", "high")
    finish(store, check["id"], [result])
    doc = page(client.get("/dashboard/?severity=high", headers=HTML))
    assert severities(doc) == ["high: wording, in an article about a living person"]
