"""What all-mpnet-base-v2 costs beside all-MiniLM-L6-v2, on this machine, in the same run.

For each backbone (``side train verifier --base``) and bi-encoder (``encoder.model``):

- training: CPU seconds and wall seconds per step of ``side train verifier``'s loop (the backbone
  with frozen word embeddings, one batch of real pairs, forward, the training loss, backward,
  AdamW), under the same bf16 autocast the command uses where bf16 is native;
- bi-encoder: WiCE dev page sentences embedded per CPU second, in the number format
  ``verifier.precision = "auto"`` picks.

CPU seconds (user + system of this process) are the figure to compare on a shared machine, where
wall time depends on what else runs; the ratio mpnet / MiniLM is printed beside them. With the
step count of a recipe (``--steps``, default the shipped recipe's 3,253), it prints the CPU hours
that recipe needs, and the wall hours on this many cores if they were free.

    .venv/bin/python benchmarks/backbone.py [--batch-size 64] [--steps-timed 3] [--sentences 256]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def real_pairs(n: int):
    """WiCE train sub-claims with their first gold sentence (what the trainer reads), as Pairs."""
    from side.config import load_config
    from side.training.trainset import WICE_TRAIN
    from side.verify.crossencoder import Pair

    pairs = []
    with open(load_config().data_dir / WICE_TRAIN, encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            gold = [i for group in row["supporting_sentences"] for i in group]
            if gold:
                pairs.append(Pair("", row["claim"], row["evidence"][gold[0]]))
            if len(pairs) == n:
                break
    return pairs


def time_training(base: str, pairs, steps: int) -> tuple[float, float]:
    """(CPU s, wall s) per training step of ``base`` after one warm-up step."""
    import torch

    from side.training.finetune import batch_loss, freeze
    from side.verify.crossencoder import PairEncoder, build_model, collate, load_tokenizer
    from side.verify.precision import autocast_dtype

    model = build_model(base=base)
    freeze(model, 0)
    model.train()
    encoder = PairEncoder(load_tokenizer(base), 128)
    batch = {k: v for k, v in collate(encoder.encode(pairs), encoder.tokenizer.pad_token_id or 0).items()
             if k in encoder.tokenizer.model_input_names}
    labels = torch.tensor([i % 3 for i in range(len(pairs))])
    groups = torch.full((len(pairs),), -1)
    optim = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-5)
    amp = autocast_dtype("cpu")

    def step() -> None:
        with torch.autocast("cpu", dtype=amp or torch.bfloat16, enabled=amp is not None):
            logits = model(**batch).logits
        loss = batch_loss(logits.float(), labels, groups, 1.0, 0.5)
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()

    step()
    cpu, wall = cpu_seconds(), time.perf_counter()
    for _ in range(steps):
        step()
    return (cpu_seconds() - cpu) / steps, (time.perf_counter() - wall) / steps


def time_embedding(model: str, sentences: list[str]) -> tuple[float, str]:
    """(sentences per CPU second, number format) of the bi-encoder ``model``."""
    from side.retrieval.encoder import Encoder

    encoder = Encoder(device="cpu", model=model)
    encoder.encode(sentences[:32])
    cpu = cpu_seconds()
    encoder.encode(sentences)
    return len(sentences) / (cpu_seconds() - cpu), encoder.precision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-size", type=int, default=64, help="pairs per training step (the recipe's 64)")
    parser.add_argument("--steps-timed", type=int, default=3, help="training steps timed per backbone")
    parser.add_argument("--sentences", type=int, default=256, help="WiCE dev sentences embedded per encoder")
    parser.add_argument("--steps", type=int, default=3253, help="steps of the recipe to estimate (shipped: 3,253)")
    args = parser.parse_args()

    import torch

    from side.config import load_config
    from side.data import load_wice
    from side.evaluation.verify import wice_sentences

    cores = torch.get_num_threads()
    pairs = real_pairs(args.batch_size)
    claims = load_wice(load_config().data_dir / "wice" / "claim_dev.jsonl")
    sentences = [s for claim in claims for s in wice_sentences(claim)][: args.sentences]
    rows = {}
    for base in ("minilm", "mpnet"):
        cpu, wall = time_training(base, pairs, args.steps_timed)
        rate, numbers = time_embedding(base, sentences)
        rows[base] = {"train_cpu_s_per_step": cpu, "train_wall_s_per_step": wall,
                      "embed_sentences_per_cpu_s": rate, "embed_format": numbers}
    mini, mp = rows["minilm"], rows["mpnet"]
    print(f"threads {cores}; batch {args.batch_size} real WiCE train pairs; {args.steps_timed} steps timed per "
          f"backbone; {len(sentences)} WiCE dev sentences embedded")
    print(f"{'':8} {'train CPU s/step':>17} {'wall s/step':>12} {'recipe CPU h':>13} {'wall h, free cores':>19}"
          f" {'embed sent/CPU s':>17}")
    for base, row in rows.items():
        hours = row["train_cpu_s_per_step"] * args.steps / 3600
        print(f"{base:8} {row['train_cpu_s_per_step']:17.2f} {row['train_wall_s_per_step']:12.2f} {hours:13.1f} "
              f"{hours / cores:19.1f} {row['embed_sentences_per_cpu_s']:12.1f} ({row['embed_format']})")
    print(f"mpnet / minilm: training {mp['train_cpu_s_per_step'] / mini['train_cpu_s_per_step']:.1f}x the CPU per step,"
          f" embedding {mini['embed_sentences_per_cpu_s'] / mp['embed_sentences_per_cpu_s']:.1f}x the CPU per sentence")


if __name__ == "__main__":
    main()
