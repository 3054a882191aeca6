#!/usr/bin/env python3
"""Hostile callers for security_test.sh, against the real tessel-scheduler on 127.0.0.1.

  hostile.py trickle  --port P [--tls] --count N --seconds S [--source IP]
      N connections that each send a request header one byte every 1.5 s (after the TLS
      handshake), reconnecting when the server closes one; prints how many it closed.
  hostile.py bodies   --port P --count N --mib M
      N TLS requests in parallel, one per method, each announcing a 200 MB body and sending up to
      M MiB of it; prints each status line (or "closed").
  hostile.py header   --port P --mib M
      one TLS request whose header line never ends, up to M MiB; prints what came back.
  hostile.py h2streams --port P --connections C --streams S --mib M --seconds T [--token TOKEN]
      gRPC over TLS (HTTP/2 frames written by hand): C connections with S Simulate streams each,
      each announcing an M MiB message and sending all of it but its last byte, as far as the
      server's flow control lets it; holds them T seconds; prints the bytes the server accepted.
  hostile.py flood    --port P --seconds S --rate R [--source IP]
      R requests per second to /metrics, each with a new random bearer token.
  hostile.py probes   --port P [--tls] --count N --timeout T [--path /healthz]
      N probes one after another, each on a new connection with T seconds to answer; prints
      how many answered 200.
Loopback only; every connection is closed when the command ends.
"""
import argparse
import os
import socket
import ssl
import struct
import sys
import threading
import time


def tls_context(alpn=None):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


def connect(port, tls, source=None, alpn=None, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                 source_address=(source, 0) if source else None)
    if tls:
        s = tls_context(alpn).wrap_socket(s, server_hostname="127.0.0.1")
    return s


def trickle(a):
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096 + b"\r\n\r\n"
    conns = []  # [socket, offset]
    closed = 0
    end = time.time() + a.seconds
    while time.time() < end:
        while len(conns) < a.count:
            try:
                conns.append([connect(a.port, a.tls, a.source, timeout=3), 0])
            except (OSError, ssl.SSLError):
                closed += 1
                break
        for c in list(conns):
            try:
                c[0].settimeout(0.2)
                c[0].send(request[c[1]:c[1] + 1])
                c[1] += 1
            except (OSError, ssl.SSLError):
                closed += 1
                conns.remove(c)
                c[0].close()
        time.sleep(1.5)
    for c in conns:
        c[0].close()
    print(f"closed {closed}")


def stream_then_reply(s, head, mib):
    """Sends head, then up to mib MiB while the server takes them; returns (MiB sent, the
    server's status line or "")."""
    s.sendall(head)
    chunk = b"x" * (1 << 20)
    sent = 0
    s.settimeout(5)
    try:
        for _ in range(mib):
            s.sendall(chunk)
            sent += 1
    except (OSError, ssl.SSLError):
        pass
    try:
        reply = s.recv(128).decode(errors="replace").split("\r\n")[0]
    except (OSError, ssl.SSLError):
        reply = ""
    s.close()
    return sent, reply


