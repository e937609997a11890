"""The OpenAPI 3 document of the API, served at ``/api/v1/openapi.json``.

Written as data next to the code rather than generated from decorators: the API is small, and
the limits come from :mod:`gadget.server.validation` and the running config, so the document
states exactly what the server enforces. tests/test_api_schema.py runs schemathesis against
it, which is what keeps the two honest.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from flask import Blueprint, Response, jsonify

from gadget.server import validation as v
from gadget.server.errors import HTTP_CODES
from gadget.server.security import SESSION_COOKIE
from gadget.server.services import services
from service.store import CheckStatus, DismissReason, ReviewStatus
from side.pipeline import SourceCopy, SourceStatus, SuggestionOrigin
from side.verify.judge import QuoteCheck
from side.verify.levels import VerdictLevel
from side.verify.severity import MissingKind, Severity

bp = Blueprint("openapi", __name__)

#: A suggested source as the API sends it (:meth:`side.pipeline.Suggestion.to_dict`).
SUGGESTION: dict[str, Any] = {
    "type": "object", "properties": {
        "url": {"type": "string"}, "title": {"type": "string"}, "score": {"type": "number"},
        "evidence": {"type": "object", "nullable": True}, "doc_id": {"type": "string"},
        "cite": {"type": "string", "description": "what to paste after the claim: a {{cite web}}, or for one of "
                                                  "the article's own sources its reuse, <ref name=\"X\" />"},
        "origin": {"type": "string", "enum": [o.value for o in SuggestionOrigin],
                   "description": "article: a source this article already cites elsewhere; corpus: a new one"},
        "reuse_ref": {"type": "string", "description": "the name of the article's ref to reuse (\"\" for corpus)"},
        "name_ref": {"type": "string",
                     "description": "when that ref has no name yet: the original ref with the proposed name "
                                    "added, to paste over it first (\"\" otherwise)"},
        "message": {"type": "string", "description": "what the editor is told of the source's origin"}}}

# JSON Schema patterns are ECMA-262 regexes (schemathesis compiles them with Rust's regex
# engine), which cannot name lone surrogates: the document leaves those out, the code refuses
# them too (a JSON string can still escape one, and no database stores it).
#: No control characters (tab, newline and carriage return aside).
MULTILINE = f"^[^{v.CONTROL_CC}]*$"
#: As :data:`MULTILINE`, and without line breaks.
SINGLE_LINE = f"^[^{v.CONTROL_CC}\\n\\r]*$"
#: At least one visible character.
NOT_BLANK = f"^[^{v.CONTROL_CC}]*[^{v.WHITESPACE}{v.CONTROL_CC}][^{v.CONTROL_CC}]*$"
TITLE = (f"^[^{v.TITLE_ILLEGAL_ASCII}]*[^{v.WHITESPACE}_{v.TITLE_ILLEGAL_ASCII}]"
         f"[^{v.TITLE_ILLEGAL_ASCII}]*$")
#: The ``format`` of a wikitext snippet: one that cites at least one source and at most
#: ``MAX_CLAIMS``, which no pattern can say (a client's generator must know it; 422 otherwise).
WIKITEXT_FORMAT = "wikitext"


def string(max_length: int, pattern: str = SINGLE_LINE, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length, "pattern": pattern, **extra}


def values(kind: type[StrEnum]) -> list[str]:
    """An enum's values as the plain strings the API sends and accepts."""
    return [member.value for member in kind]


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def error_response(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ref("Error")}}}


def json_response(description: str, schema: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ref(schema)}}, **extra}


def errors(*statuses: int) -> dict[str, Any]:
    return {str(s): error_response(HTTP_CODES[s].replace("_", " ")) for s in statuses}


