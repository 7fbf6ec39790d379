"""A misbehaving HTTP/1.1 server for horde's fault tests: the request path picks the fault.

    python3 misbehaving_server.py --log EVENTS [--port 0]

Standard library only (asyncio). It listens on 127.0.0.1, prints
``listening on http://127.0.0.1:PORT`` once it accepts connections, and appends one line per
event to EVENTS, written with one unbuffered ``write`` so that the file is complete even when
the server is killed with SIGKILL:

    accept           a connection was accepted
    head PATH        the head of a request for PATH was read completely (the server's count)
    answered PATH    the whole response to a request for PATH was written

Paths (anything else is a 404 with an empty body):

    /ok                      200, Content-Length 2, keep-alive
    /reset                   reads the request, then resets the connection (SO_LINGER 0)
    /close-before-response   reads the request head, then closes without a byte
    /stall                   reads the request and never answers
    /bad-status              "HTTP/1.1 abc OK"
    /bad-header              a header line without a colon
    /conflicting-length      two different Content-Length headers
    /short-body              Content-Length 100, 5 bytes, then close
    /chunked-bad             chunked, with a chunk size that is not hexadecimal
    /big                     a 100 MiB body with its Content-Length, streamed in 1 MiB writes
    /dribble                 a 40-byte response, one byte every 50 ms
    /keepalive-idle-close    200 with keep-alive, then closes the connection after 300 ms
                             without a request (as nginx's keepalive_timeout does)
    /one-per-connection      200 with keep-alive; the next request on that connection (any
                             path) is read, then the connection is closed without an answer
    /100-continue            a 100 Continue, then the 200
    /unrequested-101         101 Switching Protocols although nobody asked for it
    /http10                  an HTTP/1.0 response without a length, ended by closing
    /redirect-loop           302 to itself
    /redirect-bad            302 with a Location that cannot be parsed ("http://[::1")
    /redirect-ftp            302 to ftp://x/
    /big-head                200 whose head is over 1 MiB (one 1 MiB header)
    /echo-head               200 whose body is the request's head; logs ``host-headers N``, the
                             number of Host header lines it had (any case)
    /sse-flood               an event stream of small events written as fast as the socket takes
                             them, until the client goes
    /sse-big-N               an event stream of one event of N MiB of data, then an event
                             ``after``, then silence until the client goes
    /ws-flood                a WebSocket upgrade, then small text messages as fast as the socket
                             takes them, until the client goes
    /ws-cut-mid-frame        a WebSocket upgrade, then the first 10 bytes of a 100-byte text
                             frame, then the connection is closed (FIN)

Besides the HTTP/1.1 listener, one listener per raw fault, each announced on a line
``raw NAME http://127.0.0.1:PORT`` before the ``listening`` line:

    tls-stall                accepts TCP, reads (a ClientHello), never answers
    h2-ok                    HTTP/2 with prior knowledge (h2c): 200 "ok" to every stream
    h2-data-oversize         h2c: a DATA frame of 20,000 bytes, over the 16,384 a client allows
                             until it says otherwise
    h2-continuation-flood    h2c: HEADERS without END_HEADERS, then empty CONTINUATION frames
                             without end
    h2-big-head              h2c: a response whose header block is 1 MiB (HEADERS and
                             CONTINUATION frames of 16 KiB)
    h2-refuse-first          h2c: RST_STREAM(REFUSED_STREAM) to the first stream the server sees
                             (over all connections), 200 "ok" to the others
    h2-close                 h2c: reads a request (its HEADERS frame), then closes the connection
                             without a GOAWAY

HTTP/2 listeners log ``h2 NAME stream`` for each request (HEADERS frame) they read.
"""

import argparse
import asyncio
import base64
import hashlib
import os
import socket
import struct
import sys

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok"
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
HTTP10 = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello from HTTP/1.0"
DRIBBLE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"  # 40 bytes: about 2 s at 50 ms a byte
DRIBBLE_INTERVAL = 0.05
IDLE_CLOSE_AFTER = 0.3
BIG_SIZE = 100 * 1024 * 1024
BIG_CHUNK = b"x" * (1024 * 1024)

SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
SSE_FLOOD_BLOCK = b"data: tick\n\n" * 6000
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
WS_FLOOD_BLOCK = b"\x81\x04tick" * 10000
BIG_HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Big: " + b"x" * (1024 * 1024) + b"\r\n\r\nok"

