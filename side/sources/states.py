"""Is what was read the source? Paywalls, walls, soft 404s, shells and foreign pages, told apart.

A fetched page is not always the cited document: a news site may serve a paywall teaser, a
login, cookie-consent or bot-check wall, a "page not found" with status 200 (a soft 404), a
parked or expired domain, an empty JavaScript shell, a stub of a few words, or a page in a
language the English verifier cannot read. Scoring such a page against the claim produces
false flags ("fails verification" when the source was never seen), so the citation is
reported as *cannot check* instead, with the reason, and never flagged.

:func:`assess_source` decides from observable signals only:

* the extracted text: its length in words, and the wall phrases it contains
  (:data:`WALLS`: "subscribe to continue reading", "verify you are human", "page not found",
  "this domain is for sale"...), which decide only when the text around them is short, or when
  the sentences that carry them are most of the text;
* the HTML, summed up once at fetch time in :class:`PageSignals` (cached with the Source, so a
  cached page is judged as it was fetched): ``<title>``, a meta refresh, ``<noscript>`` text, an
  empty single-page-app mount point, the visible text's length and wall phrases, and markers in
  the markup (:data:`MARKERS`: schema.org ``isAccessibleForFree: false``, a bot-check page's
  scripts, domain-parking services);
* binary data served as a page, or text mostly of undecodable characters;
* the language of the text: py3langid (the language identifier trafilatura uses; its model
  ships inside the package, nothing is downloaded), confirmed by a share of English function
  words, so a mixed or number-heavy English page is not called foreign.

Precision matters more than recall: a readable page wrongly called unreadable hides a real
failed citation, while a wall that slips through is scored as before. So every rule needs
specific evidence *and* little text; a long article that merely mentions "page not found" or
carries a cookie banner stays readable. ``side eval sources`` measures the rules on real pages.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

from side.sources.source import PageSignals, Source

__all__ = [
    "SourceState", "Assessment", "REASONS", "WallRule", "WALLS", "MARKERS", "find_markers", "find_phrases",
    "lowerable", "required_literals",
    "JS_PHRASES", "APP_ROOT_IDS", "READABLE_LANGUAGES", "MIN_WORDS", "JS_SHELL_MAX_WORDS", "MIN_TEMPLATES",
    "SHARE_MAX_WORDS", "WALL_SHARE", "LANGUAGE_CONFIDENCE", "MIN_ENGLISH_SHARE", "WEAK_LANGUAGE_CONFIDENCE",
    "NO_ENGLISH_SHARE",
    "MAX_SIGNAL_CHARS", "MAX_REFRESH_DELAY_S", "PageSignals", "page_signals", "markup_signals", "signals_markup",
    "UNPARSED", "word_count", "english_share", "detect_language", "assess_source", "assess_error",
]

log = logging.getLogger(__name__)


class SourceState(StrEnum):
    """What a fetched page turned out to be; anything but ``readable`` means *cannot check*."""

    READABLE = "readable"
    PAYWALL = "paywall"
    LOGIN_WALL = "login_wall"
    CONSENT_WALL = "consent_wall"
    BOT_WALL = "bot_wall"
    SOFT_404 = "soft_404"
    PARKED_DOMAIN = "parked_domain"
    JS_SHELL = "js_shell"
    TOO_LITTLE_TEXT = "too_little_text"
    UNSUPPORTED_LANGUAGE = "unsupported_language"
    FETCH_ERROR = "fetch_error"

    @property
    def label(self) -> str:
        """The state in words, as reports show it ("login wall", "soft 404")."""
        return self.value.replace("_", " ")


#: The one-line reason each state gives, in the words a patroller reads.
REASONS: dict[SourceState, str] = {
    SourceState.READABLE: "the page reads as the cited source",
    SourceState.PAYWALL: "only a teaser of a subscribers-only page was served",
    SourceState.LOGIN_WALL: "the page asks to sign in before it shows its content",
    SourceState.CONSENT_WALL: "a cookie or consent wall was served instead of the content",
    SourceState.BOT_WALL: "a bot check or captcha was served instead of the page",
    SourceState.SOFT_404: "the page says it does not exist (a \"not found\" page served as a success)",
    SourceState.PARKED_DOMAIN: "the domain is parked, for sale, expired or shows a server's default page",
    SourceState.JS_SHELL: "the page is an empty shell that needs JavaScript to show its content",
    SourceState.TOO_LITTLE_TEXT: "the page has too little text to check a claim against",
    SourceState.UNSUPPORTED_LANGUAGE: "the page is not in a language the verifier reads (English)",
    SourceState.FETCH_ERROR: "the source could not be fetched or read",
}


@dataclass(frozen=True)
class Assessment:
    """The verdict on a page before any claim is scored: its state, why, and what showed it."""

    state: SourceState
    #: One line for humans: why the page cannot be checked (or that it can).
    reason: str
    #: What triggered the rule, ready to show: a quoted phrase, a marker, a word count.
    evidence: str = ""

    @property
    def readable(self) -> bool:
        return self.state is SourceState.READABLE

    def describe(self) -> str:
        """``paywall ("to read the full story"): only a teaser of ... was served``."""
        head = f"{self.state.label} ({self.evidence})" if self.evidence else self.state.label
        return f"{head}: {self.reason}"

    def to_dict(self) -> dict[str, str]:
        return {"state": self.state.value, "reason": self.reason, "evidence": self.evidence}


def _found(state: SourceState, evidence: str = "", reason: str | None = None) -> Assessment:
    return Assessment(state, reason or REASONS[state], evidence)


# --- the rules, as data ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WallRule:
    """A kind of page that stands in for the source, recognised by what it says.

    A rule fires when the page's text is shorter than ``max_words`` and one of these holds:
    a ``phrases`` entry is in the extracted text or the title; a ``titles`` pattern matches the
    title; or (stricter, under half of ``max_words``) a :data:`MARKERS` entry of this state is in
    the markup, or, when ``page_phrases``, a phrase is in the page's visible text but not in
    what was extracted (the extractor often drops the wall's own notice). It also fires on a
    longer text (under :data:`SHARE_MAX_WORDS`) when the sentences carrying its phrases are at
    least :data:`WALL_SHARE` of the text: the page is mostly wall.
    """

    state: SourceState
    #: Lower-case phrases, matched on word boundaries in text with normalised quotes and spaces.
    phrases: tuple[str, ...]
    #: Regular expressions on the lower-cased ``<title>`` (or the extracted title).
    titles: tuple[str, ...] = ()
    #: Longest text (in words) this wall is believed for.
    max_words: int = 150
    #: Whether a phrase seen only in the visible HTML (not in the extracted text) counts.
    page_phrases: bool = True
    #: Why the rule is shaped as it is (shown by ``side eval sources``' documentation only).
    note: str = ""


#: The wall rules, in precedence order (the first that fires decides).
WALLS: tuple[WallRule, ...] = (
    WallRule(
        SourceState.BOT_WALL,
        phrases=(
            "verify you are human", "verifying you are human", "verify that you are human",
            "please verify you are a human", "confirm you are a human", "are you a robot",
            "checking your browser before accessing", "checking if the site connection is secure",
            "enable javascript and cookies to continue", "please complete the security check",
            "our systems have detected unusual traffic", "unusual traffic from your computer network",
            "to discuss automated access to amazon data", "access to this page has been denied",
            "sorry, you have been blocked", "why have i been blocked", "request unsuccessful. incapsula incident id",
            "ddos protection by", "performance & security by cloudflare", "press & hold to confirm",
            "you don't have permission to access", "the owner of this website has banned",
            "pardon our interruption",
        ),
        titles=(r"^just a moment\.\.\.", r"^attention required!", r"^access denied(?:$|\s*[|\-\u2013\u2014])",
                r"^robot check$",
                r"^are you a robot", r"^security check$", r"^pardon our interruption", r"^one more step$",
                r"^ddos-guard$", r"^you have been blocked"),
        max_words=150,
        note="Challenge pages of Cloudflare, Akamai, Imperva, DataDome, PerimeterX and Amazon; "
             "a captcha widget alone (comment forms) is no evidence.",
    ),
    WallRule(
        SourceState.PARKED_DOMAIN,
        phrases=(
            "this domain is for sale", "this domain may be for sale", "this domain name is for sale",
            "the domain name is for sale", "domain is for sale", "buy this domain", "make an offer on this domain",
            "inquire about this domain", "this domain has expired", "this domain name has expired",
            "domain has expired and is", "renew this domain", "this domain is parked", "this web page is parked",
            "this page is parked", "parked free, courtesy of godaddy", "future home of something quite cool",
            "this account has been suspended", "welcome to nginx!", "apache2 ubuntu default page",
            "apache2 debian default page", "test page for the apache http server",
            "if you see this page, the nginx web server is successfully installed",
        ),
        titles=(r"domain (?:name )?(?:is |may be )?for sale", r"^account suspended$", r"^welcome to nginx",
                r"^apache2 \w+ default page", r"^iis windows server$", r"^parked domain"),
        max_words=200,
        note="Registrar and marketplace parking pages, expired or suspended hosting, a web server's "
             "default page: the domain no longer serves the cited document.",
    ),
    WallRule(
        SourceState.SOFT_404,
        phrases=(
            "page not found", "404 not found", "error 404", "404 error", "404. that's an error",
            "the page you requested could not be found", "the page you are looking for",
            "the page you were looking for", "the page you requested does not exist",
            "the requested url was not found on this server", "this page does not exist",
            "this page doesn't exist", "this page could not be found", "we can't find the page",
            "we couldn't find the page", "we couldn't find that page", "sorry, we couldn't find",
            "that page can't be found", "nothing was found at this location", "page no longer exists",
            "this page is no longer available", "the page cannot be found", "the page could not be found",
        ),
        titles=(r"\bpage not found\b", r"\b404 (?:not found|error|page)\b", r"\berror 404\b",
                r"^404\s*(?:[|\-\u2013\u2014:.!]|$)", r"^not found$", r"^page (?:does not|doesn't) exist"),
        max_words=150,
        note="Sites that answer a missing page with status 200; the title is the strongest sign.",
    ),
    WallRule(
        SourceState.PAYWALL,
        phrases=(
            "subscribe to continue reading", "subscribe to read", "subscribe now to read", "to continue reading",
            "continue reading your article with", "continue reading this article with",
            "to read the full story", "to read the full article", "to read this article",
            "read the full article with a subscription", "this article is for subscribers only",
            "this content is for subscribers only", "available to subscribers only", "for subscribers only",
            "subscribers only", "exclusively for subscribers", "already a subscriber", "become a subscriber to",
            "you have reached your limit of free articles", "you've reached your article limit",
            "you have reached your free article limit", "you have read all your free articles",
            "become a member to read", "unlock this article", "start your free trial to continue",
            "sign up to read the full", "purchase a subscription to",
        ),
        max_words=300,
        note="Teasers: a paragraph or three, then the subscription notice (or schema.org's "
             "isAccessibleForFree: false). Metered sites that serve the whole text with that "
             "marker are long, so they stay readable.",
    ),
    WallRule(
        SourceState.LOGIN_WALL,
        phrases=(
            "sign in to continue", "log in to continue", "login to continue", "sign in to read", "log in to read",
            "sign in to view", "log in to view", "sign in to see", "log in to see", "sign in to access",
            "log in to access", "logged in to view", "logged in to see", "logged in to read", "logged in to access",
            "you need to sign in to", "login required", "sign in required", "for members only",
            "this content is available to members only", "log in or sign up to", "create an account or log in",
        ),
        titles=(r"^(?:sign[ -]?in|log[ -]?in|sign[ -]?on)(?:\s*(?:[|\-\u2013\u2014:\u00b7]|to\b).*)?$",
                r"[|\-\u2013\u2014:]\s*(?:sign[ -]?in|log[ -]?in)$"),
        max_words=150,
        page_phrases=False,
        note="Login pages and members-only notices. \"You must be logged in to post a comment\" is "
             "under many readable posts, so only phrases about the content count, and only in the "
             "extracted text; a login box in a forum's header is no evidence either.",
    ),
    WallRule(
        SourceState.CONSENT_WALL,
        phrases=(
            "before you continue to", "we value your privacy", "accept all cookies", "accept cookies",
            "we use cookies", "this site uses cookies", "this website uses cookies", "cookie settings",
            "manage cookies", "reject all cookies", "your privacy choices",
            "store and/or access information on a device", "we and our partners", "consent to our use of cookies",
            "cookie consent", "personalised ads and content", "personalized ads and content",
        ),
        titles=(r"^before you continue", r"^(?:cookie|privacy) consent(?:\s*[|\-\u2013\u2014:]|$)"),
        max_words=200,
        page_phrases=False,
        note="Cookie banners are on many readable pages, so a consent phrase counts only in the "
             "extracted text (where the banner is the content), never from the page around it.",
    ),
)

#: Markers in the raw markup: name -> (state, pattern). Names are stored in
#: :class:`PageSignals` and shown as evidence. Each decides only on a short text (see
#: :class:`WallRule`): Cloudflare also injects scripts into readable pages, and metered sites
#: mark full articles ``isAccessibleForFree: false``.
MARKERS: dict[str, tuple[SourceState, str]] = {
    "schema.org isAccessibleForFree: false": (
        SourceState.PAYWALL,
        r"isAccessibleForFree[\"']?\s*(?::|content\s*=)\s*[\"']?(?:https?://schema\.org/)?false\b"),
    "Cloudflare challenge": (SourceState.BOT_WALL, r"_cf_chl_opt|cf-browser-verification|/cdn-cgi/challenge-platform/h/"
                                                   r"[a-z]/orchestrate/(?:jsch|chl_page|managed)"),
    "DataDome block page": (SourceState.BOT_WALL, r"captcha-delivery\.com"),
    "PerimeterX block page": (SourceState.BOT_WALL, r"px-captcha"),
    "Distil block page": (SourceState.BOT_WALL, r"distil_r_captcha"),
    "domain parking service": (
        SourceState.PARKED_DOMAIN,
        r"sedoparking\.com|parkingcrew\.net|bodis\.com|/adsense/domains/caf\.js|parklogic\.com|"
        r"dan\.com/buy-domain|afternic\.com/forsale|hugedomains\.com/domain_profile|domainmarket\.com/buynow"),
}

#: Phrases of a page that shows nothing without JavaScript (noscript text, or all there is).
JS_PHRASES: tuple[str, ...] = (
    "you need to enable javascript to run this app", "doesn't work properly without javascript enabled",
    "please enable javascript to continue", "please enable javascript to view", "enable javascript to view",
    "this site requires javascript", "this app requires javascript", "this website requires javascript",
    "javascript is required", "javascript is disabled", "javascript must be enabled", "please enable javascript",
    "please turn on javascript", "you need to enable javascript", "requires javascript to run", "loading...",
)

#: ids of the element a single-page app renders into; empty, the page is a shell.
APP_ROOT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "app-root", "main-app",
                          "react-root", "ember-application"})

#: Languages the verifier reads (its cross-encoder and combiner are trained on English).
READABLE_LANGUAGES = frozenset({"en"})

#: Fewer words than this is no source: one short sentence ("Foo was founded in 1990 in Paris.")
#: can still support a claim, so the bar is deliberately low.
MIN_WORDS = 6
#: A JavaScript shell has almost no text, extracted or visible.
JS_SHELL_MAX_WORDS = 50
#: Unfilled ``{{ }}`` templates that make a page with almost no extracted text a shell.
MIN_TEMPLATES = 3
#: A page that is mostly wall phrases is a wall up to this length.
SHARE_MAX_WORDS = 1000
#: Share of the text's words in sentences that carry a wall's phrases, for a page to be "mostly wall".
WALL_SHARE = 0.5
#: py3langid's normalised probability needed to call a page foreign ...
LANGUAGE_CONFIDENCE = 0.9
#: ... with fewer English function words than this (the verifier's own check uses the same bar).
MIN_ENGLISH_SHARE = 0.12
#: A less confident guess suffices when the text has almost no English function words (mixed
#: scripts such as lyrics with transliteration); English prose has 0.3-0.5, tables of scores
#: can have as few, which is why the guess must still name another language.
WEAK_LANGUAGE_CONFIDENCE = 0.6
NO_ENGLISH_SHARE = 0.04
#: Characters of text the language is detected on.
LANGUAGE_SAMPLE_CHARS = 10_000
#: Share of undecodable characters (U+FFFD, control characters) that makes text junk.
MAX_JUNK_SHARE = 0.1
#: Characters of markup summed up in :class:`PageSignals`: walls are small pages, and a large
#: page is judged by its text anyway. Bounds the cost of a 10 MB page.
MAX_SIGNAL_CHARS = 1_000_000
#: Characters of visible text searched for wall phrases.
MAX_VISIBLE_CHARS = 200_000

#: English function words for :func:`english_share` (the same idea as the verifier's check).
_ENGLISH = frozenset(
    "a an the of in on at to for and or but is are was were be been by with as from that this these those it its "
    "he she they his her their there which who what when where has have had do does did not no so than then also "
    "into over after before between more most all we you our your i".split())

_WORD = re.compile(r"\w+")
#: Scripts written without spaces between words: one token is many words.
_UNSPACED = re.compile(r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_JUNK = re.compile(r"[\ufffd\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: Characters of typeset text and their plain forms, as phrases are written.
_QUOTES = (("\u2019", "'"), ("\u2018", "'"), ("\u201c", '"'), ("\u201d", '"'), ("\u00a0", " "),
           ("\u2026", "..."))


def _squeeze(text: str) -> str:
    r"""Runs of white space as one space, none at either end: what ``re.sub(r"\s+", " ",
    text).strip()`` gives (the same characters are white space to ``\s``, ``split`` and
    ``strip``), several times faster on a page's text."""
    return " ".join(text.split())


#: Names of the languages py3langid reports most often, for reasons; others show as codes.
_LANGUAGE_NAMES = {
    "de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "pt": "Portuguese", "nl": "Dutch",
    "ru": "Russian", "pl": "Polish", "sv": "Swedish", "da": "Danish", "no": "Norwegian", "fi": "Finnish",
    "cs": "Czech", "tr": "Turkish", "ar": "Arabic", "he": "Hebrew", "fa": "Persian", "hi": "Hindi",
    "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "th": "Thai", "vi": "Vietnamese", "id": "Indonesian",
    "uk": "Ukrainian", "el": "Greek", "hu": "Hungarian", "ro": "Romanian",
}


def _plain(text: str) -> str:
    """``text`` with each character of :data:`_QUOTES` in its plain form. One ``replace`` per
    character the text holds: ``str.translate`` with a character that becomes three went
    character by character, about 30 times slower on a page's text."""
    if text.isascii():
        return text
    for typeset, plain in _QUOTES:
        if typeset in text:
            text = text.replace(typeset, plain)
    return text


def _normalize(text: str) -> str:
    """Lower case, straight quotes, single spaces: the form phrases are written in."""
    return _squeeze(_plain(text).lower())


def _normal_forms(phrases: Iterable[str]) -> tuple[str, ...]:
    """Each of ``phrases`` in its :func:`_normalize` form, once: the alternatives of their
    :func:`_phrase_pattern`."""
    return tuple(sorted({_normalize(p) for p in phrases}))


def _phrase_pattern(phrases: Iterable[str]) -> re.Pattern[str]:
    alternatives = sorted(_normal_forms(phrases), key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(p) for p in alternatives) + r")(?!\w)")


