"""``side eval retrieval scifact|wice-recovery|evidence|own-sources``: retrieval quality, BM25 vs dense
vs hybrid; ``own-sources``: the verifier ranking an article's cited pages vs BM25 and MiniLM.

Defaults are the shared dev files; ``--claims``/``--corpus`` take any file in the same schema.
Built indexes are cached under ``var_dir/eval`` so that a rerun only queries.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from side.cli.checks import at_least
from side.cli.jsonout import json_text
from side.config import Config
from side.errors import InputError

__all__ = ["TASKS", "register", "run"]

if TYPE_CHECKING:
    from side.evaluation.retrieval import RetrievalReport

TASKS = ("scifact", "wice-recovery", "evidence", "own-sources")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("retrieval", help="retrieval quality (SciFact, WiCE page recovery, evidence)")
    parser.add_argument("task", choices=TASKS)
    parser.add_argument("--claims", type=Path, help="claims file (default: the shared dev split)")
    parser.add_argument("--corpus", type=Path, help="SciFact corpus file (scifact only)")
    parser.add_argument("--backend", choices=("embedded", "milvus"),
                        help="where the index lives (default: config retrieval.backend; evidence: always in memory)")
    parser.add_argument("--preselect", type=int, default=3,
                        help="own-sources: pages BM25 picks for the verifier in the pipeline's order (default 3)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def _report(args: argparse.Namespace, config: Config) -> RetrievalReport:
    from side.cli.index import milvus_settings
    from side.evaluation import retrieval

    data, cache = Path(config.data_dir), Path(config.var_dir) / "eval"
    if args.corpus and args.task != "scifact":
        raise InputError("--corpus applies to the scifact task only")
    milvus = milvus_settings(args, config)
    if milvus is not None and args.task == "evidence":
        raise InputError("the evidence task ranks one page's sentences in memory; --backend milvus does not apply")
    if args.task == "scifact":
        return retrieval.evaluate_scifact(args.claims or data / "scifact" / "claims_dev.jsonl",
                                          args.corpus or data / "scifact" / "corpus.jsonl", cache, milvus=milvus)
    claims = args.claims or data / "wice" / "claim_dev.jsonl"
    if args.task == "own-sources":
        if milvus is not None:
            raise InputError("the own-sources task ranks an article's pages in memory; --backend milvus does not apply")
        at_least(1, preselect=args.preselect)
        if not Path(claims).is_file():
            raise InputError(f"no such claims file: {claims}")
        from side.verify.verifier import Verifier

        verifier = Verifier.from_config(config)
        return retrieval.evaluate_own_sources(claims, verifier, args.preselect)
    if args.task == "wice-recovery":
        return retrieval.evaluate_wice_recovery(claims, cache, milvus=milvus)
    return retrieval.evaluate_evidence(claims, cache)


def run(args: argparse.Namespace, config: Config) -> int:
    report = _report(args, config)
    if args.json:
        print(json_text(report.to_dict(), indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    columns = list(next(iter(report.metrics.values())))
    where = report.settings.get("backend", "embedded")
    table = Table(title=f"retrieval: {report.task} ({report.n_queries} queries, {where} index)")
    table.add_column("method")
    for name in columns:
        table.add_column(name, justify="right")
    for method, values in report.metrics.items():
        table.add_row(method, *(f"{values[c]:.3f}" for c in columns))
    Console().print(table)
    return 0