FIXED = {
    "/big-head": BIG_HEAD,
    "/ok": OK,
    "/bad-status": b"HTTP/1.1 abc OK\r\nContent-Length: 2\r\n\r\nok",
    "/bad-header": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Broken header without a colon\r\n\r\nok",
    # Whichever length a client believed, the body is readable: only rejecting it is right.
    "/conflicting-length": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nhello",
    "/chunked-bad": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    "/redirect-loop": b"HTTP/1.1 302 Found\r\nLocation: /redirect-loop\r\nContent-Length: 0\r\n\r\n",
    "/redirect-bad": b"HTTP/1.1 302 Found\r\nLocation: http://[::1\r\nContent-Length: 0\r\n\r\n",
    "/redirect-ftp": b"HTTP/1.1 302 Found\r\nLocation: ftp://x/\r\nContent-Length: 0\r\n\r\n",
}


class Events:
    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def __call__(self, line):
        os.write(self.fd, (line + "\n").encode())


async def read_request(reader, idle_timeout):
    """The path of the next request and its head's lines, its body read and dropped; None at
    the end of the stream."""
    try:
        if idle_timeout is None:
            head = await reader.readuntil(b"\r\n\r\n")
        else:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), idle_timeout)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, asyncio.TimeoutError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length:
        try:
            await reader.readexactly(length)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
    return parts[1].split("?", 1)[0], lines


def header(lines, wanted):
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == wanted:
            return value.strip()
    return None


async def write_forever(writer, block):
    """Writes `block` again and again, as fast as the socket takes it, until the client goes."""
    try:
        while True:
            writer.write(block)
            await writer.drain()
    except ConnectionError:
        pass


async def upgrade_to_websocket(lines, writer):
    accept = base64.b64encode(hashlib.sha1(header(lines, "sec-websocket-key").encode() + WS_GUID).digest())
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    await writer.drain()


async def drain_until_eof(reader):
    try:
        while await reader.read(65536):
            pass
    except ConnectionError:
        pass