@cache
def _wall_patterns() -> tuple[tuple[WallRule, re.Pattern[str], tuple[re.Pattern[str], ...]], ...]:
    return tuple((rule, _phrase_pattern(rule.phrases), tuple(re.compile(t) for t in rule.titles)) for rule in WALLS)


@cache
def _rule_phrases(rule: WallRule) -> tuple[str, ...]:
    """``rule``'s phrases, normalised: the alternatives of its pattern."""
    return _normal_forms(rule.phrases)


@cache
def _all_phrases() -> re.Pattern[str]:
    return _phrase_pattern(_phrases())  # normalising a normalised phrase gives it back


@cache
def _phrases() -> tuple[str, ...]:
    """Every wall phrase and JavaScript phrase, normalised: the alternatives of :func:`_all_phrases`."""
    return _normal_forms([p for rule in WALLS for p in rule.phrases] + list(JS_PHRASES))


def find_phrases(normalized: str) -> tuple[str, ...]:
    """The wall and JavaScript phrases in ``normalized`` (:func:`_normalize`), in order of first
    appearance. The pattern runs only where some phrase is a substring: on most pages none is,
    and a substring search per phrase is cheaper than the pattern's try at every position."""
    if not any(phrase in normalized for phrase in _phrases()):
        return ()
    return tuple(dict.fromkeys(m.group(0) for m in _all_phrases().finditer(normalized)))


