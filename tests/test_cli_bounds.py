"""Numeric options out of their bounds are one line and exit 2, before any work starts.

Without the bounds, argparse takes any number: ``--limit -1`` sliced off the last citation,
``--k -4`` listed all hits but four, ``--max-words -1`` built an index of no passages, and
``train verifier --epochs -1`` trained nothing, then fitted a combiner and wrote the model
(by default over the shipped one)."""

from __future__ import annotations

import json

import pytest

from side.cli import main as side_main
from side.verify.crossencoder import BACKBONE_LAYERS

WIKITEXT = "side/demo_data/Scientific_claims.wikitext"


@pytest.mark.parametrize(("argv", "message"), [
    (["verify", WIKITEXT, "--limit", "0"], "--limit must be at least 1, not 0"),
    (["verify", WIKITEXT, "--limit", "-1"], "--limit must be at least 1, not -1"),
    (["verify", WIKITEXT, "--candidates", "-1"], "--candidates must be at least 0, not -1"),
    (["verify", "--wiki", "enwiki", "--title", "Alsea", "--revision", "-5"], "--revision must be at least 1, not -5"),
    (["lead", "--wiki", "enwiki", "--title", "Alsea", "--revision", "0"], "--revision must be at least 1, not 0"),
    (["search", "coffee", "--k", "-4"], "--k must be at least 1, not -4"),
    (["index", "build", "--demo", "--words", "-5", "--out", "OUT"], "--words must be at least 1, not -5"),
    (["index", "build", "--demo", "--stride", "0", "--out", "OUT"], "--stride must be at least 1, not 0"),
    (["index", "build", "--demo", "--max-words", "-1", "--out", "OUT"], "--max-words must be at least 1, not -1"),
    (["eval", "verify", "wice", "--limit", "-2"], "--limit must be at least 1, not -2"),
    (["eval", "verify", "wice", "--judge-timeout", "-1"], "--judge-timeout must be more than 0, not -1"),
    (["eval", "window", "--neighbour-weight", "-1"], "--neighbour-weight must be at least 0, not -1"),
    (["eval", "window", "--budget", "64", "--budget", "0"], "--budget must be at least 1, not 0"),
    (["eval", "window", "--neighbours", "-1"], "--neighbours must be at least 0, not -1"),
    (["eval", "window", "--limit", "0"], "--limit must be at least 1, not 0"),
    (["eval", "extraction", "--ngram", "0"], "--ngram must be at least 1, not 0"),
    (["eval", "extraction", "--limit", "-3"], "--limit must be at least 1, not -3"),
    (["eval", "sources", "--limit", "0"], "--limit must be at least 1, not 0"),
    (["eval", "retrieval", "own-sources", "--preselect", "0"], "--preselect must be at least 1, not 0"),
    (["index", "stats", "--out", "OUT", "--top", "-1"], "--top must be at least 0, not -1"),
    (["train", "verifier", "--epochs", "-1", "--out", "OUT"], "--epochs must be more than 0, not -1"),
    (["train", "verifier", "--lr", "nan", "--out", "OUT"], "--lr must be more than 0, not nan"),
    (["train", "verifier", "--batch-size", "0", "--out", "OUT"], "--batch-size must be at least 1, not 0"),
    (["train", "verifier", "--max-minutes", "0", "--out", "OUT"], "--max-minutes must be more than 0, not 0"),
    (["train", "verifier", "--hard-negatives", "-1", "--out", "OUT"], "--hard-negatives must be at least 0, not -1"),
    (["train", "verifier", "--max-length", "3", "--out", "OUT"], "--max-length must be at least 32, not 3"),
    (["train", "verifier", "--chunks", "--chunk-words", "10", "--out", "OUT"],
     "--chunk-words must be at least 20, not 10"),
    (["train", "verifier", "--chunk-cap", "vitaminc=all", "--out", "OUT"],
     "--chunk-cap needs --chunks (it caps the chunk recipe's sources)"),
    (["train", "verifier", "--max-length", "1000", "--out", "OUT"], "--max-length must be at most 512, not 1000"),
    (["train", "verifier", "--freeze-layers", str(BACKBONE_LAYERS["minilm"]), "--out", "OUT"],
     f"--freeze-layers must be at most {BACKBONE_LAYERS['minilm'] - 1}, not {BACKBONE_LAYERS['minilm']}"),
])
def test_out_of_bounds_numbers_are_one_line_and_touch_nothing(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path / "var"))
    out = tmp_path / "out"
    assert side_main([str(out) if a == "OUT" else a for a in argv]) == 2
    assert capsys.readouterr().err.splitlines() == [f"side: error: {message}"]
    assert not out.exists() and not (tmp_path / "var").exists()


