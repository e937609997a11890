"""The WAFER reader: records in Side's published JSONL schema become Claims."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from side.errors import InputError
from side.extract.claims import Claim
from side.extract.wafer import clean_section, parse_record, read_wafer, split_input

SAMPLE = Path(__file__).parent / "fixtures" / "wafer_sample.jsonl"


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def claims() -> list[Claim]:
    return list(read_wafer(SAMPLE))


def test_one_claim_per_record(records, claims) -> None:
    assert len(claims) == len(records) >= 3
    assert [c.extra["wafer_id"] for c in claims] == [r["id"] for r in records]
    assert all(c.use_index == 0 and c.extra["source"] == "wafer" for c in claims)


def test_title_and_section_come_from_meta(records, claims) -> None:
    for record, claim in zip(records, claims, strict=False):
        assert claim.article_title == record["meta"]["wikipedia_title"]
        raw = record["meta"]["wikipedia_section"].removeprefix("Section::::").rstrip(".")
        assert claim.section == ((raw,) if raw else ())


def test_left_context_is_the_input_before_the_marker(records, claims) -> None:
    for record, claim in zip(records, claims, strict=False):
        before = record["input"].split("[SEP]")[2].split("[CIT]")[0]
        assert claim.left_context == " ".join(before.split())
        assert "[CIT]" not in claim.left_context and "[SEP]" not in claim.left_context


def test_claim_text_is_the_sentence_before_the_marker(records, claims) -> None:
    for record, claim in zip(records, claims, strict=False):
        assert claim.text
        assert claim.left_context.endswith(claim.text)
        sentences = record["meta"].get("sentences")
        if sentences:
            assert claim.text == sentences[-1].split("[CIT]")[0].strip()


def test_citation_url_and_title(records, claims) -> None:
    for record, claim in zip(records, claims, strict=False):
        answers = [o["answer"] for o in record["output"] if o["answer"] != "{Failed verification}"]
        first_provenance = record["output"][0]["provenance"][0]
        expected_url = answers[0] if answers else first_provenance["url"]
        assert claim.citation.url == expected_url
        assert claim.citation.kind in {"bare_url", "external_link"}
        titles = [
            p.get("title") for o in record["output"] for p in o["provenance"] if p["url"] == expected_url
        ]
        assert claim.citation.title == next((t for t in titles if t), None)
        assert claim.extra["failed_verification"] == (not answers)
        assert claim.extra["provenance"][0]["chunk_id"] == first_provenance["chunk_id"]


def test_queries_follow_side(claims) -> None:
    claim = claims[0]
    assert claim.dense_query.startswith(f"{claim.article_title} [SEP] ")
    assert claim.dense_query.endswith(" [CIT]")
    assert claim.article_title in claim.sparse_query


def test_same_url_gives_same_citation_id(records) -> None:
    record = dict(records[0])
    other = {**record, "id": "copy", "input": record["input"].replace("Lake", "The lake")}
    assert parse_record(record).citation.id == parse_record(other).citation.id


def test_context_words_truncates(records) -> None:
    claim = parse_record(records[0], context_words=5)
    assert len(claim.left_context.split()) == 5


def test_marker_at_sentence_start_uses_previous_sentence() -> None:
    record = {
        "id": "x",
        "input": "T [SEP] Section::::. [SEP] First fact here. [CIT] Second part.",
        "output": [{"answer": "http://u.example", "provenance": [{"url": "http://u.example"}]}],
        "meta": {"sentences": ["First fact here.", "[CIT] Second part."]},
    }
    claim = parse_record(record)
    assert claim.text == "First fact here."
    assert claim.article_title == "T"
    assert claim.section == ()


def test_missing_output_and_meta_are_tolerated() -> None:
    claim = parse_record(
        {"id": "y", "input": "Title [SEP] Section::::History. [SEP] Fact one. Fact two. [CIT]"}
    )
    assert claim.article_title == "Title"
    assert claim.section == ("History",)
    assert claim.text == "Fact two."
    assert claim.citation.url is None


def test_helpers() -> None:
    assert clean_section("Section::::Early life.") == ("Early life",)
    assert clean_section("") == ()
    assert split_input("only text [CIT]") == ("", "", "only text [CIT]")
    assert split_input("A [SEP] B") == ("A", "", " B")


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "wafer.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({"id": "z", "input": 5}), "input"),
        (json.dumps({"id": "z", "input": "a [CIT]", "output": {"answer": "x"}}), "output"),
        (json.dumps({"id": "z", "input": "a [CIT]", "output": [{"provenance": [{"chunk_id": "1"}]}]}), "url"),
        (json.dumps({"id": "z", "input": "a [CIT]", "meta": {"sentences": "one"}}), "sentences"),
    ],
)
def test_malformed_line_names_the_line(tmp_path: Path, bad: str, reason: str) -> None:
    good = SAMPLE.read_text(encoding="utf-8").splitlines()[:2]
    path = _write(tmp_path, [good[0], "", good[1], bad])
    reader = read_wafer(path)
    assert next(reader).extra["wafer_id"] == json.loads(good[0])["id"]
    assert next(reader).extra["wafer_id"] == json.loads(good[1])["id"]
    with pytest.raises(InputError) as error:
        next(reader)
    assert f"{path}:4:" in str(error.value)
    assert reason in str(error.value)


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        list(read_wafer(tmp_path / "absent.jsonl"))


def test_gzipped_file_reads_the_same(tmp_path: Path, claims) -> None:
    path = tmp_path / "wafer.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(SAMPLE.read_text(encoding="utf-8"))
    assert list(read_wafer(path)) == claims


def test_non_utf8_file_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"id": "\xe9", "input": "a [CIT]"}\n')
    with pytest.raises(InputError, match="UTF-8"):
        list(read_wafer(path))
