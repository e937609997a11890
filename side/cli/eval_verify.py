"""``side eval verify``: WiCE, SciFact (oracle/open) and Citation-Integrity metrics."""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from side.cli.checks import above, at_least
from side.cli.jsonout import json_text
from side.cli.points import print_operating_points
from side.config import Config

__all__ = ["TASKS", "register", "run_eval_verify"]

if TYPE_CHECKING:
    from tqdm import tqdm

    from side.verify.verifier import Verifier

_UNSUPPORTED_DEV = "non_supported_tokens_dev.jsonl"
TASKS = ("wice", "scifact", "citation-integrity", "unsupported")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify", help="verification quality: WiCE AUROC / P@R15 / levels, SciFact F1, evidence R@5",
        description="Measure the verifier on WiCE claim dev (with BM25-max and MiniLM max-cosine "
        "baselines from the same run), SciFact dev (oracle and open retrieval) and Citation-Integrity "
        "dev. WiCE and Citation-Integrity (oracle) also get the verdict levels' confusion matrix and "
        "macro-F1 beside a majority-level baseline and the two baselines cut at train-chosen scores, "
        "and the count of claims that cannot be checked, by reason. Any file in the same schema can "
        "be given with --claims/--corpus. The unsupported task scores the words named as unsupported on "
        "WiCE non_supported_tokens dev (token precision/recall/F1, with absent-from-page and "
        "all-content-words baselines) and the precision of high severity against the marked spans. WiCE, "
        "SciFact (both settings; SUPPORT is supported, REFUTE or no rationale not supported), "
        "Citation-Integrity (oracle) and citations also get the operating-point table: needs review at the "
        "shipped cuts and at the cuts flagging 5, 10, 15 and 30 percent of supported citations.",
    )
    p.add_argument("task", choices=TASKS + ("citations", "all"), nargs="?", default="wice",
                   help="citations: a JSONL of real citations (claim, source_text, label, title?, section?, context?) "
                   "given as FILE or with --claims")
    p.add_argument("file", type=Path, nargs="?", metavar="FILE",
                   help="claims file, the same as --claims (citations: a JSONL in the real-citation schema of "
                   "docs/real-citations.md)")
    p.add_argument("--claims", type=Path, help="claims file (default: the shared dev file of the task)")
    p.add_argument("--corpus", type=Path, help="abstract corpus for scifact / citation-integrity")
    p.add_argument("--setting", choices=("oracle", "open", "both"), default="both",
                   help="SciFact: gold abstracts, retrieved abstracts (top 3, hybrid), or both")
    p.add_argument("--limit", type=int, help="only the first N claims")
    p.add_argument("--model", type=Path, help="verifier model directory: Side's own or a Hugging Face checkpoint "
                   "(default: verifier.model_dir, else the shipped one)")
    p.add_argument("--split-claims", action=argparse.BooleanOptionalAction, default=None,
                   help="decide the level from the claim's sub-claims (default: verifier.split_claims); when on, "
                   "the whole-claim rule is printed beside it from the same run as verifier_whole_claim")
    p.add_argument("--encoder", metavar="MODEL",
                   help="bi-encoder that picks the evidence and gives the max-cosine baseline: minilm, mpnet or a "
                   "model directory (default: encoder.model, minilm)")
    p.add_argument("--judge", metavar="URL", help="wice / citations: also ask this OpenAI-compatible endpoint "
                   "(its base URL, /chat/completions below it) for every citation and print Side alone, the judge "
                   "alone and the cascade; the URL must be loopback or in judge.allow_endpoints")
    p.add_argument("--judge-model", metavar="NAME", help="model name sent to --judge (default: judge.model)")
    p.add_argument("--judge-timeout", type=float, metavar="S",
                   help="seconds per judge verdict (default: judge.timeout_s)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_eval_verify)


def _open_retriever(config: Config, corpus_path: Path, k: int = 3) -> Callable[[str], list[str]]:
    """Top-k abstracts by hybrid retrieval, fused as `side verify` fuses (union by default; on SciFact
    train R@3 0.892, rank fusion 0.878), over the index `side eval retrieval` caches.

    k = 3 as VeriSci. Measured on SciFact train with the open-setting confidence filter, k = 1, 2,
    3, 4, 5, 7, 10 give Label-Only F1 59.0, 60.3, 59.3, 58.4, 57.4, 55.2, 51.5: more abstracts
    add recall the filter cannot keep precise, and 1 to 3 are within noise.
    """
    from side.evaluation.retrieval import scifact_retriever

    retriever = scifact_retriever(corpus_path, Path(config.var_dir) / "eval")
    fusion = config.retrieval.fusion
    return lambda text: [hit.doc_id for hit in retriever.search(text, text, k=k, mode="hybrid", fusion=fusion)]


def run_eval_verify(args: argparse.Namespace, config: Config) -> int:
    from side.data import require_file
    from side.evaluation.verify import citation_integrity_level, evaluate_scifact, evaluate_wice, scifact_level
    from side.verify.verifier import Verifier

    at_least(1, limit=args.limit)
    if getattr(args, "file", None):
        if args.claims and args.claims != args.file:
            from side.errors import InputError

            raise InputError("give the claims file once: FILE or --claims, not both")
        args.claims = args.file
    above(0, judge_timeout=args.judge_timeout)
    data = Path(config.data_dir)
    if args.claims:  # a missing file is one line, before the models load
        require_file(args.claims)
    if args.judge or args.task == "citations":
        from side.cli.eval_judge import run_eval_judge

        return run_eval_judge(args, config)
    verifier = Verifier.from_config(config, args.model, encoder_model=args.encoder,
                                    split_claims=args.split_claims)
    tasks = TASKS if args.task == "all" else (args.task,)
    results: dict = {}
    for task in tasks:
        if task == "wice":
            claims = args.claims or data / "wice" / "claim_dev.jsonl"
            with _bar("WiCE claims", claims, args.limit) as bar, _cpu_time() as cpu:
                results["wice"] = evaluate_wice(verifier, claims, args.limit, progress=bar.update)
            results["wice"]["encoder_cost"] = _cost(verifier, cpu, results["wice"]["claims"])
            continue
        if task == "unsupported":
            results["unsupported"] = _eval_unsupported(verifier, args.claims or data / "wice" / _UNSUPPORTED_DEV,
                                                       args.limit)
            continue
        folder = "scifact" if task == "scifact" else "citation_integrity"
        claims = args.claims or data / folder / "claims_dev.jsonl"
        corpus = args.corpus or data / folder / "corpus.jsonl"
        settings = ("oracle", "open") if args.setting == "both" else (args.setting,)
        for setting in settings:
            retrieve = _open_retriever(config, corpus) if setting == "open" else None
            levels = citation_integrity_level if task == "citation-integrity" else None
            points = scifact_level if task == "scifact" else None  # both settings
            with _bar(f"{task} {setting}", claims, args.limit) as bar:
                results[f"{task}_{setting}"] = evaluate_scifact(verifier, claims, corpus, retrieve, args.limit,
                                                                progress=bar.update, gold_level=levels,
                                                                points_level=points)
    if args.json:
        print(json_text(results, indent=2))
    else:
        _print_tables(results)
    return 0


def _eval_unsupported(verifier: Verifier, claims: Path, limit: int | None) -> dict[str, Any]:
    """Token P/R/F1 of the verifier's unsupported-words tagger, with two baselines, and the
    precision of high severity (:func:`side.evaluation.verify.severity_metrics`)."""
    from side.data import require_file
    from side.errors import InputError
    from side.evaluation.unsupported import _tagged, claim_examples, load_token_claims, retriever, score_examples
    from side.evaluation.verify import severity_metrics
    from side.verify.unsupported import phrases

    require_file(claims)  # before the progress bar, so a missing file is one line
    if verifier.tagger is None:
        raise InputError("the model directory has no unsupported.json; run `side train unsupported`")
    tagger = verifier.tagger
    with _bar("WiCE unsupported tokens", claims, limit) as bar:
        examples = claim_examples(load_token_claims(claims, limit), retriever(verifier.embeddings, verifier.k),
                                  bar.update)
    if not examples:
        raise InputError(f"{claims}: no claims to evaluate")
    result = score_examples(tagger, examples)
    texts = [e.claim.claim for e in examples]
    result["severity"] = severity_metrics(
        texts, [phrases(e.claim.claim, e.tokens, e.claim.unsupported) for e in examples],
        [phrases(e.claim.claim, e.tokens, list(_tagged(tagger, e))) for e in examples])
    return result


def _print_unsupported(console: Any, res: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"Unsupported words, token level ({res['claims']} sub-claims, {res['tokens']} tokens, "
                  f"{res['unsupported_tokens']} unsupported)")
    for col in ("method", "precision", "recall", "F1"):
        table.add_column(col)
    for name in ("tagger", "baseline_absent_from_page", "baseline_all_content"):
        m = res[name]
        table.add_row(name, _fmt(m["precision"]), _fmt(m["recall"]), _fmt(m["f1"]))
    console.print(table)
    if "severity" in res:
        sev = res["severity"]
        console.print(f"Severity: {sev['predicted_high']} of {sev['claims']} partially supported claims high; "
                      f"precision of high {_fmt(sev['precision_high'])}, recall {_fmt(sev['recall_high'])} "
                      f"(gold: the marked span holds a number, date or name, {sev['gold_fact']} claims)")


def _bar(what: str, claims: Path, limit: int | None) -> tqdm[Any]:
    """A progress bar on stderr (the full run takes minutes on a 2-core CPU, more without bf16)."""
    from tqdm import tqdm

    try:
        with open(claims, encoding="utf-8") as lines:
            total = sum(1 for line in lines if line.strip())
    except OSError:
        total = None  # the evaluation itself reports the missing file
    return tqdm(desc=what, unit="claim", leave=False, total=min(total, limit) if total and limit else total)


@contextmanager
def _cpu_time() -> Iterator[list[float]]:
    """CPU seconds (user + system, every thread of this process) spent inside the block, in ``[0]``:
    the cost of a verdict on a shared machine, where wall time depends on the others' load."""
    import resource

    def used() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    spent = [0.0]
    start, wall = used(), time.perf_counter()
    try:
        yield spent
    finally:
        spent[0] = used() - start
        spent.append(time.perf_counter() - wall)


def _cost(verifier: Verifier, cpu: list[float], claims: int) -> dict[str, Any]:
    """Which bi-encoder and number format ran, and the CPU and wall seconds per claim."""
    return {"encoder": verifier.encoder.name, "precision": verifier.encoder.precision,
            "cpu_s_per_claim": round(cpu[0] / max(1, claims), 3), "wall_s_per_claim": round(cpu[1] / max(1, claims), 3)}


def _fmt(value: float) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def _print_tables(results: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if "wice" in results:
        wice = results["wice"]
        table = Table(title=f"WiCE claim level ({wice['claims']} claims)")
        for col in ("method", "AUROC(not supported)", "AUROC(not fully supported)", "P@R15(not supported)"):
            table.add_column(col)
        for name in ("verifier", "baseline_bm25_max", "baseline_minilm_max_cosine"):
            m = wice[name]
            table.add_row(name, _fmt(m["auroc_not_supported"]), _fmt(m["auroc_not_fully_supported"]),
                          _fmt(m["precision_at_15_recall"]))
        console.print(table)
        ev = wice["evidence"]
        console.print(f"Evidence sentences ({ev['claims_with_gold']} claims): "
                      f"R@5 {_fmt(ev['recall_at_5'])}  NDCG@5 {_fmt(ev['ndcg_at_5'])}")
        if "encoder_cost" in wice:
            cost = wice["encoder_cost"]
            console.print(f"Bi-encoder {cost['encoder']} ({cost['precision']}; also the max-cosine baseline): "
                          f"{cost['cpu_s_per_claim']} CPU s and {cost['wall_s_per_claim']} wall s per claim")
        _print_levels(console, "WiCE", wice)
    for name, res in results.items():
        if name == "unsupported":
            _print_unsupported(console, res)
        if name in ("wice", "unsupported"):
            continue
        table = Table(title=f"{name} ({res['claims']} claims)")
        for col in ("level", "precision", "recall", "F1"):
            table.add_column(col)
        for level in ("abstract_label_only", "abstract_label_rationale", "sentence_selection_label"):
            m = res[level]
            table.add_row(level, _fmt(m["precision"]), _fmt(m["recall"]), _fmt(m["f1"]))
        console.print(table)
        if "levels" in res:
            _print_levels(console, name, res)
        elif "operating_points" in res:
            print_operating_points(console, name, res["operating_points"])


def _print_levels(console: Any, name: str, res: dict) -> None:
    """The verifier's confusion matrix, then macro-F1 and per-level F1 of every method, then cannot-check reasons."""
    from rich.table import Table

    from side.evaluation.verify import LEVELS, PREDICTED_LEVELS, WHOLE_CLAIM_PEER

    levels = res["levels"]
    for method in ("verifier", WHOLE_CLAIM_PEER):
        if method not in levels:
            continue
        matrix = Table(title=f"{name}: {method} levels (rows gold, columns predicted)")
        matrix.add_column("gold \\ predicted")
        for level in PREDICTED_LEVELS:
            matrix.add_column(level.replace("_", " "))
        for gold in LEVELS:
            row = levels[method]["confusion"][gold]
            matrix.add_row(gold.replace("_", " "), *(str(row[p]) for p in PREDICTED_LEVELS))
        console.print(matrix)
    table = Table(title=f"{name}: verdict levels")
    for col in ("method", "macro-F1", "accuracy", *(f"F1 {level.replace('_', ' ')}" for level in LEVELS)):
        table.add_column(col)
    for method, m in levels.items():
        table.add_row(method, _fmt(m["macro_f1"]), _fmt(m["accuracy"]),
                      *(_fmt(m["per_level"][level]["f1"]) for level in LEVELS))
    console.print(table)
    if "report" in res:
        report = res["report"]
        console.print(f"{name}: talk-page report (not supported below {report['report_threshold']:.3f}): "
                      f"{report['reported']} reported, precision {_fmt(report['precision'])}, "
                      f"recall {_fmt(report['recall'])}")
    if "cost" in res:
        cost = res["cost"]
        console.print(f"{name}: {cost['claims_split']} of {cost['claims']} claims split into {cost['parts']} "
                      f"sub-claims; {cost['cross_encoder_pairs_per_claim']:.1f} cross-encoder pairs per claim "
                      f"(whole claim alone {cost['cross_encoder_pairs_per_claim_whole']:.1f}) and "
                      f"{cost['seconds_per_claim']:.2f} s per claim")
    reasons = res.get("cannot_check", {})
    told = ", ".join(f"{reason}: {count}" for reason, count in reasons.items()) or "none"
    console.print(f"{name}: cannot check {sum(reasons.values())} ({told})")
    if "operating_points" in res:
        print_operating_points(console, name, res["operating_points"])
