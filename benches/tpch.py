"""TPC-H's 22 queries through SQE beside DuckDB over the same Parquet files: every SQE answer is
checked against DuckDB's, and each engine is timed warm, best of N, the engines alternating
query by query. SQE runs each query twice: distributed over its workers, and with
`distributed_execution = false` (the coordinator alone).

The queries are gateway/src/tpch/queries/q01.sql ... q22.sql (the specification's validation
parameters). SQE is reached through the Trino protocol (the python `trino` client; TPC-H answers
are small, so the protocol costs little); DuckDB reads the Iceberg tables' data files directly.

    # start `sqe local` at a scale factor and benchmark it
    .venv/bin/python benches/tpch.py --sqe target/release/sqe --scale-factor 1 --runs 3

    # check a running SQE (its warehouse's files are DuckDB's): exit 1 if an answer differs
    .venv/bin/python benches/tpch.py --trino 127.0.0.1:8080 --warehouse sqe-data/warehouse --check

    # with single-process DataFusion (Rust, SQE's version) over the same files as a second baseline
    cargo build --release -p sqe-benches --bin datafusion_queries
    .venv/bin/python benches/tpch.py --sqe target/release/sqe --datafusion target/release/datafusion_queries
"""

import argparse
import datetime
import decimal
import glob
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import duckdb
import trino

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUERIES = os.path.join(ROOT, "gateway", "src", "tpch", "queries")
TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]


def queries():
    for number in range(1, 23):
        with open(os.path.join(QUERIES, f"q{number:02d}.sql")) as f:
            yield number, f.read()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_local(binary, scale_factor, data, flight_port=None, parts=8):
    """`sqe local` on free ports (Flight SQL on `flight_port` when given), `parts` data files per
    large table; its Trino address and warehouse once it answers."""
    flight_port, trino_port = flight_port or free_port(), free_port()
    log = open(os.path.join(data, "sqe.log"), "w")
    process = subprocess.Popen(
        [binary, "local", "--data-dir", data, "--flight-sql-port", str(flight_port),
         "--trino-http-port", str(trino_port), "--scale-factor", str(scale_factor), "--tpch-parts", str(parts)],
        stdout=log, stderr=log,
    )
    deadline = time.time() + 1800
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{trino_port}/v1/info", timeout=1)
            return process, f"127.0.0.1:{trino_port}", os.path.join(data, "warehouse")
        except OSError:
            if time.time() > deadline or process.poll() is not None:
                raise RuntimeError(f"sqe local did not start; see {log.name}")
            time.sleep(0.5)


def duckdb_over(warehouse):
    """DuckDB with a view per TPC-H table over that table's Parquet data files."""
    db = duckdb.connect()
    for table in TABLES:
        files = sorted(glob.glob(os.path.join(warehouse, "tpch", table, "data", "*.parquet")))
        if not files:
            raise RuntimeError(f"no data files for {table} under {warehouse}")
        listed = ", ".join(f"'{f}'" for f in files)
        db.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{listed}])")
    return db


def sqe_cursor(address, distributed, properties=None):
    host, port = address.rsplit(":", 1)
    session = dict(properties or {})
    if not distributed:
        session["distributed_execution"] = "false"
    connection = trino.dbapi.connect(
        host=host, port=int(port), user="tpch", catalog="iceberg", schema="tpch",
        session_properties=session,
    )
    return connection.cursor()


def timed(run):
    started = time.perf_counter()
    rows = run()
    return time.perf_counter() - started, rows


def run_sqe(cursor, sql):
    cursor.execute(sql)
    return cursor.fetchall()


def same_value(ours, theirs):
    """SQE's value against DuckDB's. A decimal of SQE's is within half a unit of its last digit
    (Trino keeps a decimal's scale where DuckDB answers a double: `avg`, division); doubles agree
    to 1e-9 relative."""
    if ours is None or theirs is None:
        return ours is None and theirs is None
    if isinstance(ours, (int, float, decimal.Decimal)) and isinstance(theirs, (int, float, decimal.Decimal)):
        a, b = float(ours), float(theirs)
        slack = 1e-9 * max(abs(a), abs(b), 1.0)
        if isinstance(ours, decimal.Decimal):
            exponent = ours.as_tuple().exponent
            if isinstance(exponent, int):
                slack += 0.5 * 10.0 ** exponent
        return math.isclose(a, b, rel_tol=0, abs_tol=slack)
    if isinstance(ours, datetime.datetime) and isinstance(theirs, datetime.datetime):
        return ours.replace(tzinfo=None) == theirs.replace(tzinfo=None)
    return ours == theirs


