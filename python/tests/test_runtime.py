"""One runtime per process, and no thread per blocking call (issue 50).

Each check runs in a fresh interpreter (the threads of earlier tests are not
its own), reading the process's threads from /proc as the kernel names them:
tokio names a runtime's threads as it was built (`zarrow` for the library's one
runtime, `tokio-runtime-w` by default), so two runtimes show as two names.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")

# Imported by each child: the threads of this process, by id and name.
THREADS = textwrap.dedent("""
    import os
    def threads():
        seen = {}
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    seen[int(tid)] = f.read().strip()
            except FileNotFoundError:
                pass
        return seen
""")


def child(code: str, env: dict[str, str]) -> dict:
    """Run `code` in a new interpreter; what it printed last, as JSON."""
    out = subprocess.run([sys.executable, "-c", THREADS + textwrap.dedent(code)], env={**os.environ, **env},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def s3_env(endpoint: str) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}


def test_one_runtime_reads_an_icechunk_repository_and_an_s3_url(tmp_path):
    import boto3
    import pyarrow as pa

    import zarrow
    from remote_servers import moto_server

    data = pa.table({"n": pa.array(range(1000), pa.int64())})
    repo = f"icechunk+file://{tmp_path / 'repo'}?path=t"
    zarrow.write(data, repo, chunk_len=100)
    with moto_server() as endpoint:
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                     region_name="us-east-1").create_bucket(Bucket="runtimes")
        env = s3_env(endpoint)
        got = child(f"""
            import json, pyarrow as pa, zarrow
            zarrow.write(zarrow.read({repo!r}), "s3://runtimes/t.zarr", chunk_len=100)
            a = pa.table(zarrow.read({repo!r})).column("n").to_pylist()
            b = pa.table(zarrow.read("s3://runtimes/t.zarr")).column("n").to_pylist()
            names = sorted({{n for n in threads().values() if n.startswith(("zarrow", "tokio"))}})
            print(json.dumps({{"same": a == b == list(range(1000)), "names": names}}))
        """, env)
    assert got["same"]
    # One runtime: the library's. Before, the package's own (`zarrow`) read
    # the URL and the library's (`zarrow-io`) the repository.
    assert got["names"] == ["zarrow"], got


def test_a_copy_of_200_chunks_to_s3_starts_no_more_threads_than_one_of_20(tmp_path):
    import boto3

    from remote_servers import moto_server

    with moto_server() as endpoint:
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                     region_name="us-east-1").create_bucket(Bucket="copies")
        seen = {}
        for chunks in (20, 200):
            # The threads alive while the COPY runs, sampled every
            # millisecond: a thread per chunk written lives as long as its
            # PUT, and would show as one more id each.
            got = child(f"""
                import json, threading, time, zarrow
                seen, done = set(), threading.Event()
                def sample():
                    while not done.is_set():
                        seen.update(threads())
                        time.sleep(0.001)
                t = threading.Thread(target=sample); t.start()
                reader = zarrow.sql(
                    "COPY (SELECT value AS n FROM generate_series(1, {chunks * 50})) "
                    "TO 's3://copies/c{chunks}.zarr' STORED AS ZARR OPTIONS (chunk_len 50)", {{}})
                rows = sum(b.num_rows for b in reader)
                done.set(); t.join()
                print(json.dumps({{"threads": len(seen)}}))
            """, s3_env(endpoint))
            seen[chunks] = got["threads"]
        objects = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                               region_name="us-east-1").list_objects_v2(Bucket="copies", Prefix="c200.zarr/")
        assert objects["KeyCount"] > 200  # every chunk written (and the metadata)
    assert seen[200] <= seen[20] + 2, seen
