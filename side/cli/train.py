"""``side train verifier``: rebuild the shipped verification model from the shared data."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from side.training import TrainSettings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("train", help="train models (the verifier)")
    models = parser.add_subparsers(dest="model", metavar="MODEL", required=True)
    p = models.add_parser(
        "verifier",
        help="fine-tune the cross-encoder, fit its combiner and choose thresholds",
        description="Fine-tune the all-MiniLM-L6-v2 cross-encoder on shippable shared data "
        "(CPU: stops at --max-minutes, resumable with --resume), then fit the logistic combiner "
        "on WiCE/SciFact train signals and choose flag thresholds on WiCE dev.",
    )
    d = TrainSettings  # one set of defaults: the dataclass's
    p.add_argument("--out", type=Path, default=d.out_dir, help="model directory (default: the shipped one)")
    p.add_argument("--max-minutes", type=float, default=d.max_minutes,
                   help=f"time budget of the fine-tuning (default {d.max_minutes:g}; the combiner fit and "
                   "thresholds after it take ~15 more minutes on 2 CPU cores)")
    p.add_argument("--max-steps", type=int, default=d.max_steps, help="stop after this many steps (0: all of --epochs)")
    p.add_argument("--epochs", type=float, default=d.epochs, help=f"passes over the training pairs (default {d.epochs:g})")
    p.add_argument("--batch-size", type=int, default=d.batch_size, help=f"pairs per step (default {d.batch_size})")
    p.add_argument("--lr", type=float, default=d.lr, help=f"peak learning rate (default {d.lr:g})")
    p.add_argument("--freeze-layers", type=int, default=d.freeze_layers,
                   help=f"lowest transformer layers kept frozen (default {d.freeze_layers}, halves a CPU's backward "
                   "pass; 0 on a GPU)")
    p.add_argument("--hard-negatives", type=int, default=d.negatives,
                   help=f"BM25 non-evidence sentences per WiCE / SciFact evidence (default {d.negatives})")
    p.add_argument("--in-domain-repeat", type=int, default=d.in_domain_repeat,
                   help=f"copies of the WiCE / SciFact examples per epoch (default {d.in_domain_repeat})")
    p.add_argument("--max-length", type=int, default=d.max_length, help=f"tokens per pair (default {d.max_length})")
    p.add_argument("--seed", type=int, default=d.seed, help=f"shuffling and initialisation seed (default {d.seed})")
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    p.add_argument("--combiner-only", action="store_true", help="keep the cross-encoder; refit the combiner")
    p.set_defaults(func=run_train_verifier)


def run_train_verifier(args: argparse.Namespace, config) -> int:
    from side.calibration import choose_thresholds, fit_combiner
    from side.data import require_file
    from side.training import TrainSettings, train_verifier
    from side.verifier import COMBINER_FILE, Verifier

    data_dir = Path(config.data_dir)
    require_file(data_dir / "wice" / "claim_dev.jsonl")
    stats = {}
    if not args.combiner_only:
        settings = TrainSettings(
            data_dir=data_dir, out_dir=args.out, work_dir=Path(config.var_dir) / "train", seed=args.seed,
            max_length=args.max_length, batch_size=args.batch_size, max_minutes=args.max_minutes,
            epochs=args.epochs, lr=args.lr, freeze_layers=args.freeze_layers,
            negatives=args.hard_negatives, in_domain_repeat=args.in_domain_repeat,
            max_steps=args.max_steps, resume=args.resume, device=config.verifier.device,
        )
        stats = train_verifier(settings)
    verifier = Verifier.load(args.out, device=config.verifier.device,
                             precision=config.verifier.precision)
    verifier.combiner = None
    combiner = fit_combiner(verifier, data_dir, seed=args.seed)
    verifier.combiner = combiner
    thresholds = choose_thresholds(verifier, data_dir / "wice" / "claim_dev.jsonl")
    combiner.flag_threshold = thresholds["flag_threshold"]
    combiner.report_threshold = thresholds["report_threshold"]
    combiner.save(Path(args.out) / COMBINER_FILE)
    print(json.dumps({"training": stats, "combiner": combiner.info, **thresholds}, indent=2))
    return 0
