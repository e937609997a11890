"""``/healthz``: can this service take work, and will the work get done?

Five components, each with ``ok`` and details: Redis (the queue), the database (the store's
schema version), the workers (at least one with a recent heartbeat; under ``side-stack`` also
each worker slot's restarts and last exit, :mod:`service.supervision`), the scorers of a split
deployment (their heartbeats and the prepared-check stream's backlog, :mod:`service.stream`)
and the model (the shipped verifier files a worker loads). The status code answers the first
question only:
503 when Redis or the database is down (this process cannot accept checks; a supervisor may
restart it), 200 otherwise. Missing workers or model files make the body ``degraded`` but
not the status, because restarting the web service would not bring a worker back; so do
prepared checks with no live scorer to score them.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import redis
from flask import Blueprint, Response, jsonify
from sqlalchemy.exc import SQLAlchemyError

from gadget.server.present import MODEL_FILES, model_dir
from gadget.server.services import Services, services
from service.health import queue_health
from service.stream import scorer_states, stream_backlog, stream_key
from service.supervision import supervised_workers
from side.errors import SideError

log = logging.getLogger(__name__)

bp = Blueprint("health", __name__)

#: A worker whose last heartbeat is older than this is presumed dead (RQ's worker TTL is 420 s).
HEARTBEAT_MAX_AGE_S = 600


def database_health(svc: Services) -> dict[str, Any]:
    try:
        return {"ok": True, "schema": svc.store.ping()}
    except (SQLAlchemyError, SideError) as exc:
        log.warning("healthz: database unreachable: %s", exc)
        return {"ok": False, "error": str(exc).splitlines()[0][:300]}


def _age_s(stamp: str | None, now: datetime) -> float | None:
    if not stamp:
        return None
    when = datetime.fromisoformat(stamp.rstrip("Z")).replace(tzinfo=UTC)
    return round((now - when).total_seconds(), 1)


def supervision_health(svc: Services) -> list[dict[str, Any]]:
    """Worker slots a supervisor (``side-stack``) published: state, restarts, last exit."""
    try:
        return [asdict(w) for w in supervised_workers(svc.redis, svc.config.service.queue)]
    except redis.RedisError:
        return []  # Redis itself is reported down by its own component


def workers_health(queue: dict[str, Any], supervised: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Live workers: those whose heartbeat is recent enough; plus the supervised slots, if any."""
    now = datetime.now(UTC)
    workers = [{**w, "heartbeat_age_s": _age_s(w.get("last_heartbeat"), now)} for w in queue.get("workers", [])]
    live = [w for w in workers if w["heartbeat_age_s"] is not None and w["heartbeat_age_s"] <= HEARTBEAT_MAX_AGE_S]
    return {"ok": bool(live), "live": len(live), "workers": workers, "supervised": supervised or []}


def scorers_health(svc: Services, redis_ok: bool = True) -> dict[str, Any]:
    """Scorers (``side-worker --role scorer``) and the stream that feeds them.

    Live scorers are those whose heartbeat is at most ``max_age_s`` old: ``MISSED_BEATS`` of the
    interval each scorer beats at (a killed scorer is dead within a few of its beats), or
    ``SCORER_MAX_AGE_S`` for one that did not say, as for ``workers.probe --role scorer``. Not
    ok when prepared checks wait or are pending with no live scorer, or when scorers were
    heartbeating and none still is; a deployment without scorers (no heartbeat, an empty
    stream) is ok.
    """
    key = stream_key(svc.config.service)
    down = {"ok": False, "live": 0, "scorers": [], "stream": {"key": key}}
    if not redis_ok:
        return down  # Redis itself is reported down by its own component
    try:
        scorers = scorer_states(svc.redis, key)
        backlog = stream_backlog(svc.redis, key)
    except redis.RedisError:
        return down
    live = sum(s.is_live for s in scorers)
    idle = not any(s.last_heartbeat for s in scorers) and backlog.is_empty
    return {"ok": bool(live) or idle, "live": live, "scorers": [asdict(s) for s in scorers],
            "stream": {"key": key, **asdict(backlog)}}


def model_health(svc: Services, workers: dict[str, Any], scorers: dict[str, Any]) -> dict[str, Any]:
    """Shipped files present; a live worker that has completed jobs has loaded them, and so has a
    live scorer (it loads the model before its first heartbeat). In a split deployment the RQ
    workers are readers, which load no model: there ``served_by_scorer`` is the one that counts."""
    folder = model_dir(svc.config)
    missing = [name for name in MODEL_FILES if not (folder / name).is_file()]
    served = any(w.get("successful_jobs") for w in workers["workers"] if w.get("heartbeat_age_s") is not None)
    return {"ok": not missing, "dir": str(folder), "missing": missing,
            "flag_threshold": svc.presenter.flag_threshold, "served_by_worker": served,
            "served_by_scorer": scorers["live"] > 0}


def health_report(svc: Services) -> tuple[dict[str, Any], int]:
    queue = queue_health(svc.redis, svc.config.service)
    workers = workers_health(queue, supervision_health(svc) if queue["redis"]["ok"] else [])
    scorers = scorers_health(svc, queue["redis"]["ok"])
    components = {
        "redis": {**queue["redis"], "jobs": queue.get("jobs", {}), "failures": queue.get("failures", [])},
        "database": database_health(svc),
        "workers": workers,
        "scorers": scorers,
        "model": model_health(svc, workers, scorers),
    }
    serving = components["redis"]["ok"] and components["database"]["ok"]
    status = "ok" if all(c["ok"] for c in components.values()) else ("degraded" if serving else "down")
    return {"status": status, "components": components}, (200 if serving else 503)


@bp.get("/healthz")
def healthz() -> tuple[Response, int]:
    body, status = health_report(services())
    response = jsonify(body)
    response.headers["Cache-Control"] = "no-store"
    return response, status
