#!/usr/bin/env python3
"""Issue 39's thread target: the peak OS threads of `zarrow convert` of W1 (2M short
strings, zarr-python's vlen-utf8 + zstd, chunks of 200,000) to Parquet, and of one
Python `zarrow.read` of an S3 store (moto on loopback, the same strings), 3 runs
each; run it with the old and the new build to compare.

    python3 benches/compare/threads_io.py ZARROW [PYTHON]

Needs the venv of .ci/run (zarr, pyarrow, moto[server]); PYTHON (default: this
interpreter) has the zarrow package to measure installed, so that an old and a
new build can be compared from one run.
"""
import os, sys, tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "interop"))
from run import short_strings, write_zarr_python  # noqa: E402
from remote_servers import moto_server  # noqa: E402
from threads import peak  # noqa: E402
from zarr.codecs import ZstdCodec  # noqa: E402

zarrow = sys.argv[1]
python = sys.argv[2] if len(sys.argv) > 2 else sys.executable
root = Path(tempfile.mkdtemp())
n = 2_000_000
w1 = root / "w1.zarr"
write_zarr_python(w1, short_strings(n), n // 10, [ZstdCodec(level=0)])




out = root / "w1.parquet"
runs = [peak([zarrow, "convert", str(w1), str(out), "--overwrite"]) for _ in range(3)]
print(f"zarrow convert W1 -> parquet: peak threads {max(runs)} (runs {runs})")

import boto3  # noqa: E402

with moto_server() as endpoint:
    env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="test",
               AWS_SECRET_ACCESS_KEY="test", AWS_REGION="us-east-1")
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
    client.create_bucket(Bucket="threads")
    for path in w1.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), "threads", "w1.zarr/" + str(path.relative_to(w1)))
    # The threads Python starts itself (none for this script) are counted too:
    # the baseline is one.
    script = ("import zarrow, pyarrow as pa; "
              "t = pa.table(zarrow.read('s3://threads/w1.zarr')); assert t.num_rows == %d" % n)
    runs = [peak([python, "-c", script], env=env) for _ in range(3)]
    print(f"python zarrow.read of S3 (moto): peak threads {max(runs)} (runs {runs})")