def input_schemas(max_wikitext: int) -> dict[str, Any]:
    revision = {"type": "integer", "minimum": 0, "maximum": v.MAX_REVISION, "nullable": True}
    common = {"wiki": {"type": "string", "pattern": v.WIKI_PATTERN},
              "title": string(v.MAX_TITLE, TITLE), "revision": revision, "parent_revision": revision}
    # Optional string fields: null is read as absent (validation.text), so the document says so.
    url = string(v.MAX_URL, v.URL_PATTERN, nullable=True)
    feedback = {"result_id": {"type": "integer", "minimum": 1, "maximum": v.MAX_REVISION},
                "suggestion_url": url,
                "comment": string(v.MAX_COMMENT, MULTILINE, nullable=True)}
    return {
        "ClaimInput": {"type": "object", "additionalProperties": False, "required": ["text"], "properties": {
            "key": string(v.MAX_KEY, nullable=True), "text": string(v.MAX_TEXT, NOT_BLANK),
            "left_context": string(v.MAX_CONTEXT, MULTILINE, nullable=True),
            "section": {"type": "array", "maxItems": v.MAX_SECTIONS, "items": string(v.MAX_SECTION, MULTILINE)},
            "url": url, "citation_title": string(v.MAX_CITATION_TITLE, nullable=True)}},
        "ClaimsCheck": {"type": "object", "additionalProperties": False, "required": ["wiki", "title", "claims"],
                        "properties": {**common, "claims": {"type": "array", "minItems": 1,
                                                            "maxItems": v.MAX_CLAIMS, "items": ref("ClaimInput")}}},
        "WikitextCheck": {"type": "object", "additionalProperties": False,
                          "required": ["wiki", "title", "wikitext"],
                          "properties": {**common, "wikitext": string(
                              max_wikitext, NOT_BLANK, format=WIKITEXT_FORMAT,
                              description=f"Wikitext citing at least one source and at most {v.MAX_CLAIMS} "
                                          "(<ref> tags or {{sfn}}), each after the text it supports: none is "
                                          "422 no_citations, more is 422 too_many_citations, and longer than "
                                          "maxLength is 413 wikitext_too_large.")}},
        "AcceptFeedback": {"type": "object", "additionalProperties": False, "required": ["result_id", "action"],
                           "properties": {**feedback, "action": {"type": "string", "enum": ["accept"]},
                                          "reason": string(64, nullable=True)}},
        "DismissFeedback": {"type": "object", "additionalProperties": False,
                            "required": ["result_id", "action", "reason"],
                            "properties": {**feedback, "action": {"type": "string", "enum": ["dismiss"]},
                                           "reason": {"type": "string", "enum": values(DismissReason)}}},
    }


#: What each ``level`` value means, as the document tells a client.
LEVEL_DESCRIPTION = ("the verdict, shown to people as \"supported\", \"partially supported\", \"not supported\" "
                     "or \"could not be checked: <level_reason>\": supported (the source backs the whole claim), "
                     "partially_supported (it backs part of it; the rest is in unsupported), not_supported (it does "
                     "not back the claim), cannot_check (what was read is not the cited document, or nothing could "
                     "be read; never flagged, never reported)")