@cache
def _js_pattern() -> re.Pattern[str]:
    return _phrase_pattern(JS_PHRASES)


#: What makes a pattern's lower-case form mean something else: an escape of a letter or digit
#: other than ``\s``, ``\b``, ``\w``, ``\d`` (``\S``, ``\x41``, ``\101``, ``\N{...}``), an inline flag or
#: named group (``(?-i:ABC)``), or an upper-case letter inside brackets (``[A-z]``).
_NOT_LOWERABLE = re.compile(r"\\[^sbwd\W]|\(\?[a-zA-Z<=!-]|\[[^\]]*[A-Z]")


def lowerable(pattern: str) -> bool:
    """Whether ``pattern``, ignoring case, matches where ``pattern.lower()`` matches lower-cased
    text: ASCII, and nothing of :data:`_NOT_LOWERABLE`."""
    return pattern.isascii() and _NOT_LOWERABLE.search(pattern) is None


def _items(pattern: str, start: int = 0) -> Iterator[tuple[int, int, int]]:
    """(start, end, depth) of each item of ``pattern`` from ``start``: an escape, a whole class,
    or one character; depth is how many groups are open before the item."""
    depth, n = 0, start
    while n < len(pattern):
        char = pattern[n]
        end = n + 2 if char == "\\" else _class_end(pattern, n) if char == "[" else n + 1
        yield n, end, depth
        depth += (char == "(") - (char == ")")
        n = end


