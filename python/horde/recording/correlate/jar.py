"""The cookie jar a browser had while recording, simulated over the recording.

horde's engine keeps a cookie jar per user, so recorded ``Cookie`` headers are never replayed.
Simulating the jar says which cookie a request carried came from a response (the jar sends it
again) and which one JavaScript set (the simulation must add it), and lets a header that
repeats a cookie's value (Django's ``X-CSRFToken``) read the cookie instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple
from urllib.parse import urlsplit

from ..exchanges import Exchange, header_values


@dataclass
class Cookie:
    name: str
    value: str
    domain: str
    host_only: bool
    path: str


class Jar:
    def __init__(self):
        self.cookies: Dict[Tuple[str, str, str], Cookie] = {}

    def receive(self, exchange: Exchange) -> None:
        """Stores the cookies every response of the chain set."""
        urls = [exchange.request.url] + [hop.request.url for hop in exchange.hops]
        for url, response in zip(urls, exchange.responses()):
            for line in response.set_cookies():
                self._store(url, line)

    def _store(self, url: str, line: str) -> None:
        pair, *attributes = line.split(";")
        name, separator, value = pair.partition("=")
        if not separator:
            return
        name, value = name.strip(), value.strip()
        host = (urlsplit(url).hostname or "").lower()
        domain, host_only, path, expired = host, True, _default_path(url), False
        for attribute in attributes:
            key, _, attribute_value = attribute.strip().partition("=")
            key = key.strip().lower()
            attribute_value = attribute_value.strip()
            if key == "domain" and attribute_value:
                domain, host_only = attribute_value.lstrip(".").lower(), False
            elif key == "path" and attribute_value.startswith("/"):
                path = attribute_value
            elif key == "max-age":
                try:
                    expired = int(attribute_value) <= 0
                except ValueError:
                    pass
            elif key == "expires" and _in_the_past(attribute_value):
                expired = True
        key = (domain, path, name)
        if expired:
            self.cookies.pop(key, None)
        else:
            self.cookies[key] = Cookie(name, value, domain, host_only, path)

    def for_url(self, url: str) -> List[Cookie]:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        path = parts.path or "/"
        found = []
        for cookie in self.cookies.values():
            if cookie.host_only and host != cookie.domain:
                continue
            if not cookie.host_only and host != cookie.domain and not host.endswith("." + cookie.domain):
                continue
            if not (path == cookie.path or path.startswith(cookie.path.rstrip("/") + "/")):
                continue
            found.append(cookie)
        return found

    def cookie_with_value(self, url: str, value: str) -> Optional[Cookie]:
        return next((c for c in self.for_url(url) if c.value == value), None)


def sent_cookies(exchange: Exchange) -> List[Tuple[str, str]]:
    pairs = []
    for header in header_values(exchange.request.headers, "cookie"):
        for piece in header.split(";"):
            name, separator, value = piece.strip().partition("=")
            if separator and name:
                pairs.append((name, value))
    return pairs


def _default_path(url: str) -> str:
    path = urlsplit(url).path or "/"
    return path[:path.rfind("/")] or "/" if path.count("/") > 1 else "/"


def _in_the_past(text: str) -> bool:
    from email.utils import parsedate_to_datetime
    from datetime import datetime, timezone

    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.year < 1990 or moment < datetime(2000, 1, 1, tzinfo=timezone.utc)