def bodies(a):
    methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]
    results = [None] * a.count

    def one(i):
        method = methods[i % len(methods)]
        try:
            head = (f"{method} /healthz HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
                    f"Content-Length: 200000000\r\n\r\n").encode()
            _, reply = stream_then_reply(connect(a.port, True), head, a.mib)
            results[i] = f"{method} {reply or 'closed'}"
        except (OSError, ssl.SSLError) as e:
            results[i] = f"{method} error {e}"

    threads = [threading.Thread(target=one, args=(i,)) for i in range(a.count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        print(r)


def header(a):
    sent, reply = stream_then_reply(connect(a.port, True), b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Endless: ", a.mib)
    print(f"sent {sent} MiB; reply: {reply or 'closed'}")


# --- HTTP/2, as little as a gRPC call needs ---

def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def hpack_literal(name, value):
    # Literal header field without indexing, new name; lengths under 127 (no Huffman).
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


class H2Conn:
    """One HTTP/2 connection, driven from one thread: an SSL socket must not be read and written
    at once (two threads doing so corrupt its records, which the server rightly refuses)."""

    def __init__(self, port, token):
        self.sock = connect(port, True, alpn=["h2"])
        self.conn_window = 65535
        self.initial_window = 65535
        self.windows = {}
        self.done = set()
        self.accepted = 0
        self.closed = False
        self.token = token
        self.inbox = b""
        self.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(0x4, 0, 0))

    def write(self, data):
        if self.closed:
            return False
        try:
            self.sock.settimeout(5)
            self.sock.sendall(data)
            return True
        except (OSError, ssl.SSLError):  # the server ended this connection (or stopped reading it)
            self.closed = True
            return False

    def pump(self):
        """Reads what the server has sent so far and answers it: settings, pings, window updates,
        ended streams."""
        while not self.closed:
            try:
                self.sock.settimeout(0.01)
                chunk = self.sock.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                break
            except (OSError, ssl.SSLError):
                self.closed = True
                break
            if not chunk:
                self.closed = True
                break
            self.inbox += chunk
            while len(self.inbox) >= 9:
                length = int.from_bytes(self.inbox[:3], "big")
                if len(self.inbox) < 9 + length:
                    break
                head, payload = self.inbox[:9], self.inbox[9:9 + length]
                self.inbox = self.inbox[9 + length:]
                self.take(head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF, payload)

    def take(self, kind, flags, stream, payload):
        if kind == 0x4 and not flags & 0x1:  # SETTINGS: take the window size, ack
            for i in range(0, len(payload), 6):
                ident, value = struct.unpack(">HI", payload[i:i + 6])
                if ident == 0x4:
                    delta = value - self.initial_window
                    self.initial_window = value
                    for k in self.windows:
                        self.windows[k] += delta
            self.write(frame(0x4, 0x1, 0))
        elif kind == 0x8:  # WINDOW_UPDATE
            inc = struct.unpack(">I", payload)[0] & 0x7FFFFFFF
            if stream == 0:
                self.conn_window += inc
            elif stream in self.windows:
                self.windows[stream] += inc
        elif kind == 0x6 and not flags & 0x1:  # PING: answer
            self.write(frame(0x6, 0x1, 0, payload))
        elif kind in (0x1, 0x3) and stream:  # HEADERS (an answer: the call ended) or RST_STREAM
            if kind == 0x3 or flags & 0x1:
                self.done.add(stream)
        elif kind == 0x7:  # GOAWAY
            self.closed = True

    def open_stream(self, stream):
        block = (hpack_literal(b":method", b"POST") + hpack_literal(b":scheme", b"https") +
                 hpack_literal(b":path", b"/tessel.v1.Admin/Simulate") +
                 hpack_literal(b":authority", b"127.0.0.1") +
                 hpack_literal(b"content-type", b"application/grpc") + hpack_literal(b"te", b"trailers"))
        if self.token:
            block += hpack_literal(b"authorization", b"Bearer " + self.token.encode())
        self.windows[stream] = self.initial_window
        self.write(frame(0x1, 0x4, stream, block))

    def send_some(self, stream, data, offset):
        """Sends what the windows allow of data[offset:]; returns the new offset."""
        if stream in self.done or self.closed:
            return offset
        n = min(16384, len(data) - offset, self.conn_window, self.windows[stream])
        if n <= 0 or not self.write(frame(0x0, 0, stream, data[offset:offset + n])):
            return offset
        self.conn_window -= n
        self.windows[stream] -= n
        self.accepted += n
        return offset + n


def h2streams(a):
    size = a.mib << 20
    message = b"\x00" + struct.pack(">I", size) + b"x" * (size - 1)  # the last byte never comes
    conns = []
    refused = 0
    for _ in range(a.connections):
        try:
            c = H2Conn(a.port, a.token)
        except (OSError, ssl.SSLError):  # the server turned the connection away
            refused += 1
            continue
        streams = {}
        for i in range(a.streams):
            sid = 1 + 2 * i
            c.pump()
            c.open_stream(sid)
            streams[sid] = 0
        conns.append((c, streams))
    end = time.time() + a.seconds
    while time.time() < end:
        progressed = False
        for c, streams in conns:
            c.pump()
            for sid, off in streams.items():
                new = c.send_some(sid, message, off)
                progressed |= new != off
                streams[sid] = new
        if not progressed:
            time.sleep(0.05)
    for c, _ in conns:
        c.pump()
    total = sum(c.accepted for c, _ in conns)
    ended = sum(len(c.done) for c, _ in conns)
    print(f"accepted {total >> 20} MiB; streams ended by the server: {ended}"
          + (f"; connections refused: {refused}" if refused else ""))
    for c, _ in conns:
        c.sock.close()


def flood(a):
    end = time.time() + a.seconds
    codes = {}
    while time.time() < end:
        start = time.time()
        token = os.urandom(16).hex()
        try:
            s = connect(a.port, True, a.source, timeout=5)
            s.sendall(f"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
            code = s.recv(64).decode(errors="replace").split(" ")[1]
            s.close()
        except (OSError, ssl.SSLError, IndexError):
            code = "error"
        codes[code] = codes.get(code, 0) + 1
        time.sleep(max(0.0, 1.0 / a.rate - (time.time() - start)))
    print(" ".join(f"{k}:{v}" for k, v in sorted(codes.items())))


def probes(a):
    ok = 0
    for _ in range(a.count):
        try:
            s = connect(a.port, a.tls, timeout=a.timeout)
            s.settimeout(a.timeout)
            s.sendall(f"GET {a.path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            ok += s.recv(64).startswith(b"HTTP/1.1 200")
            s.close()
        except (OSError, ssl.SSLError):
            pass
        time.sleep(0.5)
    print(ok)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("command")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--tls", action="store_true")
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--source")
    p.add_argument("--mib", type=int, default=64)
    p.add_argument("--connections", type=int, default=1)
    p.add_argument("--streams", type=int, default=1)
    p.add_argument("--token", default="")
    p.add_argument("--rate", type=float, default=20)
    p.add_argument("--timeout", type=float, default=5)
    p.add_argument("--path", default="/healthz")
    a = p.parse_args()
    {"trickle": trickle, "bodies": bodies, "header": header, "h2streams": h2streams, "flood": flood,
     "probes": probes}[a.command](a)


if __name__ == "__main__":
    sys.exit(main())
