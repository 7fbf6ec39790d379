"""Request bodies as recorders store them, back to what was sent.

HAR keeps a request body as ``postData.text`` (and, for forms, ``params``). What the text
means depends on the recorder:

- proxies (mitmproxy, ``horde record``) store the bytes decoded as UTF-8 when they are, else
  as latin-1, whose code points are the bytes: ``bodySize`` then equals the length of one of
  the two encodings, and the bytes come back exactly;
- browsers (Chrome, Playwright) store the body decoded as UTF-8, replacing what is not, and
  leave out the bytes of uploaded files, or the whole upload.

So the bytes are exact only when ``bodySize`` says so; otherwise the body is marked inexact,
and a multipart file part that lost bytes is reported, never sent as if it were whole.
"""

from __future__ import annotations

import json
import re
from typing import List, Optional
from urllib.parse import parse_qsl, unquote_plus

from .exchanges import Body, Headers, Part, content_type_parameter, header_value, media_type

METHODS_WITH_BODIES = ("POST", "PUT", "PATCH", "DELETE")


def recorded_bytes(text: str, body_size: Optional[int]):
    """The bytes ``text`` stood for, and whether they are exactly what was sent."""
    as_utf8 = text.encode("utf-8")
    if body_size is None or body_size < 0:
        return as_utf8, False
    if len(as_utf8) == body_size:
        return as_utf8, True
    if len(text) == body_size and all(ord(c) < 256 for c in text):
        return text.encode("latin-1"), True
    return as_utf8, False


def decode_request_body(method: str, headers: Headers, post_data: Optional[dict], body_size: Optional[int]) -> Body:
    content_type = (post_data or {}).get("mimeType") or header_value(headers, "content-type")
    mime = media_type(content_type)
    text = (post_data or {}).get("text")
    params = (post_data or {}).get("params") or []
    declared = _declared_length(headers)
    if text is None and not params:
        sent_something = (body_size or 0) > 0 or (declared or 0) > 0
        if sent_something or (mime == "multipart/form-data" and method in METHODS_WITH_BODIES):
            return Body(kind="missing", content_type=content_type, exact=False)
        return Body(kind="none", content_type=content_type)
    if text is None:
        # Only params: a form (Charles, older Firefox). HAR stores them URL-encoded or not,
        # depending on the tool; decoding text that holds no escapes changes nothing.
        fields = [(unquote_plus(str(p.get("name", ""))), unquote_plus(str(p.get("value", "")))) for p in params]
        data = "&".join(f"{n}={v}" for n, v in fields).encode("utf-8")
        return Body(kind="form", content_type=content_type, data=data, fields=fields, exact=False)
    size = body_size if body_size is not None and body_size >= 0 else declared
    data, exact = recorded_bytes(text, size)
    if not data:
        return Body(kind="none", content_type=content_type)
    body = Body(content_type=content_type, data=data, exact=exact, text=text)
    if mime == "application/x-www-form-urlencoded":
        body.kind = "form"
        body.fields = parse_qsl(data.decode("utf-8", "replace"), keep_blank_values=True)
    elif mime == "multipart/form-data":
        boundary = content_type_parameter(content_type, "boundary") or content_type_parameter(
            header_value(headers, "content-type"), "boundary")
        parts = parse_multipart(data, boundary) if boundary else None
        if parts is None:
            body.kind = "binary"
        else:
            body.kind = "multipart"
            body.parts = parts
    elif mime == "application/json" or mime.endswith("+json"):
        try:
            body.json_value = json.loads(text)
            body.kind = "json"
        except ValueError:
            body.kind = "text"
    elif _is_text(mime, data):
        body.kind = "text"
        body.text = data.decode("utf-8")
    else:
        body.kind = "binary"
    return body


def _declared_length(headers: Headers) -> Optional[int]:
    value = header_value(headers, "content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _is_text(mime: str, data: bytes) -> bool:
    if not (mime.startswith("text/") or "xml" in mime or "javascript" in mime or mime in ("", "application/graphql")):
        return False
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


_PART_HEADER = re.compile(rb"([^:\r\n]+):[ \t]*([^\r\n]*)")
_DISPOSITION_PARAM = re.compile(r';\s*([A-Za-z0-9_*-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))')


def parse_multipart(data: bytes, boundary: str) -> Optional[List[Part]]:
    """The parts of a multipart/form-data body (RFC 7578), each with its exact bytes; None
    when the body is not one (no delimiter where there should be)."""
    delimiter = b"--" + boundary.encode("latin-1")
    start = data.find(delimiter)
    if start < 0:
        return None
    parts = []
    position = start + len(delimiter)
    while True:
        if data[position:position + 2] == b"--":
            return parts  # the close delimiter
        if data[position:position + 2] != b"\r\n":
            return None
        header_end = data.find(b"\r\n\r\n", position + 2)
        if header_end < 0:
            return None
        headers = {}
        for line in data[position + 2:header_end].split(b"\r\n"):
            match = _PART_HEADER.match(line)
            if match:
                headers[match.group(1).decode("latin-1").strip().lower()] = match.group(2).decode("utf-8", "replace")
        next_delimiter = data.find(b"\r\n" + delimiter, header_end + 4)
        if next_delimiter < 0:
            return None
        content = data[header_end + 4:next_delimiter]
        disposition = headers.get("content-disposition", "")
        params = {}
        for match in _DISPOSITION_PARAM.finditer(disposition):
            value = match.group(2) if match.group(2) is not None else (match.group(3) or "").strip()
            params[match.group(1).lower()] = value.replace('\\"', '"')
        parts.append(Part(name=params.get("name", ""), data=content, file_name=params.get("filename"),
                          content_type=headers.get("content-type")))
        position = next_delimiter + 2 + len(delimiter)
