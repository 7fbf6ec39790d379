"""From recorded exchanges to the steps of a journey.

- sorted by start time (browsers write entries in the order responses end);
- dropped: cancelled requests (status 0), CONNECT, what is not http(s), CORS preflights (horde
  is no browser), beacons, browser noise and analytics hosts; WebSocket upgrades are noted;
- redirect chains collapsed into the request that started them: the engine follows redirects,
  so each hop is kept only for its response (cookies it set, what the chain ended on);
- static resources (scripts, styles, images, fonts) attached to the page that loaded them
  (by ``pageref`` when the recorder wrote pages, else the latest page before them), or dropped;
- the pause before each step: the recorded gap from the end of the previous step (and its
  resources) to its start, kept from 100 ms, to the tenth of a second (never truncated to
  whole seconds).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional
from urllib.parse import parse_qsl, unquote, unquote_plus, urljoin, urlsplit, urlunsplit

from .exchanges import Exchange, header_value

REDIRECT_STATUSES = (301, 302, 303, 307, 308)
MIN_PAUSE = 0.1
# A Location's query value shorter than this is a flag or a word, not a code made for the user.
MIN_LOCATION_VALUE = 8

# Hosts a browser talks to by itself, and the usual analytics: never part of a journey.
NOISE_HOSTS = (
    "safebrowsing.googleapis.com", "safebrowsing.google.com", "update.googleapis.com", "clients2.google.com",
    "clients1.google.com", "optimizationguide-pa.googleapis.com", "content-autofill.googleapis.com",
    "accounts.google.com", "www.gstatic.com", "detectportal.firefox.com", "incoming.telemetry.mozilla.org",
    "firefox.settings.services.mozilla.com", "push.services.mozilla.com", "shavar.services.mozilla.com",
    "location.services.mozilla.com", "tracking-protection.cdn.mozilla.net", "content-signature-2.cdn.mozilla.net",
    "www.google-analytics.com", "google-analytics.com", "analytics.google.com", "www.googletagmanager.com",
    "stats.g.doubleclick.net", "connect.facebook.net", "bat.bing.com", "static.hotjar.com", "script.hotjar.com",
    "cdn.segment.com", "api.segment.io", "js-agent.newrelic.com", "bam.nr-data.net", "browser-intake-datadoghq.com",
    "rum.browser-intake-datadoghq.com", "sentry.io", "plausible.io",
)
NOISE_HOST_SUFFIXES = (".doubleclick.net", ".google-analytics.com", ".hotjar.com", ".hotjar.io", ".ingest.sentry.io")

STATIC_RESOURCE_TYPES = ("stylesheet", "script", "image", "font", "media", "manifest", "texttrack", "imageset")
DROPPED_RESOURCE_TYPES = {"ping": "a beacon (navigator.sendBeacon, <a ping>)", "preflight": "a CORS preflight",
                          "csp_violation_report": "a CSP report", "prefetch": "a prefetch"}
STATIC_EXTENSIONS = (".css", ".js", ".mjs", ".map", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp",
                     ".avif", ".bmp", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp4", ".webm", ".mp3", ".ogg",
                     ".wasm")


@dataclass
class Dropped:
    index: int
    method: str
    url: str
    reason: str


@dataclass
class Journey:
    steps: List[Exchange]
    base_origin: str
    dropped: List[Dropped] = field(default_factory=list)
    websockets: List[Exchange] = field(default_factory=list)
    # Static resources left for infer_html_resources() to fetch at run time.
    infer_resources: bool = False

    def origins(self) -> List[str]:
        """Every origin the steps and resources reach, the base first."""
        seen = {self.base_origin: None}
        for step in self.steps:
            for exchange in [step] + step.resources:
                seen.setdefault(exchange.request.origin, None)
        return list(seen)


def normalize(exchanges: List[Exchange], resources: str = "keep") -> Journey:
    """The journey's steps; ``resources`` is ``keep``, ``infer`` or ``drop``."""
    dropped: List[Dropped] = []
    websockets: List[Exchange] = []
    kept = []
    for exchange in sorted(exchanges, key=lambda e: (e.started, e.index)):
        reason = _drop_reason(exchange)
        if reason == "websocket":
            websockets.append(exchange)
        elif reason:
            dropped.append(Dropped(exchange.index, exchange.request.method, exchange.request.url, reason))
        else:
            kept.append(exchange)
    chains = _collapse_redirects(kept)
    steps: List[Exchange] = []
    for exchange in chains:
        if is_static(exchange):
            if resources == "drop":
                dropped.append(Dropped(exchange.index, exchange.request.method, exchange.request.url,
                                       "a static resource (--resources drop)"))
                continue
            if resources == "infer":
                dropped.append(Dropped(exchange.index, exchange.request.method, exchange.request.url,
                                       "a static resource, fetched by infer_html_resources() (--resources infer)"))
                continue
            page = _page_of(exchange, steps)
            if page is not None:
                page.resources.append(exchange)
                continue
        steps.append(exchange)
    if not steps:
        raise EmptyJourney(dropped)
    _set_pauses(steps)
    origins = Counter(step.request.origin for step in steps)
    base = max(origins, key=lambda origin: (origins[origin], -_first_use(steps, origin)))
    return Journey(steps, base, dropped, websockets, infer_resources=resources == "infer")


class EmptyJourney(Exception):
    """Every entry was dropped: the recording holds no request to replay."""

    def __init__(self, dropped):
        super().__init__("no request left to replay")
        self.dropped = dropped


