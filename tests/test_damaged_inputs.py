"""Files that are not what a command expects are one line and exit 2, never a traceback.

Found by feeding every path-taking option files of the wrong kind: text that is not UTF-8,
records of another shape, an empty file, a damaged index or model folder (a full disk, a hand
edit), an output path under a file. Each used to end in a traceback (UnicodeDecodeError,
KeyError, JSONDecodeError, FileExistsError, a FAISS RuntimeError), some only after the work
was done; a few were taken silently ("maybe" as false, a truncated feedback export).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys

import numpy as np
import pytest

from side.cli import main as side_main
from side.cli.jsonout import json_text
from side.config import REPO_ROOT, load_config
from side.data import load_scifact_claims, load_scifact_corpus, load_wice, read_jsonl
from side.errors import ConfigError, InputError, ModelLoadError
from side.evaluation.verify import failure_metrics, precision_at_recall
from side.training.feedback import FEEDBACK_FORMAT, read_feedback
from side.verify.crossencoder import DEFAULT_MODEL_DIR, read_label_map
from side.verify.verifier import COMBINER_FILE, Combiner

from conftest import need_data

WICE = {"claim": "Alsea was founded in 1990.", "label": "supported", "evidence": ["Alsea began in 1990.", "Other."],
        "supporting_sentences": [[0]], "meta": {"id": "dev1", "claim_title": "Alsea"}}


def one_line_exit_2(argv, capsys, *contains: str) -> str:
    assert side_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("side: error: "), err
    for part in contains:
        assert part in err[0], err[0]
    return err[0]


def write_jsonl(path, *records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_text_that_is_not_utf8_names_its_line(tmp_path, capsys):
    bad = tmp_path / "docs.jsonl"
    bad.write_bytes(b'{"id": "a", "url": "https://a.example", "title": "A", "text": "fine"}\n\xff\xfe\x00abc\n')
    with pytest.raises(InputError, match=r"docs.jsonl:2: not UTF-8 text"):
        list(read_jsonl(bad))
    one_line_exit_2(["index", "build", "--jsonl", str(bad), "--out", str(tmp_path / "index")], capsys,
                    "docs.jsonl:2: not UTF-8 text")
    assert not (tmp_path / "index").exists()


@pytest.mark.parametrize(("change", "reason"), [
    ({"claim": None}, "no 'claim'"),
    ({"claim": 5}, "claim is not text"),
    ({"label": "bogus"}, "label 'bogus' is none of supported, partially_supported, not_supported"),
    ({"meta": [1]}, "meta is not an object"),
    ({"evidence": [1, 2]}, "evidence is not a list of sentences"),
    ({"evidence": "abc"}, "evidence is not a list of sentences"),
    ({"supporting_sentences": [1, 2]}, "supporting_sentences is not a list of lists"),
    ({"supporting_sentences": [[99]]}, "supporting_sentences is not a list of lists"),
    ({"meta": {"claim_title": ["A"]}}, "claim_title is not text"),
])
def test_a_wice_record_of_the_wrong_shape_is_named(tmp_path, change, reason):
    record = {key: value for key, value in {**WICE, **change}.items() if value is not None}
    path = write_jsonl(tmp_path / "claims.jsonl", WICE, record)
    with pytest.raises(InputError) as caught:
        load_wice(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:2: not a WiCE claim: ") and reason in message, message


def test_wice_claims_keep_their_ids_and_number_the_rest(tmp_path):
    path = write_jsonl(tmp_path / "claims.jsonl", WICE, {**WICE, "meta": {}})
    assert [c.id for c in load_wice(path)] == ["dev1", "1"]
    assert load_wice(path)[0].gold_sentences == {0}


def test_scifact_records_of_the_wrong_shape_are_named(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", {"doc_id": 1, "title": "T", "abstract": ["A.", "B."]},
                         {"title": "no id", "abstract": []})
    with pytest.raises(InputError, match=r"corpus.jsonl:2: not a SciFact abstract: no 'doc_id'"):
        load_scifact_corpus(corpus)
    claims = write_jsonl(tmp_path / "claims.jsonl", {"id": 1, "claim": "C", "evidence": {"1": []}},
                         {"id": "abc", "claim": "C"})
    with pytest.raises(InputError, match=r"claims.jsonl:2: not a SciFact claim: invalid literal"):
        load_scifact_claims(claims)
    listed = write_jsonl(tmp_path / "listed.jsonl", {"id": 1, "claim": "C", "evidence": [1]})
    with pytest.raises(InputError, match=r"evidence is not an object"):
        load_scifact_claims(listed)


def test_an_empty_claims_file_is_refused_not_scored_as_zero(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    one_line_exit_2(["eval", "window", "--claims", str(empty)], capsys, "empty.jsonl: no WiCE claims in it")
    with pytest.raises(InputError, match="no SciFact claims in it"):
        load_scifact_claims(empty)


def test_metrics_over_one_class_are_null_in_json_not_nan():
    """``eval verify wice --limit 1`` used to crash in precision_at_recall (no not-supported claim)
    and, where it did not, printed the bare word NaN, which no JSON reader takes."""
    supported_only = np.array([False, False])
    assert math.isnan(precision_at_recall(supported_only, np.array([0.2, 0.9])))
    metrics = failure_metrics(["supported"], np.array([0.8]))
    assert json.loads(json_text(metrics)) == {"auroc_not_supported": None, "auroc_not_fully_supported": None,
                                              "precision_at_15_recall": None}
    assert json.loads(json_text({"a": [1.5, float("inf")], "b": (float("-inf"),)})) == {"a": [1.5, None], "b": [None]}
    assert precision_at_recall(np.array([True, False]), np.array([0.9, 0.1])) == 1.0


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """A small real index (BM25 and embeddings) to damage copies of."""
    folder = tmp_path_factory.mktemp("index")
    documents = write_jsonl(folder / "docs.jsonl",
                            {"id": "a", "url": "https://a.example/", "title": "Coffee", "text": "Coffee is brewed."},
                            {"id": "b", "url": "https://b.example/", "title": "Tea", "text": "Tea is steeped."})
    assert side_main(["index", "build", "--jsonl", documents, "--out", str(folder / "index")]) == 0
    return folder / "index"


@pytest.mark.parametrize(("name", "content", "message"), [
    ("index.json", b"{bad", "the index's"),
    ("index.json", b"[1]", "is not a JSON object"),
    ("index.json", b"\xff\xfe", "is not UTF-8 text"),
    ("index.json", b'{"corpus_dir": 5}', "names no corpus folder"),
    ("dense.faiss", b"garbage", "is not a readable FAISS index"),
])
def test_a_damaged_index_is_one_line(index, tmp_path, capsys, name, content, message):
    damaged = tmp_path / "damaged"
    shutil.copytree(index, damaged)
    (damaged / name).write_bytes(content)
    capsys.readouterr()
    one_line_exit_2(["search", "coffee", "--index", str(damaged)], capsys, message, name)


def test_a_damaged_corpus_is_one_line(index, tmp_path, capsys):
    damaged = tmp_path / "damaged"
    shutil.copytree(index, damaged)
    manifest = next(damaged.rglob("manifest.json"))
    passages = manifest.parent / "passages.jsonl"
    passages.write_text(passages.read_text().replace('"passage_id"', '"renamed"'))
    capsys.readouterr()
    one_line_exit_2(["search", "coffee", "--index", str(damaged)], capsys, "is damaged", "build the index again")
    manifest.write_text("{bad")
    one_line_exit_2(["index", "stats", "--out", str(damaged)], capsys, "the corpus's", "not valid JSON")


@pytest.fixture
def model(tmp_path):
    """A copy of the shipped model's small files, its weights linked."""
    folder = tmp_path / "model"
    folder.mkdir()
    for path in DEFAULT_MODEL_DIR.iterdir():
        if path.is_file():
            (folder / path.name).symlink_to(path) if path.suffix == ".safetensors" else shutil.copy(path, folder)
    return folder


