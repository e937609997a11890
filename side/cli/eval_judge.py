"""``side eval verify wice|citations --judge URL``: Side alone, the LLM judge alone and the cascade,
and the ranking figures: the judge's level alone, then with Side's score inside it (:mod:`side.ranking`)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from side.cli.jsonout import json_text
from side.config import Config
from side.errors import InputError

__all__ = ["run_eval_judge", "check_judge_url", "SMALL_MODEL_NOTE"]

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
#: Printed under every table: what a small local model's figures say, and the expected range.
SMALL_MODEL_NOTE = (
    "A small local model's figures (a 270M test model) say nothing about a 27B one. Expected range for a large "
    "served model, published by others and not measured here: the peer userscript's AUC {auc} for Lift Wing's "
    "llm-qwen36-27b on its strict set."
)


def check_judge_url(url: str, config: Config) -> str:
    """``url`` without a trailing slash when claims may go there: a loopback server, or one
    ``judge.allow_endpoints`` allows; else an :class:`InputError`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"--judge must be an http(s) URL, got {url!r}")
    if parts.hostname not in _LOOPBACK and not config.judge.allowed(url):
        raise InputError(f"--judge {url} is neither loopback nor in judge.allow_endpoints: claims and source text "
                         "go only to an endpoint the configuration allows (SIDE_JUDGE_ALLOW_ENDPOINTS)")
    return url.rstrip("/")


def _citations(args: argparse.Namespace, config: Config) -> list:
    from side.data import require_file
    from side.evaluation.judge import read_citations, wice_citations

    if args.task == "citations":
        if not args.claims:
            raise InputError("the citations task needs a FILE (or --claims FILE): JSONL in the real-citation schema, "
                             "claim, source_text, label, ... (docs/real-citations.md)")
        return read_citations(args.claims, args.limit)
    if args.task != "wice":
        raise InputError(f"--judge is measured on wice or citations, not {args.task}")
    return wice_citations(require_file(args.claims or Path(config.data_dir) / "wice" / "claim_dev.jsonl"),
                          args.limit)


