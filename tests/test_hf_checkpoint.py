"""Any Hugging Face sequence-classification checkpoint as the verifier's cross-encoder.

The checkpoints are the ones Side itself writes (`side export hf`), then rewritten the way other
checkpoints differ: labels in another order and under NLI names, a two-label (entailment or not)
head, labels Side cannot read. Each must score real pairs as Side's own loader does (both fp32),
with the outputs moved to Side's SUPPORTS / REFUTES / NOT ENOUGH INFO columns.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from side.cli import main
from side.config import Config
from side.errors import ModelLoadError
from side.retrieval.corpus import Document, build_corpus
from side.retrieval.retriever import build_index
from side.verify.crossencoder import NEI, REFUTES, SUPPORTS, CrossEncoder, Pair, label_columns, read_label_map
from side.verify.levels import LevelThresholds
from side.verify.verifier import Verifier

from conftest import need_data

#: Both loaders run the same fp32 weights through the same BERT code on the same token ids.
PROB_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def real_pairs() -> list[Pair]:
    """WiCE claims in their article context against a gold and a non-gold sentence of the cited
    page, SciFact claims against rationales that support or refute them, and one pair long enough
    that both sides are cut to the token budget."""
    from side.data import load_scifact_claims, load_scifact_corpus, load_wice
    from side.evaluation.verify import wice_sentences

    corpus = load_scifact_corpus(need_data("scifact/corpus.jsonl"))
    pairs = []
    for claim in load_scifact_claims(need_data("scifact/claims_dev.jsonl"))[:16]:
        for doc_id, sets in claim.evidence.items():
            pairs.append(Pair("", claim.claim, corpus[doc_id].sentences[sets[0]["sentences"][0]]))
    for claim in load_wice(need_data("wice/claim_dev.jsonl"))[:6]:
        sentences, gold = wice_sentences(claim), sorted(claim.gold_sentences)
        other = [i for i in range(len(sentences)) if i not in claim.gold_sentences]
        for i in gold[:1] + other[:1]:
            pairs.append(Pair("Article", f"Section [SEP] {claim.claim}", sentences[i], "Source page"))
    pairs.append(Pair("Article", " ".join(sentences[:20]) + " " + claim.claim, " ".join(sentences[:40])))
    return pairs


def rewrite(source: Path, target: Path, labels: list[str], rows: list[int]) -> Path:
    """A copy of the checkpoint whose output i is Side's column ``rows[i]``, named ``labels[i]``."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(source, target)
    config_file = target / "config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["id2label"] = {str(i): name for i, name in enumerate(labels)}
    config["label2id"] = {name: i for i, name in enumerate(labels)}
    config_file.write_text(json.dumps(config), encoding="utf-8")
    state = load_file(str(target / "model.safetensors"))
    for name in ("classifier.weight", "classifier.bias"):
        state[name] = state[name][rows].contiguous()
    save_file(state, str(target / "model.safetensors"), metadata={"format": "pt"})
    return target


def test_exported_checkpoint_scores_real_pairs_as_the_native_loader(exported, fp32_cross_encoder, real_pairs):
    checkpoint = CrossEncoder(exported, device="cpu", precision="fp32")
    assert checkpoint.format == "hf" and fp32_cross_encoder.format == "side"
    assert checkpoint.columns == [SUPPORTS, REFUTES, NEI]
    assert checkpoint.pairs.max_length == fp32_cross_encoder.pairs.max_length
    # The long pair is cut the same way: Side's truncation, not the tokenizer's.
    assert checkpoint.pairs.encode(real_pairs) == fp32_cross_encoder.pairs.encode(real_pairs)
    assert len(checkpoint.pairs.encode(real_pairs[-1:])[0][0]) == fp32_cross_encoder.pairs.max_length
    ours, theirs = fp32_cross_encoder.predict(real_pairs), checkpoint.predict(real_pairs, batch_size=5)
    assert float(np.abs(theirs - ours).max()) <= PROB_TOLERANCE
    assert len({int(row.argmax()) for row in ours}) > 1  # the pairs are not all one class


