"""``/metrics`` in Prometheus' text format, from a registry owned by each app.

Request counts and latencies are recorded around every request; the queue depth, the
workers and the checks per status are read when Prometheus scrapes (a custom collector), so
they are never stale and cost nothing between scrapes. An own ``CollectorRegistry`` per app,
not the process-global default, lets tests build many apps without "duplicated timeseries".
Under a multi-process server (uwsgi with several processes) each process reports its own
request counters; the store and queue gauges are the same from every process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import redis
from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.exc import SQLAlchemyError

from gadget.server.services import Services
from service.health import registry_counts
from service.store import QueueView
from service.stream import scorer_states, stream_backlog, stream_key
from side.errors import SideError

log = logging.getLogger(__name__)

bp = Blueprint("metrics", __name__)

#: Latency buckets (seconds): the API answers from the store in milliseconds.
BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
EXTENSION = "side_metrics"


class StateCollector(Collector):
    """Gauges read at scrape time from the store and the queue."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def describe(self) -> list[Metric]:
        return []  # registered without a scrape; names are dynamic enough not to matter

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("side_component_up", "1 when the component answered this scrape",
                               labels=["component"])
        yield from self._store(up)
        yield from self._queue(up)
        yield from self._scorers()
        yield up

    def _store(self, up: GaugeMetricFamily) -> Iterator[Metric]:
        try:
            counts = self.svc.store.count_checks()
            flagged = self.svc.store.count_flagged()
            unsure = self.svc.store.count_flagged(QueueView.UNSURE)
        except (SQLAlchemyError, SideError) as exc:  # a scrape must not fail because one part is down
            log.warning("metrics: store unavailable: %s", exc)
            up.add_metric(["database"], 0)
            return
        up.add_metric(["database"], 1)
        checks = GaugeMetricFamily("side_checks", "Checks in the store by status", labels=["status"])
        for status, n in counts.items():
            checks.add_metric([status], n)
        yield checks
        review = GaugeMetricFamily("side_flagged_results", "Flagged citations by review status",
                                   labels=["review_status"])
        for status, n in flagged.items():
            review.add_metric([status], n)
        yield review
        guesses = GaugeMetricFamily("side_unsure_results", "Citations Side is unsure of (never flagged) by review "
                                    "status", labels=["review_status"])
        for status, n in unsure.items():
            guesses.add_metric([status], n)
        yield guesses

    def _queue(self, up: GaugeMetricFamily) -> Iterator[Metric]:
        try:
            counts = registry_counts(self.svc.queue)
        except redis.RedisError as exc:
            log.warning("metrics: Redis unavailable: %s", exc)
            up.add_metric(["redis"], 0)
            return
        up.add_metric(["redis"], 1)
        depth = GaugeMetricFamily("side_queue_jobs", "RQ jobs of the Side queue by state", labels=["state"])
        for state, n in counts.items():
            depth.add_metric([state], n)
        yield depth
        yield GaugeMetricFamily("side_queue_depth", "Jobs waiting in the Side queue", value=counts["queued"])

    def _scorers(self) -> Iterator[Metric]:
        """The scorers (``side-worker --role scorer``) and the prepared checks waiting for them:
        in a split deployment the stream, not the RQ queue, shows whether the GPU keeps up."""
        key = stream_key(self.svc.config.service)
        try:
            scorers = scorer_states(self.svc.redis, key)
            backlog = stream_backlog(self.svc.redis, key)
        except redis.RedisError as exc:  # Redis is reported down by the queue's gauge
            log.warning("metrics: scorer stream unavailable: %s", exc)
            return
        yield GaugeMetricFamily("side_scorers_live", "Scorers with a recent heartbeat",
                                value=sum(s.is_live for s in scorers))
        prepared = GaugeMetricFamily("side_prepared_checks", "Prepared checks in the scorers' stream by state",
                                     labels=["state"])
        prepared.add_metric(["waiting"], backlog.waiting)
        prepared.add_metric(["pending"], backlog.pending)
        yield prepared
        yield GaugeMetricFamily("side_prepared_oldest_pending_seconds",
                                "Seconds since the oldest unacknowledged prepared check was delivered (0: none)",
                                value=backlog.oldest_pending_idle_s or 0.0)


class RequestMetrics:
    """Counters and a latency histogram, recorded in before/after request hooks."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.requests = Counter("side_http_requests", "HTTP requests by endpoint, method and status",
                                ["endpoint", "method", "status"], registry=registry)
        self.latency = Histogram("side_http_request_duration_seconds", "Request latency by endpoint",
                                 ["endpoint", "method"], buckets=BUCKETS, registry=registry)

    def start(self) -> None:
        g.side_started = time.perf_counter()

    def finish(self, response: Response) -> Response:
        started = g.pop("side_started", None)
        # The route pattern, not the path: ids in paths would make one series per check.
        endpoint = request.url_rule.rule if request.url_rule is not None else "<unmatched>"
        self.requests.labels(endpoint, request.method, str(response.status_code)).inc()
        if started is not None:
            self.latency.labels(endpoint, request.method).observe(time.perf_counter() - started)
        return response


def init_app(app: Flask, svc: Services) -> None:
    registry = CollectorRegistry()
    registry.register(StateCollector(svc))
    metrics = RequestMetrics(registry)
    app.before_request(metrics.start)
    app.after_request(metrics.finish)
    app.extensions[EXTENSION] = metrics
    app.register_blueprint(bp)


@bp.get("/metrics")
def scrape() -> Response:
    metrics: RequestMetrics = current_app.extensions[EXTENSION]
    return Response(generate_latest(metrics.registry), content_type=CONTENT_TYPE_LATEST)
