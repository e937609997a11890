"""Reviewers log in with their wiki account (Wikimedia OAuth 1.0a) before they accept or dismiss.

Anyone may read the dashboard; only a logged-in wiki user may review, and the review is stored
under the user name the wiki vouched for (``Special:OAuth/identify``'s signed JWT), never a name
typed into a form. The flow, on the MediaWiki OAuth extension's endpoints:

1. ``GET /auth/login``: ask the wiki for a request token (``Special:OAuth/initiate``), keep its
   secret in Redis under the token for :data:`PENDING_TTL_S` and the token in this browser's
   session, and send the browser to ``Special:OAuth/authenticate``;
2. the reviewer allows Side on the wiki, which sends the browser back to ``GET /auth/callback``
   with ``oauth_token`` (the request token: OAuth 1.0a's ``state``) and ``oauth_verifier``;
3. the callback is refused (400) unless ``oauth_token`` is the one this browser's session started
   and its secret is still in Redis; the secret is taken out as it is read (GETDEL), so a
   replayed or forged callback, or one from another browser (login CSRF), finds nothing. Then the
   verifier is exchanged for an access token (``Special:OAuth/token``), the identity fetched and
   its JWT checked (signature with the consumer secret, audience, issuer, issue time, nonce), and
   the user name kept in the session. The access token itself is dropped: Side never acts as the
   user.

Signing is requests-oauthlib's (oauthlib), the JWT check PyJWT's; nothing here is hand-made
crypto. Wikimedia's own ``mwoauth`` does the same three calls but sends its requests without a
timeout (a wiki that hangs would hold a web thread for ever) and crashes with a TypeError on the
wiki's error for a replayed token, so it is not used.

The session is Flask's signed cookie (``login.session_secret``), hardened by
:func:`gadget.server.security.session_cookie_settings`; every form that changes something carries
the session's CSRF token (:func:`csrf_token`, checked by :func:`require_reviewer`).
"""

from __future__ import annotations

import hmac
import logging
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

import jwt
import requests
from flask import Blueprint, Flask, redirect, request, session, url_for
from flask.typing import ResponseReturnValue
from oauthlib.common import urldecode
from requests_oauthlib import OAuth1Session
from rq.defaults import RQ_KEY_PREFIX

from gadget.server import security
from gadget.server.errors import ApiError
from gadget.server.services import services
from side.config import LoginConfig

log = logging.getLogger(__name__)

__all__ = ["LoginRequiredError", "bp", "csrf_token", "current_reviewer", "init_app", "require_reviewer"]

bp = Blueprint("login", __name__, url_prefix="/auth")

#: Seconds a started login may take on the wiki before its request token is forgotten.
PENDING_TTL_S = 600
#: Seconds of clock difference allowed when checking the identity's issue and expiry times.
CLOCK_LEEWAY_S = 10
#: Session keys.
REVIEWER, CSRF, PENDING, NEXT = "reviewer", "csrf", "oauth_pending", "login_next"
#: Where a login returns to by default, and the only paths it may return to.
DEFAULT_NEXT = "/dashboard/"


class LoginRequiredError(ApiError):
    """A review from someone not logged in: 401, with where to log in."""

    code = "login_required"
    status = 401


class LoginRefusedError(ApiError):
    """A login callback that cannot be completed: forged, replayed, expired or refused."""

    code = "login_refused"
    status = 400


@dataclass(frozen=True)
class Identity:
    """Who the wiki says the reviewer is (from ``Special:OAuth/identify``)."""

    username: str
    blocked: bool


# -- the wiki's side -------------------------------------------------------------------------


def _endpoint(config: LoginConfig, special: str) -> str:
    return f"{config.wiki_url}?{urlencode({'title': f'Special:OAuth/{special}'})}"


def _user_agent() -> str:
    return f"Side/1.0 ({services().config.service.public_url}) requests-oauthlib"


class WikiRefusal(Exception):
    """The wiki answered, but not with what the protocol expects (logged, never shown raw)."""


def _token_pair(response: requests.Response, what: str) -> tuple[str, str]:
    """``oauth_token`` and ``oauth_token_secret`` from the wiki's form-encoded answer; the wiki
    answers an error as plain text ("Error: ...") or an HTML page, which is a refusal."""
    text = response.text.strip()
    try:
        values = dict(urldecode(text)) if response.ok else {}
    except ValueError:
        values = {}
    if "oauth_token" not in values or "oauth_token_secret" not in values:
        raise WikiRefusal(f"the wiki refused the {what} ({response.status_code}: {text[:200]})")
    return values["oauth_token"], values["oauth_token_secret"]