def test_the_bound_itself_is_taken(tmp_path, monkeypatch, capsys):
    """``--k 1`` is a real search that shows exactly one hit (and ``--k 2`` two)."""
    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path / "var"))
    documents = tmp_path / "docs.jsonl"
    rows = [{"id": f"d{n}", "url": f"https://example.org/{n}", "title": title, "text": text} for n, (title, text) in
            enumerate([("Coffee", "Coffee is brewed from roasted coffee beans."),
                       ("Tea", "Tea is an aromatic drink made from leaves."),
                       ("Cocoa", "Cocoa beans are the dried seeds of the cacao tree.")])]
    documents.write_text("".join(json.dumps(row) + "\n" for row in rows))
    index = tmp_path / "index"
    assert side_main(["index", "build", "--jsonl", str(documents), "--out", str(index)]) == 0
    capsys.readouterr()
    for k in (1, 2):
        assert side_main(["search", "roasted coffee beans", "--index", str(index), "--k", str(k), "--json"]) == 0
        hits = json.loads(capsys.readouterr().out)
        assert len(hits) == k and hits[0]["url"] == "https://example.org/0"


@pytest.mark.parametrize(("program", "argv", "message"), [
    ("side-worker", ["--heartbeat", "-1"], "--heartbeat must be at least 1, not -1"),
    ("side-worker", ["--maintenance", "0"], "--maintenance must be at least 1, not 0"),
    ("side-worker", ["--requeue-after", "-1"], "--requeue-after must be at least 1, not -1"),
    ("side-worker", ["--max-jobs", "0"], "--max-jobs must be at least 1, not 0"),
    ("side-worker", ["--role", "scorer", "--batch-checks", "0"], "--batch-checks must be at least 1, not 0"),
    ("side-worker", ["--role", "scorer", "--batch-citations", "0"], "--batch-citations must be at least 1, not 0"),
    ("side-worker", ["--role", "scorer", "--claim-after", "-3"], "--claim-after must be more than 0, not -3"),
    ("side-worker", ["--role", "reader", "--max-prepared", "-1"], "--max-prepared must be at least 0, not -1"),
    ("side-stack", ["--workers", "0"], "--workers must be at least 1, not 0"),
    ("side-stack", ["--port", "70000"], "--port must be at most 65535, not 70000"),
    ("side-stack", ["--max-restarts", "-1"], "--max-restarts must be at least 0, not -1"),
    ("workers.probe", ["--max-age", "0"], "--max-age must be more than 0, not 0"),
    ("workers.probe", ["--grace", "-1"], "--grace must be at least 0, not -1"),
    ("bot.probe", ["--max-age", "nan"], "--max-age must be more than 0, not nan"),
    ("side-worker", ["--ingest", "--index", "tests/conftest.py"],
     "--index tests/conftest.py: tests/conftest.py is a file, not a folder"),
])
def test_service_options_out_of_bounds_are_one_line_before_redis(program, argv, message, monkeypatch, capsys):
    """Refused before Redis is asked: the URL given points at a port nothing listens on, so an
    option that got through would fail on "cannot reach Redis" instead (a probe: exit 1, dead).
    A probe's --max-age of 0 or less would call every worker dead, and the orchestrator would
    restart it forever."""
    from harness import free_port

    pytest.importorskip("rq", reason="the service's extras are not installed")
    from bot import probe as bot_probe
    from workers import probe, stack, worker

    monkeypatch.setenv("SIDE_SERVICE_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    main = {"side-worker": worker.main, "side-stack": stack.main, "workers.probe": probe.main,
            "bot.probe": bot_probe.main}[program]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [f"{program}: error: {message}"]