def reset(writer):
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def serve_connection(reader, writer, log):
    """Serves one connection; returns when it must be closed."""
    idle_timeout = None
    served_one_per_connection = False
    while True:
        request = await read_request(reader, idle_timeout)
        if request is None:
            return
        path, lines = request
        log(f"head {path}")
        idle_timeout = None
        if served_one_per_connection:
            return  # the second request of the connection: closed, unanswered
        if path in FIXED:
            writer.write(FIXED[path])
        elif path == "/echo-head":
            hosts = sum(1 for line in lines[1:] if line.partition(":")[0].strip().lower() == "host")
            log(f"host-headers {hosts}")
            head = "\r\n".join(lines).encode("latin-1")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(head) + head)
        elif path == "/sse-flood":
            writer.write(SSE_HEAD)
            await write_forever(writer, SSE_FLOOD_BLOCK)
            return
        elif path.startswith("/sse-big-"):
            size = int(path.rsplit("-", 1)[1]) * 1024 * 1024
            writer.write(SSE_HEAD + b"data: ")
            for _ in range(size // len(BIG_CHUNK)):
                writer.write(BIG_CHUNK)
                await writer.drain()
            writer.write(b"\n\ndata: after\n\n")
            await writer.drain()
            log(f"answered {path}")
            await drain_until_eof(reader)
            return
        elif path == "/ws-flood":
            await upgrade_to_websocket(lines, writer)
            await write_forever(writer, WS_FLOOD_BLOCK)
            return
        elif path == "/ws-cut-mid-frame":
            await upgrade_to_websocket(lines, writer)
            writer.write(b"\x81\x64" + b"0123456789")
            await writer.drain()
            log(f"answered {path}")
            return
        elif path == "/reset":
            reset(writer)
            return
        elif path == "/close-before-response":
            return
        elif path == "/stall":
            await drain_until_eof(reader)
            return
        elif path == "/short-body":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello")
            await writer.drain()
            return
        elif path == "/big":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % BIG_SIZE)
            for _ in range(BIG_SIZE // len(BIG_CHUNK)):
                writer.write(BIG_CHUNK)
                await writer.drain()
        elif path == "/dribble":
            for i, byte in enumerate(DRIBBLE):
                if i:
                    await asyncio.sleep(DRIBBLE_INTERVAL)
                writer.write(bytes([byte]))
                await writer.drain()
        elif path == "/keepalive-idle-close":
            writer.write(OK)
            idle_timeout = IDLE_CLOSE_AFTER
        elif path == "/one-per-connection":
            writer.write(OK)
            served_one_per_connection = True
        elif path == "/100-continue":
            writer.write(CONTINUE)
            await writer.drain()
            # Apart, so that the client reads the 1xx on its own.
            await asyncio.sleep(0.01)
            writer.write(OK)
        elif path == "/unrequested-101":
            writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
            await writer.drain()
            log(f"answered {path}")
            await drain_until_eof(reader)
            return
        elif path == "/http10":
            writer.write(HTTP10)
            await writer.drain()
            log(f"answered {path}")
            return
        else:
            writer.write(NOT_FOUND)
        await writer.drain()
        log(f"answered {path}")


async def stall_forever(reader, writer, log):
    await drain_until_eof(reader)


# HTTP/2 (RFC 9113), as much of it as the faults need: frames read and written raw, header
# blocks written with HPACK literals (no Huffman, no table), the client's never decoded.
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, CONTINUATION = 0, 1, 3, 4, 6, 9
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
REFUSED_STREAM = 0x7
STATUS_200 = b"\x88"  # the static table's :status 200
H2_FRAME_SIZE = 16384


def h2_frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def hpack_length(n):
    """An HPACK string length with a 7-bit prefix, Huffman off."""
    if n < 127:
        return bytes([n])
    out, n = bytearray([127]), n - 127
    while n >= 128:
        out.append(n % 128 + 128)
        n //= 128
    out.append(n)
    return bytes(out)


def hpack_literal(name, value):
    """A header field as a literal without indexing, with a new name."""
    return b"\x00" + hpack_length(len(name)) + name + hpack_length(len(value)) + value


def h2_ok(stream):
    return (h2_frame(HEADERS, END_HEADERS, stream, STATUS_200 + hpack_literal(b"content-length", b"2"))
            + h2_frame(DATA, END_STREAM, stream, b"ok"))


class H2Faults:
    """What the HTTP/2 listeners share: streams seen over all their connections."""

    def __init__(self):
        self.streams = 0


async def serve_h2(name, shared, reader, writer, log):
    if await reader.readexactly(len(H2_PREFACE)) != H2_PREFACE:
        return
    writer.write(h2_frame(SETTINGS, 0, 0))
    while True:
        head = await reader.readexactly(9)
        length, kind, flags = int.from_bytes(head[:3], "big"), head[3], head[4]
        stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        payload = await reader.readexactly(length)
        if kind == SETTINGS and not flags & ACK:
            writer.write(h2_frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            writer.write(h2_frame(PING, ACK, 0, payload))
        elif kind == HEADERS:
            log(f"h2 {name} stream")
            shared.streams += 1
            if name == "h2-ok" or (name == "h2-refuse-first" and shared.streams > 1):
                writer.write(h2_ok(stream))
            elif name == "h2-close":
                # Half-closed, then read to the end: a close with unread bytes would be a reset.
                writer.write_eof()
                await drain_until_eof(reader)
                return
            elif name == "h2-refuse-first":
                writer.write(h2_frame(RST_STREAM, 0, stream, REFUSED_STREAM.to_bytes(4, "big")))
            elif name == "h2-data-oversize":
                writer.write(h2_frame(HEADERS, END_HEADERS, stream, STATUS_200))
                writer.write(h2_frame(DATA, END_STREAM, stream, b"x" * 20000))
            elif name == "h2-continuation-flood":
                writer.write(h2_frame(HEADERS, 0, stream, STATUS_200))
                await write_forever(writer, h2_frame(CONTINUATION, 0, stream) * 1000)
                return
            elif name == "h2-big-head":
                block = STATUS_200 + hpack_literal(b"x-big", b"x" * (1024 * 1024))
                pieces = [block[i:i + H2_FRAME_SIZE] for i in range(0, len(block), H2_FRAME_SIZE)]
                writer.write(h2_frame(HEADERS, 0, stream, pieces[0]))
                for i, piece in enumerate(pieces[1:], start=2):
                    writer.write(h2_frame(CONTINUATION, END_HEADERS if i == len(pieces) else 0, stream, piece))
                    await writer.drain()
                writer.write(h2_frame(DATA, END_STREAM, stream, b""))
        await writer.drain()


RAW_FAULTS = ("tls-stall", "h2-ok", "h2-data-oversize", "h2-continuation-flood", "h2-big-head", "h2-refuse-first",
              "h2-close")


async def main(port, log_path):
    log = Events(log_path)
    h2_shared = H2Faults()

    def raw_handler(name):
        async def handle(reader, writer):
            log(f"accept {name}")
            try:
                if name == "tls-stall":
                    await stall_forever(reader, writer, log)
                else:
                    await serve_h2(name, h2_shared, reader, writer, log)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                if not writer.transport.is_closing():
                    writer.close()
        return handle

    raw_servers = []
    for name in RAW_FAULTS:
        raw = await asyncio.start_server(raw_handler(name), "127.0.0.1", 0)
        raw_servers.append(raw)
        print(f"raw {name} http://127.0.0.1:{raw.sockets[0].getsockname()[1]}", flush=True)

    async def handle(reader, writer):
        log("accept")
        try:
            await serve_connection(reader, writer, log)
        except ConnectionError:
            pass
        finally:
            if not writer.transport.is_closing():
                writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096, limit=64 * 1024)
    bound = server.sockets[0].getsockname()[1]
    print(f"listening on http://127.0.0.1:{bound}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    try:
        asyncio.run(main(args.port, args.log))
    except KeyboardInterrupt:
        sys.exit(0)