def _class_end(pattern: str, start: int) -> int:
    """The index just past the class that opens at ``start`` (``[``, ``[^``, ``[]`` and ``[^]``
    open a class: a ``]`` first in it is one of its characters, not its end)."""
    n = start + 1 if pattern[start + 1:start + 2] == "^" else start
    n += 2 if pattern[n + 1:n + 2] == "]" else 1
    while n < len(pattern):
        if pattern[n] == "]":
            return n + 1
        n += 2 if pattern[n] == "\\" else 1
    return n


def _alternatives(pattern: str) -> list[str]:
    """``pattern`` split at its top-level ``|`` (not inside a group, a class or after ``\\``)."""
    parts, begin = [], 0
    for n, _end, depth in _items(pattern):
        if pattern[n] == "|" and depth == 0:
            parts.append(pattern[begin:n])
            begin = n + 1
    return [*parts, pattern[begin:]]


def _longest_literal(alternative: str) -> str:
    """The longest run of literal characters every match of ``alternative`` (a regular expression
    with no top-level ``|``) contains, "" if none is sure. Conservative: a group, a class, an
    anchor or any escape other than of punctuation ends a run, and a character made optional
    (``?``, ``*``, ``{``) leaves it; ``+`` keeps it (one is there) and ends the run."""
    best, run, n = "", "", 0
    while n < len(alternative):
        char = alternative[n]
        if char == "\\":  # "\." is a dot; "\s", "\b", "\x41" and the like end the run
            escaped = alternative[n + 1:n + 2]
            if escaped and not escaped.isalnum():
                run, n = run + escaped, n + 2
                continue
            best, run, n = max(best, run, key=len), "", n + 2
            continue
        if char in "?*{":
            run = run[:-1]
        if char.isalnum() or char in " _-/:,;=\"'<>!@#%&~`":
            run += char
        else:
            best, run = max(best, run, key=len), ""
            if char in "([":  # nothing in a group or class is counted: skip to its end
                n = _skip_group(alternative, n)
                continue
            if char == "{":  # nor a count's digits
                close = alternative.find("}", n)
                n = len(alternative) if close < 0 else close + 1
                continue
        n += 1
    return max(best, run, key=len)