def output_schemas() -> dict[str, Any]:
    nullable_number = {"type": "number", "nullable": True}
    result = {"type": "object",
              "required": ["id", "client_key", "claim", "level", "level_reason", "unsupported", "reportable",
                           "flagged", "unsure", "missing", "severity", "review_status"],
              "properties": {
                  "id": {"type": "integer"}, "position": {"type": "integer"}, "client_key": {"type": "string"},
                  "claim": {"type": "string"}, "url": {"type": "string"},
                  "source_status": {"type": "string", "enum": values(SourceStatus)},
                  "source_error": {"type": "string"},
                  "level": {"type": "string", "enum": values(VerdictLevel), "description": LEVEL_DESCRIPTION},
                  "level_reason": {"type": "string",
                                   "description": "why the citation could not be checked; \"\" at every other "
                                                  "level"},
                  "unsupported": {"type": "array", "items": {"type": "string"},
                                  "description": "the claim's words or phrases the source does not back, for a "
                                                 "partially_supported claim; empty at every other level"},
                  "reportable": {"type": "boolean",
                                 "description": "not_supported at the talk-page report's operating point (the "
                                                "bot reports only these); false at every other level"},
                  "score": {**nullable_number,
                            "description": "calibrated support in [0, 1] (higher is better supported) that the "
                                           "level is read from; null when the citation could not be checked"},
                  "flagged": {"type": "boolean",
                              "description": "likely fails review: partially or not supported and Side is sure "
                                             "of it (its score below the sure flag cut), or a clearly better "
                                             "source was found; never for cannot_check, never with unsure"},
                  "unsure": {"type": "boolean",
                             "description": "Side is unsure of the level (its score between the sure flag cut "
                                            "and the supported cut): the level is Side's guess, read as "
                                            "\"probably partially supported; Side is unsure\"; never flagged, "
                                            "never reported on a talk page, and in the dashboard's queue only in "
                                            "its unsure view (view=unsure), after the flags"},
                  "missing": {"type": "string", "enum": [*values(MissingKind), None], "nullable": True,
                              "description": "what the source does not back of a partially or not supported "
                                             "claim (Side's or the judge's level): a number or quantity, a date "
                                             "or year, a name, a quotation, or wording only; null at every other "
                                             "level"},
                  "severity": {"type": "string", "enum": [*values(Severity), None], "nullable": True,
                               "description": "how much that gap matters: high for a missing number, date, name "
                                              "or quotation, and for any gap in an article about a living "
                                              "person; low for wording only; null at every other level. It "
                                              "orders flags of the same likelihood (high first) and filters "
                                              "the dashboard's queue (severity=high|low)"},
                  "reasons": {"type": "array", "items": {"type": "string"}},
                  "evidence": {"type": "array", "items": {"type": "object"}},
                  "suggestions": {"type": "array", "items": SUGGESTION,
                                  "description": "better sources, the article's own (origin article) first"},
                  "review_status": {"type": "string", "enum": values(ReviewStatus)},
                  "source_copy": {"type": "string", "enum": [*values(SourceCopy), None], "nullable": True,
                                  "description": "which copy of the cited source was read: the live page, "
                                                 "an archived copy, or none (not fetched, or not read)"},
                  "source_url": {"type": "string", "description": "the URL actually read (\"\" if none)"},
                  "source_fallback": {"type": "string",
                                      "description": "why that copy and not the live page at first try"},
                  "dashboard_url": {"type": "string"},
                  "decided_by": {"type": "string",
                                 "description": "who decided the level: \"Side\" (Side's own model) or \"LLM: "
                                                "<model>\" (the configured LLM judge, whose quote was found in "
                                                "the source and scored by Side as backing the claim)"},
                  "judge_note": {"type": "string",
                                 "description": "why the judge's answer is not the verdict shown, or why it is "
                                                "still to come (\"\" when neither)"},
                  "judge_pending": {"type": "boolean",
                                    "description": "the citation keeps Side's verdict until the judge answers"},
                  "judge": {"type": "object", "nullable": True,
                            "description": "the LLM judge's answer when it was asked (null when it was not)",
                            "properties": {
                                "model": {"type": "string"}, "level": {"type": "string", "enum": values(VerdictLevel)},
                                "quotes": {"type": "array", "items": {"type": "string"}},
                                "quote_found": {"type": "boolean"}, "accepted": {"type": "boolean"},
                                "unsupported": {"type": "string"}, "confidence": {"type": "number"},
                                "prompt_version": {"type": "string"},
                                "quote_check": {"type": "string", "enum": values(QuoteCheck),
                                                "description": "what Side's verifier made of the quotes: a "
                                                               "supported verdict is taken only when backed"},
                                "quote_support": {"type": "number", "nullable": True,
                                                  "description": "Side's support score of the claim against "
                                                                 "the quotes alone (null: not scored)"}}},
                  "source_instructions": {"type": "array", "items": {"type": "string"},
                                          "description": "instruction-like phrases the cited source holds "
                                                         "(text addressed to an LLM judge), never obeyed"}}}
    check = {"type": "object", "required": ["id", "status", "wiki", "title", "results", "dashboard_url", "page_url"],
             "properties": {
                 "id": {"type": "string", "pattern": v.CHECK_ID_PATTERN},
                 "status": {"type": "string", "enum": values(CheckStatus)}, "wiki": {"type": "string"},
                 "title": {"type": "string"}, "revision": {"type": "integer", "nullable": True},
                 "error": {"type": "string"}, "created_at": {"type": "string"},
                 "finished_at": {"type": "string", "nullable": True}, "dashboard_url": {"type": "string"},
                 "page_url": {"type": "string"}, "results": {"type": "array", "items": ref("Result")}}}
    lead_claim = {"type": "object", "required": ["claim", "position", "level", "score", "nearest", "nearest_section",
                                                 "reason"],
                  "description": "an uncited sentence of the article's lead, checked against the article's own body",
                  "properties": {
                      "id": {"type": "integer"}, "check_id": {"type": "string"},
                      "claim": {"type": "string"},
                      "position": {"type": "integer", "description": "its place among the lead's sentences, from 0"},
                      "level": {"type": "string", "enum": values(VerdictLevel),
                                "description": "how well the body backs it; cannot_check when the article has no "
                                               "body or is not in English (reason says which)"},
                      "score": {**nullable_number, "description": "calibrated support in [0, 1]; null when it "
                                                                  "could not be checked"},
                      "nearest": {"type": "string", "description": "the body sentence nearest the claim"},
                      "nearest_section": {"type": "array", "items": {"type": "string"},
                                          "description": "the headings above that sentence"},
                      "reason": {"type": "string"}, "created_at": {"type": "string"}}}
    error = {"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["code", "message"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}
    return {
        "Result": result, "Check": check, "Error": error,
        "CheckEnvelope": {"type": "object", "required": ["check"], "properties": {"check": ref("Check")}},
        "LeadClaim": lead_claim,
        "PageEnvelope": {"type": "object", "required": ["check", "lead_claims"], "properties": {
            "check": ref("Check"),
            "lead_claims": {"type": "array", "items": ref("LeadClaim"),
                            "description": "the uncited lead sentences of the checked revision with their "
                                           "verdict against the article's body, in lead order (empty when the "
                                           "check was submitted without its article)"}}},
        "FeedbackEnvelope": {"type": "object", "required": ["feedback", "result"],
                             "properties": {"feedback": ref("Feedback"), "result": ref("Result")}},
        "Feedback": {"type": "object", "required": ["id", "result_id", "action", "reviewer"], "properties": {
            "id": {"type": "integer"}, "result_id": {"type": "integer"},
            "action": {"type": "string", "enum": ["accept", "dismiss"]}, "reason": {"type": "string"},
            "comment": {"type": "string"}, "suggestion_url": {"type": "string"},
            "reviewer": {"type": "string", "description": "the wiki user name the reviewer logged in with"},
            "created_at": {"type": "string", "nullable": True}}},
        "Health": {"type": "object", "required": ["status", "components"], "properties": {
            "status": {"type": "string", "enum": ["ok", "degraded", "down"]},
            "components": {"type": "object", "description": "redis, database, workers, scorers and model, "
                                                            "each with ok and its details (docs/service.md)"}}},
    }


def paths() -> dict[str, Any]:
    check_id = {"name": "check_id", "in": "path", "required": True, "schema": {"type": "string", "maxLength": 64}}
    page = [{"name": "wiki", "in": "path", "required": True, "schema": {"type": "string", "pattern": v.WIKI_PATTERN}},
            {"name": "title", "in": "path", "required": True, "schema": string(v.MAX_TITLE, TITLE)}]
    location = {"Location": {"description": "where to poll the check", "schema": {"type": "string"}}}
    return {
        "/api/v1/checks": {"post": {
            "operationId": "createCheck", "summary": "Check claims against their citations",
            "description": "200 with the stored verdicts when this exact work is done (or failed), else 202 "
                           "and poll the Location. A wikitext snippet is capped in length (413) and read "
                           "in time linear in it; 422 when it holds no citation or too many, or when it "
                           "is too malformed to parse within the parser's work budget.",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "oneOf": [ref("ClaimsCheck"), ref("WikitextCheck")]}}}},
            "responses": {"200": json_response("known work, answered from the store", "CheckEnvelope"),
                          "202": json_response("queued", "CheckEnvelope", headers=location),
                          **errors(400, 403, 415, 429, 503),
                          "413": error_response(
                              "too_large: the body is over service.max_body_bytes; wikitext_too_large: the "
                              "wikitext is over its maxLength"),
                          "422": error_response(
                              "no_citations or too_many_citations: the wikitext holds no citation, or more "
                              f"than {v.MAX_CLAIMS}; wikitext_too_complex: it is too malformed to parse "
                              "within the parser's work budget")}}},
        "/api/v1/checks/{check_id}": {"get": {
            "operationId": "getCheck", "summary": "A check with its results (when done)", "parameters": [check_id],
            "responses": {"200": json_response("the check", "CheckEnvelope"), **errors(404)}}},
        "/api/v1/pages/{wiki}/{title}": {"get": {
            "operationId": "getPage", "summary": "Results of the latest checked revision of a page",
            "parameters": page,
            "responses": {"200": json_response("the latest finished check, and its article's lead claims",
                                               "PageEnvelope"), **errors(400, 404)}}},
        "/api/v1/feedback": {"post": {
            "operationId": "postFeedback", "summary": "Accept or dismiss (with a reason) a flagged citation",
            "description": "Only for a reviewer logged in with their wiki account (GET /auth/login in a browser: "
                           "Wikimedia OAuth). The review is stored under the wiki user name of that login; "
                           "there is no name field. 401 login_required without a login.",
            "security": [{"reviewerLogin": []}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "oneOf": [ref("AcceptFeedback"), ref("DismissFeedback")]}}}},
            "responses": {"201": json_response("recorded", "FeedbackEnvelope"),
                          **errors(400, 401, 403, 404, 413, 415, 429)}}},
        "/healthz": {"get": {
            "operationId": "health", "summary": "Redis, database, workers, scorers and model",
            "responses": {"200": json_response("serving (status ok or degraded)", "Health"),
                          "503": json_response("Redis or the database is down", "Health")}}},
        "/metrics": {"get": {
            "operationId": "metrics", "summary": "Prometheus metrics",
            "responses": {"200": {"description": "text exposition format",
                                  "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
    }


def document(public_url: str, max_wikitext: int) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "Side API", "version": "1.0.0",
                 "description": "Citation verification for Wikipedia: submit claims with their citations, "
                                "read verdicts and suggested sources, send patrol feedback."},
        "servers": [{"url": public_url.rstrip("/")}],
        "paths": paths(),
        "components": {"schemas": {**input_schemas(max_wikitext), **output_schemas()},
                       "securitySchemes": {"reviewerLogin": {
                           "type": "apiKey", "in": "cookie", "name": SESSION_COOKIE,
                           "description": "The dashboard's login cookie, set at the end of GET /auth/login "
                                          "(Wikimedia OAuth 1.0a with the wiki)."}}},
    }


@bp.get("/api/v1/openapi.json")
def openapi_json() -> Response:
    svc = services()
    return jsonify(document(svc.config.service.public_url, v.max_wikitext(svc.config.service.max_body_bytes)))
