"""The ingest job: add spooled documents to the evidence corpus and update its index.

Run by ``side-worker --ingest`` on the ingest queue (``service.ingest_queue``), which loads the
passage encoder once (:func:`set_ingest_context`). A job names one spooled document; it takes
the index lock and ingests that document together with up to ``batch`` others waiting in the
spool (one index update for all: re-indexing BM25 costs the same for one document as for
fifty), and removes them from the spool only after the corpus and the index are written. The
jobs of documents that an earlier batch took find them gone and return at once, so a job run
twice (a retry, a requeue after Redis lost it) does nothing twice. Duplicates (same canonical
URL or same text as a corpus document) are skipped (:func:`side.retrieval.ingest.ingest_documents`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from side.errors import SideError
from side.retrieval.ingest import IngestSpool, index_lock, ingest_documents

__all__ = ["DEFAULT_BATCH", "IngestContext", "set_ingest_context", "get_ingest_context", "run_ingest"]

log = logging.getLogger(__name__)

#: Spooled documents taken into one index update.
DEFAULT_BATCH = 64


@dataclass
class IngestContext:
    """What an ingest worker loads once: where the index and the spool are, and the encoder."""

    index_dir: Path
    spool: IngestSpool
    encoder: Any = None
    backend: str = "embedded"
    milvus: Any = None
    words: int = 100
    stride: int = 50
    faiss_index: str = "flat"
    batch: int = DEFAULT_BATCH


_context: IngestContext | None = None


class IngestWorkerNotReadyError(SideError):
    """An ingest job ran in a process that was not started as ``side-worker --ingest``."""

    code = "worker_not_ready"


def set_ingest_context(context: IngestContext | None) -> None:
    global _context
    _context = context


def get_ingest_context() -> IngestContext:
    if _context is None:
        raise IngestWorkerNotReadyError("run_ingest needs an ingest worker (side-worker --ingest)")
    return _context


def run_ingest(doc_id: str) -> dict[str, Any]:
    """Ingest ``doc_id`` and a batch of other spooled documents; returns a small summary."""
    context = get_ingest_context()
    with index_lock(context.index_dir):
        waiting = context.spool.ids()
        if doc_id not in waiting:
            log.info("%s is no longer spooled (ingested with an earlier batch)", doc_id)
            return {"id": doc_id, "skipped": True}
        batch = [doc_id, *[i for i in waiting if i != doc_id][: max(0, context.batch - 1)]]
        documents = [d for d in (context.spool.get(i) for i in batch) if d is not None]
        report = ingest_documents(documents, context.index_dir, context.backend, context.milvus, context.encoder,
                                  context.words, context.stride, context.faiss_index)
        for taken in batch:  # only now: a crash above leaves every one of them spooled
            context.spool.remove(taken)
    return {"id": doc_id, "skipped": False, **report.to_dict()}