def _skip_group(pattern: str, start: int) -> int:
    """The index just past the group or class that opens at ``start``."""
    if pattern[start] == "[":
        return _class_end(pattern, start)
    for n, end, depth in _items(pattern, start):
        if pattern[n] == ")" and depth == 1:
            return end
    return len(pattern)


#: What :func:`required_literals` does not read: an escape of a letter or digit other than a
#: class or boundary (``\x41``, ``\101``, ``\1``, ``\N{...}``), and a parenthesis with ``?`` that is
#: not a group, a lookahead or a lookbehind (``(?#...)``, ``(?x)``, ``(?i:...)``, ``(?P<name>...)``).
_UNREAD = re.compile(r"\\[^sSwWdDbB\W]|\(\?(?![:=!]|<[=!])")


def required_literals(pattern: str) -> tuple[str, ...] | None:
    """Strings of which every match of ``pattern`` contains one (one per top-level
    alternative), or None where some alternative has none that is sure, or the pattern has
    syntax this reading does not follow (:data:`_UNREAD`)."""
    if _UNREAD.search(pattern):
        return None
    literals = tuple(_longest_literal(alternative) for alternative in _alternatives(pattern))
    return literals if all(literals) else None


@cache
def _marker_patterns() -> tuple[tuple[str, re.Pattern[str], re.Pattern[str] | None, tuple[bytes, ...] | None], ...]:
    """Each marker's pattern as written (case ignored); the same in lower case for
    lower-cased markup (None where that would mean something else: :func:`lowerable`); and, as
    UTF-8, the lower-case strings one of which its every match contains (:func:`required_literals`)."""
    return tuple((name, re.compile(pattern, re.IGNORECASE),
                  re.compile(pattern.lower()) if lowerable(pattern) else None,
                  _encoded(required_literals(pattern.lower())) if lowerable(pattern) else None)
                 for name, (_state, pattern) in MARKERS.items())


def _encoded(literals: tuple[str, ...] | None) -> tuple[bytes, ...] | None:
    return None if literals is None else tuple(literal.encode() for literal in literals)


#: The characters ``re.IGNORECASE`` takes for an ASCII letter whose ``lower()`` is not that
#: letter: dotted I (lower-cased to two characters), dotless i, long s; and the Kelvin sign,
#: which it takes for k and which lower-cases to k but is not ASCII.
_CASE_SPECIALS = "\u0130\u0131\u017f\u212a"