def request_token(config: LoginConfig, callback: str) -> tuple[str, str]:
    """Step 1: a request token and its secret for a login that returns to ``callback``."""
    oauth = OAuth1Session(config.consumer_key, client_secret=config.consumer_secret, callback_uri=callback)
    response = oauth.post(_endpoint(config, "initiate"), timeout=config.timeout_s,
                          headers={"User-Agent": _user_agent()})
    return _token_pair(response, "login request")


def authorize_url(config: LoginConfig, token: str) -> str:
    """Where the reviewer allows Side on the wiki (``authenticate``: no prompt once allowed)."""
    return f"{config.wiki_url}?" + urlencode({"title": "Special:OAuth/authenticate", "oauth_token": token,
                                              "oauth_consumer_key": config.consumer_key})


def access_token(config: LoginConfig, token: str, secret: str, verifier: str) -> tuple[str, str]:
    """Step 3a: the verifier the wiki gave the browser, exchanged for an access token."""
    oauth = OAuth1Session(config.consumer_key, client_secret=config.consumer_secret, resource_owner_key=token,
                          resource_owner_secret=secret, verifier=verifier)
    response = oauth.post(_endpoint(config, "token"), timeout=config.timeout_s,
                          headers={"User-Agent": _user_agent()})
    return _token_pair(response, "token exchange")


def identify(config: LoginConfig, token: str, secret: str) -> Identity:
    """Step 3b: the user behind an access token, from the wiki's JWT, checked before it is read.

    The JWT is signed with the consumer secret (HS256), names the consumer as its audience and the
    wiki as its issuer, and echoes the nonce of the signed request that asked for it, so an answer
    replayed from another request or forged by someone without the secret is refused.
    """
    oauth = OAuth1Session(config.consumer_key, client_secret=config.consumer_secret, resource_owner_key=token,
                          resource_owner_secret=secret)
    response = oauth.post(_endpoint(config, "identify"), timeout=config.timeout_s,
                          headers={"User-Agent": _user_agent()})
    try:
        claims = jwt.decode(response.content, config.consumer_secret, algorithms=["HS256"],
                            audience=config.consumer_key, leeway=CLOCK_LEEWAY_S,
                            options={"require": ["iss", "aud", "iat", "exp", "nonce", "username"]})
    except jwt.InvalidTokenError as exc:
        raise WikiRefusal(f"the identity is not valid: {exc} ({response.status_code}: "
                          f"{response.text.strip()[:200]})") from None
    if urlsplit(str(claims["iss"])).netloc != urlsplit(config.wiki_url).netloc:
        raise WikiRefusal(f"the identity was issued by {claims['iss']!r}, not the wiki")
    if float(claims["iat"]) > time.time() + CLOCK_LEEWAY_S:
        raise WikiRefusal("the identity was issued in the future")
    if not _same(str(claims["nonce"]), _nonce(response.request.headers.get("Authorization"))):
        raise WikiRefusal("the identity answers another request (nonce differs)")
    return Identity(username=str(claims["username"]), blocked=bool(claims.get("blocked")))


def _same(given: str, expected: str) -> bool:
    """Constant-time equality of a value from the request and the one kept (any characters: a
    forged value may hold what ``hmac.compare_digest`` refuses in a str)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))


def _nonce(authorization: str | bytes | None) -> str:
    """The ``oauth_nonce`` of a signed request's Authorization header."""
    if isinstance(authorization, bytes):
        authorization = authorization.decode("ascii", "replace")
    for part in (authorization or "").removeprefix("OAuth ").split(","):
        name, _, value = part.strip().partition("=")
        if name == "oauth_nonce":
            return value.strip('"')
    return ""


# -- who is logged in ------------------------------------------------------------------------


def current_reviewer() -> str:
    """The logged-in reviewer's wiki user name, "" for an anonymous visitor."""
    return str(session.get(REVIEWER) or "")


def csrf_token() -> str:
    """This session's token for forms that change something (made on first use)."""
    if CSRF not in session:
        session[CSRF] = secrets.token_urlsafe(32)
    return str(session[CSRF])


def login_url(next_path: str | None = None) -> str:
    return url_for("login.start", next=_safe_next(next_path or request.full_path))


def require_reviewer(form_token: str | None = None) -> str:
    """The reviewer's user name; 401 when nobody is logged in, 403 when a form's CSRF token
    (``form_token``; None for JSON calls, which browsers cannot send cross-site without a
    preflight the API's CORS refuses credentials to) is not this session's."""
    reviewer = current_reviewer()
    if not reviewer:
        raise LoginRequiredError(f"log in with your wiki account to review ({url_for('login.start')})")
    if form_token is not None and not _same(form_token, str(session.get(CSRF) or "")):
        raise ApiError("the form is out of date (its token does not match your login); reload the page",
                       code="bad_csrf_token", status=403)
    return reviewer


