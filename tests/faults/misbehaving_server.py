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
"""

import argparse
import asyncio
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

FIXED = {
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
    """The path of the next request, its body read and dropped; None at the end of the stream."""
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
    return parts[1].split("?", 1)[0]


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
        path = await read_request(reader, idle_timeout)
        if path is None:
            return
        log(f"head {path}")
        idle_timeout = None
        if served_one_per_connection:
            return  # the second request of the connection: closed, unanswered
        if path in FIXED:
            writer.write(FIXED[path])
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


async def main(port, log_path):
    log = Events(log_path)

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
