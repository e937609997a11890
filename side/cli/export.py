"""``side export hf DIR``: write the verifier's cross-encoder as a Hugging Face checkpoint."""

from __future__ import annotations

import argparse
from pathlib import Path

from side.config import Config

__all__ = ["EXPORT_DESCRIPTION", "HF_DESCRIPTION", "HF_EPILOG", "register", "run_export_hf"]

EXPORT_DESCRIPTION = """\
Write one of Side's models in a format other tools read. Side keeps its models in a compact
form only Side loads (the shipped verifier leaves out the word embeddings, which come from the
offline all-MiniLM-L6-v2 package); an export is self-contained.
"""

HF_DESCRIPTION = """\
Write the verifier's cross-encoder (SUPPORTS / REFUTES / NOT ENOUGH INFO for a claim and a
passage of its cited source) to DIR as a standard Hugging Face checkpoint:

  config.json          sequence-classification config; id2label names the three labels
  model.safetensors    every weight in fp32, the word embeddings included
  tokenizer.json, tokenizer_config.json
                       the all-MiniLM-L6-v2 tokenizer, with the verifier's token limit
  README.md            model card with Hub metadata (licence, base model, data sets, tags)

sentence-transformers' CrossEncoder(DIR) and transformers' AutoModelForSequenceClassification
load it and give the probabilities Side's own path gives in fp32 to every pair within the
token limit (longer pairs: Side cuts the claim side from the left, those loaders cut from the
right). Nothing is downloaded. Only the cross-encoder is exported, not the evidence selection
and combiner that turn its scores into Side's verdicts.
"""

HF_EPILOG = """\
example:
  side export hf var/export/side-verifier
  python -c "from sentence_transformers import CrossEncoder; \\
      m = CrossEncoder('var/export/side-verifier'); \\
      print(m.predict([('Paris is in France.', 'Paris is the capital of France.')], apply_softmax=True))"
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "export", help="write a model in a format other tools read (a Hugging Face checkpoint)",
        description=EXPORT_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    formats = parser.add_subparsers(dest="format", metavar="FORMAT", required=True)
    p = formats.add_parser(
        "hf", help="the verifier's cross-encoder as a Hugging Face checkpoint (sentence-transformers, "
        "transformers)", description=HF_DESCRIPTION, epilog=HF_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("directory", type=Path, metavar="DIR",
                   help="directory to write; created if missing, must be empty unless --force")
    p.add_argument("--model", type=Path, metavar="MODEL_DIR",
                   help="verifier model directory to export (default: the shipped one)")
    p.add_argument("--force", action="store_true",
                   help="write into a non-empty DIR, replacing files of the same names (others are kept)")
    p.set_defaults(func=run_export_hf)


def run_export_hf(args: argparse.Namespace, config: Config) -> int:
    from side.verify.hf_export import export_hf

    result = export_hf(args.directory, model_dir=args.model, force=args.force)
    print(f"wrote {result.directory}: {', '.join(result.files)}")
    print(f"{result.parameters:,} parameters, labels {', '.join(result.labels)}, "
          f"at most {result.max_length} tokens per pair")
    print(f"load it with sentence_transformers.CrossEncoder({str(result.directory)!r})")
    return 0
