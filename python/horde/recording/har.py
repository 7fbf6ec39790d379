"""Reading HAR files (1.1 and 1.2) entry by entry.

A HAR file is one JSON document, and browsers write ones of hundreds of megabytes (every
image, base64-encoded). It is read in chunks; each entry is decoded alone, turned into an
:class:`~.exchanges.Exchange` at once and its JSON dropped, so memory holds one entry's JSON at a
time plus what the import keeps: text bodies (HTML, JSON, XML, scripts) up to a bound each,
never images or fonts.

Every problem is a :class:`HarError` naming the file, the entry and the field
(``journey.har: entries[3].request.url: missing``): the command exits 2 for it.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Dict, List

from .bodies import decode_request_body
from .exchanges import Exchange, Request, Response, header_value, is_textual, media_type

# Read this much at a time; a value that does not fit is read in ever larger pieces.
CHUNK_CHARS = 1 << 20
# A response body longer than this is not kept (nothing in it is correlated), ...
MAX_KEPT_BODY_CHARS = 16 << 20
# ... nor scripts and style sheets beyond this (kept only to tell constants from tokens) ...
MAX_KEPT_STATIC_CHARS = 256 << 10
# ... nor any body once this much text is held.
MAX_KEPT_TOTAL_CHARS = 512 << 20

SUPPORTED_VERSIONS = ("1.1", "1.2")


class HarError(Exception):
    """The recording cannot be read: the message names the entry and field."""


@dataclass
class Recording:
    path: str
    version: str
    creator: str
    exchanges: List[Exchange]
    page_titles: Dict[str, str] = field(default_factory=dict)
    # Response bodies the reader did not keep (too large, or past the total), by entry.
    bodies_not_kept: List[int] = field(default_factory=list)


def read_har(path: str) -> Recording:
    """Reads ``path``; raises :class:`HarError` for anything that is not a usable HAR."""
    try:
        handle = open(path, "rb")
    except OSError as error:
        raise HarError(f"{path}: cannot read it: {error.strerror or error}") from None
    with handle:
        return _HarReader(path, handle).read()


class _HarReader:
    def __init__(self, path, handle):
        self.path = path
        self.stream = _JsonStream(path, handle)
        self.version = None
        self.creator = ""
        self.exchanges = []
        self.page_titles = {}
        self.kept_chars = 0
        self.bodies_not_kept = []
        self.entries_seen = None

    def fail(self, where, message):
        raise HarError(f"{self.path}: {where}: {message}" if where else f"{self.path}: {message}")

    def read(self):
        stream = self.stream
        first = stream.peek()
        if first == "":
            self.fail("", "the file is empty")
        if first != "{":
            if first == "[":
                self.fail("", "JSON, but not a HAR file: the top level is an array, not an object with a 'log'")
            self.fail("", f"not JSON: it starts with {stream.abridged_here()!r}")
        stream.advance()
        found_log = False
        for key in stream.members("the top level"):
            if key == "log":
                found_log = True
                self.read_log()
            else:
                stream.value(key)
        stream.expect_end()
        if not found_log:
            self.fail("", "not a HAR file: no 'log' object at the top level")
        if self.version is None:
            self.fail("log.version", "missing (a HAR file says its version: 1.2)")
        if self.version not in SUPPORTED_VERSIONS:
            self.fail("log.version", f"HAR {self.version!r} is not HAR 1.2 (1.1 and 1.2 are read)")
        if self.entries_seen is None:
            self.fail("log.entries", "missing: the recording holds no requests")
        if self.entries_seen == 0:
            self.fail("log.entries", "empty: nothing was recorded")
        for exchange in self.exchanges:
            if exchange.pageref in self.page_titles:
                exchange.page_title = self.page_titles[exchange.pageref]
        return Recording(self.path, self.version, self.creator, self.exchanges, self.page_titles,
                         self.bodies_not_kept)

    def read_log(self):
        stream = self.stream
        if stream.peek() != "{":
            stream.value("log")
            self.fail("log", "not an object")
        stream.advance()
        for key in stream.members("log"):
            if key == "entries":
                self.read_entries()
            elif key == "version":
                version = stream.value("log.version")
                self.version = str(version)
            elif key == "creator":
                creator = stream.value("log.creator")
                if isinstance(creator, dict):
                    self.creator = f"{creator.get('name', '')} {creator.get('version', '')}".strip()
            elif key == "pages":
                pages = stream.value("log.pages")
                for page in pages if isinstance(pages, list) else []:
                    if isinstance(page, dict) and page.get("id") and page.get("title"):
                        self.page_titles[str(page["id"])] = str(page["title"])
            else:
                stream.value(f"log.{key}")

    def read_entries(self):
        stream = self.stream
        if stream.peek() != "[":
            stream.value("log.entries")
            self.fail("log.entries", "not a list")
        stream.advance()
        count = 0
        for _ in stream.elements("log.entries"):
            where = f"entries[{count}]"
            raw = stream.value(where)
            self.exchanges.append(self.exchange(count, raw))
            count += 1
        self.entries_seen = count

    def exchange(self, index, raw) -> Exchange:
        where = f"entries[{index}]"
        if not isinstance(raw, dict):
            self.fail(where, "not an object")
        request = self.need(raw, "request", dict, where)
        response = self.need(raw, "response", dict, where)
        started = _parse_time(self.need(raw, "startedDateTime", str, where), f"{where}.startedDateTime", self)
        duration = raw.get("time")
        if not isinstance(duration, (int, float)) or isinstance(duration, bool) or duration < 0:
            timings = raw.get("timings") if isinstance(raw.get("timings"), dict) else {}
            duration = sum(v for v in timings.values() if isinstance(v, (int, float)) and v > 0)
        method = self.need(request, "method", str, f"{where}.request").upper()
        url = self.need(request, "url", str, f"{where}.request")
        request_headers = self.headers(request, f"{where}.request")
        post_data = request.get("postData")
        if post_data is not None and not isinstance(post_data, dict):
            self.fail(f"{where}.request.postData", "not an object")
        body_size = request.get("bodySize") if isinstance(request.get("bodySize"), int) else None
        body = decode_request_body(method, request_headers, post_data, body_size)
        status = response.get("status")
        if isinstance(status, str) and status.isdigit():
            status = int(status)
        if not isinstance(status, int) or isinstance(status, bool):
            self.fail(f"{where}.response.status", "missing" if status is None else f"not a number: {status!r}")
        response_headers = self.headers(response, f"{where}.response")
        content = response.get("content")
        if content is None:
            content = {}
        if not isinstance(content, dict):
            self.fail(f"{where}.response.content", "not an object")
        mime = media_type(content.get("mimeType") or header_value(response_headers, "content-type"))
        text, missing = self.response_text(index, content, mime, f"{where}.response.content")
        upgrade = (header_value(request_headers, "upgrade") or "").lower() == "websocket"
        return Exchange(
            index=index,
            started=started,
            duration=float(duration) / 1000.0,
            request=Request(method=method, url=url, headers=request_headers, body=body),
            response=Response(status=status, headers=response_headers, mime=mime, text=text, body_missing=missing,
                              redirect_url=str(response.get("redirectURL") or "")),
            resource_type=raw.get("_resourceType") if isinstance(raw.get("_resourceType"), str) else None,
            pageref=str(raw["pageref"]) if raw.get("pageref") is not None else None,
            websocket=upgrade or status == 101 or "_webSocketMessages" in raw,
        )

    def need(self, obj, key, kind, where):
        value = obj.get(key)
        if value is None:
            self.fail(f"{where}.{key}", "missing")
        if not isinstance(value, kind):
            self.fail(f"{where}.{key}", f"expected {'text' if kind is str else 'an object'}, found {type(value).__name__}")
        return value

    def headers(self, obj, where):
        raw = obj.get("headers")
        if raw is None:
            self.fail(f"{where}.headers", "missing")
        if not isinstance(raw, list):
            self.fail(f"{where}.headers", "not a list")
        headers = []
        for i, item in enumerate(raw):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                self.fail(f"{where}.headers[{i}]", "expected an object with a name and a value")
            headers.append((item["name"], str(item.get("value", ""))))
        return headers

    def response_text(self, index, content, mime, where):
        """The body as text when it is text and worth keeping; and whether the recording left
        out a body that existed."""
        text = content.get("text")
        size = content.get("size") if isinstance(content.get("size"), int) else 0
        if text is None:
            # Firefox says why in a comment; Chrome's sanitized export just has none.
            return None, size > 0 or bool(content.get("comment"))
        if not isinstance(text, str):
            self.fail(f"{where}.text", "not text")
        if not is_textual(mime) or "x-unknown" in mime:
            return None, False
        static = "javascript" in mime or mime == "text/css"
        limit = MAX_KEPT_STATIC_CHARS if static else MAX_KEPT_BODY_CHARS
        if content.get("encoding") == "base64":
            if len(text) > limit * 4 // 3 + 4 and not static:
                self.bodies_not_kept.append(index)
                return None, False
            try:
                text = base64.b64decode(text, validate=False).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                self.fail(f"{where}.text", "encoding is base64, but the text is not base64")
        if len(text) > limit:
            if not static:
                self.bodies_not_kept.append(index)
                return None, False
            text = text[:limit]
        if self.kept_chars + len(text) > MAX_KEPT_TOTAL_CHARS:
            self.bodies_not_kept.append(index)
            return None, False
        self.kept_chars += len(text)
        return text, False


_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(?:[.,](\d+))?(Z|[+-]\d{2}:?\d{2})?$")


def _parse_time(text, where, reader):
    match = _TIME.match(text.strip())
    if not match:
        reader.fail(where, f"not an ISO 8601 time: {text!r}")
    date, clock, fraction, zone = match.groups()
    if clock.count(":") == 1:
        clock += ":00"
    try:
        moment = datetime.strptime(f"{date}T{clock}", "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        reader.fail(where, f"not an ISO 8601 time: {text!r}")
    offset = timezone.utc
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    seconds = moment.replace(tzinfo=offset).timestamp()
    if fraction:
        seconds += int(fraction) / 10 ** len(fraction)
    return seconds


_SPACE = re.compile(r"[ \t\r\n]*")


class _JsonStream:
    """A JSON text read in chunks: the reader walks objects and arrays itself and decodes each
    member's value whole, so one value at a time is in memory."""

    def __init__(self, path, handle):
        self.path = path
        self.handle = handle
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
        self.buffer = ""
        self.position = 0
        self.eof = False
        self.bytes_read = 0
        self.decoder_json = json.JSONDecoder()

    def fail(self, message):
        raise HarError(f"{self.path}: {message}")

    def more(self, chars=CHUNK_CHARS) -> bool:
        if self.eof:
            return False
        data = self.handle.read(chars)
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as error:
            self.fail(f"not UTF-8 text (at byte {self.bytes_read + error.start}): not a HAR file")
        self.bytes_read += len(data)
        if not data:
            self.eof = True
        if self.position > CHUNK_CHARS:
            # Drop what was read already: the buffer holds the value being decoded, no more.
            self.buffer = self.buffer[self.position:]
            self.position = 0
        self.buffer += text
        return bool(data) or bool(text)

    def peek(self) -> str:
        while True:
            self.position = _SPACE.match(self.buffer, self.position).end()
            if self.position < len(self.buffer):
                return self.buffer[self.position]
            if not self.more():
                return ""

    def advance(self):
        self.position += 1

    def abridged_here(self):
        self.peek()
        return self.buffer[self.position:self.position + 20]

    def value(self, where):
        """Decodes the JSON value that starts here."""
        self.peek()
        chunk = CHUNK_CHARS
        while True:
            try:
                value, end = self.decoder_json.raw_decode(self.buffer, self.position)
                # A number at the end of the buffer may go on in the next chunk.
                if end < len(self.buffer) or self.eof or not isinstance(value, (int, float)):
                    self.position = end
                    return value
            except json.JSONDecodeError as error:
                # Cut off by the end of the buffer (read more), or wrong where it says (stop
                # now, without reading the rest of a large file).
                cut_off = error.pos >= len(self.buffer.rstrip()) - 1 or error.msg.startswith("Unterminated")
                if not cut_off:
                    self.fail(f"{where}: not JSON: {error.msg} (at byte {self._byte_offset(error.pos)})")
                if self.eof:
                    self.fail(f"{where}: truncated: the file ends inside it")
            chunk *= 2
            self.more(chunk)

    def _byte_offset(self, position):
        tail = self.buffer[position:].encode("utf-8")
        return self.bytes_read - len(tail)

    def _expect_separator(self, closing, where):
        char = self.peek()
        if char == ",":
            self.advance()
            return True
        if char == closing:
            self.advance()
            return False
        if char == "":
            self.fail(f"{where}: truncated: the file ends inside it")
        self.fail(f"{where}: not JSON: expected ',' or '{closing}', found {self.abridged_here()!r}")

    def members(self, where):
        """The keys of the object whose '{' was just passed; the caller reads each value."""
        if self.peek() == "}":
            self.advance()
            return
        while True:
            if self.peek() != '"':
                if self.peek() == "":
                    self.fail(f"{where}: truncated: the file ends inside it")
                self.fail(f"{where}: not JSON: expected a key, found {self.abridged_here()!r}")
            key = self.value(where)
            if self.peek() != ":":
                self.fail(f"{where}: not JSON: expected ':' after {key!r}")
            self.advance()
            yield key
            if not self._expect_separator("}", where):
                return

    def elements(self, where):
        """Yields once per element of the array whose '[' was just passed."""
        if self.peek() == "]":
            self.advance()
            return
        while True:
            yield
            if not self._expect_separator("]", where):
                return

    def expect_end(self):
        if self.peek() != "":
            self.fail(f"not JSON: more text after the HAR object: {self.abridged_here()!r}")
