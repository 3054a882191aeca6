"""kube_http.py: a very small Kubernetes API client for the local cluster tools (stdlib only).

Used by sim_kubelet.py and register_nodes.py. It reads the simple single-cluster kubeconfig that
cluster.sh writes (server, certificate-authority(-data), token or tokenFile; the first of each
wins), keeps one persistent HTTPS connection per thread, and returns (status, decoded JSON).

    api = Api.from_kubeconfig("/tmp/tessel-cluster-0/admin.kubeconfig")
    status, body = api.request("GET", "/api/v1/nodes")
"""

import base64
import datetime
import http.client
import json
import re
import ssl
import sys
import threading
import urllib.parse


_log_lock = threading.Lock()


def log(*parts):
    """One line on stderr with a UTC timestamp (whole lines, also from several threads)."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")
    line = " ".join([now[:-3] + "Z"] + [str(p) for p in parts]) + "\n"
    with _log_lock:
        sys.stderr.write(line)
        sys.stderr.flush()


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro():
    """metav1.MicroTime, as Lease.spec.renewTime wants it."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _kubeconfig_value(text, key):
    m = re.search(r"^\s*(?:-\s+)?" + re.escape(key) + r":\s*['\"]?([^\s'\"]+)", text, re.M)
    return m.group(1) if m else None


class Api:
    def __init__(self, server, token, ssl_context, timeout=30.0):
        url = urllib.parse.urlsplit(server)
        if url.scheme != "https":
            raise ValueError("only https servers are supported: " + server)
        self.host = url.hostname
        self.port = url.port or 443
        self.token = token
        self.ctx = ssl_context
        self.timeout = timeout
        self._local = threading.local()

    @classmethod
    def from_kubeconfig(cls, path, timeout=30.0):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        server = _kubeconfig_value(text, "server")
        if not server:
            raise ValueError(path + ": no server")
        ctx = ssl.create_default_context()
        ca_data = _kubeconfig_value(text, "certificate-authority-data")
        ca_file = _kubeconfig_value(text, "certificate-authority")
        if ca_data:
            ctx = ssl.create_default_context(cadata=base64.b64decode(ca_data).decode())
        elif ca_file:
            ctx = ssl.create_default_context(cafile=ca_file)
        token = _kubeconfig_value(text, "token")
        token_file = _kubeconfig_value(text, "tokenFile")
        if not token and token_file:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        if not token:
            raise ValueError(path + ": no token (only token auth is supported)")
        return cls(server, token, ctx, timeout)

    def connect(self, timeout=None):
        """A new connection (the caller owns it, e.g. for a long watch)."""
        return http.client.HTTPSConnection(
            self.host, self.port, context=self.ctx, timeout=timeout or self.timeout)

    def headers(self, content_type=None):
        h = {"Authorization": "Bearer " + self.token, "Accept": "application/json",
             "User-Agent": "tessel-local-cluster"}
        if content_type:
            h["Content-Type"] = content_type
        return h

    def request(self, method, path, body=None, content_type="application/json"):
        """Returns (HTTP status, decoded JSON body or None). Raises OSError/HTTPException on
        connection errors (after one retry on a fresh connection)."""
        data = None if body is None else json.dumps(body).encode()
        for attempt in (0, 1):
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = self.connect()
            try:
                conn.request(method, path, body=data,
                             headers=self.headers(content_type if data is not None else None))
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
                continue
            try:
                decoded = json.loads(raw) if raw else None
            except ValueError:
                decoded = {"raw": raw[:500].decode(errors="replace")}
            return resp.status, decoded
        raise AssertionError("unreachable")
