#!/usr/bin/env python3
"""Issue 26's thread target: the peak OS threads of `zarrow sql` (a GROUP BY and a
join) over two Zarr groups (obs.zarr's rows, chunks of 50, consolidated metadata)
served by http-delay (20 ms a request), at 4 and 16 partitions, 3 runs each.

    python3 benches/compare/threads.py ZARROW HTTP_DELAY

HTTP_DELAY: benches/compare/http-delay built (remote.py builds it into
target/gen-http-delay/release/http-delay).
"""
import subprocess, sys, time, os, shutil, tempfile


def peak(args, env=None):
    """The most threads the process of `args` had at once (its /proc status
    read every 2 ms)."""
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    top = 0
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("Threads:"):
                        top = max(top, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.002)
    err = p.stderr.read().decode()
    assert p.returncode == 0, err
    return top


def main():
    zarrow, server_bin = sys.argv[1], sys.argv[2]
    root = tempfile.mkdtemp()
    pq = os.path.join(root, "obs.parquet")
    subprocess.run([zarrow, "convert", "testdata/stores/obs.zarr", pq], check=True, capture_output=True)
    for name in ("a.zarr", "b.zarr"):
        subprocess.run([zarrow, "convert", pq, os.path.join(root, name), "--chunk-len", "50"], check=True, capture_output=True)
    srv = subprocess.Popen([server_bin, root, "20"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    port = srv.stdout.readline().split()[1]
    base = f"http://127.0.0.1:{port}"
    queries = {
      "group by": "SELECT cell_type, count(*) FROM a GROUP BY cell_type",
      "join": "SELECT a.cell_type, count(*) FROM a JOIN b ON a.cell_type = b.cell_type GROUP BY a.cell_type",
    }
    for parts in (4, 16):
        for name, q in queries.items():
            runs = [peak([zarrow, "sql", q, "--table", f"a={base}/a.zarr", "--table", f"b={base}/b.zarr", "--partitions", str(parts)]) for _ in range(3)]
            print(f"{name}, {parts} partitions: peak threads {max(runs)} (runs {runs})")
    srv.stdin.close(); srv.wait()


if __name__ == "__main__":
    main()
