"""The web service's app factory: API for the gadget, patrol dashboard, health and metrics.

``create_app()`` reads the configuration (TOML + ``SIDE_*`` environment, :mod:`side.config`)
unless given one, opens the store and the Redis queue unless given them (tests pass their
own), and wires the cross-cutting parts in the order requests meet them: metrics first (so
every response is counted), then the origin guard (a disallowed browser origin is refused
before it can cost a rate-limit slot or touch the store), then the rate limiter, then the
blueprints.
"""

from __future__ import annotations

import logging

import redis as redis_lib
from flask import Flask, redirect, request, url_for
from flask_cors import CORS
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from rq.defaults import RQ_KEY_PREFIX
from werkzeug.middleware.proxy_fix import ProxyFix

from gadget.server import api, dashboard, errors, health, login, metrics, security
from gadget.server.errors import ForbiddenOriginError
from gadget.server.links import WikiLinks
from gadget.server.present import Presenter, load_flag_threshold
from gadget.server.services import EXTENSION, Services, request_origin, services
from service.fetchbudget import FetchBudgetPolicy, OutsideFetches
from service.queue import get_queue, redis_connection
from service.store import Store
from side.config import Config, load_config
from side.sources.fetch import cache_path

log = logging.getLogger(__name__)

#: Methods that change state: only these are refused for a disallowed Origin (reads are
#: harmless, and browsers keep cross-origin answers from pages that lack CORS headers).
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Seconds a browser may cache a preflight answer.
PREFLIGHT_MAX_AGE_S = 600


def build_services(config: Config, store: Store | None, connection: redis_lib.Redis | None) -> Services:
    store = store or Store.open(config.database_url)
    # Not pinged: the app must start (and /healthz say so) while Redis is down.
    connection = connection or redis_connection(config.service.redis_url, check=False)
    presenter = Presenter(config.service.public_url, load_flag_threshold(config))
    # a page the workers' cache holds costs no fetch (the cache is shared where they share var_dir)
    fetches = OutsideFetches(connection, FetchBudgetPolicy.from_config(config.service), config.service.queue,
                             is_cached=lambda url: cache_path(config.cache_dir, url).is_file(),
                             archive=config.fetch.archive)
    return Services(config=config, store=store, redis=connection, queue=get_queue(connection, config.service),
                    presenter=presenter, links=WikiLinks(config.service.wiki_urls),
                    cors_origins=frozenset(o.rstrip("/") for o in config.service.cors_origins), fetches=fetches)


def guard_origin() -> None:
    """Refuse state-changing API calls and preflights from browser origins not on the list.

    Requests without ``Origin`` (bots, scripts, curl) are not browser cross-origin calls and
    pass; the dashboard's own forms carry the service's own origin.
    """
    origin = request_origin()
    if origin is None or not request.path.startswith("/api/"):
        return
    svc = services()
    preflight = request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers
    if (request.method in STATE_CHANGING or preflight) and origin not in svc.cors_origins:
        raise ForbiddenOriginError(f"origin {origin[:200]} may not call this API from a browser")


def init_cors(app: Flask, svc: Services) -> None:
    CORS(app, resources={r"/api/*": {"origins": sorted(svc.cors_origins)}},
         methods=["GET", "POST", "OPTIONS"], allow_headers=["Content-Type"],
         expose_headers=["Location", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining",
                         "X-RateLimit-Reset"],
         max_age=PREFLIGHT_MAX_AGE_S, supports_credentials=False, vary_header=True)


#: Endpoints that record feedback: they share a stricter budget of their own.
FEEDBACK_ENDPOINTS = frozenset({"api.post_feedback", "dashboard.result_feedback"})


def init_limiter(app: Flask, svc: Services) -> Limiter:
    """Per-client limits on POSTs, counted in Redis so every server process shares them.

    One budget (``service.rate_limit``) per client across every POST of the API and the
    dashboard, shared limits rather than one per endpoint (which would let a client spend the
    budget once per endpoint); feedback also counts against its own stricter budget.

    The counters live under RQ's key prefix (``RQ_KEY_PREFIX``, the tool's secret prefix on a
    shared Redis) like every other key of Side: the storage's ``key_prefix`` starts each Redis
    key with it (the limits library would otherwise use ``LIMITS``), and Flask-Limiter's
    ``key_prefix`` keeps two queues' counters apart.

    It fails closed: while Redis is unreachable a limited request is refused with a 503 (the
    Redis error reaches :mod:`gadget.server.errors`, which logs one line), never served without
    a limit; a per-process fallback would multiply each budget by the number of processes.
    """
    limiter = Limiter(
        get_remote_address, app=app, storage_uri=svc.config.service.redis_url,
        storage_options={"connection_pool": svc.redis.connection_pool,
                         "key_prefix": f"{RQ_KEY_PREFIX}:side:limits"},
        key_prefix=svc.config.service.queue, headers_enabled=True,
        strategy="moving-window", swallow_errors=False, in_memory_fallback_enabled=False)
    every_post = limiter.shared_limit(svc.config.service.rate_limit, scope="posts", methods=["POST"])
    feedback = limiter.shared_limit(svc.config.service.feedback_rate_limit, scope="feedback", methods=["POST"],
                                    exempt_when=lambda: request.endpoint not in FEEDBACK_ENDPOINTS)
    for blueprint in (api.routes.bp, dashboard.views.bp):
        every_post(blueprint)
        feedback(blueprint)
    # each started login costs a call to the wiki and a pending token in Redis
    limiter.shared_limit(svc.config.service.rate_limit, scope="logins")(login.bp)
    return limiter


def create_app(config: Config | None = None, store: Store | None = None,
               redis: redis_lib.Redis | None = None) -> Flask:
    """Build the app; ``config`` defaults to :func:`side.config.load_config` (file + env)."""
    config = config or load_config()
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = config.service.max_body_bytes
    app.json.sort_keys = False  # type: ignore[attr-defined]
    if config.service.proxy_hops > 0:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=config.service.proxy_hops,  # type: ignore[method-assign]
                                x_proto=config.service.proxy_hops, x_host=config.service.proxy_hops)
    svc = build_services(config, store, redis)
    app.extensions[EXTENSION] = svc
    errors.init_app(app)
    security.init_app(app, config.service.frame_ancestors)
    metrics.init_app(app, svc)
    app.before_request(guard_origin)
    init_cors(app, svc)
    login.init_app(app, config.login, config.service.public_url)
    app.extensions["side_limiter"] = init_limiter(app, svc)
    api.init_app(app)
    app.register_blueprint(health.bp)
    dashboard.init_app(app)
    app.add_url_rule("/", "index", lambda: redirect(url_for("dashboard.queue")))
    log.info("web service ready: store %s, queue %s", svc.store.engine.url.render_as_string(hide_password=True),
             svc.config.service.queue)
    return app

