#!/usr/bin/env python3
"""`zarrow sql` against pyarrow: each query's result equals what pyarrow computes over
the same data read by zarr-python (and, for the Parquet table, by pyarrow).

Usage: check_sql.py ZARROW_BIN [-k SUBSTRING]

Tables: testdata/stores/obs.zarr (the anndata-like obs group), a `lineage` Zarr group
written here by zarr-python (cell_type -> lineage), and a `weights` Parquet file
written here by pyarrow (cell_type -> weight). Queries: group by, filters, a join of
two Zarr tables, a Zarr table joined with a Parquet table, LIMIT, a string column
alone; each with every string type (utf8, large-utf8, utf8-view), whose Arrow type
the .arrow output must carry. Also: a GROUP BY over an anndata categorical (its
result batches each carry a dictionary) to .arrow and .arrows, and read with
--categorical-values; the .csv, .arrows and
.parquet outputs, the
printed table, and errors on one line with a non-zero exit for an unknown table, bad
SQL and a missing store.

Prints one line per case, then "N passed, M failed"; exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import zarr

warnings.filterwarnings("ignore")

REPO = Path(__file__).resolve().parents[2]
OBS = REPO / "testdata" / "stores" / "obs.zarr"
STRING_TYPES = {"utf8": pa.string(), "large-utf8": pa.large_string(), "utf8-view": pa.string_view()}
LINEAGE = {
    "B cell": "lymphoid",
    "CD4 T cell": "lymphoid",
    "CD8 T cell": "lymphoid",
    "NK cell": "lymphoid",
    "Dendritic cell": "myeloid",
    "Monocyte": "myeloid",
}


def zarr_table(store: Path, names: list[str]) -> pa.Table:
    """The 1-D arrays `names` of a group, as zarr-python reads them."""
    group = zarr.open_group(str(store), mode="r")
    columns = {}
    for name in names:
        values = group[name][:]
        if values.dtype.kind in "OUT":
            columns[name] = pa.array([str(v) for v in values], pa.string())
        else:
            columns[name] = pa.array(values)
    return pa.table(columns)


def write_lineage(path: Path, cell_types: list[str]) -> pa.Table:
    """A Zarr group (zarr-python) mapping each cell type to a lineage; the types
    not in LINEAGE map to "other", and one lineage row matches no cell."""
    keys = sorted(set(cell_types)) + ["Platelet"]
    lineages = [LINEAGE.get(k, "other") for k in keys[:-1]] + ["megakaryocyte"]
    group = zarr.open_group(str(path), mode="w")
    for name, values in [("cell_type", keys), ("lineage", lineages)]:
        arr = group.create_array(name, shape=(len(values),), chunks=(3,), dtype=str)
        arr[:] = np.array(values, dtype=object)
    return pa.table({"cell_type": keys, "lineage": lineages})


def write_weights(path: Path, cell_types: list[str]) -> pa.Table:
    keys = sorted(set(cell_types))
    table = pa.table({"cell_type": keys, "weight": [round(0.1 * (i + 1), 3) for i in range(len(keys))]})
    pq.write_table(table, path)
    return table


def run(zarrow: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([zarrow, "sql", *args], capture_output=True, text=True, timeout=300)


def query(zarrow: str, sql: str, tables: dict[str, Path], out: Path, string_type: str | None = None) -> pa.Table:
    args = [sql, "--output", str(out), "--overwrite"]
    for name, path in tables.items():
        args += ["--table", f"{name}={path}"]
    if string_type:
        args += ["--string-type", string_type]
    done = run(zarrow, args)
    if done.returncode != 0:
        raise AssertionError(f"zarrow sql failed ({done.returncode}): {done.stderr.strip()}")
    if out.suffix == ".parquet":
        return pq.read_table(out)
    if out.suffix == ".arrows":
        return ipc.open_stream(out).read_all()
    if out.suffix == ".csv":
        return pcsv.read_csv(out)
    return ipc.open_file(out).read_all()


def plain(table: pa.Table) -> pa.Table:
    """Every string column as pa.string() (to compare across string types)."""
    fields = []
    for field in table.schema:
        t = field.type
        if t in (pa.large_string(), pa.string_view()):
            t = pa.string()
        fields.append(pa.field(field.name, t))
    return table.cast(pa.schema(fields))


def rows(table: pa.Table) -> list[tuple]:
    """The rows as sorted tuples (results without ORDER BY come in any order)."""
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return sorted(zip(*cols), key=repr)


def same_rows(got: pa.Table, want: pa.Table) -> None:
    got, want = plain(got), plain(want)
    assert got.column_names == want.column_names, (got.column_names, want.column_names)
    a, b = rows(got), rows(want)
    assert len(a) == len(b), f"{len(a)} rows, want {len(b)}"
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            if isinstance(u, float) and isinstance(v, float):
                assert math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-9), (x, y)
            else:
                assert u == v, (x, y)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("zarrow")
    parser.add_argument("-k", default="")
    args = parser.parse_args()
    zarrow = str(Path(args.zarrow).resolve())

    obs = zarr_table(OBS, ["barcode", "cell_type", "n_genes", "total_counts", "is_doublet"])
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        cell_types = obs.column("cell_type").to_pylist()
        lineage = write_lineage(tmp / "lineage.zarr", cell_types)
        weights = write_weights(tmp / "weights.parquet", cell_types)
        tables = {"obs": OBS, "lineage": tmp / "lineage.zarr", "weights": tmp / "weights.parquet"}

        grouped = obs.group_by("cell_type").aggregate([("n_genes", "count"), ("n_genes", "mean")])
        grouped = pa.table(
            {"cell_type": grouped["cell_type"], "n": grouped["n_genes_count"], "g": grouped["n_genes_mean"]}
        )
        keep = pc.and_(pc.greater(obs["n_genes"], 2000), pc.invert(obs["is_doublet"]))
        filtered = obs.filter(keep).select(["barcode", "n_genes"])
        joined = obs.join(lineage, "cell_type", join_type="inner").select(["barcode", "lineage"])
        heavy = weights.filter(pc.greater(weights["weight"], 0.25))
        with_weights = obs.join(heavy, "cell_type", join_type="inner").select(["barcode", "weight"])
        cases = [
            (
                "group by",
                "SELECT cell_type, count(n_genes) AS n, avg(n_genes) AS g FROM obs GROUP BY cell_type",
                grouped,
            ),
            (
                "filter",
                "SELECT barcode, n_genes FROM obs WHERE n_genes > 2000 AND NOT is_doublet",
                filtered,
            ),
            (
                "join of two Zarr tables",
                "SELECT o.barcode, l.lineage FROM obs o JOIN lineage l ON o.cell_type = l.cell_type",
                joined,
            ),
            (
                "Zarr joined with Parquet",
                "SELECT o.barcode, w.weight FROM obs o JOIN weights w ON o.cell_type = w.cell_type "
                "WHERE w.weight > 0.25",
                with_weights,
            ),
            ("a string column alone", "SELECT cell_type FROM obs", obs.select(["cell_type"])),
        ]

        def case(name: str, check) -> None:
            nonlocal passed, failed
            if args.k not in name:
                return
            try:
                check()
                print(f"ok    {name}")
                passed += 1
            except Exception as e:  # noqa: BLE001 - every failure is reported
                print(f"FAIL  {name}: {e}")
                traceback.print_exc(limit=2)
                failed += 1

        for string_type, arrow_type in STRING_TYPES.items():
            for name, sql, want in cases:

                def check(sql=sql, want=want, string_type=string_type, arrow_type=arrow_type):
                    got = query(zarrow, sql, tables, tmp / "out.arrow", string_type)
                    same_rows(got, want)
                    # Strings from Zarr keep the type asked for.
                    for column in ("barcode", "cell_type", "lineage"):
                        if column in got.column_names:
                            assert got.schema.field(column).type == arrow_type, got.schema

                case(f"{name} [{string_type}]", check)

        def limit():
            got = query(zarrow, "SELECT barcode, n_genes FROM obs LIMIT 7", tables, tmp / "out.arrow")
            # LIMIT reads the first rows, in row order.
            assert plain(got).equals(obs.select(["barcode", "n_genes"]).slice(0, 7)), got

        case("LIMIT", limit)

        def formats():
            sql = "SELECT barcode, n_genes, total_counts FROM obs WHERE is_doublet"
            want = obs.filter(obs["is_doublet"]).select(["barcode", "n_genes", "total_counts"])
            for suffix in (".parquet", ".arrows", ".csv"):
                got = query(zarrow, sql, tables, tmp / f"out{suffix}")
                if suffix == ".csv":
                    got = got.cast(want.schema)
                same_rows(got, want)

        case("outputs: .parquet, .arrows, .csv", formats)

        def table_files():
            # A table is told by its extension, one rule for every decision:
            # pyarrow's own files under each name zarrow reads as a table.
            source = pq.read_table(tmp / "weights.parquet")

            def ipc_file(path: Path, new=ipc.new_file) -> None:
                with new(path, source.schema) as writer:
                    writer.write_table(source)

            writers = {".pq": lambda p: pq.write_table(source, p),
                       ".PARQUET": lambda p: pq.write_table(source, p),
                       ".feather": ipc_file,
                       ".arrows": lambda p: ipc_file(p, ipc.new_stream)}
            for suffix, write in writers.items():
                path = tmp / f"w{suffix}"
                write(path)
                got = query(zarrow, "SELECT cell_type, weight FROM w", {"w": path}, tmp / "out.arrow")
                same_rows(got, source)
            # A linear-format JSON file is no table: said so, not read as a store.
            (tmp / "a.json").write_text('{"shape": [1], "values": [1]}')
            done = run(zarrow, ["SELECT * FROM a", "--table", f"a={tmp / 'a.json'}"])
            assert done.returncode != 0 and "not a table" in done.stderr, done.stderr

        case("tables: .pq, .PARQUET, .feather, .arrows (pyarrow's files); .json refused", table_files)

        def categorical_groups():
            # A GROUP BY over an anndata categorical gives dictionary batches, one
            # dictionary each (a partition each): .arrow keeps the dictionary type
            # (one dictionary that grows, as deltas), as .arrows does.
            n = 40_000
            source = pa.table({
                "kind": pa.array([f"kind {i % 37}" for i in range(n)]).dictionary_encode(),
                "x": pa.array(np.arange(n) % 11, pa.int64()),
            })
            pq.write_table(source, tmp / "cat.parquet")
            store = tmp / "cat.zarr"
            done = subprocess.run([zarrow, "convert", str(tmp / "cat.parquet"), str(store), "--layout", "anndata",
                                   "--chunk-len", "5000", "--overwrite"], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            want = source.group_by("kind").aggregate([("x", "count"), ("x", "sum")])
            want = pa.table({"kind": want["kind"].cast(pa.string()), "n": want["x_count"], "t": want["x_sum"]})
            sql = "SELECT kind, count(x) AS n, sum(x) AS t FROM c GROUP BY kind"
            for suffix, read in ((".arrow", ipc.open_file), (".arrows", ipc.open_stream)):
                out = tmp / f"cat{suffix}"
                done = run(zarrow, [sql, "--table", f"c={store}", "--partitions", "2", "--output", str(out),
                                    "--categorical-values=false", "--string-type", "utf8", "--overwrite"])
                assert done.returncode == 0, done.stderr
                got = read(out).read_all()
                assert got.schema.field("kind").type == pa.dictionary(pa.int32(), pa.string()), got.schema
                got = got.set_column(0, "kind", got["kind"].cast(pa.string()))
                same_rows(got, want)
            # The default, and --categorical-values: the categories' values, as
            # Utf8View, the type DataFusion gives the same strings read from Parquet.
            pq.write_table(source.set_column(0, "kind", source["kind"].cast(pa.string())), tmp / "plain.parquet")
            parquet = query(zarrow, sql.replace("FROM c", "FROM p"), {"p": tmp / "plain.parquet"},
                            tmp / "plain.arrow")
            assert parquet.schema.field("kind").type == pa.string_view(), parquet.schema
            for flags in ([], ["--categorical-values"], ["--categorical-values=true", "--string-type", "utf8-view"]):
                out = tmp / "cat_values.arrow"
                done = run(zarrow, [sql, "--table", f"c={store}", "--partitions", "2", *flags,
                                    "--output", str(out), "--overwrite"])
                assert done.returncode == 0, done.stderr
                assert "dictionary" not in done.stderr, done.stderr
                got = ipc.open_file(out).read_all()
                assert got.schema.field("kind").type == parquet.schema.field("kind").type, (flags, got.schema)
                same_rows(got, want)

        case("GROUP BY a categorical: .arrow, .arrows, --categorical-values", categorical_groups)

        def printed():
            done = run(zarrow, ["SELECT count(*) AS n FROM obs WHERE is_doublet", "--table", f"obs={OBS}"])
            assert done.returncode == 0, done.stderr
            n = pc.sum(obs["is_doublet"].cast(pa.int64())).as_py()
            lines = done.stdout.splitlines()
            assert any(line.strip("| ").strip() == str(n) for line in lines), done.stdout

        case("printed table", printed)

        def errors():
            for sql, table, message in [
                ("SELECT * FROM nope", f"obs={OBS}", "nope"),
                ("SELEC * FROM obs", f"obs={OBS}", "SELEC"),
                ("SELECT * FROM obs", f"obs={tmp / 'missing.zarr'}", "missing.zarr"),
                ("SELECT * FROM obs", "obs", "NAME=LOCATION"),
            ]:
                done = run(zarrow, [sql, "--table", table])
                assert done.returncode != 0, (sql, table, "exit 0")
                # One error line (beside notes naming what is not a column).
                errors = [line for line in done.stderr.splitlines() if line.startswith("zarrow: error:")]
                assert len(errors) == 1 and message in errors[0], (sql, table, done.stderr)
                assert done.stdout == "", done.stdout

        case("errors: one line, non-zero exit", errors)

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