def find_markers(markup: str) -> tuple[str, ...]:
    """Names of the :data:`MARKERS` in ``markup``, case ignored.

    Searching a megabyte of markup with patterns that ignore case was nearly three quarters of a
    page's signals (about 22 ms of a real page). The markers are ASCII; on markup without any
    of :data:`_CASE_SPECIALS`, a match of a pattern that ignores case is made of ASCII characters
    where the pattern has letters, so:

    - one of the pattern's :func:`required_literals` is in the markup's UTF-8 bytes with their
      ASCII letters lower-cased (a substring search; lower-casing bytes is a fifth of the cost
      of lower-casing the text, and most pages hold no literal at all);
    - only then, the pattern's lower-case form is searched in the lower-cased markup, where it
      matches exactly where the pattern matches the markup (lower-casing keeps every position
      and what is a word character).

    Markup with one of :data:`_CASE_SPECIALS` is searched as written.
    """
    if any(char in markup for char in _CASE_SPECIALS):
        return tuple(name for name, written, _lower, _literals in _marker_patterns() if written.search(markup))
    folded = markup.encode("utf-8", "surrogatepass").lower()
    lowered: str | None = None
    found = []
    for name, written, lower, literals in _marker_patterns():
        if lower is None:
            hit = written.search(markup) is not None
        elif literals is not None and not any(literal in folded for literal in literals):
            hit = False
        else:
            lowered = markup.lower() if lowered is None else lowered
            hit = lower.search(lowered) is not None
        if hit:
            found.append(name)
    return tuple(found)


# --- counting and language ---------------------------------------------------------------------------


