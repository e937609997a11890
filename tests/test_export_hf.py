"""`side export hf DIR`: the verifier as a Hugging Face checkpoint that other loaders read.

The exported directory is loaded the way an outsider would (sentence-transformers' CrossEncoder,
transformers' AutoModelForSequenceClassification, the Hub's ModelCard) and must score real
claim/sentence pairs as Side's own cross-encoder does in fp32.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from side.cli import main
from side.verify.crossencoder import DEFAULT_MODEL_DIR, LABELS, META_FILE, CrossEncoder, Pair, collate

from conftest import need_data

#: Largest difference allowed between Side's fp32 path and a loader of the export. Both run the same
#: fp32 weights through the same BERT code; only batching and padding order differ.
PROB_TOLERANCE = 1e-5
LOGIT_TOLERANCE = 1e-4
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def claim_sentence_pairs(fp32_cross_encoder) -> list[tuple[str, str]]:
    """Real (claim, sentence) pairs: WiCE claims with gold and other sentences of the page they cite,
    SciFact claims with rationale sentences that support or refute them. Only pairs within the token
    limit, where Side and the standard loaders build the same input."""
    from side.data import load_scifact_claims, load_scifact_corpus, load_wice
    from side.evaluation.verify import wice_sentences

    pairs = []
    for claim in load_wice(need_data("wice/claim_dev.jsonl"))[:12]:
        sentences, gold = wice_sentences(claim), sorted(claim.gold_sentences)
        other = [i for i in range(len(sentences)) if i not in claim.gold_sentences]
        pairs += [(claim.claim, sentences[i]) for i in (gold[:1] + other[:1])]
    corpus = load_scifact_corpus(need_data("scifact/corpus.jsonl"))
    for claim in load_scifact_claims(need_data("scifact/claims_dev.jsonl"))[:40]:
        for doc_id, sets in claim.evidence.items():
            pairs.append((claim.claim, corpus[doc_id].sentences[sets[0]["sentences"][0]]))
    limit = fp32_cross_encoder.pairs.max_length
    fitting = [p for p in pairs if len(fp32_cross_encoder.pairs.encode([Pair("", *p)])[0][0]) < limit]
    assert len(fitting) >= 20
    return fitting


def side_logits(fp32_cross_encoder: CrossEncoder, pairs: list[Pair]) -> np.ndarray:
    import torch

    with torch.inference_mode():
        return fp32_cross_encoder.model(**collate(fp32_cross_encoder.pairs.encode(pairs))).logits.numpy()


def test_sentence_transformers_scores_real_pairs_as_side_does(exported, fp32_cross_encoder, claim_sentence_pairs):
    from sentence_transformers import CrossEncoder as STCrossEncoder

    peer = STCrossEncoder(str(exported), device="cpu")
    assert peer.num_labels == len(LABELS)
    assert peer.max_seq_length == fp32_cross_encoder.pairs.max_length
    ours = fp32_cross_encoder.predict([Pair("", claim, sentence) for claim, sentence in claim_sentence_pairs])
    theirs = peer.predict(claim_sentence_pairs, apply_softmax=True, batch_size=7)
    assert theirs.shape == ours.shape
    assert float(np.abs(theirs - ours).max()) <= PROB_TOLERANCE
    # The pairs span more than one verdict, so the match is not a constant output agreeing with itself.
    assert len(set(ours.argmax(axis=1))) >= 2


def test_transformers_gives_side_logits_with_the_exported_tokenizer(exported, fp32_cross_encoder, claim_sentence_pairs):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(exported))
    model = AutoModelForSequenceClassification.from_pretrained(str(exported)).eval()
    assert model.config.id2label == dict(enumerate(LABELS))
    claims, sentences = zip(*claim_sentence_pairs, strict=True)
    batch = tokenizer(list(claims), list(sentences), padding=True, truncation=True, return_tensors="pt")
    ids, types = zip(*fp32_cross_encoder.pairs.encode([Pair("", c, s) for c, s in claim_sentence_pairs]), strict=True)
    for row, (side_ids, side_types) in enumerate(zip(ids, types, strict=True)):
        width = len(side_ids)
        assert batch["input_ids"][row, :width].tolist() == side_ids
        assert batch["token_type_ids"][row, :width].tolist() == side_types
    with torch.inference_mode():
        logits = model(**batch).logits.numpy()
    expected = side_logits(fp32_cross_encoder, [Pair("", c, s) for c, s in claim_sentence_pairs])
    assert float(np.abs(logits - expected).max()) <= LOGIT_TOLERANCE


def test_side_built_inputs_score_the_same_when_given_as_text(exported, fp32_cross_encoder):
    """Side's own inputs (title, section, left-truncated context): decoded to text, the peer gets
    the same token ids and the same probabilities, so Side's truncation is the only difference.

    A left cut can fall inside a word, whose leading ``##`` piece does not survive decoding; such
    pairs are left out, and most pairs must remain, long (truncated) ones among them."""
    from sentence_transformers import CrossEncoder as STCrossEncoder

    from side.data import load_wice
    from side.evaluation.verify import wice_query, wice_sentences

    claims = load_wice(need_data("wice/claim_dev.jsonl"))[:8]
    pairs = [wice_query(c).pair(s) for c in claims for s in wice_sentences(c)[:2]]
    peer = STCrossEncoder(str(exported), device="cpu")
    tokenizer, kept, texts, truncated = peer.tokenizer, [], [], 0
    for pair, (ids, types) in zip(pairs, fp32_cross_encoder.pairs.encode(pairs), strict=True):
        second = types.index(1)
        text = (tokenizer.decode(ids[1 : second - 1]), tokenizer.decode(ids[second:-1]))
        if tokenizer(*text)["input_ids"] == ids:
            kept.append(pair)
            texts.append(text)
            truncated += len(ids) == fp32_cross_encoder.pairs.max_length
    assert len(kept) >= 0.75 * len(pairs) and truncated >= 1
    theirs = peer.predict(texts, apply_softmax=True)
    assert float(np.abs(theirs - fp32_cross_encoder.predict(kept)).max()) <= PROB_TOLERANCE


def test_export_holds_every_weight_and_names_the_labels(exported, fp32_cross_encoder):
    from safetensors.torch import load_file

    from side.retrieval.encoder import minilm_path

    meta = json.loads((DEFAULT_MODEL_DIR / META_FILE).read_text(encoding="utf-8"))
    config = json.loads((exported / "config.json").read_text(encoding="utf-8"))
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["id2label"] == {str(i): label for i, label in enumerate(meta["labels"])}
    assert config["label2id"] == {label: i for i, label in enumerate(meta["labels"])}
    weights = load_file(str(exported / "model.safetensors"))
    state = fp32_cross_encoder.model.state_dict()
    assert set(weights) == set(state)
    assert all(weights[k].dtype == state[k].dtype and bool((weights[k] == state[k]).all()) for k in state)
    # The frozen embeddings the shipped file leaves out are in, and are the offline package's.
    package = load_file(str(minilm_path() / "model.safetensors"))["embeddings.word_embeddings.weight"]
    assert bool((weights["bert.embeddings.word_embeddings.weight"] == package).all())
    tokenizer_config = json.loads((exported / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert tokenizer_config["model_max_length"] == meta["max_length"]
    assert "local_files_only" not in tokenizer_config and "is_local" not in tokenizer_config
    assert (exported / "tokenizer.json").is_file()


def test_model_card_has_hub_metadata(exported):
    from huggingface_hub import ModelCard

    card = ModelCard.load(exported / "README.md")
    license_text = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"]
    assert card.data.license == license_text.lower()
    assert card.data.library_name == "sentence-transformers"
    assert card.data.pipeline_tag == "text-classification"
    assert card.data.base_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert card.data.language == ["en"] and "cross-encoder" in card.data.tags
    assert card.data.datasets and all("/" in name for name in card.data.datasets)
    assert all(label in card.text for label in LABELS)


def test_the_export_card_is_the_shipped_model_card(exported):
    """One card for the package and the Hub: MODEL_CARD.md, front matter included, byte for byte,
    with the metadata the export declares and the sections of a Hugging Face model card."""
    from huggingface_hub import ModelCard

    from side.verify.hf_export import SIDE_CARD_FILE, card_metadata

    shipped = (DEFAULT_MODEL_DIR / SIDE_CARD_FILE).read_text(encoding="utf-8")
    assert (exported / "README.md").read_text(encoding="utf-8") == shipped
    card = ModelCard.load(DEFAULT_MODEL_DIR / SIDE_CARD_FILE)
    assert card.data.to_dict() == card_metadata().to_dict()
    headings = [line for line in card.text.splitlines() if line.startswith("## ")]
    for section in ("Model details", "Uses", "How to get started", "Training data", "How to rebuild it",
                    "Evaluation", "Limitations", "Bias, risks and recommendations", "Licence", "Citation"):
        assert f"## {section}" in headings


def test_weights_without_a_card_get_one_written_from_their_settings(tmp_path):
    """A model directory with no MODEL_CARD.md (weights trained with --out) gets a card naming its
    base and labels, not the shipped model's card."""
    import shutil

    from huggingface_hub import ModelCard

    from side.verify.hf_export import SIDE_CARD_FILE, export_hf

    model = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, model, ignore=shutil.ignore_patterns(SIDE_CARD_FILE))
    export_hf(tmp_path / "hf", model)
    text = (tmp_path / "hf" / "README.md").read_text(encoding="utf-8")
    assert text != (DEFAULT_MODEL_DIR / SIDE_CARD_FILE).read_text(encoding="utf-8")
    card = ModelCard.load(tmp_path / "hf" / "README.md")
    assert card.data.base_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert all(label in card.text for label in LABELS) and "not the shipped ones" in card.text


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("side: error:") and "\n" not in err and "Traceback" not in err
    return err


