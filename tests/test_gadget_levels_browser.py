"""The gadget's hints panel in real Chromium, showing what the API answers at each verdict level.

Results at each of the four levels are stored as a worker stores them (tests/webapp.py, real
SQLite and Redis, no model), read back through ``GET /api/v1/checks/<id>``, and that JSON is
rendered by the gadget's own ``side-hints.js`` with its ``side.css`` and English messages in a
blank page. So the test covers the path from the stored level to what the editor sees: the
label, a style of its own per level (as the browser computes it), the words a partially
supported claim has that its source does not back, and "could not be checked" with its reason,
never styled as a failure. The full editor path (MediaWiki, worker, model) is
tests/test_gadget_e2e.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from side.pipeline import Result, SourceStatus
from side.verify.levels import VerdictLevel

from harness.browser import save_screenshot
from webapp import claims_body, finish, outcome

GADGET = Path(__file__).resolve().parents[1] / "gadget"
PAYWALL = 'paywall ("subscribe to continue reading"): only a teaser of a subscribers-only page was served'
#: The panel's module, loaded as a plain script (it is CommonJS, as MediaWiki's ResourceLoader runs it).
PANEL = "var module = { exports: {} };\n{source}\nwindow.sideHints = module.exports;"
#: Make a panel with the gadget's messages and show ``results`` (the API's, in claim order).
RENDER = """([messages, results]) => {
    const msg = (key, ...params) => messages[key].replace(/\\$(\\d+)/g, (m, n) => String(params[n - 1]));
    const panel = window.sideHints.createPanel({document, msg, onConsent() {}, onShow() {}, onInsert() {}});
    document.body.appendChild(panel.element);
    panel.render(results.map((result, n) => ({key: result.client_key, number: n + 1,
                                              text: `Claim ${n + 1}.`, result})));
}"""
#: What the browser computes for each row's label: text, colour, background, border style.
BADGES = """() => [...document.querySelectorAll('.side-hint')].map(row => {
    const badge = row.querySelector('.side-verdict'), style = getComputedStyle(badge);
    return {level: row.getAttribute('data-side-level'), text: badge.textContent, color: style.color,
            background: style.backgroundColor, border: style.borderTopStyle};
})"""


def api_results(client, store) -> list[dict]:
    """One stored result at each level, as ``GET /api/v1/checks/<id>`` answers them."""
    check = client.post("/api/v1/checks", json=claims_body(n=4)).get_json()["check"]
    claims = store.check(check["id"]).claims
    finish(store, check["id"], [
        outcome(claims[0], 0.91, False, label="SUPPORTS", level=VerdictLevel.SUPPORTED),
        outcome(claims[1], 0.44, True, label="NOT ENOUGH INFO", level=VerdictLevel.PARTIALLY_SUPPORTED,
                unsupported=("Mexico", "in 1997"),
                suggestion=("https://better.example/a", "Better", "Alsea opened in Mexico in 1997.")),
        outcome(claims[2], 0.04, True, label="REFUTES", level=VerdictLevel.NOT_SUPPORTED, reportable=True),
        Result(claims[3], SourceStatus.CANNOT_CHECK, source_error=PAYWALL),
    ])
    return client.get(f"/api/v1/checks/{check['id']}").get_json()["check"]["results"]


def test_each_level_from_the_api_is_shown_in_its_own_style(page, client, store):
    results = api_results(client, store)
    messages = json.loads((GADGET / "i18n" / "en.json").read_text(encoding="utf-8"))
    css = (GADGET / "src" / "side.css").read_text(encoding="utf-8")
    page.set_content(f"<!doctype html><html><head><style>{css}</style></head><body></body></html>")
    page.add_script_tag(content=PANEL.replace("{source}", (GADGET / "src" / "side-hints.js").read_text("utf-8")))
    page.evaluate(RENDER, [messages, results])
    save_screenshot(page, "gadget-levels", full_page=False)

    badges = page.evaluate(BADGES)
    assert [(b["level"], b["text"]) for b in badges] == [
        ("supported", "Supported"), ("partially_supported", "Partially supported"),
        ("not_supported", "Not supported"), ("cannot_check", "Could not be checked")]
    assert len({(b["color"], b["background"], b["border"]) for b in badges}) == 4
    supported, partial, not_supported, unchecked = badges
    assert not_supported["color"] == "rgb(215, 51, 51)" and supported["color"] == "rgb(20, 134, 109)"
    assert unchecked["color"] == "rgb(84, 89, 93)" and unchecked["border"] == "dashed"
    assert partial["color"] not in {supported["color"], not_supported["color"]}

    partial_row = page.locator('.side-hint[data-side-level="partially_supported"]')
    assert partial_row.locator(".side-hint__word").all_inner_texts() == ["Mexico", "in 1997"]
    assert partial_row.locator(".side-insert").count() == 1
    unchecked_row = page.locator('.side-hint[data-side-level="cannot_check"]')
    assert unchecked_row.locator(".side-hint__reason").inner_text() == f"Reason: {PAYWALL}"
    assert unchecked_row.locator('[role="alert"], .cdx-message, .side-hint__evidence').count() == 0
    assert "not supported" not in unchecked_row.inner_text().lower()
    assert not page.side_console, page.side_console
