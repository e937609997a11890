"""Number formats of the verifier: what ``auto`` picks, bad settings, and bf16's drift from fp32."""

from __future__ import annotations

import numpy as np
import pytest

from side.cli import main
from side.errors import ConfigError
from side.verify import precision
from side.verify.crossencoder import CrossEncoder

from conftest import need_data


@pytest.mark.parametrize("native, expected", [(True, "bf16"), (False, "fp32")])
def test_auto_is_bf16_only_on_a_cpu_with_native_bf16(monkeypatch, native, expected):
    monkeypatch.setattr(precision, "native_bf16", lambda: native)
    assert precision.resolve("auto", "cpu") == expected
    assert precision.resolve("auto", "cuda") == "fp32"
    assert precision.resolve("int8", "cpu") == "int8"


@pytest.mark.parametrize("name, device, message", [
    ("fast", "cpu", "unknown precision 'fast'"),
    ("int8", "cuda", "CPU only"),
])
def test_bad_precision_is_a_config_error(name, device, message):
    with pytest.raises(ConfigError, match=message):
        precision.resolve(name, device)


def test_cli_reports_a_bad_precision_in_one_line(monkeypatch, tmp_path, capsys):
    article = tmp_path / "A.wikitext"
    article.write_text("Paris is in France.<ref>[https://example.org/p Paris]</ref>\n", encoding="utf-8")
    monkeypatch.setenv("SIDE_VERIFIER_PRECISION", "fast")
    assert main(["verify", str(article), "--offline", "--no-index"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("side: error:") and "unknown precision 'fast'" in err and "\n" not in err


def test_bf16_stays_within_its_stated_tolerance_of_fp32():
    """On real WiCE pairs, the bf16 path (the default on bf16 CPUs) moves P(SUPPORTS) very little."""
    from side.data import load_wice
    from side.evaluation.verify import wice_query

    claims = load_wice(need_data("wice/claim_dev.jsonl"))[:40]
    pairs = [wice_query(c).pair(s) for c in claims for s in c.evidence[:2]]
    full = CrossEncoder(device="cpu", precision="fp32")
    half = CrossEncoder(device="cpu", precision="bf16")
    assert (full.precision, half.precision) == ("fp32", "bf16")
    p32, p16 = full.predict(pairs), half.predict(pairs)
    assert p16.dtype == np.float32 and np.allclose(p16.sum(axis=1), 1.0, atol=1e-4)
    assert float(np.abs(p16 - p32).max()) <= precision.BF16_TOLERANCE
    # And the formats really differ: bf16 is not fp32 under another name.
    assert float(np.abs(p16 - p32).max()) > 0


def test_auto_and_the_format_it_means_share_one_bi_encoder():
    from side.retrieval.encoder import shared_encoder

    auto = shared_encoder("cpu")
    assert auto is shared_encoder("cpu", precision.resolve("auto", "cpu"))
    assert auto.precision == precision.resolve("auto", "cpu")


def test_bf16_bi_encoder_similarities_stay_within_tolerance():
    """Cosine similarities (evidence selection, dense retrieval, the combiner) barely move in bf16."""
    from side.data import load_wice
    from side.retrieval.encoder import Encoder

    claims = load_wice(need_data("wice/claim_dev.jsonl"))[:20]
    texts = [c.claim for c in claims] + [s for c in claims for s in c.evidence[:3]]
    v32 = Encoder(device="cpu", precision="fp32").encode(texts)
    v16 = Encoder(device="cpu", precision="bf16").encode(texts)
    assert v16.dtype == np.float32 and np.allclose(np.linalg.norm(v16, axis=1), 1.0, atol=1e-4)
    s32, s16 = v32 @ v32.T, v16 @ v16.T
    assert float(np.abs(s16 - s32).max()) <= precision.BF16_TOLERANCE
    assert float(np.abs(s16 - s32).max()) > 0
