"""Where Side says it is unsure of a level (issue 56): the API's ``unsure`` field and its OpenAPI
document, and the dashboard's queue, whose default view is the flags and whose unsure view (one
click away) lists the results Side is unsure of, their level worded as its guess. On the app with
a real SQLite store and a real Redis queue."""

from __future__ import annotations

import lxml.html

from side.verify.levels import VerdictLevel

from webapp import claims_body, finish, outcome

HTML = {"Accept": "text/html"}


def page(response) -> lxml.html.HtmlElement:
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    return lxml.html.fromstring(response.get_data(as_text=True))


def unsure(result, is_unsure: bool = True):
    result.unsure = is_unsure
    return result


def stored(client, store) -> tuple[str, list]:
    """One check: a sure flag, two unsure partially supported guesses, a supported citation."""
    check = client.post("/api/v1/checks", json=claims_body(n=4)).get_json()["check"]
    claims = store.check(check["id"]).claims
    finish(store, check["id"], [
        outcome(claims[0], 0.05, True),
        unsure(outcome(claims[1], 0.45, False, label="NOT ENOUGH INFO", level=VerdictLevel.PARTIALLY_SUPPORTED)),
        outcome(claims[2], 0.93, False, label="SUPPORTS"),
        unsure(outcome(claims[3], 0.35, False, label="NOT ENOUGH INFO", level=VerdictLevel.PARTIALLY_SUPPORTED)),
    ])
    return check["id"], store.results(check["id"])


def row_ids(doc, css: str) -> list[int]:
    return [int(r.get("data-result-id")) for r in doc.xpath(f"//tr[@class='{css}']")]


def test_every_result_json_says_whether_side_is_unsure(client, store):
    check_id, _ = stored(client, store)
    results = client.get(f"/api/v1/checks/{check_id}").get_json()["check"]["results"]
    assert [(r["level"], r["flagged"], r["unsure"]) for r in results] == [
        ("not_supported", True, False), ("partially_supported", False, True), ("supported", False, False),
        ("partially_supported", False, True)]


def test_the_openapi_document_names_unsure_and_the_flag_it_is_not(client):
    schema = client.get("/api/v1/openapi.json").get_json()["components"]["schemas"]["Result"]
    assert "unsure" in schema["required"] and schema["properties"]["unsure"]["type"] == "boolean"
    assert "Side is unsure" in schema["properties"]["unsure"]["description"]
    assert "never with unsure" in schema["properties"]["flagged"]["description"]


def test_the_queue_shows_the_flags_and_one_click_shows_the_unsure_ones(client, store):
    _, (flag, guess, fine, weaker) = stored(client, store)
    default = page(client.get("/dashboard/", headers=HTML))
    assert row_ids(default, "flagged-row") == [flag.id] and row_ids(default, "unsure-row") == []
    [tab] = default.xpath("//nav[@class='queue-views']/a[@data-view='unsure']")
    assert " ".join(tab.text_content().split()) == "Side is unsure (2 open)"

    view = page(client.get(tab.get("href"), headers=HTML))
    assert row_ids(view, "unsure-row") == [weaker.id, guess.id]  # the weaker support first, as the flags
    assert row_ids(view, "flagged-row") == []
    badges = [" ".join(b.text_content().split()) for b in view.xpath("//tr[@class='unsure-row']//span[contains("
                                                                      "@class, 'level-unsure')]")]
    assert badges == ["probably partially supported; Side is unsure"] * 2
    assert view.xpath("//a[@data-view='unsure']/@aria-current") == ["page"]

    both = page(client.get("/dashboard/?view=all", headers=HTML))
    ids = [int(r.get("data-result-id")) for r in both.xpath("//tbody/tr")]
    assert ids[0] == flag.id and ids[1:] == [weaker.id, guess.id] and fine.id not in ids


def test_an_unsure_result_page_words_its_level_as_side_s_guess(client, store):
    _, (_, guess, _, _) = stored(client, store)
    doc = page(client.get(f"/dashboard/results/{guess.id}", headers=HTML))
    assert doc.xpath("//span[contains(@class, 'level-unsure')]")
    text = " ".join(doc.text_content().split())
    assert "probably partially supported; Side is unsure" in text


def test_the_article_page_lists_flags_then_unsure_guesses_then_the_rest(client, store):
    from gadget.server.present import page_path

    _, (flag, guess, fine, weaker) = stored(client, store)
    doc = page(client.get(page_path("enwiki", "Alsea (company)"), headers=HTML))
    rows = doc.xpath("//tr[contains(@class, 'result-row')]")
    assert [int(r.get("data-result-id")) for r in rows] == [flag.id, weaker.id, guess.id, fine.id]
    assert [r.get("class") for r in rows] == ["result-row flagged", "result-row unsure", "result-row unsure",
                                             "result-row"]


def test_an_unsure_level_reads_as_side_s_guess():
    from gadget.server.present import guess_text

    assert guess_text(VerdictLevel.PARTIALLY_SUPPORTED, True) == "probably partially supported; Side is unsure"
    assert guess_text(VerdictLevel.NOT_SUPPORTED, False) == "not supported"
    assert guess_text(VerdictLevel.CANNOT_CHECK, True, "paywall") == "could not be checked: paywall"


def test_a_bad_view_is_refused(client, store):
    response = client.get("/dashboard/?view=maybe")
    assert response.status_code == 400
    assert "view" in response.get_data(as_text=True)
    json_response = client.get("/dashboard/?view=maybe", headers={"Accept": "application/json"})
    assert json_response.status_code == 400 and "view" in json_response.get_json()["error"]["message"]


def test_metrics_count_the_unsure_apart_from_the_flags(client, store):
    stored(client, store)
    text = client.get("/metrics").get_data(as_text=True)
    assert 'side_flagged_results{review_status="open"} 1.0' in text
    assert 'side_unsure_results{review_status="open"} 2.0' in text