def test_permuted_labels_under_nli_names_map_to_sides_columns(exported, fp32_cross_encoder, real_pairs, tmp_path):
    # Output 0 is NEI, 1 SUPPORTS, 2 REFUTES, named as MNLI checkpoints name them.
    rows = [NEI, SUPPORTS, REFUTES]
    checkpoint = CrossEncoder(rewrite(exported, tmp_path / "nli", ["Neutral", "ENTAILMENT", "contradiction"], rows),
                              device="cpu", precision="fp32")
    assert checkpoint.columns == rows
    difference = np.abs(checkpoint.predict(real_pairs) - fp32_cross_encoder.predict(real_pairs))
    assert float(difference.max()) <= PROB_TOLERANCE


def test_two_label_checkpoint_gives_support_and_not_enough_info(exported, fp32_cross_encoder, real_pairs, tmp_path):
    directory = rewrite(exported, tmp_path / "binary", ["entailment", "not_entailment"], [SUPPORTS, NEI])
    checkpoint = CrossEncoder(directory, device="cpu", precision="fp32")
    probs, full = checkpoint.predict(real_pairs), fp32_cross_encoder.predict(real_pairs)
    assert checkpoint.model.config.num_labels == 2
    assert np.all(probs[:, REFUTES] == 0.0)
    # A softmax over the SUPPORTS and NEI logits alone: the three-way odds between the two.
    expected = full[:, SUPPORTS] / (full[:, SUPPORTS] + full[:, NEI])
    assert float(np.abs(probs[:, SUPPORTS] - expected).max()) <= PROB_TOLERANCE
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("names, columns", [
    ({0: "SUPPORTS", 1: "REFUTES", 2: "NOT ENOUGH INFO"}, [SUPPORTS, REFUTES, NEI]),
    ({0: "not_enough_info", 1: "Supported", 2: "Not  Supported"}, [NEI, SUPPORTS, REFUTES]),
    ({0: "False", 1: "NEI", 2: "true"}, [REFUTES, NEI, SUPPORTS]),
    ({0: "refutes", 1: "support"}, [NEI, SUPPORTS]),  # two labels: not supporting is not enough info
    ({0: "not-entailment", 1: "entails"}, [NEI, SUPPORTS]),
])
def test_label_names_are_read_whatever_their_case_and_spacing(names, columns):
    assert label_columns(names) == columns


@pytest.mark.parametrize("names, words", [
    ({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}, ["'LABEL_0'", "'LABEL_2'"]),
    ({0: "entailment", 1: "entailment", 2: "neutral"}, ["do not name"]),
    ({0: "neutral", 1: "contradiction"}, ["do not name"]),
    ({0: "entailment"}, ["do not name"]),
])
def test_labels_side_cannot_read_are_refused(names, words):
    with pytest.raises(ModelLoadError) as error:
        label_columns(names)
    assert all(word in str(error.value) for word in words)


def test_label_map_comes_from_label2id_when_id2label_is_missing(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"label2id": {"neutral": 1, "entailment": 0}}))
    assert read_label_map(tmp_path / "config.json") == {0: "entailment", 1: "neutral"}
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelLoadError, match="names no labels"):
        read_label_map(tmp_path / "config.json")


@pytest.fixture(scope="module")
def unknown_labels(exported, tmp_path_factory) -> Path:
    return rewrite(exported, tmp_path_factory.mktemp("unknown") / "ckpt", ["cat", "dog", "neutral"], [0, 1, 2])


def test_unknown_labels_are_a_typed_error_naming_them(unknown_labels):
    with pytest.raises(ModelLoadError, match="'cat', 'dog'"):
        CrossEncoder(unknown_labels, device="cpu")


