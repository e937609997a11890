"""The GPU worker path: a real ``side-worker`` on CUDA, through Redis, against one on the CPU.

A GPU host runs the same worker as Toolforge, with ``verifier.device`` left at ``auto`` (CUDA
when torch sees a GPU). These tests start one stack whose worker loads the verifier on CUDA and
one whose worker is held to the CPU, submit the same revision to both, and compare what the
store holds: the same levels, and scores equal up to the last digits the GPU's own kernels move.
Where torch sees no GPU (this project's CI), they skip with that reason; they run on a GPU host.
"""

from __future__ import annotations

import pytest

from service.store import CheckRequest
from side.extract.claims import Citation, Claim

from alsea import alsea_sources

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="no CUDA device on this machine: the GPU worker runs on a GPU host"
    ),
]

#: Scores are kept to 4 decimals; TF32 matrix products on the GPU move the third at most.
SCORE_TOLERANCE = 1e-2


@pytest.fixture(scope="module")
def sources():
    with alsea_sources() as server:
        yield server


def stack_on(service_stack, device: str):
    return service_stack(
        with_web=False,
        env={"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1", "SIDE_VERIFIER_DEVICE": device, "SIDE_VERIFIER_PRECISION": "fp32"},
    )


def revision(sources) -> CheckRequest:
    def claim(text: str, path: str, key: str) -> Claim:
        return Claim(
            article_title="Alsea (company)",
            section=("History",),
            text=text,
            left_context=text,
            citation=Citation(id=key, kind="external_link", url=sources.url(path)),
        )

    return CheckRequest(
        wiki="enwiki",
        title="Alsea (company)",
        revision=7,
        origin="bot",
        claims=[
            claim("Alsea operates Starbucks in Mexico.", "/alsea", "c1"),
            claim("Alsea was founded in 1990.", "/weather", "c2"),
            claim("Alsea was founded in 1990 in Mexico City by four brothers.", "/alsea", "c3"),
        ],
        client_keys=["c1", "c2", "c3"],
    )


def test_a_worker_on_cuda_checks_a_revision_as_the_cpu_worker_does(service_stack, sources):
    gpu, cpu = stack_on(service_stack, "cuda"), stack_on(service_stack, "cpu")
    assert "loaded the verifier on cuda" in gpu.worker_log.read_text()
    assert "loaded the verifier on cpu" in cpu.worker_log.read_text()
    verdicts = {}
    for name, stack in (("gpu", gpu), ("cpu", cpu)):
        record, enqueued = stack.submit(revision(sources))
        assert enqueued
        done = stack.wait_for(record.id)
        assert done.status == "done", done.error
        verdicts[name] = stack.store().results(record.id)
    assert [r.client_key for r in verdicts["gpu"]] == ["c1", "c2", "c3"]
    assert all(r.source_status == "fetched" for r in verdicts["gpu"])
    supported, unrelated, _ = verdicts["gpu"]
    assert supported.score > unrelated.score and unrelated.flagged
    for on_gpu, on_cpu in zip(verdicts["gpu"], verdicts["cpu"], strict=True):
        assert on_gpu.level == on_cpu.level and on_gpu.flagged == on_cpu.flagged
        assert on_gpu.score == pytest.approx(on_cpu.score, abs=SCORE_TOLERANCE)