@pytest.mark.parametrize(("content", "message"), [
    ("{bad", "is not valid JSON"),
    ("[1]", "is not a JSON object"),
    ('{"features": ["soft_coverage"], "coef": [1.0], "mean": [0.0], "scale": [1.0], "intercept": 0, "bogus": 1}',
     "is not a combiner this version of Side reads"),
    ('{"features": ["soft_coverage"], "coef": ["x"], "mean": [0.0], "scale": [1.0], "intercept": 0}',
     "are not numbers, one per feature"),
])
def test_a_damaged_combiner_is_a_model_load_error(model, content, message):
    (model / COMBINER_FILE).unlink()
    (model / COMBINER_FILE).write_text(content)
    with pytest.raises(ModelLoadError, match=message):
        Combiner.load(model / COMBINER_FILE)


def test_a_damaged_model_folder_is_one_line(model, tmp_path, capsys):
    from side.verify.crossencoder import META_FILE, WEIGHTS_FILE, CrossEncoder

    (model / META_FILE).write_text("{bad")
    with pytest.raises(ModelLoadError, match=r"verifier.json is not valid JSON"):
        CrossEncoder(model, device="cpu", precision="fp32")
    (model / META_FILE).unlink()
    shutil.copy(DEFAULT_MODEL_DIR / META_FILE, model / META_FILE)
    (model / WEIGHTS_FILE).unlink()
    (model / WEIGHTS_FILE).write_bytes(b"\x00" * 64)
    with pytest.raises(ModelLoadError, match=r"is not readable safetensors weights"):
        CrossEncoder(model, device="cpu", precision="fp32")
    config = tmp_path / "config.json"
    for content, message in [("[1]", "not a JSON object"), ('{"id2label": {"a": "S"}}', "do not map class numbers"),
                             ('{"id2label": ["S"]}', "do not map class numbers")]:
        config.write_text(content)
        with pytest.raises(ModelLoadError, match=message):
            read_label_map(config)