def test_non_empty_directory_needs_force(tmp_path, capsys):
    target = tmp_path / "out"
    target.mkdir()
    (target / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["export", "hf", str(target)]) == 2
    err = one_line_error(capsys)
    assert "not empty" in err and "--force" in err
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    assert main(["export", "hf", str(target), "--force"]) == 0
    assert (target / "model.safetensors").is_file() and (target / "notes.txt").read_text() == "mine"


def test_a_file_is_not_a_directory(tmp_path, capsys):
    target = tmp_path / "model.bin"
    target.write_bytes(b"x")
    assert main(["export", "hf", str(target)]) == 2
    assert "is a file" in one_line_error(capsys)
    assert target.read_bytes() == b"x"


def test_the_verifier_directory_itself_is_refused(capsys):
    assert main(["export", "hf", str(DEFAULT_MODEL_DIR), "--force"]) == 2
    assert "own directory" in one_line_error(capsys)
    assert not (DEFAULT_MODEL_DIR / "config.json").exists()


def test_missing_model_is_one_line(tmp_path, capsys):
    assert main(["export", "hf", str(tmp_path / "out"), "--model", str(tmp_path / "nothing")]) == 2
    assert "no verifier weights" in one_line_error(capsys)


@pytest.mark.parametrize("argv, words", [
    (["export", "--help"], ["hf", "Hugging Face"]),
    (["export", "hf", "--help"], ["config.json", "model.safetensors", "README.md", "--force", "--model",
                                  "CrossEncoder"]),
])
def test_help_explains_the_command(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(word in out for word in words)


def test_export_without_a_format_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["export"])
    assert exit_info.value.code == 2
    assert "FORMAT" in capsys.readouterr().err
