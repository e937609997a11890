"""The LLM judge through a real local server: latency per citation and the cascade's share sent.

Starts llama-cpp-python's OpenAI-compatible server with Gemma 3 270M on 127.0.0.1 (as the tests
do, ``tests/harness/llm.py``; or uses ``--url`` of a server already running) and, on real WiCE dev
claims and the sentences of the pages they cite (``SIDE_DATA_DIR``/wice/claim_dev.jsonl), runs
for every citation in one pass:

- **Side alone**: the verifier's verdict (its latency per citation);
- **the judge alone**: the judge's verdict on the evidence window (its latency per citation, its
  prompt tokens, and how often a supported answer came without a quote found in the source);
- **the cascade**: the citations whose Side score lies in ``judge.band_low..band_high`` are sent,
  the rest keep Side's verdict; its share sent and its latency (Side, plus the judge when sent).

The quality columns are printed too, but a 270M model's figures say nothing about a 27B one:
the expected range for Lift Wing's llm-qwen36-27b is the peer userscript's published AUC 0.791
on its strict set, not measured here. The server and this client share the machine's cores.

    .venv/bin/python benchmarks/judge.py [--limit 40] [--url http://127.0.0.1:PORT/v1] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def print_report(report: dict) -> None:
    from side.evaluation.judge import PEER_LIFTWING_AUC

    cost = report["cost"]
    print(f"{report['citations']} WiCE dev citations; judge {report['judge_model']} at {report['judge_url']}; "
          f"cascade band [{report['band'][0]}, {report['band'][1]})")
    print(f"Side alone:   p50 {cost['side_p50_s']:.2f} s  p95 {cost['side_p95_s']:.2f} s per citation")
    print(f"Judge alone:  p50 {cost['judge_p50_s']:.2f} s  p95 {cost['judge_p95_s']:.2f} s per citation; "
          f"{cost['judge_answers']}/{cost['judge_calls']} answered, {cost['judge_errors']} errors, "
          f"{cost['prompt_tokens_per_citation']:.0f} prompt tokens per citation, {cost['quotes_not_found']} "
          "supported without a quote found")
    print(f"Cascade:      p50 {cost['cascade_p50_s']:.2f} s  p95 {cost['cascade_p95_s']:.2f} s per citation; "
          f"{cost['cascade_calls']} of {report['citations']} sent ({cost['cascade_share']:.0%})")
    for name in ("side", "judge", "cascade"):
        m = report[name]
        print(f"{name:8s} AUROC(not supported) {m['auroc_not_supported']:.3f}  AUROC(not fully) "
              f"{m['auroc_not_fully_supported']:.3f}  levels macro-F1 {m['macro_f1']:.3f}  needs-review F1 "
              f"{m['needs_review_f1']:.3f} / @15% {m['needs_review_f1_at_15']:.3f} / @30% "
              f"{m['needs_review_f1_at_30']:.3f}")
    print(f"A 270M model's figures say nothing about a 27B one; expected range for Lift Wing's llm-qwen36-27b "
          f"(published by the peer userscript, not measured here): AUC {PEER_LIFTWING_AUC} on its strict set.")
    if "first_error" in cost:
        print(f"first judge error: {cost['first_error']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=40, help="WiCE dev claims (default: %(default)s)")
    parser.add_argument("--url", help="an OpenAI-compatible server already running (default: start the local one)")
    parser.add_argument("--model", default="", help="model name sent to --url")
    parser.add_argument("--threads", type=int, default=2, help="threads of the local server (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per judge verdict (default: %(default)s)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from side.config import load_config
    from side.evaluation.judge import evaluate_judge, wice_citations
    from side.verify.cascade import CascadeSettings
    from side.verify.judge import Judge, JudgeSettings
    from side.verify.verifier import Verifier

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the local server on the way out
    config = load_config()
    citations = wice_citations(Path(config.data_dir) / "wice" / "claim_dev.jsonl", args.limit)
    verifier = Verifier.from_config(config)
    server = None
    url, model = args.url, args.model
    if not url:
        from harness.llm import MODEL_ALIAS, LlamaServer, gguf_path

        server = LlamaServer(Path(tempfile.mkdtemp(prefix="side-llm-")), gguf_path(), threads=args.threads).start()
        url, model = server.url, MODEL_ALIAS
    try:
        judge = Judge(JudgeSettings(url, model, timeout_s=args.timeout, rate_per_hour=0))
        cascade = CascadeSettings("uncertain", config.judge.band_low, config.judge.band_high,
                                  config.judge.window_tokens)
        from tqdm import tqdm

        with tqdm(total=len(citations), desc="citations", unit="citation") as bar:  # on stderr
            report = evaluate_judge(verifier, judge, citations, cascade, progress=bar.update)
    finally:
        if server is not None:
            server.stop()
    report.update(judge_url=url, judge_model=model, threads=args.threads)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