def test_an_output_under_a_file_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path / "var"))
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    one_line_exit_2(["train", "verifier", "--out", str(a_file), "--max-steps", "1"], capsys,
                    f"--out {a_file}: {a_file} is a file, not a folder")
    one_line_exit_2(["index", "build", "--demo", "--out", str(a_file / "sub")], capsys, "is a file, not a folder")
    assert not (tmp_path / "var").exists()


def test_a_system_error_on_a_named_path_is_one_line(tmp_path, capsys):
    """What no check foresaw still reaches the user as the system's reason and the path."""
    target = tmp_path / "out.wikitext"
    target.mkdir()
    need_data("wice/claim_dev.jsonl")
    one_line_exit_2(["index", "demo-article", "--out", str(target)], capsys, "Is a directory", str(target))


@pytest.mark.parametrize(("toml", "message"), [
    ('[fetch]\narchive = "maybe"\n', "fetch.archive must be true or false, not 'maybe'"),
    ("[fetch]\nuser_agent = [1, 2]\n", "fetch.user_agent must be text"),
    ("[fetch]\nmax_bytes = true\n", "fetch.max_bytes must be a number"),
    ("[fetch]\nallow_hosts = {a = 1}\n", "fetch.allow_hosts must be a list of text"),
    ("[retrieval]\npassage_words = 1.7\n", "retrieval.passage_words must be a whole number, not 1.7"),
])
def test_a_setting_of_the_wrong_kind_is_refused_not_bent(tmp_path, toml, message):
    path = tmp_path / "side.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    assert message in str(caught.value)
    path.write_text("")
    with pytest.raises(ConfigError, match="must be true or false"):
        load_config(None, environ={"SIDE_CONFIG": str(path), "SIDE_FETCH_ARCHIVE": "maybe"})
    assert load_config(None, environ={"SIDE_CONFIG": str(path), "SIDE_FETCH_ARCHIVE": "off",
                                      "SIDE_RETRIEVAL_PASSAGE_WORDS": "80"}).fetch.archive is False


def feedback_file(tmp_path, header: dict, *records: dict):
    path = tmp_path / "feedback.jsonl"
    write_jsonl(path, {"format": FEEDBACK_FORMAT, **header}, *records)
    return path


REVIEW = {"version": 1, "claim": "Alsea was founded in 1990.", "action": "accept", "score": 0.3}


def test_a_feedback_export_that_was_cut_short_or_bent_is_refused(tmp_path):
    with pytest.raises(InputError, match="counts 5 records and it holds 1"):
        read_feedback(feedback_file(tmp_path, {"version": 1, "records": 5}, REVIEW))
    with pytest.raises(InputError, match="version True is not 1"):
        read_feedback(feedback_file(tmp_path, {"version": True, "records": 1}, REVIEW))
    with pytest.raises(InputError, match=r":2: malformed feedback record: score 24 is not a support score"):
        read_feedback(feedback_file(tmp_path, {"version": 1, "records": 1}, {**REVIEW, "score": 24}))
    path = feedback_file(tmp_path, {"version": 1, "records": 1}, REVIEW)
    path.write_bytes(path.read_bytes() + b"\xff\n")
    with pytest.raises(InputError, match=r":3: not UTF-8 text"):
        read_feedback(path)
    assert len(read_feedback(feedback_file(tmp_path, {"version": 1, "records": 1}, REVIEW))) == 1


def test_the_bot_probe_takes_a_folder_for_no_checkpoint(tmp_path):
    folder, a_file, empty = tmp_path / "folder", tmp_path / "afile", tmp_path / "empty.toml"
    folder.mkdir()
    a_file.write_text("")
    empty.write_text("")
    for checkpoint in (folder, a_file / "x.json"):
        done = subprocess.run([sys.executable, "-m", "bot.probe", "--checkpoint", str(checkpoint), "--grace", "0"],
                              capture_output=True, text=True, cwd=REPO_ROOT, timeout=60,
                              env={"SIDE_CONFIG": str(empty), "PATH": "/usr/bin:/bin"})
        assert done.returncode == 1 and done.stdout.strip() == f"NOT alive: no checkpoint at {checkpoint}", done


def test_a_crawl_state_that_is_no_sqlite_file_is_one_line(tmp_path):
    from side.sources.crawl import CrawlState

    not_sqlite = tmp_path / "state.jsonl"
    not_sqlite.write_text('{"a": 1}\n' * 200)
    for path in (tmp_path, not_sqlite):
        with pytest.raises(InputError, match="cannot be opened as SQLite"):
            CrawlState(path)