def test_unknown_labels_are_one_line_and_exit_2_in_side_verify(unknown_labels, tmp_path, capsys):
    article = tmp_path / "A.wikitext"
    article.write_text("A claim.<ref>[https://example.invalid/a Page]</ref>\n", encoding="utf-8")
    code = main(["verify", str(article), "--model", str(unknown_labels), "--no-index", "--offline"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "'cat', 'dog'" in err and "Traceback" not in err


def test_a_directory_with_neither_format_names_both(tmp_path):
    with pytest.raises(ModelLoadError, match="no verifier weights.*config.json"):
        CrossEncoder(tmp_path)


def test_exporting_a_checkpoint_again_is_refused(exported, tmp_path, capsys):
    assert main(["export", "hf", str(tmp_path / "again"), "--model", str(exported)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "already a Hugging Face checkpoint" in err
    assert not (tmp_path / "again").exists()


def test_verifier_without_combiner_scores_by_support_with_default_cuts(exported, caplog):
    assert not (exported / "combiner.json").exists()
    with caplog.at_level(logging.INFO, logger="side.verify.verifier"):
        verifier = Verifier.load(exported, device="cpu", precision="fp32")
    assert verifier.combiner is None and verifier.levels == LevelThresholds()
    assert "hf format" in caplog.text and "default level cuts" in caplog.text


DOCS = [
    Document("d1", "https://museum.example/eiffel/height", "Eiffel Tower facts",
             "The Eiffel Tower is 330 metres (1,083 ft) tall. It was the tallest man-made structure in the "
             "world until 1930. Gustave Eiffel's engineering company designed and built the tower."),
    Document("d2", "https://fish.example/salmon", "Salmon",
             "Salmon migrate upstream to spawn in freshwater rivers. Many species of trout live in cold lakes."),
]

ARTICLE = """'''Eiffel Tower''' is a landmark.

== Design ==
The Eiffel Tower is 330 metres tall.<ref>[https://museum.example/eiffel/height Eiffel Tower facts]</ref>
The tower is painted every seven years.<ref>[https://fish.example/salmon Salmon]</ref>
"""


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("index")
    build_index(build_corpus(DOCS, directory / "corpus"), directory, progress=False)
    return directory


def check_report(report: dict) -> dict[str, dict]:
    """The verdicts of the tiny article, each scored from the index by the checkpoint."""
    assert report["citations"] == 2
    by_url = {r["claim"]["citation"]["url"]: r["verdict"] for r in report["results"]}
    for verdict in by_url.values():
        signals = verdict["signals"]
        # No combiner beside the checkpoint: the score is the best SUPPORTS probability.
        assert verdict["score"] == pytest.approx(max(signals["ce_support"], signals["ce_window"]), abs=1e-4)
    assert by_url[DOCS[0].url]["score"] > by_url[DOCS[1].url]["score"]
    return by_url


def test_side_verify_runs_offline_with_an_exported_checkpoint(exported, index_dir, tmp_path, capsys):
    article = tmp_path / "Eiffel_Tower.wikitext"
    article.write_text(ARTICLE, encoding="utf-8")
    code = main(["verify", str(article), "--model", str(exported), "--index", str(index_dir), "--offline", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert {r["source_status"] for r in report["results"]} == {"corpus"}
    check_report(report)


def test_configured_model_dir_reaches_the_workers_pipeline(exported, index_dir, monkeypatch):
    from side.extract.wikitext import extract_claims
    from side.pipeline import ArticleResults, Pipeline

    config = Config()
    config.verifier.model_dir = str(exported)
    config.verifier.device = "cpu"
    pipeline = Pipeline.from_config(config, offline=True, index_dir=index_dir)
    assert pipeline.verifier.cross_encoder.format == "hf"
    results = pipeline.verify_claims(extract_claims(ARTICLE, "Eiffel Tower"))
    check_report(ArticleResults("Eiffel Tower", results, 0.0).to_dict())


def test_worker_pipeline_runs_the_checkpoint_on_cuda(exported, index_dir):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine: the checkpoint's GPU path is not exercised here")
    from side.extract.wikitext import extract_claims
    from side.pipeline import ArticleResults, Pipeline

    config = Config()
    config.verifier.model_dir = str(exported)  # device "auto": CUDA when present, as a worker runs
    pipeline = Pipeline.from_config(config, offline=True, index_dir=index_dir)
    cross = pipeline.verifier.cross_encoder
    assert cross.device.startswith("cuda") and next(cross.model.parameters()).is_cuda
    gpu = check_report(ArticleResults("Eiffel Tower", pipeline.verify_claims(extract_claims(ARTICLE, "Eiffel Tower")),
                                      0.0).to_dict())
    config.verifier.device = "cpu"
    config.verifier.precision = "fp32"
    cpu = check_report(ArticleResults("Eiffel Tower", Pipeline.from_config(config, offline=True, index_dir=index_dir)
                                      .verify_claims(extract_claims(ARTICLE, "Eiffel Tower")), 0.0).to_dict())
    for url, verdict in gpu.items():  # fp32 on both; TF32 matmuls on the GPU move the last digits
        assert verdict["score"] == pytest.approx(cpu[url]["score"], abs=1e-2)


@pytest.fixture(scope="module")
def roberta_layout(tmp_path_factory) -> Path:
    """A checkpoint of another family: RoBERTa's pair layout (<s> q </s></s> d </s>, no token
    types), MNLI's label order, its own word-level tokenizer with a 16-token limit. The weights are
    random: the test is about what reaches the model and where its outputs go, not its verdicts."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForSequenceClassification

    directory = tmp_path_factory.mktemp("roberta") / "ckpt"
    words = "<s> <pad> </s> <unk> the tower is tall metres paris".split()
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
        pad_token="<pad>", unk_token="<unk>", model_input_names=["input_ids", "attention_mask"], model_max_length=16,
    ).save_pretrained(directory)
    labels = ["contradiction", "neutral", "entailment"]
    config = RobertaConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=40, pad_token_id=1, bos_token_id=0,
                           eos_token_id=2, id2label=dict(enumerate(labels)),
                           label2id={name: i for i, name in enumerate(labels)})
    RobertaForSequenceClassification(config).save_pretrained(directory)
    return directory


def test_another_model_family_gets_its_own_pair_layout_and_side_truncation(roberta_layout):
    import torch

    checkpoint = CrossEncoder(roberta_layout, device="cpu", precision="fp32")
    tokenizer = checkpoint.pairs.tokenizer
    assert checkpoint.columns == [REFUTES, NEI, SUPPORTS] and checkpoint.pairs.max_length == 16
    assert "token_type_ids" not in checkpoint.inputs
    short = Pair("the", "tower is tall", "paris metres")
    ids, _ = checkpoint.pairs.encode([short])[0]
    # Side's title separator becomes the tokenizer's own, and the layout is the tokenizer's.
    assert ids == tokenizer("the </s> tower is tall", "paris metres")["input_ids"]
    long = Pair("the", "is " * 20 + "tall", "paris " + "metres " * 20)
    ids, _ = checkpoint.pairs.encode([long])[0]
    assert len(ids) == 16 and tokenizer.decode(ids).split() == \
        ["<s>", "is", "is", "is", "is", "tall", "</s>", "</s>", "paris"] + ["metres"] * 6 + ["</s>"]
    probs = checkpoint.predict([short, long])
    with torch.inference_mode():
        batch = tokenizer(["the </s> tower is tall"], ["paris metres"], return_tensors="pt")
        logits = checkpoint.model(**batch).logits.softmax(-1)[0].numpy()
    assert probs[0, [REFUTES, NEI, SUPPORTS]] == pytest.approx(logits, abs=1e-6)
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-6)