def difference(ours, theirs):
    """Where SQE's rows differ from DuckDB's, or None."""
    if len(ours) != len(theirs):
        return f"{len(ours)} rows, DuckDB {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if len(a) != len(b):
            return f"row {i}: {len(a)} columns, DuckDB {len(b)}"
        for j, (x, y) in enumerate(zip(a, b)):
            if not same_value(x, y):
                return f"row {i} column {j}: {x!r}, DuckDB {y!r}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sqe", help="an sqe binary: start `sqe local` with it")
    parser.add_argument("--scale-factor", type=float, default=1.0, help="with --sqe: TPC-H scale factor")
    parser.add_argument("--trino", help="host:port of a running SQE's Trino endpoint (instead of --sqe)")
    parser.add_argument("--warehouse", help="with --trino: the running SQE's warehouse directory")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per query and engine after a warm-up run (best is kept; 0: check only)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every answer is DuckDB's")
    parser.add_argument("--datafusion", help="the `datafusion_queries` binary (benches): time single-process DataFusion over the same files too")
    parser.add_argument("--no-coordinator", action="store_true", help="leave out SQE with distributed_execution = false")
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=VALUE",
                        help="also time SQE distributed with this session property (repeatable), e.g. exchange_compression_codec=LZ4")
    args = parser.parse_args()
    if bool(args.sqe) == bool(args.trino) or (args.trino and not args.warehouse):
        parser.error("give --sqe, or --trino with --warehouse")

    process = None
    with tempfile.TemporaryDirectory() as data:
        if args.sqe:
            print(f"generating TPC-H SF {args.scale_factor} with `sqe local` ...", flush=True)
            process, address, warehouse = start_local(args.sqe, args.scale_factor, data)
        else:
            address, warehouse = args.trino, args.warehouse
        try:
            failures, _ = report(
                address, warehouse, args.runs, datafusion=args.datafusion,
                coordinator=not args.no_coordinator,
                out=lambda line: print(line, flush=True), compare=args.compare,
            )
        finally:
            if process is not None:
                process.terminate()
                process.wait(timeout=60)
    if args.check:
        if failures:
            print(f"{len(failures)} of 22 queries failed or differ: {', '.join(failures)}")
            sys.exit(1)
        print("OK: every answer is DuckDB's")


class DataFusionBaseline:
    """Single-process DataFusion over the same Parquet files: `benches`' `datafusion_queries`
    binary, one process kept warm, timing each query itself."""

    def __init__(self, binary, warehouse, schema):
        self.process = subprocess.Popen(
            [binary, "--warehouse", warehouse, "--schema", schema],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

    def run(self, sql):
        """(seconds, number of rows) of one run; raises on DataFusion's error."""
        self.process.stdin.write(json.dumps({"sql": sql}) + "\n")
        self.process.stdin.flush()
        reply = json.loads(self.process.stdout.readline())
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["seconds"], reply["rows"]

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=60)


def sqe_engine(cursor):
    def run(sql):
        seconds, rows = timed(lambda: run_sqe(cursor, sql))
        return seconds, rows
    return run


def report(address, warehouse, runs, datafusion=None, coordinator=True, out=print, compare=()):
    """Runs the 22 queries on each engine, alternating, and prints the table; returns the
    queries that failed or differ and each engine's best time per query. Each `compare`
    (`name=value`) adds SQE distributed with that session property."""
    db = duckdb_over(warehouse)
    engines = {"SQE distributed": sqe_engine(sqe_cursor(address, True))}
    for setting in compare:
        name, value = setting.split("=", 1)
        engines[f"SQE {setting}"] = sqe_engine(sqe_cursor(address, True, {name: value}))
    if coordinator:
        engines["SQE coordinator"] = sqe_engine(sqe_cursor(address, False))
    baseline = DataFusionBaseline(datafusion, warehouse, "tpch") if datafusion else None
    try:
        return run_report(db, engines, baseline, runs, out)
    finally:
        if baseline:
            baseline.close()


def run_report(db, engines, baseline, runs, out):
    if baseline:
        engines["DataFusion"] = baseline.run
    names = ["DuckDB", *engines]
    best = {name: {} for name in names}
    failures = []
    ratios = ["SQE / DuckDB"] + (["SQE / DataFusion"] if baseline else [])
    out(f"| query | {' s | '.join(names)} s | {' | '.join(ratios)} | answer |")
    out("|---|" + "---:|" * (len(names) + len(ratios)) + "---|")
    for number, sql in queries():
        expected = None
        outcome = "same as DuckDB"
        baseline_note = ""
        for run in range(runs + 1):  # the first run warms caches and is not timed
            seconds, rows = timed(lambda: db.execute(sql).fetchall())
            expected = rows
            if run:
                best["DuckDB"][number] = min(best["DuckDB"].get(number, math.inf), seconds)
            for name, engine in engines.items():
                try:
                    seconds, rows = engine(sql)
                except Exception as e:  # a failed query is reported, not fatal
                    if name == "DataFusion":
                        baseline_note = f"; DataFusion failed: {str(e).splitlines()[0][:80]}"
                    else:
                        outcome = f"{name} failed: {str(e).splitlines()[0][:120]}"
                    best[name][number] = math.nan
                    continue
                if name == "DataFusion":
                    # The baseline answers a row count only, and is not what --check checks.
                    if rows != len(expected):
                        baseline_note = f"; DataFusion: {rows} rows, DuckDB {len(expected)}"
                else:
                    differs = difference(rows, expected)
                    if differs and outcome == "same as DuckDB":
                        outcome = f"{name} differs: {differs}"
                if run:
                    best[name][number] = min(best[name].get(number, math.inf), seconds)
        if outcome != "same as DuckDB":
            failures.append(f"Q{number}")
        times = [best[name].get(number, math.nan) for name in names]
        cells = " | ".join(f"{t:.3f}" for t in times)
        shares = [times[1] / times[0] if times[0] else math.nan]
        if baseline:
            shares.append(times[1] / times[-1] if times[-1] else math.nan)
        out(f"| Q{number} | {cells} | {' | '.join(f'{r:.2f}' for r in shares)} | {outcome}{baseline_note} |")
    totals = [sum(v for v in best[name].values() if not math.isnan(v)) for name in names]
    cells = " | ".join(f"**{t:.3f}**" for t in totals)
    shares = [totals[1] / totals[0] if totals[0] else math.nan]
    if baseline:
        shares.append(totals[1] / totals[-1] if totals[-1] else math.nan)
    out(f"| total | {cells} | {' | '.join(f'{r:.2f}' for r in shares)} | {22 - len(failures)} of 22 as DuckDB |")
    return failures, best


if __name__ == "__main__":
    main()
