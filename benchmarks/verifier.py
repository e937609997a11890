"""Verifier inference speed: Side's path vs sentence-transformers ``CrossEncoder.predict``.

Both score the same (claim, passage) pairs with the same weights. The peer gets the model saved
in Hugging Face format; Side's path runs length-sorted, dynamically padded batches under
``torch.inference_mode()`` in fp32, in bf16 (its default on CPUs with native bf16 units) and in
int8 dynamic quantization (CPU). Prints pairs per second, the ratio to the peer measured in the
same run, the largest absolute difference in the SUPPORTS probability. Then the memory peak of
scoring one article: ``side verify --offline`` in its own process (model load, sources and
candidates from the evidence index of ``side index build --demo --dataset wice``, which must be built), so the
figure is what one check costs a user, not what this benchmark's other models add to it. The
default article is the demo's (``side index demo-article``: real WiCE claims whose cited pages
the demo index holds), so every source is read.

    .venv/bin/python benchmarks/verifier.py [--pairs 512] [--batch-size 32] [--article FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np


def real_pairs(n: int):
    """The first sentences of WiCE dev pages against their claims, built as Side builds them."""
    from side.config import load_config
    from side.data import load_wice
    from side.evaluation.verify import wice_query, wice_sentences

    config = load_config()
    claims = load_wice(config.data_dir / "wice" / "claim_dev.jsonl")
    pairs = [wice_query(claim).pair(sentence) for claim in claims for sentence in wice_sentences(claim)[:6]]
    return pairs[:n]


def peer_model(cross, directory: str, device: str, dtype=None):
    """Save Side's model in HF format and load it as a sentence-transformers CrossEncoder.

    ``dtype`` loads the peer in another number format (its ``model_kwargs``), for the
    like-for-like row: the peer asked for bf16 too.
    """
    from sentence_transformers import CrossEncoder as STCrossEncoder

    cross.model.save_pretrained(directory)
    cross.pairs.tokenizer.save_pretrained(directory)
    kwargs = {"model_kwargs": {"dtype": dtype}} if dtype is not None else {}
    return STCrossEncoder(directory, device=device, max_length=cross.pairs.max_length, **kwargs)


def same_inputs(cross, pairs) -> list[tuple[str, str]]:
    tokenizer = cross.pairs.tokenizer
    out = []
    for ids, types in cross.pairs.encode(pairs):
        second = types.index(1)  # first token of the passage segment
        out.append((tokenizer.decode(ids[1 : second - 1]), tokenizer.decode(ids[second:-1])))
    return out


def score_article(article: Path, device: str) -> str:
    """Run ``side verify`` on one article in a child process; its wall time and peak RSS.

    The child is the only process this benchmark waits for, so RUSAGE_CHILDREN's peak is its own.
    """
    from side.config import load_config

    index = Path(load_config().index_dir)
    if not index.is_dir():
        raise SystemExit(f"no evidence index at {index}: build it first with `side index build --demo --dataset wice`")
    command = [sys.executable, "-m", "side", "verify", str(article), "--offline", "--json"]
    env = dict(os.environ, SIDE_VERIFIER_DEVICE=device)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"side verify failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    report = json.loads(done.stdout)
    results = report["results"]
    judged = sum(1 for c in results if c["source_status"] in ("corpus", "cache", "fetched"))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return (f"one article: `side verify --offline {article.name}`: {len(results)} citations "
            f"({judged} with source text) in {wall:.1f} s, "
            f"peak RSS {peak:.0f} MiB")


def timed(fn, repeat: int = 2):
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda: both paths run there")
    parser.add_argument("--model", help="verifier model directory (default: the shipped one)")
    parser.add_argument("--article", type=Path, help="wikitext whose check is measured for memory "
                        "(default: the demo article of `side index demo-article`)")
    args = parser.parse_args()
    from side.config import load_config

    # First, before this process loads any model: the child's peak must be its own.
    if args.article:
        article_line = score_article(args.article, args.device)
    else:
        from side.demo import DEFAULT_TITLE, demo_article

        with tempfile.TemporaryDirectory() as tmp:
            article = Path(tmp) / f"{DEFAULT_TITLE}.wikitext"
            article.write_text(demo_article(Path(load_config().data_dir) / "wice" / "claim_dev.jsonl"),
                               encoding="utf-8")
            article_line = score_article(article, args.device)
    import torch

    from side.verify.crossencoder import CrossEncoder
    from side.verify.precision import resolve

    pairs = real_pairs(args.pairs)
    # Side's paths by number format: fp32, bf16 (the default on CPUs with native bf16 units, see
    # side.verify.precision) and, on a CPU, int8 dynamic quantization.
    formats = ("fp32", "bf16") if args.device.startswith("cuda") else ("fp32", "bf16", "int8")
    paths = {name: CrossEncoder(args.model, device=args.device, precision=name) for name in formats}
    with tempfile.TemporaryDirectory() as tmp:
        # The peer tokenises (text_a, text_b) itself; give it the text of exactly the tokens Side
        # keeps after its truncation (query cut from the left), so both score the same input.
        texts = same_inputs(paths["fp32"], pairs)

        def peer_run(dtype=None):
            peer = peer_model(paths["fp32"], tmp, args.device, dtype)
            return timed(lambda: peer.predict(texts, batch_size=args.batch_size, activation_fn=torch.nn.Identity(),
                                              convert_to_numpy=True, show_progress_bar=False))

        t_peer, peer_logits = peer_run()
        t_peer16, peer16_logits = peer_run(torch.bfloat16)
    peer_probs = torch.softmax(torch.tensor(peer_logits), -1).numpy()
    peer16_probs = torch.softmax(torch.tensor(peer16_logits, dtype=torch.float32), -1).numpy()
    results = {name: timed(lambda c=cross: c.predict(pairs, batch_size=args.batch_size))
               for name, cross in paths.items()}
    n = len(pairs)
    auto = resolve("auto", args.device)
    where = torch.cuda.get_device_name() if args.device.startswith("cuda") else f"{torch.get_num_threads()} threads"
    print(f"{n} real WiCE (claim, sentence) pairs, batch {args.batch_size}, {where}, "
          f"max_length {paths['fp32'].pairs.max_length}; precision=auto means {auto} here")
    print(f"{'path':38s} {'pairs/s':>9s} {'vs peer':>8s} {'max |dP(S)|':>12s}")
    print(f"{'sentence-transformers CrossEncoder (peer)':38s} {n / t_peer:9.1f} {1.0:8.2f} {0.0:12.4f}")
    for name, (t, probs) in results.items():
        diff = float(np.abs(probs[:, 0] - peer_probs[:, 0]).max())
        label = f"side {name}" + (" (default)" if name == auto else "")
        print(f"{label:38s} {n / t:9.1f} {t_peer / t:8.2f} {diff:12.4f}")
    # Not the peer of record (that is its default, fp32), but how much of the gain is the format.
    diff = float(np.abs(peer16_probs[:, 0] - peer_probs[:, 0]).max())
    print(f"{'sentence-transformers asked for bf16':38s} {n / t_peer16:9.1f} {t_peer / t_peer16:8.2f} {diff:12.4f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"this benchmark's peak RSS (peer + {len(paths)} Side models loaded): {peak:.0f} MiB")
    print(article_line)


if __name__ == "__main__":
    main()