def _first_use(steps, origin):
    return next(i for i, step in enumerate(steps) if step.request.origin == origin)


def _drop_reason(exchange: Exchange) -> Optional[str]:
    request = exchange.request
    scheme = urlsplit(request.url).scheme.lower()
    if exchange.websocket:
        return "websocket"
    if request.method == "CONNECT":
        return "a CONNECT tunnel"
    if scheme not in ("http", "https"):
        return f"a {scheme or 'relative'}: URL, not HTTP"
    if exchange.response.status <= 0:
        return "cancelled (no response)"
    if request.method == "OPTIONS" and header_value(request.headers, "access-control-request-method"):
        return "a CORS preflight (horde is no browser)"
    if exchange.resource_type in DROPPED_RESOURCE_TYPES:
        return DROPPED_RESOURCE_TYPES[exchange.resource_type]
    host = (urlsplit(request.url).hostname or "").lower()
    if host in NOISE_HOSTS or host.endswith(NOISE_HOST_SUFFIXES):
        return "browser noise or analytics"
    return None


def _normalized(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, ""))


def redirect_target(exchange: Exchange) -> Optional[str]:
    if exchange.response.status not in REDIRECT_STATUSES:
        return None
    location = header_value(exchange.response.headers, "location") or exchange.response.redirect_url
    return _normalized(urljoin(exchange.request.url, location)) if location else None


def location_values(exchange: Exchange) -> List[str]:
    """The values a redirect's Location carries in its query that look made for this
    exchange (an authorization code): long enough not to be words or flags, and not sent by
    the request itself (a `redirect_uri`, `state` or challenge the server only echoes)."""
    location = header_value(exchange.response.headers, "location") or exchange.response.redirect_url or ""
    sent = _sent_texts(exchange)
    return [value for _, value in parse_qsl(urlsplit(location).query)
            if len(value) >= MIN_LOCATION_VALUE and not any(value in text for text in sent)]


def _sent_texts(exchange: Exchange) -> List[str]:
    """What a request sends that a value could be found in: its URL and its body, decoded."""
    body = exchange.request.body
    sent = [unquote(exchange.request.url), unquote_plus(body.data.decode("utf-8", "replace")), body.text]
    return sent + [value for _, value in body.fields]


def _sent_again(value: str, exchanges: List[Exchange], hop: Exchange) -> bool:
    """Whether a request other than the redirect's own follow-up sends ``value``."""
    for exchange in exchanges:
        if exchange is hop:
            continue
        if any(value in text for text in _sent_texts(exchange)):
            return True
    return False


def _collapse_redirects(exchanges: List[Exchange]) -> List[Exchange]:
    """Each redirect's follow-up becomes a hop of the request that started the chain, unless
    a value its Location carries is sent again by a later request: the chain is cut there, so
    that a check can read the Location (the engine would follow it unseen). A cut in the
    middle of a chain makes each hop before it a request of its own, none followed: the engine
    follows a whole chain or none of it, and the value must be read where it appears."""
    waiting: Dict[str, Exchange] = {}  # the URL a chain was sent to -> the chain's first request
    heads = []
    for position, exchange in enumerate(exchanges):
        url = _normalized(exchange.request.url)
        head = waiting.pop(url, None)
        if head is not None and any(
                _sent_again(value, exchanges[position:], exchange) for value in location_values(head.last_of_chain)):
            head.follow_redirects = False
            for hop in head.hops:
                hop.follow_redirects = False
                heads.append(hop)
            head.hops = []
            head = None
        if head is not None and exchange.started >= head.started:
            if head.last_of_chain.response.status in (307, 308) or exchange.request.method in ("GET", "HEAD"):
                head.hops.append(exchange)
                target = redirect_target(exchange)
                if target:
                    waiting[target] = head
                continue
        target = redirect_target(exchange)
        if target:
            waiting[target] = exchange
        heads.append(exchange)
    # Hops made requests of their own were added when their chain was cut: back in order.
    order = {id(exchange): position for position, exchange in enumerate(exchanges)}
    heads.sort(key=lambda exchange: order[id(exchange)])
    return heads


def is_static(exchange: Exchange) -> bool:
    if exchange.resource_type:
        return exchange.resource_type in STATIC_RESOURCE_TYPES
    mime = exchange.final.mime
    if mime == "text/css" or "javascript" in mime or mime.startswith(("image/", "font/", "audio/", "video/")):
        return exchange.request.method == "GET"
    if mime.startswith("application/font") or mime in ("application/wasm", "application/vnd.ms-fontobject"):
        return True
    return exchange.request.method == "GET" and exchange.request.path.lower().endswith(STATIC_EXTENSIONS)


def is_page(exchange: Exchange) -> bool:
    if exchange.resource_type:
        return exchange.resource_type == "document"
    return exchange.final.is_html


def _page_of(resource: Exchange, steps: List[Exchange]) -> Optional[Exchange]:
    for step in reversed(steps):
        if not is_page(step) or step.started > resource.started:
            continue
        if resource.pageref and step.pageref and resource.pageref != step.pageref:
            continue
        return step
    return None


def _set_pauses(steps: List[Exchange]) -> None:
    for previous, step in zip(steps, steps[1:]):
        ended = max([previous.ended] + [r.ended for r in previous.resources])
        gap = step.started - ended
        step.pause_before = round(gap, 1) if gap >= MIN_PAUSE else 0.0