def word_count(text: str) -> int:
    """Words of ``text``; a run of Chinese, Japanese, Thai, Lao, Khmer or Burmese counts one
    word per two characters (those scripts put no spaces between words)."""
    tokens = _WORD.findall(text)
    if not _UNSPACED.search(text):  # most pages: every token is one word
        return len(tokens)
    count = 0
    for token in tokens:
        count += max(1, len(token) // 2) if _UNSPACED.search(token) else 1
    return count


def english_share(text: str, limit: int = 3000) -> float:
    """Share of the first ``limit`` tokens that are English function words (about 0.3-0.5 in
    English prose, near zero in other languages)."""
    tokens = _WORD.findall(text[:LANGUAGE_SAMPLE_CHARS].lower())[:limit]
    return sum(t in _ENGLISH for t in tokens) / len(tokens) if tokens else 0.0


_identifier_lock = threading.Lock()


@cache
def _identifier() -> Any:
    """py3langid's identifier with normalised probabilities (its model ships in the package:
    loading reads a 4.5 MB file, about half a second, once per process)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def detect_language(text: str) -> tuple[str, float]:
    """(ISO 639-1 code, probability) of the first :data:`LANGUAGE_SAMPLE_CHARS` of ``text``."""
    with _identifier_lock:  # the first call loads the model; later ones only read it
        identifier = _identifier()
    code, probability = identifier.classify(text[:LANGUAGE_SAMPLE_CHARS])
    return str(code), float(probability)


# --- what the HTML says ------------------------------------------------------------------------------


_TEMPLATE = re.compile(r"\{\{[^{}]{1,200}\}\}")
_REFRESH = re.compile(r"^\s*(\d+(?:\.\d*)?)?\s*[;,]?\s*(?:url\s*=\s*)?['\"]?([^'\"\s>]*)", re.IGNORECASE)
#: A meta refresh within this many seconds forwards the reader; a later one reloads a live page.
MAX_REFRESH_DELAY_S = 10.0
_VISIBLE = ("//body//text()[not(ancestor::script or ancestor::style or ancestor::noscript "
            "or ancestor::template)]")


def _visible_strings(tree: Any) -> list[str]:
    """The text of :data:`_VISIBLE` as plain strings (lxml's default "smart" strings, which
    know their element, cost half the query on a real page)."""
    return list(tree.xpath(_VISIBLE, smart_strings=False))


def _cut(text: str, limit: int) -> str:
    return _squeeze(text)[:limit]


def _empty_root(tree: Any) -> str:
    """The id of an app mount point with no text in it, if the page has one."""
    for element in tree.iter("div", "main", "app-root", "section"):
        ident = element.get("id") or ("app-root" if element.tag == "app-root" else "")
        if ident in APP_ROOT_IDS and not element.text_content().strip():
            return ident
    return ""


def page_signals(html: str | bytes) -> PageSignals:
    """:class:`PageSignals` of a page, from its first :data:`MAX_SIGNAL_CHARS` characters.

    Never raises on hostile markup: what cannot be parsed gives empty signals (the markers,
    found by pattern in the raw text, are kept).
    """
    from trafilatura.utils import decode_file

    try:
        raw = html[: 4 * MAX_SIGNAL_CHARS] if isinstance(html, bytes) else html
        markup = str(decode_file(raw))[:MAX_SIGNAL_CHARS]
    except Exception as exc:  # a decoder failure on content from the web
        log.debug("page signals: undecodable page: %s", exc)
        return PageSignals()
    return markup_signals(markup)


#: ``tree`` of :func:`markup_signals` when the caller has not parsed the markup.
UNPARSED: Any = object()


def signals_markup(html: str | bytes, decoded: str) -> str | None:
    """The markup :func:`page_signals` reads for ``html`` when that is all of ``decoded``
    (``html`` decoded by trafilatura's ``decode_file``), else None: a page of at most
    :data:`MAX_SIGNAL_CHARS` characters, so a reader that parsed the page for its text can
    read its signals from the same tree."""
    small = isinstance(html, str) or len(html) <= 4 * MAX_SIGNAL_CHARS
    return decoded if small and len(decoded) <= MAX_SIGNAL_CHARS else None


def markup_signals(markup: str, tree: Any = UNPARSED) -> PageSignals:
    """:class:`PageSignals` of decoded ``markup``; ``tree``, if given, is what trafilatura's
    ``load_html`` makes of it (None where it refuses the markup), read and left unchanged."""
    from side.sources.xmlchars import load_html

    markers = find_markers(markup)
    try:
        if tree is UNPARSED:
            tree = load_html(markup)
        if tree is None:
            return PageSignals(markers=markers)
        title = _cut(tree.findtext(".//title") or "", 300)
        refresh = ""
        for meta in tree.iter("meta"):  # one inside <noscript> only fires without JavaScript
            if (meta.get("http-equiv") or "").lower() == "refresh" and not any(
                    a.tag == "noscript" for a in meta.iterancestors()):
                match = _REFRESH.match(meta.get("content") or "")
                if match and match.group(2) and float(match.group(1) or 0) <= MAX_REFRESH_DELAY_S:
                    refresh = match.group(2)[:500]
                break
        noscript = _cut(" ".join(n.text_content() for n in tree.iter("noscript")), 500)
        visible = _cut(" ".join(_visible_strings(tree)), MAX_VISIBLE_CHARS)
        return PageSignals(title=title, visible_words=word_count(visible), noscript=noscript,
                           empty_root=_empty_root(tree), refresh=refresh, markers=markers,
                           phrases=find_phrases(_normalize(visible))[:20], templates=len(_TEMPLATE.findall(visible)))
    except Exception as exc:  # any failure of the parser on hostile markup
        log.debug("page signals: unparsable page: %s", exc)
        return PageSignals(markers=markers)


# --- the assessment --------------------------------------------------------------------------------


def _sentences(source: Source) -> list[str]:
    sentences = list(getattr(source, "sentences", ()) or ())
    return sentences or [line for line in (source.text or "").splitlines() if line.strip()]


class _Sentences:
    """A page's sentences, each with its :func:`_normalize` form made once, when a wall first
    asks (every wall looks for its phrases in every sentence of a long page: normalising them
    once per wall was about 8% of a WiCE dev page's preparation)."""

    def __init__(self, sentences: list[str]) -> None:
        self._sentences = sentences
        self._normalized: list[tuple[str, str]] | None = None
        self._joined: str | None = None

    def normalized(self) -> list[tuple[str, str]]:
        """Each sentence and its normalised form."""
        if self._normalized is None:
            self._normalized = [(s, _normalize(s)) for s in self._sentences]
        return self._normalized

    def may_hold(self, phrases: tuple[str, ...]) -> bool:
        """Whether some normalised sentence holds one of ``phrases`` (normalised) as a substring:
        where none does, no sentence matches their pattern, and the pattern need not run on
        each sentence (a wall's search through every sentence was a quarter of a real page's
        assessment). A normalised sentence has no line break, so a phrase found in the
        sentences joined by line breaks lies within one of them."""
        if self._joined is None:
            self._joined = "\n".join(normal for _sentence, normal in self.normalized())
        return any(phrase in self._joined for phrase in phrases)


def _wall(rule: WallRule, phrases: re.Pattern[str], titles: tuple[re.Pattern[str], ...], text: str,
          title_texts: list[str], words: int, signals: PageSignals | None,
          sentences: _Sentences) -> Assessment | None:
    """This wall's assessment of the page, or None (see :class:`WallRule` for the conditions)."""
    if words < rule.max_words:
        for title in title_texts:
            for pattern in titles:
                if pattern.search(title):
                    return _found(rule.state, f'title "{title[:80]}"')
        match = phrases.search(text) or next((m for t in title_texts if (m := phrases.search(t))), None)
        if match:
            return _found(rule.state, f'"{match.group(0)}"')
    if signals is not None and words < rule.max_words // 2:
        for name in signals.markers:
            if MARKERS.get(name, (None,))[0] is rule.state:
                return _found(rule.state, name)
        if rule.page_phrases:
            for phrase in signals.phrases:
                if phrases.fullmatch(phrase):
                    return _found(rule.state, f'"{phrase}" on the page')
    if rule.max_words <= words < SHARE_MAX_WORDS and sentences.may_hold(_rule_phrases(rule)):
        hits = [(m.group(0), word_count(s)) for s, normal in sentences.normalized() if (m := phrases.search(normal))]
        share = sum(n for _phrase, n in hits) / words
        if hits and share >= WALL_SHARE:
            return _found(rule.state, f'{share:.0%} of the text is notices like "{hits[0][0]}"')
    return None


def _js_shell(text: str, words: int, signals: PageSignals | None) -> Assessment | None:
    """A page whose content only JavaScript would draw: nearly no text extracted, and unfilled
    client-side templates, or nearly no visible text with an empty app mount point or a "please
    enable JavaScript" notice."""
    if words >= JS_SHELL_MAX_WORDS:
        return None
    pattern = _js_pattern()
    if signals is None:  # only the text to go on: the notice must be nearly all there is
        match = pattern.search(text) if words < JS_SHELL_MAX_WORDS // 2 else None
        return _found(SourceState.JS_SHELL, f'"{match.group(0)}"') if match else None
    if signals.templates >= MIN_TEMPLATES:
        return _found(SourceState.JS_SHELL, f"{signals.templates} unfilled {{{{ }}}} templates")
    if signals.visible_words >= JS_SHELL_MAX_WORDS:
        return None
    if signals.empty_root:
        return _found(SourceState.JS_SHELL, f'empty app element "#{signals.empty_root}"')
    for where in (_normalize(signals.noscript), text):
        if match := pattern.search(where):
            return _found(SourceState.JS_SHELL, f'"{match.group(0)}"')
    for phrase in signals.phrases:
        if pattern.fullmatch(phrase):
            return _found(SourceState.JS_SHELL, f'"{phrase}" on the page')
    return None


def _parked_refresh(refresh: str) -> bool:
    """Whether a meta refresh forwards to a domain-parking service (the :data:`MARKERS` of parking)."""
    return any(state is SourceState.PARKED_DOMAIN and re.search(pattern, refresh, re.IGNORECASE)
               for state, pattern in MARKERS.values())


def _too_little(words: int, signals: PageSignals | None) -> Assessment | None:
    """A stub: fewer than :data:`MIN_WORDS` words, or a page that only forwards elsewhere."""
    if signals is not None and signals.refresh and words < JS_SHELL_MAX_WORDS:
        if _parked_refresh(signals.refresh):
            return _found(SourceState.PARKED_DOMAIN, f"forwards to {signals.refresh[:120]}")
        return _found(SourceState.TOO_LITTLE_TEXT, f"forwards to {signals.refresh[:120]}",
                      "the page only forwards (meta refresh) to another address, which was not read")
    if words < MIN_WORDS:
        return _found(SourceState.TOO_LITTLE_TEXT, f"{words} word{'s' if words != 1 else ''}")
    return None


def _junk_share(text: str) -> float:
    """Share of undecodable and control characters in the first :data:`LANGUAGE_SAMPLE_CHARS`."""
    sample = text[:LANGUAGE_SAMPLE_CHARS]
    return len(_JUNK.findall(sample)) / max(1, len(sample))


def _binary(html: str | bytes | None, words: int) -> Assessment | None:
    """A "page" that is binary data (an image or archive served as HTML, a corrupt download):
    the extractor found (almost) no text, and the markup itself, decoded as the fetcher decodes
    it, is mostly undecodable or control characters. Without this it would read as a stub."""
    if html is None or words >= MIN_WORDS:
        return None
    from trafilatura.utils import decode_file

    try:
        head = html[:LANGUAGE_SAMPLE_CHARS]
        junk = _junk_share(str(decode_file(head)) if isinstance(head, bytes) else head)
    except Exception as exc:  # a decoder failure on content from the web: no evidence either way
        log.debug("binary check: undecodable page: %s", exc)
        return None
    if junk < MAX_JUNK_SHARE:
        return None
    return _found(SourceState.UNSUPPORTED_LANGUAGE, f"{junk:.0%} undecodable characters in the page",
                  "the page is binary data, not text the verifier reads")


def _language(text: str) -> Assessment | None:
    """Foreign or junk text: py3langid confident of a language the verifier does not read, and
    few English function words; or mostly undecodable characters."""
    sample = text[:LANGUAGE_SAMPLE_CHARS]
    junk = _junk_share(sample)
    if junk >= MAX_JUNK_SHARE:
        return _found(SourceState.UNSUPPORTED_LANGUAGE, f"{junk:.0%} undecodable characters",
                      "the text is binary or mis-decoded, not a language the verifier reads")
    share = english_share(sample)
    if share >= MIN_ENGLISH_SHARE:  # readable whatever the identifier says: no need to ask it
        return None
    code, probability = detect_language(sample)
    if code in READABLE_LANGUAGES or probability < WEAK_LANGUAGE_CONFIDENCE:
        return None
    if probability < LANGUAGE_CONFIDENCE and share >= NO_ENGLISH_SHARE:
        return None
    name = _LANGUAGE_NAMES.get(code, code)
    return _found(SourceState.UNSUPPORTED_LANGUAGE, f"{name}, {code} {probability:.2f}",
                  f"the page is in {name}; the verifier reads English only")


def assess_source(source: Source, html: str | bytes | None = None) -> Assessment:
    """Whether ``source`` is the cited document as far as can be seen, and if not, why.

    ``html`` is the page it was extracted from, when the caller has it; otherwise the
    :class:`PageSignals` kept on the Source (``source.page``) are used, and with neither, the
    text alone. Order: the walls of :data:`WALLS` (a wall page also looks short or foreign),
    then a JavaScript shell, binary data (with ``html`` only), a stub, and the language.
    Bounded: a few regular-expression passes over at most 400,000 characters and one language
    guess on 10,000.
    """
    signals = page_signals(html) if html is not None else getattr(source, "page", None)
    text = _normalize((source.text or "")[:SHARE_MAX_WORDS * 20])
    words = word_count(source.text or "")
    titles = [t for t in dict.fromkeys(_normalize(x) for x in (signals.title if signals else "", source.title)) if t]
    sentences = _Sentences(_sentences(source) if words < SHARE_MAX_WORDS else [])
    for rule, phrases, title_patterns in _wall_patterns():
        found = _wall(rule, phrases, title_patterns, text, titles, words, signals, sentences)
        if found is not None:
            return found
    for check in (_js_shell(text, words, signals), _binary(html, words), _too_little(words, signals)):
        if check is not None:
            return check
    return _language(source.text or "") or _found(SourceState.READABLE)


def assess_error(error: BaseException) -> Assessment:
    """The assessment of a source that could not be fetched or read at all."""
    message = " ".join(str(error).split())[:200]
    return _found(SourceState.FETCH_ERROR, message or type(error).__name__)