def test_smaller_readers_refuse_what_they_used_to_bend(tmp_path, capsys):
    """``eval lead`` read a named article with errors="replace" where ``side lead`` refuses it;
    ``lead --model`` with no such folder passed when no lead claim needed the model; the SciFact
    oracle setting dropped a cited abstract the corpus lacks and scored the claim without it."""
    from side.evaluation.lead import articles

    article = tmp_path / "Article.wikitext"
    article.write_bytes(b"Lead.\xff\n")
    with pytest.raises(InputError, match="is not UTF-8 text"):
        list(articles(tmp_path, [article]))
    article.write_text("No citation in this lead.\n")
    one_line_exit_2(["lead", str(article), "--model", str(tmp_path / "none")], capsys, "no such model folder")

    corpus = write_jsonl(tmp_path / "corpus.jsonl", {"doc_id": 1, "title": "T", "abstract": ["A."]})
    claims = write_jsonl(tmp_path / "claims.jsonl", {"id": 7, "claim": "C.", "cited_doc_ids": [1, 999]})
    assert side_main(["eval", "verify", "scifact", "--setting", "oracle", "--claims", claims, "--corpus", corpus]) == 2
    err = capsys.readouterr().err  # after the progress bar's first line, the one error line
    assert "Traceback" not in err and err.rstrip().endswith("does not hold") and "claim 7 cites 999, which" in err


def test_a_misspelt_setting_variable_is_refused_not_ignored(tmp_path):
    """SIDE_FETCH_TIMEOUT_SECONDS was ignored without a word, and the timeout stayed 10 s."""
    (tmp_path / "empty.toml").write_text("")
    none = str(tmp_path / "empty.toml")
    with pytest.raises(ConfigError, match=r"SIDE_FETCH_TIMEOUT_SECONDS names no setting of \[fetch\] "
                                          r"\(did you mean SIDE_FETCH_TIMEOUT_S\?\)"):
        load_config(None, environ={"SIDE_CONFIG": none, "SIDE_FETCH_TIMEOUT_SECONDS": "5"})
    with pytest.raises(ConfigError, match=r"^SIDE_VERIFIER_MAX_LENGTH names no setting of \[verifier\]$"):
        load_config(None, environ={"SIDE_CONFIG": none, "SIDE_VERIFIER_MAX_LENGTH": "256"})
    # outside the sections' prefixes, and side-bot's own log level, are not Side's settings to judge
    config = load_config(None, environ={"SIDE_CONFIG": none, "SIDE_BOT_LOG_LEVEL": "DEBUG", "SIDE_INSTALL_LLM": "0",
                                        "SIDE_FETCH_TIMEOUT_S": "5"})
    assert config.fetch.timeout_s == 5.0


def test_a_misspelt_top_level_or_section_variable_is_refused(tmp_path):
    """SIDE_DATADIR (for SIDE_DATA_DIR) was ignored, and the default data folder used instead;
    so was a misspelt section (SIDE_FETCHH_...). A program's own SIDE_* name still passes."""
    (tmp_path / "empty.toml").write_text("")
    none = str(tmp_path / "empty.toml")
    with pytest.raises(ConfigError, match=r"^SIDE_DATADIR names no setting \(did you mean SIDE_DATA_DIR\?\)$"):
        load_config(None, environ={"SIDE_CONFIG": none, "SIDE_DATADIR": str(tmp_path)})
    with pytest.raises(ConfigError, match=r"did you mean SIDE_FETCH_TIMEOUT_S\?"):
        load_config(None, environ={"SIDE_CONFIG": none, "SIDE_FETCHH_TIMEOUT_S": "5"})
    config = load_config(None, environ={"SIDE_CONFIG": none, "SIDE_DATA_DIR": str(tmp_path), "SIDE_WIKI_LOCAL_API":
                                        "http://127.0.0.1:8080/api.php", "SIDE_TEST_MARIADB": "0", "SIDE_STREAM": "x"})
    assert config.data_dir == tmp_path


def test_a_side_config_that_names_no_file_is_refused(tmp_path, monkeypatch, capsys):
    """With a misspelt SIDE_CONFIG every command ran on the defaults without a word."""
    with pytest.raises(ConfigError, match=r"^SIDE_CONFIG names .*nope.toml, which is not a file$"):
        load_config(None, environ={"SIDE_CONFIG": str(tmp_path / "nope.toml")})
    monkeypatch.setenv("SIDE_CONFIG", str(tmp_path))  # a folder is no file either
    one_line_exit_2(["index", "info"], capsys, "SIDE_CONFIG names", "which is not a file")
    assert load_config(None, environ={"SIDE_CONFIG": ""}).fetch.timeout_s > 0  # empty: not set