def run_eval_judge(args: argparse.Namespace, config: Config) -> int:
    from dataclasses import replace

    from tqdm import tqdm

    from side.evaluation.judge import PEER_LIFTWING_AUC, evaluate_judge
    from side.verify.cascade import CascadeSettings
    from side.verify.judge import Judge, JudgeSettings
    from side.verify.verifier import Verifier

    url = check_judge_url(args.judge, config) if args.judge else ""
    citations = _citations(args, config)  # bad input is one line before any model loads
    judge = None
    if url:
        settings = replace(JudgeSettings.from_config(config.judge), endpoint=url, rate_per_hour=0,
                           model=args.judge_model or config.judge.model)
        if args.judge_timeout:
            settings = replace(settings, timeout_s=args.judge_timeout)
        judge = Judge(settings)
    cascade = CascadeSettings("uncertain", config.judge.band_low, config.judge.band_high, config.judge.window_tokens)
    verifier = Verifier.from_config(config, args.model, encoder_model=args.encoder, split_claims=args.split_claims)
    with tqdm(total=len(citations), desc="citations", unit="citation", leave=False) as bar:
        report = evaluate_judge(verifier, judge, citations, cascade, progress=bar.update)
    report["judge_url"], report["judge_model"] = url, judge.settings.model if judge else ""
    report["note"] = SMALL_MODEL_NOTE.format(auc=PEER_LIFTWING_AUC)
    if args.json:
        print(json_text(report, indent=2))
    else:
        _print(report, args.task)
    return 0


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _print(report: dict[str, Any], task: str) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    methods = [m for m in ("side", "judge", "cascade") if report.get(m)]
    table = Table(title=f"{task}: Side, the judge ({report['judge_model'] or 'none'}) and the cascade "
                        f"({report['scored']} citations; band [{report['band'][0]}, {report['band'][1]}))")
    for col in ("method", "AUROC NS", "AUROC NFS", "levels F1", "review F1", "@15% good", "@30% good"):
        table.add_column(col)
    for name in methods:
        m = report[name]
        table.add_row(name, _fmt(m["auroc_not_supported"]), _fmt(m["auroc_not_fully_supported"]),
                      _fmt(m["macro_f1"]), f"{_fmt(m['needs_review_f1'])} ({m['good_flagged']:.0%})",
                      f"{_fmt(m['needs_review_f1_at_15'])} ({m['good_flagged_at_15']:.0%})",
                      f"{_fmt(m['needs_review_f1_at_30'])} ({m['good_flagged_at_30']:.0%})")
    console.print(table)
    console.print("AUROC NS / NFS: of not supported / not fully supported against the rest. levels F1: macro-F1 "
                  "of the three levels. review F1: F1 of needs review (partially or not supported) at the method's "
                  "own levels, then with the cut moved to flag 15% / 30% of supported citations (in brackets: the "
                  "share of supported citations flagged). judge: the model's own level for every citation, Side's "
                  "where it gave none (errors below); cascade: the judge's accepted verdicts inside the band.")
    if report.get("ranking"):
        _print_ranking(console, task, report["ranking"])
    cost = report["cost"]
    console.print(f"Side alone: latency p50 {_fmt(cost['side_p50_s'], 2)} s, p95 {_fmt(cost['side_p95_s'], 2)} s "
                  "per citation")
    if report.get("judge"):
        console.print(f"Judge alone: {cost['judge_calls']} calls, {cost['judge_answers']} answers, "
                      f"{cost['judge_errors']} errors, {cost['quotes_not_found']} supported without a quote found "
                      f"in the source; {cost['prompt_tokens_per_citation']:.0f} prompt tokens per citation; latency "
                      f"p50 {_fmt(cost['judge_p50_s'], 2)} s, p95 {_fmt(cost['judge_p95_s'], 2)} s")
        console.print(f"Cascade: {cost['cascade_calls']} calls ({cost['cascade_share']:.0%} of citations sent), "
                      f"{cost['cascade_prompt_tokens_per_citation']:.0f} prompt tokens per citation; latency p50 "
                      f"{_fmt(cost['cascade_p50_s'], 2)} s, p95 {_fmt(cost['cascade_p95_s'], 2)} s (Side + judge)")
        if "first_error" in cost:
            console.print(f"First judge error: {cost['first_error']}")
    if report.get("side", {}).get("operating_points"):
        from side.cli.points import print_operating_points

        print_operating_points(console, f"{task}: Side", report["side"]["operating_points"])
    if report["gold_cannot_check"]:
        console.print(f"{report['gold_cannot_check']} citations labelled cannot check left out of the metrics")
    console.print(report["note"])


def _print_ranking(console: Any, task: str, ranking: dict[str, Any]) -> None:
    """The ranking figures of :func:`side.evaluation.judge.ranking_metrics`: one table, one run."""
    from rich.table import Table

    table = Table(title=f"{task}: ranking needs review above supported ({ranking['citations']} citations, "
                        f"{ranking['needs_review']} need review)")
    for col in ("order", "AUROC"):
        table.add_column(col)
    table.add_row("judge's level alone", _fmt(ranking["judge_level"]))
    table.add_row("judge's level, then Side's failure score (side.ranking)", _fmt(ranking["judge_level_then_side"]))
    table.add_row("Side alone (side.ranking)", _fmt(ranking["side"]))
    console.print(table)
    console.print(f"judge's level alone: not supported > partially supported > supported, ties as ties; Side's level "
                  f"for the {ranking['judge_level_from_side']} citations where the judge gave no verdict (or said "
                  f"cannot check). Then Side: the level shown (the judge's accepted verdict; Side's for the "
                  f"{ranking['shown_level_from_side']} citations without one), then Side's own failure score inside "
                  f"it; {ranking['unscored']} unscored citations ranked last.")