def _safe_next(value: str | None) -> str:
    """A path on this service's dashboard, else the dashboard: never another site (open redirect)."""
    if value and value.startswith("http"):
        parts = urlsplit(value)
        value = parts.path + (f"?{parts.query}" if parts.query else "") if parts.netloc == request.host else ""
    if not value or not value.startswith(DEFAULT_NEXT) or "\\" in value or any(c < " " for c in value):
        return DEFAULT_NEXT
    return value.rstrip("?")


# -- routes ----------------------------------------------------------------------------------


def _config() -> LoginConfig:
    config = services().config.login
    if not config.consumer_key or not config.consumer_secret:
        raise ApiError("reviewer login is not configured on this service (login.consumer_key and "
                       "SIDE_LOGIN_CONSUMER_SECRET)", code="login_unavailable", status=503)
    return config


def _pending_key(token: str) -> str:
    return f"{RQ_KEY_PREFIX}:side:{services().config.service.queue}:oauth:{token}"


@bp.get("/login")
def start() -> ResponseReturnValue:
    """Send the browser to the wiki to log in; it comes back to :func:`callback`."""
    config = _config()
    callback_url = services().config.service.public_url.rstrip("/") + url_for(".callback")
    try:
        token, secret = request_token(config, callback_url)
    except (requests.RequestException, WikiRefusal) as exc:
        log.warning("login could not start at %s: %s", config.wiki_url, exc)
        raise ApiError("the wiki did not start the login; try again later", code="wiki_unavailable",
                       status=502) from None
    services().redis.set(_pending_key(token), secret, ex=PENDING_TTL_S)
    session[PENDING] = token
    session[NEXT] = _safe_next(request.args.get("next"))
    return redirect(authorize_url(config, token), code=302)


@bp.get("/callback")
def callback() -> ResponseReturnValue:
    """Finish a login the wiki sends back; refuse a forged, replayed or stale one with a 400."""
    config = _config()
    token, verifier = request.args.get("oauth_token", ""), request.args.get("oauth_verifier", "")
    started = str(session.pop(PENDING, "") or "")
    if not token or not verifier:
        raise LoginRefusedError("the wiki sent no authorization back (was the login cancelled?)")
    if not started or not _same(token, started):
        raise LoginRefusedError("this login was not started in this browser (its state does not match)")
    secret = services().redis.getdel(_pending_key(token))
    if secret is None:
        raise LoginRefusedError("this login has expired or was already used; log in again")
    try:
        access = access_token(config, token, _text(secret), verifier)
        identity = identify(config, *access)
    except WikiRefusal as exc:
        log.warning("login refused: %s", exc)
        raise ApiError("the wiki did not confirm this login; log in again", code="login_refused",
                       status=403) from None
    except requests.RequestException as exc:
        log.warning("login could not finish at %s: %s", config.wiki_url, exc)
        raise ApiError("the wiki did not answer; try again later", code="wiki_unavailable", status=502) from None
    if identity.blocked:
        raise ApiError(f"{identity.username} is blocked on the wiki and cannot review", code="blocked",
                       status=403)
    next_path = _safe_next(session.get(NEXT))
    session.clear()  # a fresh session at login: nothing chosen before it carries over
    session.permanent = True
    session[REVIEWER] = identity.username
    csrf_token()
    log.info("reviewer %s logged in", identity.username)
    return redirect(next_path, code=303)


@bp.post("/logout")
def logout() -> ResponseReturnValue:
    """Forget the login (a form with the CSRF token, so another site cannot log a reviewer out)."""
    if current_reviewer():
        require_reviewer(request.form.get("csrf_token", ""))
    session.clear()
    return redirect(_safe_next(request.form.get("next")), code=303)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def init_app(app: Flask, config: LoginConfig, public_url: str) -> None:
    """The signed session cookie and the login routes; ``reviewer``, ``csrf_token`` and
    ``login_url`` for the templates."""
    secret = config.session_secret
    if not secret:
        secret = secrets.token_hex(32)
        if config.consumer_key:
            log.warning("SIDE_LOGIN_SESSION_SECRET is not set: logins end when the web service restarts "
                        "and are not shared between its processes")
    app.secret_key = secret
    app.config.update(security.session_cookie_settings(public_url),
                      PERMANENT_SESSION_LIFETIME=timedelta(hours=config.session_hours))
    app.register_blueprint(bp)
    app.jinja_env.globals.update(reviewer=current_reviewer, csrf_token=csrf_token, login_url=login_url,
                                 login_enabled=bool(config.consumer_key))
