#!/usr/bin/env python3
"""zarrow against real servers on loopback, each started here on a free 127.0.0.1 port
and stopped at the end (tests/interop/remote_servers.py): an S3 API (moto 5.2.5 in
server mode), Azure Blob Storage (Azurite, `npm ci --prefix tests/interop/azurite`),
GCS (fake-gcs-server for reads; gcp-storage-emulator, behind a front answering the
XML calls it lacks, for writes) and a static HTTP server with ranged GETs.

Usage: check_remote.py ZARROW_BIN [-k SUBSTRING]

* every store in testdata/stores is uploaded to each bucket (with the server's own
  client: boto3, the Azure SDK, the GCS JSON API) and converted from s3://, az://
  and gs://... to Arrow IPC; the output must be byte for byte the local conversion's;
* every array store (an HTTP server cannot list, so groups need consolidated
  metadata) is converted from http://... the same way;
* a table written by zarrow to each bucket has the keys and bytes zarrow writes to
  a local directory, and zarr-python reads it (downloaded) to the same values;
* writing over an existing store needs --overwrite; a 404 for a chunk reads as the
  fill value (the local conversion of a store with missing chunks is the reference);
* --anonymous sends no Authorization header and needs no credentials (a recording
  proxy sees the requests): it reads a public Azure container and a GCS bucket,
  and a private Azure container refuses it;
* file:// URLs convert, describe and write as the plain path;
* the Rust store conformance suite (tests/integration/store_conformance.rs) runs
  against the S3 server and a ranged HTTP server.

Prints one line per case, then "N passed, M failed"; exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import boto3
import numpy as np
import pyarrow as pa
import pyarrow.ipc  # noqa: F401 (pa.ipc)
import pyarrow.parquet as pq
import zarr

from remote_servers import (AZURITE_ACCOUNT, REPO, FaultProxy, Gcs, azure_container, azurite_server,
                            fake_gcs_server, gcs_write_server, gcs_xml_front, http_server, moto_server)

warnings.filterwarnings("ignore")

STORES = REPO / "testdata" / "stores"
BUCKET = "zarrow-test"


def run(zarrow: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([zarrow, *args], capture_output=True, text=True, env=env, timeout=300)


def run_ok(zarrow: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    proc = run(zarrow, *args, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"zarrow {' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()[-600:]}")
    return proc


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


def save_under(prefix: str, objects, dest: Path) -> dict[str, bytes]:
    """Downloaded `objects` ((name, bytes) pairs, every name under `prefix`/) as
    files under `dest`: {key relative to prefix: bytes}."""
    out = {}
    for name, body in objects:
        key = name[len(prefix) + 1:]
        out[key] = body
        target = dest / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
    return out


def download(s3, prefix: str, dest: Path) -> dict[str, bytes]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/")
    keys = [obj["Key"] for page in pages for obj in page.get("Contents", [])]
    return save_under(prefix, ((k, s3.get_object(Bucket=BUCKET, Key=k)["Body"].read()) for k in keys), dest)


def write_reads_back(zarrow: str, src: Path, table: pa.Table, url: str, fetch, tmp: Path, env: dict,
                     name: str, fmt: str, extra: tuple) -> str:
    """Write the table file `src` (holding `table`) as Zarr to `url` and to a local
    directory with the same flags; `fetch(dest)` downloads what is at `url` (with
    the server's own client, not zarrow) into `dest` and returns {key: bytes}. The
    keys and bytes must be the local write's, and zarr-python must read the
    download to `table`'s values. A second write without --overwrite is refused
    and leaves the store as it was."""
    local = tmp / f"{name}.local.zarr"
    shutil.rmtree(local, ignore_errors=True)
    convert_ok(zarrow, str(src), local, env, "--zarr-format", fmt, *extra)
    convert_ok(zarrow, str(src), url, env, "--zarr-format", fmt, *extra)
    down = tmp / f"{name}.down.zarr"
    shutil.rmtree(down, ignore_errors=True)
    got = comparable(fetch(down))
    want = comparable(local_files(local))
    if sorted(got) != sorted(want):
        raise AssertionError(f"keys differ: {sorted(set(got) ^ set(want))[:5]}")
    bad = [k for k in want if got[k] != want[k]]
    if bad:
        raise AssertionError(f"bytes differ in {bad[:5]}")
    g = zarr.open_group(str(down), mode="r")
    for column in table.column_names:
        values = g[column][:]
        expect = table.column(column).to_numpy(zero_copy_only=False)
        if not np.array_equal(values.astype(expect.dtype) if values.dtype.kind != "O" else values, expect):
            raise AssertionError(f"zarr-python reads {column} differently")
    proc = run(zarrow, "convert", str(src), url, "--zarr-format", fmt, *extra, env=env)
    if proc.returncode == 0 or "exists" not in proc.stderr:
        raise AssertionError(f"a second write without --overwrite: exit {proc.returncode}, {proc.stderr.strip()}")
    again = tmp / f"{name}.again.zarr"
    shutil.rmtree(again, ignore_errors=True)
    if comparable(fetch(again)) != got:
        raise AssertionError("a refused write changed the store")
    return f"{len(got)} keys, identical to the local write; zarr-python reads it"


def local_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def comparable(files: dict[str, bytes]) -> dict[str, bytes]:
    """`files` with each chunk statistics file (`zarrow.stats`, Arrow IPC) as its
    rows without the `version` column: the versions are each store's own (a
    file's times and inode, an object's ETag), and must be there. Everything
    else byte for byte."""
    out = {}
    for key, body in files.items():
        if key.endswith("/zarrow.stats"):
            table = pa.ipc.open_file(pa.BufferReader(body)).read_all()
            if table.column("version").null_count:
                raise AssertionError(f"{key}: a chunk without its stored version")
            body = repr(table.drop_columns(["version"]).to_pydict()).encode()
        out[key] = body
    return out


def is_group(store: Path) -> bool:
    if (store / ".zgroup").exists():
        return True
    meta = store / "zarr.json"
    return meta.exists() and '"group"' in meta.read_text()


WRITES = (("3", ()), ("2", ()), ("3", ("--shard-len", "2000", "--chunk-len", "500")))


def bucket_cases(zarrow: str, case, tmp: Path, stores: list[Path], src: Path, table: pa.Table, scheme: str,
                 env: dict, upload, fetch=None) -> None:
    """The cases every object store runs, on bucket BUCKET behind `scheme`://:
    every store (uploaded with `upload(root, prefix)`, the server's own client)
    converts as from a local copy; the WRITES read back (`fetch(prefix, dest)`;
    no `fetch`: no writes)."""
    for store in stores:
        upload(store, f"stores/{store.name}")
    for store in stores:
        def read(store=store):
            size = same_as_local(zarrow, store, f"{scheme}://{BUCKET}/stores/{store.name}", tmp, env)
            return f"{size} bytes, identical"
        case(f"{scheme}-read {store.stem}", read)
    for fmt, extra in WRITES if fetch else ():
        label = f"{scheme}-write v{fmt}{' sharded' if extra else ''}"

        def write(fmt=fmt, extra=extra, label=label):
            prefix = f"out/{label.replace(' ', '_')}.zarr"
            return write_reads_back(zarrow, src, table, f"{scheme}://{BUCKET}/{prefix}",
                                    lambda dest: fetch(prefix, dest), tmp, env, label.replace(" ", "_"), fmt, extra)
        case(label, write)


def no_credentials() -> dict:
    """The environment without any cloud credential or endpoint."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("AWS_", "AZURE_", "AZURITE_", "GOOGLE_"))}


def azure_upload(container, root: Path, prefix: str) -> None:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            container.upload_blob(f"{prefix}/{path.relative_to(root).as_posix()}", path.read_bytes())


def azure_download(container, prefix: str, dest: Path) -> dict[str, bytes]:
    blobs = container.list_blobs(name_starts_with=prefix + "/")
    return save_under(prefix, ((b.name, container.download_blob(b.name).readall()) for b in blobs), dest)


def check_azure(zarrow: str, case, tmp: Path, stores: list[Path], src: Path, table: pa.Table) -> None:
    """az:// against Azurite: every store read as from a local copy; writes read
    back (by the Azure SDK and zarr-python); --anonymous on a public container
    without credentials, and refused on a private one."""
    with azurite_server(tmp) as base:
        # object_store's emulator mode: the well-known account and key, over HTTP.
        env = {**no_credentials(), "AZURE_STORAGE_USE_EMULATOR": "true", "AZURITE_BLOB_STORAGE_URL": base}
        container = azure_container(base, BUCKET)
        bucket_cases(zarrow, case, tmp, stores, src, table, "az", env,
                     lambda root, prefix: azure_upload(container, root, prefix),
                     lambda prefix, dest: azure_download(container, prefix, dest))

        def az_icechunk():
            # An Icechunk repository in Azurite: written by zarrow (one commit,
            # then an append), read back by zarrow; the repository's objects
            # are in the container.
            url = f"icechunk+az://{BUCKET}/icechunk-repo?path=t"
            run_ok(zarrow, "convert", str(src), url, env=env)
            run_ok(zarrow, "convert", str(src), url, "--append", env=env)
            out = tmp / "az_icechunk.parquet"
            run_ok(zarrow, "convert", url, str(out), "--overwrite", env=env)
            got = pq.read_table(out)
            want = pa.concat_tables([table, table])
            if got.to_pylist() != want.to_pylist():
                raise AssertionError(f"{got.num_rows} rows read back")
            snapshots = [b.name for b in container.list_blobs(name_starts_with="icechunk-repo/snapshots/")]
            return f"{got.num_rows} rows; {len(snapshots)} snapshots"
        case("az: an Icechunk repository written and read", az_icechunk)

        public = azure_container(base, "public", public=True)
        for name in ("v3_string_sharded.zarr", "obs.zarr"):
            azure_upload(public, STORES / name, name)
        proxy = FaultProxy(base, "pass")
        with proxy.serve() as url:
            # No key, no emulator mode: only an account and where it is.
            anon = {**no_credentials(), "AZURE_STORAGE_ACCOUNT_NAME": AZURITE_ACCOUNT,
                    "AZURE_STORAGE_ENDPOINT": f"{url}/{AZURITE_ACCOUNT}"}
            signed = {**env, "AZURITE_BLOB_STORAGE_URL": url}

            def az_anonymous():
                url_of = lambda name: f"az://public/{name}"  # noqa: E731
                unsigned = read_signed_or_not(zarrow, proxy, url_of, tmp, anon, False)
                with_key = read_signed_or_not(zarrow, proxy, url_of, tmp, signed, True)
                notes = [f"{name}: {unsigned[name]} unsigned / {with_key[name]} signed" for name in unsigned]
                return "public container, no credentials; outputs identical; " + ", ".join(notes)
            case("az --anonymous reads a public container unsigned", az_anonymous)

            def az_anonymous_private():
                start = len(proxy.signed)
                name = "v3_string_sharded.zarr"
                proc = run(zarrow, "convert", f"az://{BUCKET}/stores/{name}", str(tmp / "p.arrow"), "--overwrite",
                           "--anonymous", env=anon)
                if proc.returncode == 0:
                    raise AssertionError("a private container was read without a signature")
                if any(proxy.signed[start:]):
                    raise AssertionError("--anonymous sent a signed request")
                msg = proc.stderr.strip()
                if "403" not in msg or f"az://{BUCKET}/stores/{name}" not in msg:
                    raise AssertionError(f"not refused with a 403 naming the URL: {msg}")
                return msg.splitlines()[0][:140]
            case("az --anonymous on a private container is refused", az_anonymous_private)


def read_signed_or_not(zarrow: str, proxy: FaultProxy, url_of, tmp: Path, env: dict, signed: bool) -> dict:
    """Two test stores read from `url_of(name)` through the recording `proxy`
    (with --anonymous unless `signed`): each the same as its local conversion,
    and every request signed (`signed`) or none. {name: requests}."""
    counts = {}
    for name in ("v3_string_sharded.zarr", "obs.zarr"):
        start = len(proxy.signed)
        same_as_local(zarrow, STORES / name, url_of(name), tmp, env,
                      remote_extra=() if signed else ("--anonymous",))
        sent = proxy.signed[start:]
        if not sent or any(s != signed for s in sent):
            raise AssertionError(f"{name}: {sum(sent)} of {len(sent)} requests signed, expected "
                                 f"{'all' if signed else 'none'}")
        counts[name] = len(sent)
    return counts


def gcs_env(tmp: Path, name: str, url: str) -> dict:
    """The environment that sends zarrow's gs:// requests to the emulator at `url`:
    object_store's way is a service account file (`tmp`/`name`) naming the URL,
    with OAuth off."""
    account = tmp / name
    account.write_text(json.dumps({"gcs_base_url": url, "disable_oauth": True, "client_email": "",
                                   "private_key": "", "private_key_id": ""}))
    return {**no_credentials(), "GOOGLE_SERVICE_ACCOUNT": str(account)}


def check_gcs(zarrow: str, case, tmp: Path, stores: list[Path], src: Path, table: pa.Table) -> None:
    """gs:// against fake-gcs-server: every store read as from a local copy."""
    with fake_gcs_server(tmp) as base:
        gcs = Gcs(base)
        gcs.create_bucket(BUCKET)
        env = gcs_env(tmp, "gcs-service-account.json", base)

        def upload(root: Path, prefix: str) -> None:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    gcs.upload(BUCKET, f"{prefix}/{path.relative_to(root).as_posix()}", path.read_bytes())

        # Reads only: fake-gcs-server has no XML API for uploads (the PUT
        # BASE/bucket/object that object_store sends is answered 400 "invalid
        # uploadType"; fake-gcs-server issue 331, pull request 1164 unmerged).
        # check_gcs_writes writes to another emulator.
        bucket_cases(zarrow, case, tmp, stores, src, table, "gs", env, upload)

        def gs_icechunk():
            # An Icechunk repository zarrow wrote locally (two commits),
            # uploaded object by object, read from gs:// (reads only: see above).
            repo = tmp / "gs_icechunk_repo"
            run_ok(zarrow, "convert", str(src), f"icechunk+file://{repo}?path=t", env=env)
            run_ok(zarrow, "convert", str(src), f"icechunk+file://{repo}?path=t", "--append", env=env)
            upload(repo, "icechunk-repo")
            out = tmp / "gs_icechunk.parquet"
            run_ok(zarrow, "convert", f"icechunk+gs://{BUCKET}/icechunk-repo?path=t", str(out), "--overwrite",
                   env=env)
            got = pq.read_table(out)
            if got.to_pylist() != pa.concat_tables([table, table]).to_pylist():
                raise AssertionError(f"{got.num_rows} rows read back")
            return f"{got.num_rows} rows at the branch's tip"
        case("gs: an Icechunk repository read", gs_icechunk)

        proxy = FaultProxy(base, "pass")
        with proxy.serve() as url:
            def gs_anonymous():
                # No service account, no credential of any kind: only where the
                # endpoint is. An emulator takes unsigned requests, so only the
                # unsigned half is checked (S3 and Azure check both halves).
                anon = {**no_credentials(), "GOOGLE_BASE_URL": url}
                sent = read_signed_or_not(zarrow, proxy, lambda name: f"gs://{BUCKET}/stores/{name}", tmp, anon,
                                          False)
                return "no credentials; outputs identical; none signed: " + ", ".join(
                    f"{name}: {n} requests" for name, n in sent.items())
            case("gs --anonymous reads without credentials, unsigned", gs_anonymous)


def check_gcs_writes(zarrow: str, case, tmp: Path, src: Path, table: pa.Table) -> None:
    """gs:// writes against gcp-storage-emulator, which takes object_store's XML
    PUT; `gcs_xml_front` answers the XML listing, HEAD and DELETE from the
    emulator's JSON API. Each write is downloaded with the JSON API (urllib, not
    zarrow): the local write's keys and bytes, read by zarr-python."""
    with gcs_write_server(tmp) as base, gcs_xml_front(base) as front:
        gcs = Gcs(base)
        gcs.create_bucket(BUCKET)
        env = gcs_env(tmp, "gcs-write-service-account.json", front)

        def fetch(prefix: str, dest: Path) -> dict[str, bytes]:
            return save_under(prefix, gcs.download_all(BUCKET, prefix + "/").items(), dest)

        bucket_cases(zarrow, case, tmp, [], src, table, "gs", env, None, fetch)

        def overwrite():
            # The old store's keys go first (listed, then deleted through the front).
            prefix = "out/gs-overwrite.zarr"
            url = f"gs://{BUCKET}/{prefix}"
            convert_ok(zarrow, str(src), url, env, "--zarr-format", "3")
            # convert_ok passes --overwrite.
            convert_ok(zarrow, str(src), url, env, "--zarr-format", "2")
            local = tmp / "gs-overwrite.local.zarr"
            convert_ok(zarrow, str(src), local, env, "--zarr-format", "2")
            down = tmp / "gs-overwrite.down.zarr"
            shutil.rmtree(down, ignore_errors=True)
            got, want = comparable(fetch(prefix, down)), comparable(local_files(local))
            if got != want:
                raise AssertionError(f"not the v2 write's keys and bytes: {sorted(set(got) ^ set(want))[:5]}")
            return f"{len(got)} keys, the v2 write's only: the v3 store's were deleted"
        case("gs-write --overwrite replaces the store", overwrite)


def check_file_urls(zarrow: str, case, tmp: Path, stores: list[Path], src: Path) -> None:
    """file:// URLs name local paths: each conversion, `info` and a write are the
    plain path's, percent-escapes decoded."""
    env = dict(os.environ)
    # A directory name that needs escaping in a URL (Path.as_uri escapes it).
    odd = tmp / "a dir #1 %41 é"
    odd.mkdir(exist_ok=True)
    copy = odd / "obs.zarr"
    shutil.copytree(STORES / "obs.zarr", copy, dirs_exist_ok=True)

    def file_read():
        for store in [*stores, copy]:
            same_as_local(zarrow, store, store.as_uri(), tmp, env)
        host = "file://localhost" + copy.as_uri()[len("file://"):]
        same_as_local(zarrow, copy, host, tmp, env)
        return f"{len(stores) + 2} conversions identical to the plain path's (incl. {copy.as_uri()[-30:]})"
    case("file:// read", file_read)

    def file_info():
        for store in (STORES / "obs.zarr", STORES / "v3_string_sharded.zarr", copy):
            want = run(zarrow, "info", str(store), env=env)
            got = run(zarrow, "info", store.as_uri(), env=env)
            if want.returncode != 0 or (got.returncode, got.stdout) != (0, want.stdout):
                raise AssertionError(f"info {store.as_uri()}: exit {got.returncode}, {got.stderr.strip()[:200]}")
        return "identical to the plain path's"
    case("file:// info", file_info)

    def file_write():
        local = tmp / "plain.zarr"
        shutil.rmtree(local, ignore_errors=True)
        convert_ok(zarrow, str(src), local, env)
        out = odd / "written.zarr"
        shutil.rmtree(out, ignore_errors=True)
        convert_ok(zarrow, str(src), out.as_uri(), env)
        if comparable(local_files(out)) != comparable(local_files(local)):
            raise AssertionError("the file:// write differs from the plain path's")
        table_out = tmp / "from-url.parquet"
        convert_ok(zarrow, out.as_uri(), table_out, env)
        return f"{len(local_files(out))} files, identical to the plain path's; read back through file://"
    case("file:// write", file_write)

    def file_bad():
        proc = run(zarrow, "info", "file://server/share/x.zarr", env=env)
        if proc.returncode == 0 or "names no local path" not in proc.stderr:
            raise AssertionError(f"exit {proc.returncode}: {proc.stderr.strip()}")
        return proc.stderr.strip().splitlines()[0][:160]
    case("file:// with a remote host is refused", file_bad)


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

    def section(name: str, fn) -> None:
        # A section's setup (a server, its uploads) failing fails the run.
        nonlocal failed
        try:
            fn()
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
        table = pa.table({
            "name": pa.array([f"cell {i}" if i % 7 else "" for i in range(5000)]),
            "n": pa.array(np.arange(5000, dtype=np.int64)),
            "x": pa.array(np.linspace(0, 1, 5000)),
        })
        src = tmp / "table.parquet"
        pq.write_table(table, src)
        bucket_cases(zarrow, case, tmp, stores, src, table, "s3", env,
                     lambda root, prefix: upload(s3, root, prefix),
                     lambda prefix, dest: download(s3, prefix, dest))

        for store in stores:
            if is_group(store):
                continue

            def http_read(store=store):
                size = same_as_local(zarrow, store, f"{web}/stores/{store.name}", tmp, env)
                return f"{size} bytes, identical"
            case(f"http-read {store.stem}", http_read)

        def http_info():
            # An HTTP server cannot list: `info` says that how many chunks are
            # stored is unknown, and the rest as for the local store.
            name = "v3_string_sharded.zarr"
            local = run(zarrow, "info", str(STORES / name), env=env)
            remote = run(zarrow, "info", f"{web}/stores/{name}", env=env)
            if local.returncode or remote.returncode:
                raise AssertionError(f"exit {local.returncode} / {remote.returncode}: {remote.stderr.strip()[-200:]}")
            lines = {k: [ln for ln in p.stdout.splitlines() if not ln.startswith("chunks:")]
                     for k, p in (("local", local), ("remote", remote))}
            if lines["local"] != lines["remote"]:
                raise AssertionError(f"info differs: {lines}")
            chunks = [ln for ln in remote.stdout.splitlines() if ln.startswith("chunks:")]
            if len(chunks) != 1 or not chunks[0].split()[1] == "3" or "unknown" not in chunks[0]:
                raise AssertionError(f"the chunks line: {chunks}")
            return chunks[0][:100]
        case("http info of an array (no listing)", http_info)

        def store_conformance():
            # The Rust store conformance suite (tests/integration/store_conformance.rs)
            # against this moto and a ranged HTTP server: the same checks as for the
            # local, memory and object_store backends. The test binary is the one
            # `cargo test --profile ci --all-features` built (nothing rebuilds).
            web_dir = tmp / "conformance-web"
            web_dir.mkdir()
            with http_server(web_dir) as conformance_web:
                test_env = {**env, "ZARROW_CONFORMANCE_S3": f"s3://{BUCKET}",
                            "ZARROW_CONFORMANCE_HTTP": conformance_web,
                            "ZARROW_CONFORMANCE_HTTP_DIR": str(web_dir)}
                p = subprocess.run(
                    ["cargo", "test", "-q", "--profile", "ci", "--all-features", "--test", "integration",
                     "store_conformance::", "--", "--ignored", "--test-threads=1"],
                    cwd=REPO, env=test_env, capture_output=True, text=True, timeout=900)
            ran = [ln for ln in p.stdout.splitlines() if ln.startswith("test result:")]
            if p.returncode or "2 passed" not in " ".join(ran):
                raise AssertionError(f"exit {p.returncode}: {(p.stdout + p.stderr)[-3000:]}")
            return "s3 and http: " + " ".join(ran)
        case("store conformance suite: s3 (moto) and http", store_conformance)

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
            want = comparable(local_files(local))
            largest = max(len(v) for v in want.values())
            if largest <= 16 << 20:
                raise AssertionError(f"the largest chunk is {largest} bytes: not a multipart upload")
            got = comparable(download(s3, prefix, tmp / "big.down.zarr"))
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

        def s3_sql():
            # zarrow sql over a Zarr table in S3: the rows of the same query over
            # the local store (which check_sql.py checks against pyarrow).
            upload(s3, STORES / "obs.zarr", "sql/obs.zarr")
            query = ("SELECT cell_type, count(*) AS n, sum(n_genes) AS s FROM obs "
                     "WHERE total_counts > 100 GROUP BY cell_type ORDER BY cell_type")
            results = []
            for location in (f"s3://{BUCKET}/sql/obs.zarr", str(STORES / "obs.zarr")):
                out = tmp / "sql.arrow"
                proc = run(zarrow, "sql", query, "--table", f"obs={location}", "--output", str(out),
                           "--overwrite", env=env)
                if proc.returncode != 0:
                    raise AssertionError(f"sql over {location}: {proc.stderr.strip()}")
                results.append(pa.ipc.open_file(out).read_all())
            if not results[0].equals(results[1]) or results[0].num_rows == 0:
                raise AssertionError(f"{results[0]} != {results[1]}")
        case("s3 sql: a Zarr table in S3 answers as the local store", s3_sql)

        def s3_stale_statistics():
            # zarrow writes the table to S3 with chunk statistics; zarr-python
            # (through obstore) then stores chunk 1 of `n` again with new
            # values. The chunk's ETag no longer matches the one its statistic
            # recorded, so zarrow reads it: the answer is the new values'.
            from obstore.store import S3Store
            from zarr.storage import ObjectStore

            url = f"s3://{BUCKET}/stale/t.zarr"
            convert_ok(zarrow, str(src), url, env, "--chunk-len", "1000")
            store = S3Store(BUCKET, endpoint=endpoint, access_key_id="test", secret_access_key="test",
                            region="us-east-1", client_options={"allow_http": True})
            array = zarr.open_array(ObjectStore(store), path="stale/t.zarr/n", mode="r+")
            array[1000:2000] = np.full(1000, 10**6, dtype=np.int64)
            out = tmp / "stale.arrow"
            proc = run(zarrow, "sql", "SELECT count(*) AS c FROM t WHERE n = 1000000", "--table",
                       f"t={url}", "--output", str(out), "--overwrite", env=env)
            if proc.returncode != 0:
                raise AssertionError(proc.stderr.strip())
            got = pa.ipc.open_file(out).read_all().column("c")[0].as_py()
            if got != 1000:
                raise AssertionError(f"{got} rows, not the 1000 zarr-python wrote")
            return "the rewritten chunk is read (its ETag changed)"
        case("s3 a chunk rewritten by zarr-python after its statistics is read", s3_stale_statistics)

        def s3_missing_bucket():
            proc = run(zarrow, "convert", f"s3://no-such-bucket/x.zarr", str(tmp / "x.arrow"), env=env)
            if proc.returncode == 0 or "no-such-bucket" not in proc.stderr:
                raise AssertionError(f"exit {proc.returncode}: {proc.stderr.strip()}")
            return proc.stderr.strip().splitlines()[-1][:120]
        case("s3 missing bucket names the URL", s3_missing_bucket)

        def s3_anonymous():
            # Through a recording proxy: --anonymous with no AWS credentials in
            # the environment reads public-read objects unsigned, and moto refuses
            # it (403) on private ones; with credentials every request is signed.
            name = "v3_string_sharded.zarr"
            s3.create_bucket(Bucket="zarrow-public", ACL="public-read")
            for path in sorted((STORES / name).rglob("*")):
                if path.is_file():
                    s3.upload_file(str(path), "zarrow-public", f"{name}/{path.relative_to(STORES / name).as_posix()}",
                                   ExtraArgs={"ACL": "public-read"})
            proxy = FaultProxy(endpoint, "pass")
            with proxy.serve() as url:
                anon = {**no_credentials(), "AWS_ENDPOINT_URL": url, "AWS_REGION": "us-east-1"}
                same_as_local(zarrow, STORES / name, f"s3://zarrow-public/{name}", tmp, anon,
                              remote_extra=("--anonymous",))
                unsigned = len(proxy.signed)
                private = run(zarrow, "convert", f"s3://{BUCKET}/stores/{name}", str(tmp / "p.arrow"), "--overwrite",
                              "--anonymous", env=anon)
                refused = len(proxy.signed)
                same_as_local(zarrow, STORES / name, f"s3://{BUCKET}/stores/{name}", tmp,
                              {**env, "AWS_ENDPOINT_URL": url})
            if not unsigned or any(proxy.signed[:refused]):
                raise AssertionError(f"--anonymous sent {sum(proxy.signed[:refused])} signed requests")
            if private.returncode == 0 or "403" not in private.stderr:
                raise AssertionError(f"a private bucket read unsigned: exit {private.returncode}, {private.stderr[:200]}")
            if len(proxy.signed) == refused or not all(proxy.signed[refused:]):
                raise AssertionError("requests with credentials were not all signed")
            return (f"--anonymous without credentials: public-read objects read identically, {unsigned} requests, "
                    f"none signed; a private bucket refused (403); with credentials "
                    f"{len(proxy.signed) - refused} requests, all signed")
        case("s3 --anonymous: public read unsigned, private refused", s3_anonymous)

        section("azure", lambda: check_azure(zarrow, case, tmp, stores, src, table))
        section("gcs", lambda: check_gcs(zarrow, case, tmp, stores, src, table))
        section("gcs writes", lambda: check_gcs_writes(zarrow, case, tmp, src, table))
        section("file", lambda: check_file_urls(zarrow, case, tmp, stores, src))

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
