#!/usr/bin/env python3
"""zarrow against real servers on loopback: an S3 API (moto 5.2.5 in server mode) and
a static HTTP server with ranged GETs, both started here on free 127.0.0.1 ports and
stopped at the end.

Usage: check_remote.py ZARROW_BIN [-k SUBSTRING]

* every store in testdata/stores is uploaded to the S3 server (boto3) and converted
  from s3://... to Arrow IPC; the output must be byte for byte the local conversion's;
* every array store (an HTTP server cannot list, so groups need consolidated
  metadata) is converted from http://... the same way;
* a table written by zarrow to s3://... has the keys and bytes zarrow writes to a
  local directory, and zarr-python reads it (downloaded) to the same values;
* writing over an existing store needs --overwrite; a 404 for a chunk reads as the
  fill value (the local conversion of a store with missing chunks is the reference).

Prints one line per case, then "N passed, M failed"; exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import boto3
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import zarr

warnings.filterwarnings("ignore")

REPO = Path(__file__).resolve().parents[2]
STORES = REPO / "testdata" / "stores"
BUCKET = "zarrow-test"
# A server's request loop ends after this many seconds without a case finishing.
SERVER_TIMEOUT = 600


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
def moto_server():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(port)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


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


@contextlib.contextmanager
def serving(handler):
    """Serve `handler` (a request handler class or factory) on a free 127.0.0.1
    port in a thread; yields its base URL; stops it at the end."""
    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
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


def run(zarrow: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([zarrow, *args], capture_output=True, text=True, env=env, timeout=300)


def convert_ok(zarrow: str, src: str, dst: Path, env: dict, *extra: str) -> None:
    proc = run(zarrow, "convert", src, str(dst), "--overwrite", *extra, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"convert {src}: exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")


# Local conversions, made once per (store, flags): the reference every remote
# conversion of the same store is compared with.
_LOCAL: dict[tuple[str, tuple[str, ...]], Path] = {}


def same_as_local(zarrow: str, store: Path, url: str, tmp: Path, env: dict, extra: tuple = (),
                  remote_extra: tuple = ()) -> int:
    """Convert `store` and `url` (the same store, served) to Arrow IPC with the flags
    `extra` (and `remote_extra` for the URL only); raise unless the two files are
    byte for byte the same. Returns their size."""
    key = (str(store), tuple(extra))
    if key not in _LOCAL:
        _LOCAL[key] = tmp / f"local-{len(_LOCAL)}.arrow"
        convert_ok(zarrow, str(store), _LOCAL[key], env, *extra)
    local = _LOCAL[key]
    remote = tmp / "remote.arrow"
    convert_ok(zarrow, url, remote, env, *extra, *remote_extra)
    if local.read_bytes() != remote.read_bytes():
        raise AssertionError(f"converting {url} differs from converting the local copy")
    return local.stat().st_size


def upload(s3, root: Path, prefix: str) -> None:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            s3.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(root).as_posix()}")


def download(s3, prefix: str, dest: Path) -> dict[str, bytes]:
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/"):
        for obj in page.get("Contents", []):
            key = obj["Key"][len(prefix) + 1:]
            body = s3.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read()
            out[key] = body
            target = dest / key
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
    return out


def local_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def is_group(store: Path) -> bool:
    if (store / ".zgroup").exists():
        return True
    meta = store / "zarr.json"
    return meta.exists() and '"group"' in meta.read_text()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("zarrow", metavar="ZARROW_BIN")
    ap.add_argument("-k", dest="filter", default="")
    args = ap.parse_args()
    zarrow = str(Path(args.zarrow).resolve())
    passed = failed = 0

    def case(name: str, fn) -> None:
        nonlocal passed, failed
        if args.filter not in name:
            return
        try:
            note = fn()
            print(f"ok   {name}" + (f": {note}" if note else ""))
            passed += 1
        except Exception as e:  # noqa: BLE001
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            failed += 1

    stores = sorted(p for p in STORES.glob("*.zarr") if p.is_dir())
    with tempfile.TemporaryDirectory() as tmp_s, moto_server() as endpoint, \
            http_server(REPO / "testdata") as web:
        tmp = Path(tmp_s)
        env = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test",
               "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"}
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        for store in stores:
            upload(s3, store, f"stores/{store.name}")

        for store in stores:
            def s3_read(store=store):
                size = same_as_local(zarrow, store, f"s3://{BUCKET}/stores/{store.name}", tmp, env)
                return f"{size} bytes, identical"
            case(f"s3-read {store.stem}", s3_read)

        for store in stores:
            if is_group(store):
                continue

            def http_read(store=store):
                size = same_as_local(zarrow, store, f"{web}/stores/{store.name}", tmp, env)
                return f"{size} bytes, identical"
            case(f"http-read {store.stem}", http_read)

        # Groups over HTTP: an HTTP server cannot list, so they open through their
        # consolidated metadata (xarray's on zarr-python, and zarrow's own).
        for name, extra in (("xr_ts_v2", ()), ("xr_grid_v3", ("--long",)), ("xr_grid_v2", ("--long",))):
            def http_group(name=name, extra=extra):
                store = REPO / "testdata" / "conventions" / "stores" / f"{name}.zarr"
                url = f"{web}/conventions/stores/{name}.zarr"
                return f"consolidated, {same_as_local(zarrow, store, url, tmp, env, extra)} bytes, identical"
            case(f"http-read group {name}", http_group)

        served = tmp / "served"
        served.mkdir()
        with http_server(served) as web2:
            for fmt in ("2", "3"):
                def http_zarrow_group(fmt=fmt):
                    out = served / f"obs_v{fmt}.zarr"
                    table_file = tmp / "obs.parquet"
                    convert_ok(zarrow, str(STORES / "obs.zarr"), table_file, env)
                    convert_ok(zarrow, str(table_file), out, env, "--zarr-format", fmt)
                    same_as_local(zarrow, out, f"{web2}/obs_v{fmt}.zarr", tmp, env)
                    g = zarr.open_consolidated(str(out), zarr_format=int(fmt))
                    columns = pa.ipc.open_file(_LOCAL[(str(out), ())]).schema.names
                    if sorted(g.array_keys()) != sorted(columns):
                        raise AssertionError("zarr-python's consolidated view differs")
                    return "zarrow's consolidated metadata: read over HTTP and by zarr.open_consolidated"
                case(f"http-read zarrow group v{fmt}", http_zarrow_group)

        # Faults, through a proxy in front of the static server.
        sharded = "v3_string_sharded.zarr"
        for mode, extra in (("500-once", ()), ("reset-once", ()), ("slow-once", ("--timeout", "1"))):
            def fault(mode=mode, extra=extra):
                proxy = FaultProxy(web, mode, delay=3.0)
                with proxy.serve() as url:
                    for name in (sharded, "v2_string_blosc.zarr", "zarrs_vlen_missing.zarr"):
                        same_as_local(zarrow, STORES / name, f"{url}/stores/{name}", tmp, env,
                                      remote_extra=extra)
                if proxy.faults == 0:
                    raise AssertionError("no fault was injected")
                return f"{proxy.faults} faults injected and retried; outputs identical"
            case(f"http fault {mode}", fault)

        def reset_without_retries():
            # The same fault with retries off fails: the retries are what pass it.
            proxy = FaultProxy(web, "reset-once")
            with proxy.serve() as url:
                proc = run(zarrow, "convert", f"{url}/stores/{sharded}", str(tmp / "r.arrow"), "--overwrite",
                           "--retries", "0", env=env)
            if proc.returncode == 0:
                raise AssertionError("a body cut off mid-way was read without a retry")
            return proc.stderr.strip().splitlines()[-1][:100]
        case("http fault reset-once, --retries 0, fails", reset_without_retries)

        def forbidden():
            proxy = FaultProxy(web, "403")
            with proxy.serve() as url:
                start = time.monotonic()
                proc = run(zarrow, "convert", f"{url}/stores/{sharded}", str(tmp / "x.arrow"), "--overwrite",
                           env=env)
                took = time.monotonic() - start
            if proc.returncode == 0:
                raise AssertionError("a 403 was read as data")
            msg = proc.stderr.strip().splitlines()[-1]
            if "403" not in msg or url not in msg:
                raise AssertionError(f"the message names neither the status nor the URL: {msg}")
            if len(proxy.requests) > 2 or took > 10:
                raise AssertionError(f"a 403 was retried: {len(proxy.requests)} requests, {took:.1f}s")
            if (tmp / "x.arrow").exists():
                raise AssertionError("an output was left behind")
            return f"failed at once ({len(proxy.requests)} request, {took:.1f}s): {msg[:100]}"
        case("http 403 fails at once, naming the URL", forbidden)

        def ten_rows_of_a_shard():
            # 5000 strings in shards of 1000 rows, inner chunks of 100 (zarrow's
            # writer; zarr-python checks the values).
            n = 5000
            names = pa.table({"s": pa.array([f"row {i}" for i in range(n)])})
            src_file = tmp / "strings.parquet"
            pq.write_table(names, src_file)
            out = served / "sharded.zarr"
            convert_ok(zarrow, str(src_file), out, env, "--shard-len", "1000", "--chunk-len", "100")
            with http_server(served) as base:
                proxy = FaultProxy(base, "pass")
                with proxy.serve() as url:
                    convert_ok(zarrow, f"{url}/sharded.zarr/s", tmp / "head.arrow", env, "--rows", "0..10")
            data = [r for r in proxy.requests if not r[1].endswith(("zarr.json", ".zarray", ".zattrs",
                                                                     ".zgroup", ".zmetadata"))]
            if len(data) > 3:
                raise AssertionError(f"{len(data)} requests after the metadata: {data}")
            got = pa.ipc.open_file(tmp / "head.arrow").read_all().column(0).to_pylist()
            want = zarr.open_group(str(out), mode="r")["s"][:10].tolist()
            if got != want or got != names.column(0).to_pylist()[:10]:
                raise AssertionError("the rows differ from zarr-python's")
            return f"{len(data)} requests after the metadata: {[(m, p.rsplit('/', 2)[-2:], r) for m, p, r in data]}"
        case("http 10 rows of a sharded array", ten_rows_of_a_shard)

        table = pa.table({
            "name": pa.array([f"cell {i}" if i % 7 else "" for i in range(5000)]),
            "n": pa.array(np.arange(5000, dtype=np.int64)),
            "x": pa.array(np.linspace(0, 1, 5000)),
        })
        src = tmp / "table.parquet"
        pq.write_table(table, src)
        for fmt, extra in (("3", ()), ("2", ()), ("3", ("--shard-len", "2000", "--chunk-len", "500"))):
            label = f"s3-write v{fmt}{' sharded' if extra else ''}"

            def s3_write(fmt=fmt, extra=extra, label=label):
                prefix = f"out/{label.replace(' ', '_')}.zarr"
                local = tmp / f"{label.replace(' ', '_')}.local.zarr"
                shutil.rmtree(local, ignore_errors=True)
                convert_ok(zarrow, str(src), local, env, "--zarr-format", fmt, *extra)
                convert_ok(zarrow, str(src), f"s3://{BUCKET}/{prefix}", env, "--zarr-format", fmt, *extra)
                down = tmp / f"{label.replace(' ', '_')}.down.zarr"
                shutil.rmtree(down, ignore_errors=True)
                got = download(s3, prefix, down)
                want = local_files(local)
                if sorted(got) != sorted(want):
                    raise AssertionError(f"keys differ: {sorted(set(got) ^ set(want))[:5]}")
                bad = [k for k in want if got[k] != want[k]]
                if bad:
                    raise AssertionError(f"bytes differ in {bad[:5]}")
                g = zarr.open_group(str(down), mode="r")
                for name in table.column_names:
                    values = g[name][:]
                    expect = table.column(name).to_numpy(zero_copy_only=False)
                    if not np.array_equal(values.astype(expect.dtype) if values.dtype.kind != "O" else values, expect):
                        raise AssertionError(f"zarr-python reads {name} differently")
                # Again without --overwrite: refused, and the store is intact.
                proc = run(zarrow, "convert", str(src), f"s3://{BUCKET}/{prefix}", "--zarr-format", fmt, *extra, env=env)
                if proc.returncode == 0 or "exists" not in proc.stderr:
                    raise AssertionError(f"a second write without --overwrite: exit {proc.returncode}, {proc.stderr.strip()}")
                if download(s3, prefix, tmp / "again") != got:
                    raise AssertionError("a refused write changed the store")
                return f"{len(got)} keys, identical to the local write; zarr-python reads it"
            case(label, s3_write)

        def s3_multipart():
            # One chunk of about 40 MB (uncompressed): uploaded in parts.
            big = pa.table({"s": pa.array([f"value {i:012d}" for i in range(2_000_000)])})
            src_big = tmp / "big.parquet"
            pq.write_table(big, src_big)
            extra = ("--compressor", "none", "--chunk-len", "2000000")
            local = tmp / "big.local.zarr"
            shutil.rmtree(local, ignore_errors=True)
            convert_ok(zarrow, str(src_big), local, env, *extra)
            prefix = "out/big.zarr"
            convert_ok(zarrow, str(src_big), f"s3://{BUCKET}/{prefix}", env, *extra)
            want = local_files(local)
            largest = max(len(v) for v in want.values())
            if largest <= 16 << 20:
                raise AssertionError(f"the largest chunk is {largest} bytes: not a multipart upload")
            got = download(s3, prefix, tmp / "big.down.zarr")
            if got != want:
                raise AssertionError("the multipart upload differs from the local write")
            etag = s3.head_object(Bucket=BUCKET, Key=f"{prefix}/s/c/0")["ETag"]
            if "-" not in etag:
                raise AssertionError(f"ETag {etag} is not a multipart upload's")
            return f"a {largest:,}-byte chunk uploaded in parts (ETag {etag}), identical to the local write"
        case("s3-write multipart", s3_multipart)

        def s3_failed_write_leaves_nothing():
            bad = tmp / "nulls.parquet"
            pq.write_table(pa.table({"a": pa.array([1, None, 3])}), bad)
            prefix = "out/failed.zarr"
            proc = run(zarrow, "convert", str(bad), f"s3://{BUCKET}/{prefix}", env=env)
            if proc.returncode == 0:
                raise AssertionError("a column with nulls was written")
            left = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("KeyCount", 0)
            if left:
                raise AssertionError(f"{left} keys left behind")
            return "refused, nothing left behind"
        case("s3-write failure cleans up", s3_failed_write_leaves_nothing)

        def s3_overwrite_only_zarr():
            s3.put_object(Bucket=BUCKET, Key="other/data.csv", Body=b"a,b\n1,2\n")
            proc = run(zarrow, "convert", str(src), f"s3://{BUCKET}/other", "--overwrite", env=env)
            if proc.returncode == 0 or "no Zarr store" not in proc.stderr:
                raise AssertionError(f"exit {proc.returncode}: {proc.stderr.strip()}")
            if s3.get_object(Bucket=BUCKET, Key="other/data.csv")["Body"].read() != b"a,b\n1,2\n":
                raise AssertionError("other data was touched")
            return "refused; the other data is intact"
        case("s3 --overwrite replaces only a Zarr store", s3_overwrite_only_zarr)

        def s3_missing_bucket():
            proc = run(zarrow, "convert", f"s3://no-such-bucket/x.zarr", str(tmp / "x.arrow"), env=env)
            if proc.returncode == 0 or "no-such-bucket" not in proc.stderr:
                raise AssertionError(f"exit {proc.returncode}: {proc.stderr.strip()}")
            return proc.stderr.strip().splitlines()[-1][:120]
        case("s3 missing bucket names the URL", s3_missing_bucket)

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
