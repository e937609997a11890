"""What tokenising costs a scorer: is it worth carrying the bi-encoder's token ids from the reader?

A scorer (``side-worker --role scorer``) tokenises each claim and its shortlisted sentences for
the bi-encoder before embedding them. A reader could tokenise them instead and carry the ids in
the prepared check. This script scores WiCE dev claims against their pages' sentences (with the
shortlists a reader makes) and splits the scorer's CPU time (``process_time``, all threads) into
the models' forward passes (what a GPU takes over) and the rest (what a GPU host's CPU still
does), beside the time the bi-encoder's tokenising of those inputs takes, done the same way.

    .venv/bin/python benchmarks/scorer_tokens.py [--claims 40]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from stats import cpu_model  # benchmarks/stats.py, beside this script


def main() -> None:
    from side.config import load_config
    from side.data import WICE_META_PREFIX, load_wice
    from side.verify.verifier import Query, Verifier, bounded_sentences, shortlist_source

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=40, help="WiCE dev claims (default 40)")
    args = parser.parse_args()
    config = load_config()
    rows = load_wice(config.data_dir / "wice" / "claim_dev.jsonl")[: args.claims]
    items = [(Query(row.claim), bounded_sentences([s for s in row.evidence if not s.startswith(WICE_META_PREFIX)]))
             for row in rows]
    shortlists = [shortlist_source(query.claim, sentences) for query, sentences in items]
    verifier = Verifier.from_config(config)
    verifier.verify_many(items[:2], shortlists=shortlists[:2])  # loaded and warm before the clock
    encoder = verifier.embeddings.encoder
    inputs = [[sentences[i] or " " for i in shortlist.embedded] + [query.claim]
              for (query, sentences), shortlist in zip(items, shortlists, strict=True) if not shortlist.reason]
    started = time.process_time()
    for texts in inputs:  # as Encoder.encode does: one call per item's texts
        encoder.tokenizer(texts, truncation=True, max_length=encoder.max_length)
    tokenising = time.process_time() - started
    verifier.embeddings._vectors.clear()  # nothing embedded before: every sentence is new
    verifier.embeddings._tokens.clear()
    profile = cProfile.Profile(time.process_time)  # the same clock as the totals
    started = time.process_time()
    profile.runcall(verifier.verify_many, items, None, None, shortlists)
    scoring = time.process_time() - started
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    forward = max((entry[3] for key, entry in stats.items() if key[2] == "_wrapped_call_impl"), default=0.0)
    rest = scoring - forward
    print(f"{cpu_model()}; {len(items)} WiCE dev claims, {sum(map(len, inputs))} texts for the bi-encoder")
    print(f"scorer CPU s (cProfile on): {scoring:.2f}; models' forward passes {forward:.2f}; the rest {rest:.2f}")
    print(f"tokenising the bi-encoder's inputs: {tokenising:.3f} CPU s = {100 * tokenising / scoring:.2f}% "
          f"of the scorer, {100 * tokenising / rest:.1f}% of its CPU time outside the models")


if __name__ == "__main__":
    main()
