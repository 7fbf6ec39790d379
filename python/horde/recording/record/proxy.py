"""The recording proxy: HTTP/1.1, plain requests and CONNECT tunnels, each HTTPS tunnel opened
with a certificate the recorder's authority signs for that host, so that every request and
response passes through whole. Each exchange becomes a HAR entry with its bodies complete:
request bodies byte for byte (UTF-8 text when they are, else latin-1, whose code points are
the bytes, with ``bodySize`` their number, as mitmproxy writes them), responses decoded
(gzip, deflate) and base64 when they are not text. A WebSocket upgrade is noted and its
connection relayed as it is.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import ssl
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qsl, urlsplit

from ..exchanges import content_type_parameter, is_textual, media_type

MAX_HEAD = 64 * 1024
Headers = List[Tuple[str, str]]
HOP_BY_HOP = {"proxy-connection", "proxy-authorization", "keep-alive", "transfer-encoding", "te", "trailer"}


class ProtocolError(Exception):
    pass


def get(headers: Headers, name: str) -> Optional[str]:
    lowered = name.lower()
    return next((v for k, v in headers if k.lower() == lowered), None)


async def read_head(reader: asyncio.StreamReader) -> Optional[Tuple[str, Headers]]:
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if not error.partial.strip():
            return None
        raise ProtocolError("the connection closed inside a message head") from None
    except asyncio.LimitOverrunError:
        raise ProtocolError("a message head over 64 KiB") from None
    lines = raw.decode("latin-1").split("\r\n")
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        name, separator, value = line.partition(":")
        if not separator:
            raise ProtocolError(f"a header line without a colon: {line[:40]!r}")
        headers.append((name.strip(), value.strip()))
    return lines[0], headers


async def read_body(reader, headers: Headers, *, response_to: Optional[str] = None, status: int = 0) -> bytes:
    if response_to is not None and (response_to == "HEAD" or status in (204, 304) or 100 <= status < 200):
        return b""
    if "chunked" in (get(headers, "transfer-encoding") or "").lower():
        chunks = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length = get(headers, "content-length")
    if length is not None:
        return await reader.readexactly(int(length))
    if response_to is not None:
        return await reader.read()  # until the server closes
    return b""


def decoded_content(body: bytes, headers: Headers) -> bytes:
    encoding = (get(headers, "content-encoding") or "").lower().strip()
    try:
        if encoding in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error:
        return body
    return body


def _time(moment: float) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _cookies(header_values: List[str], response: bool) -> List[dict]:
    cookies = []
    for value in header_values:
        pieces = [value] if response else value.split(";")
        for piece in pieces:
            pair = piece.split(";")[0]
            name, separator, cookie_value = pair.strip().partition("=")
            if separator:
                cookies.append({"name": name, "value": cookie_value})
    return cookies


@dataclass
class Exchange:
    started: float
    method: str
    url: str
    request_headers: Headers
    request_body: bytes
    status: int = 0
    reason: str = ""
    response_headers: Headers = field(default_factory=list)
    response_body: bytes = b""
    sent: float = 0.0
    first_byte: float = 0.0
    ended: float = 0.0
    websocket: bool = False

    def har_entry(self) -> dict:
        query = [{"name": n, "value": v} for n, v in parse_qsl(urlsplit(self.url).query, keep_blank_values=True)]
        request = {
            "method": self.method, "url": self.url, "httpVersion": "HTTP/1.1",
            "cookies": _cookies([v for k, v in self.request_headers if k.lower() == "cookie"], response=False),
            "headers": [{"name": n, "value": v} for n, v in self.request_headers],
            "queryString": query, "headersSize": -1, "bodySize": len(self.request_body),
        }
        if self.request_body or self.method in ("POST", "PUT", "PATCH"):
            content_type = get(self.request_headers, "content-type") or ""
            try:
                text = self.request_body.decode("utf-8")
            except UnicodeDecodeError:
                text = self.request_body.decode("latin-1")
            post = {"mimeType": content_type, "text": text}
            if media_type(content_type) == "application/x-www-form-urlencoded":
                post["params"] = [{"name": n, "value": v} for n, v in parse_qsl(text, keep_blank_values=True)]
            request["postData"] = post
        body = decoded_content(self.response_body, self.response_headers)
        mime = get(self.response_headers, "content-type") or ""
        content = {"size": len(body), "mimeType": mime, "compression": len(body) - len(self.response_body)}
        if body:
            charset = content_type_parameter(mime, "charset") or "utf-8"
            text = None
            if is_textual(media_type(mime)) or not mime:
                try:
                    text = body.decode(charset)
                except (LookupError, UnicodeDecodeError):
                    text = None
            if text is None:
                content.update(text=base64.b64encode(body).decode("ascii"), encoding="base64")
            else:
                content["text"] = text
        response = {
            "status": self.status, "statusText": self.reason, "httpVersion": "HTTP/1.1",
            "cookies": _cookies([v for k, v in self.response_headers if k.lower() == "set-cookie"], response=True),
            "headers": [{"name": n, "value": v} for n, v in self.response_headers], "content": content,
            "redirectURL": get(self.response_headers, "location") or "", "headersSize": -1,
            "bodySize": len(self.response_body),
        }
        send = max(0.0, self.sent - self.started) * 1000
        wait = max(0.0, self.first_byte - self.sent) * 1000
        receive = max(0.0, self.ended - self.first_byte) * 1000
        entry = {"startedDateTime": _time(self.started), "time": round(send + wait + receive, 3), "request": request,
                 "response": response, "cache": {},
                 "timings": {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": round(send, 3),
                             "wait": round(wait, 3), "receive": round(receive, 3)}}
        if self.websocket:
            entry["_webSocketMessages"] = []  # the upgrade is noted; its messages are relayed, not recorded
        return entry


class _Upstream:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer


class RecordingProxy:
    def __init__(self, authority, on_exchange: Callable[[Exchange], None]):
        self.authority = authority
        self.on_exchange = on_exchange
        self.exchanges: List[Exchange] = []
        self.connections = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self.connections.add(task)
        upstreams: Dict[Tuple[str, str, int], _Upstream] = {}
        try:
            await self.serve(reader, writer, None, upstreams)
        except (ProtocolError, ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, OSError, ValueError):
            pass
        finally:
            self.connections.discard(task)
            for upstream in upstreams.values():
                upstream.writer.close()
            writer.close()

    async def serve(self, reader, writer, tunnel: Optional[Tuple[str, int]], upstreams) -> None:
        while True:
            head = await read_head(reader)
            if head is None:
                return
            started = time.time()
            request_line, headers = head
            method, target, _ = (request_line.split(" ") + ["", ""])[:3]
            method = method.upper()
            if method == "CONNECT" and tunnel is None:
                host, _, port = target.rpartition(":")
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await writer.drain()
                host = host.strip("[]")
                await writer.start_tls(self.authority.server_context(host))
                await self.serve(reader, writer, (host, int(port or 443)), upstreams)
                return
            if tunnel is not None:
                host, port = tunnel
                url = f"https://{host}{'' if port == 443 else f':{port}'}{target}"
            elif target.startswith(("http://", "https://")):
                url = target
            else:
                raise ProtocolError(f"not a proxy request: {request_line[:60]!r}")
            body = await read_body(reader, headers)
            exchange = Exchange(started, method, url, headers, body)
            keep_going = await self.forward(exchange, reader, writer, upstreams)
            if not exchange.websocket:  # an upgrade is recorded when it is made
                self.exchanges.append(exchange)
                self.on_exchange(exchange)
            if not keep_going:
                return

    async def forward(self, exchange: Exchange, client_reader, client_writer, upstreams) -> bool:
        parts = urlsplit(exchange.url)
        secure = parts.scheme == "https"
        host = parts.hostname or ""
        port = parts.port or (443 if secure else 80)
        key = (parts.scheme, host, port)
        upstream = upstreams.get(key)
        if upstream is None or upstream.writer.is_closing():
            reader, writer = await asyncio.open_connection(
                host, port, ssl=_client_context(host) if secure else None, server_hostname=host if secure else None,
                limit=MAX_HEAD)
            upstream = upstreams[key] = _Upstream(reader, writer)
        websocket = (get(exchange.request_headers, "upgrade") or "").lower() == "websocket"
        headers = []
        for name, value in exchange.request_headers:
            lowered = name.lower()
            if lowered in HOP_BY_HOP or (lowered == "connection" and not websocket):
                continue
            if lowered == "accept-encoding":
                # What the recorder can decode for the HAR: never br or zstd.
                value = "gzip, deflate"
            if lowered == "content-length":
                continue
            headers.append((name, value))
        if exchange.request_body or exchange.method in ("POST", "PUT", "PATCH"):
            headers.append(("Content-Length", str(len(exchange.request_body))))
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = f"{exchange.method} {target} HTTP/1.1\r\n" + "".join(f"{n}: {v}\r\n" for n, v in headers) + "\r\n"
        upstream.writer.write(head.encode("latin-1") + exchange.request_body)
        await upstream.writer.drain()
        exchange.sent = time.time()
        response = await read_head(upstream.reader)
        if response is None:
            raise ProtocolError("the server closed the connection without answering")
        exchange.first_byte = time.time()
        status_line, response_headers = response
        pieces = status_line.split(" ", 2)
        exchange.status = int(pieces[1])
        exchange.reason = pieces[2] if len(pieces) > 2 else ""
        exchange.response_headers = response_headers
        if exchange.status == 101 and websocket:
            exchange.websocket = True
            exchange.ended = time.time()
            client_writer.write((status_line + "\r\n" + "".join(f"{n}: {v}\r\n" for n, v in response_headers)
                                 + "\r\n").encode("latin-1"))
            await client_writer.drain()
            self.exchanges.append(exchange)
            self.on_exchange(exchange)
            await _relay(client_reader, client_writer, upstream.reader, upstream.writer)
            upstreams.pop(key, None)
            return False
        body = await read_body(upstream.reader, response_headers, response_to=exchange.method, status=exchange.status)
        exchange.response_body = body
        exchange.ended = time.time()
        closes = (get(response_headers, "connection") or "").lower() == "close" or (
            get(response_headers, "content-length") is None
            and "chunked" not in (get(response_headers, "transfer-encoding") or "").lower()
            and exchange.method != "HEAD" and exchange.status not in (204, 304))
        if closes:
            upstream.writer.close()
            upstreams.pop(key, None)
        relayed = [(n, v) for n, v in response_headers if n.lower() not in HOP_BY_HOP and n.lower() != "content-length"]
        if exchange.method != "HEAD" and exchange.status not in (204, 304) and not 100 <= exchange.status < 200:
            relayed.append(("Content-Length", str(len(body))))
        client_writer.write((f"HTTP/1.1 {exchange.status} {exchange.reason}\r\n"
                             + "".join(f"{n}: {v}\r\n" for n, v in relayed) + "\r\n").encode("latin-1") + body)
        await client_writer.drain()
        client_closes = (get(exchange.request_headers, "connection") or get(exchange.request_headers, "proxy-connection")
                         or "").lower() == "close"
        return not client_closes


async def _relay(client_reader, client_writer, server_reader, server_writer) -> None:
    async def pipe(reader, writer):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))


def _client_context(host: str) -> ssl.SSLContext:
    """Verifies the site's certificate, except on loopback, where test servers make their own."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    if _loopback(host):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
