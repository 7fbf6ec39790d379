"""The recorded exchanges, decoded: what every later stage works on.

A HAR entry becomes an :class:`Exchange`: its request with the body decoded into what a
simulation sends (form fields, JSON, multipart parts with their exact bytes, text, binary), and
its response with the body as text when it is text. Bodies are decoded once, here, so that no
later stage guesses an encoding again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple
from urllib.parse import parse_qsl, urlsplit

Headers = List[Tuple[str, str]]


def header_value(headers: Headers, name: str) -> Optional[str]:
    """The first value of a header, by case-insensitive name."""
    lowered = name.lower()
    for key, value in headers:
        if key.lower() == lowered:
            return value
    return None


def header_values(headers: Headers, name: str) -> List[str]:
    lowered = name.lower()
    return [value for key, value in headers if key.lower() == lowered]


def media_type(content_type: Optional[str]) -> str:
    """``text/html`` of ``text/html; charset=utf-8``, lowercase; empty when unknown."""
    return (content_type or "").split(";")[0].strip().lower()


def content_type_parameter(content_type: Optional[str], name: str) -> Optional[str]:
    for piece in (content_type or "").split(";")[1:]:
        key, _, value = piece.strip().partition("=")
        if key.strip().lower() == name:
            return value.strip().strip('"')
    return None


def is_textual(mime: str) -> bool:
    return (mime.startswith("text/") or mime.endswith(("+json", "+xml")) or mime in (
        "application/json", "application/xml", "application/javascript", "application/x-javascript",
        "application/ecmascript", "application/x-www-form-urlencoded", "application/xhtml+xml",
        "application/graphql", "application/ld+json"))


@dataclass
class Part:
    """A multipart part: a form field (no file name) or a file, with its exact bytes."""

    name: str
    data: bytes
    file_name: Optional[str] = None
    content_type: Optional[str] = None
    # False when the recording lost the file's bytes (browsers leave them out).
    complete: bool = True
    # A file input of a form the part was rebuilt from, whose file name is not known.
    file_input: bool = False

    @property
    def is_file(self) -> bool:
        return self.file_name is not None or self.file_input

    def text(self) -> Optional[str]:
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None


@dataclass
class Body:
    """A request body as a simulation sends it.

    ``kind`` is ``none``, ``form`` (``fields``), ``json`` (``json_value``), ``multipart``
    (``parts``), ``text`` (``text``), ``binary`` (``data``) or ``missing``: the request had a
    body that the recording left out (browsers leave out uploads). ``exact`` says whether
    ``data`` holds the bytes sent, as recorders that are proxies give them; browsers store
    text, lossy for binary files.
    """

    kind: str = "none"
    content_type: Optional[str] = None
    data: bytes = b""
    exact: bool = True
    fields: List[Tuple[str, str]] = field(default_factory=list)
    json_value: object = None
    parts: List[Part] = field(default_factory=list)
    text: str = ""
    # Rebuilt from the form that sent it: the recording had no body.
    rebuilt: bool = False


@dataclass
class Request:
    method: str
    url: str
    headers: Headers
    body: Body

    @property
    def origin(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}".lower()

    @property
    def path(self) -> str:
        return urlsplit(self.url).path or "/"

    def query(self) -> List[Tuple[str, str]]:
        return parse_qsl(urlsplit(self.url).query, keep_blank_values=True)


@dataclass
class Response:
    status: int
    headers: Headers
    mime: str = ""
    # The body as text, when it is text and the recording kept it.
    text: Optional[str] = None
    # The recording has no body for a response that had one (a sanitized or trimmed export).
    body_missing: bool = False
    redirect_url: str = ""

    def set_cookies(self) -> List[str]:
        """Each Set-Cookie line (Chrome joins several with newlines in one header)."""
        lines = []
        for value in header_values(self.headers, "set-cookie"):
            lines.extend(line for line in value.split("\n") if line.strip())
        return lines

    def json(self):
        """The body parsed as JSON, or None."""
        if self.text is None or "json" not in self.mime and not self.text.lstrip().startswith(("{", "[")):
            return None
        try:
            return json.loads(self.text)
        except ValueError:
            return None

    @property
    def is_html(self) -> bool:
        return self.mime in ("text/html", "application/xhtml+xml")


@dataclass
class Exchange:
    """One recorded request and its response; after normalisation, a step of the journey."""

    index: int  # the entry's position in the HAR file
    started: float  # epoch seconds
    duration: float  # seconds, to the end of the response
    request: Request
    response: Response
    resource_type: Optional[str] = None  # Chrome's and Playwright's _resourceType
    pageref: Optional[str] = None
    websocket: bool = False
    # Set by normalize: the redirect hops this request went through (their responses, in
    # order; the last one answered), its page's resources, and the pause before it.
    hops: List["Exchange"] = field(default_factory=list)
    resources: List["Exchange"] = field(default_factory=list)
    pause_before: float = 0.0
    page_title: Optional[str] = None
    # False when a value this redirect's Location carries is sent again later (an OAuth code a
    # page's script posts): the redirect is then the response its checks read, not a hop.
    follow_redirects: bool = True

    @property
    def last_of_chain(self) -> "Exchange":
        """The chain's last exchange: its last redirect hop, or itself without hops."""
        return self.hops[-1] if self.hops else self

    @property
    def ended(self) -> float:
        last = self.last_of_chain
        return max(last.started + last.duration, self.started + self.duration)

    @property
    def final(self) -> Response:
        """The response that ended the redirect chain (the engine follows redirects)."""
        return self.last_of_chain.response

    @property
    def final_url(self) -> str:
        return self.last_of_chain.request.url

    def responses(self) -> List[Response]:
        """Every response of the chain, in order: the redirects' too (they set cookies)."""
        return [self.response] + [hop.response for hop in self.hops]


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def html_title(text: Optional[str]) -> Optional[str]:
    import html

    if not text:
        return None
    match = _TITLE.search(text[:65536])
    if not match:
        return None
    title = " ".join(html.unescape(match.group(1)).split())
    return title or None
