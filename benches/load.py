"""Bounded load: N concurrent clients, half over the Trino protocol (python `trino`) and half over
Flight SQL (ADBC), run a mixed workload against `sqe local` for a fixed time; the same workload
from the same number of threads then runs against DuckDB in this process over the same Parquet
files (the single-process baseline). Prints, per engine and per query kind, completed queries,
throughput, p50/p99 latency and failures, and the coordinator's peak resident memory (sampled, and
the kernel's high-water mark). A benchmark, not a test: nothing here asserts a time.

    cargo build --release --bin sqe
    .venv/bin/python benches/load.py --sqe target/release/sqe --clients 64 --seconds 60
"""

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import warnings

import adbc_driver_flightsql.dbapi as flight_sql
import trino

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tpch import duckdb_over, free_port, start_local  # noqa: E402

# (kind, SQL over the `tpch` schema); `{k}` is a random nation key.
WORKLOAD = [
    ("point", "SELECT n_name FROM tpch.nation WHERE n_nationkey = {k}"),
    ("aggregate", "SELECT l_returnflag, count(*), sum(l_quantity) FROM tpch.lineitem GROUP BY l_returnflag"),
    ("join", "SELECT n_name, count(*) FROM tpch.customer JOIN tpch.nation ON c_nationkey = n_nationkey "
             "WHERE n_nationkey = {k} GROUP BY n_name"),
    ("top-n", "SELECT o_orderkey, o_totalprice FROM tpch.orders ORDER BY o_totalprice DESC LIMIT 10"),
]


class Tally:
    """Latencies and failures by query kind, shared by the client threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = {kind: [] for kind, _ in WORKLOAD}
        self.failures = {}

    def record(self, kind, seconds):
        with self.lock:
            self.latencies[kind].append(seconds * 1000)

    def fail(self, kind, error):
        first_line = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:160]
        with self.lock:
            self.failures.setdefault((kind, first_line), 0)
            self.failures[(kind, first_line)] += 1


def client(connect, tally, deadline, seed, prefix="tpch."):
    """One client: its own connection, queries drawn from WORKLOAD until the deadline."""
    rng = random.Random(seed)
    cursor = connect()
    while time.monotonic() < deadline:
        kind, sql = rng.choice(WORKLOAD)
        sql = sql.format(k=rng.randrange(25)).replace("tpch.", prefix)
        started = time.perf_counter()
        try:
            cursor.execute(sql)
            cursor.fetchall()
            tally.record(kind, time.perf_counter() - started)
        except Exception as error:  # a failure is a result here: counted and shown
            tally.fail(kind, error)
            try:
                cursor = connect()
            except Exception as reconnect:
                tally.fail(kind, reconnect)
                time.sleep(0.1)


def run_clients(connectors, seconds, prefix="tpch."):
    tally = Tally()
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(target=client, args=(connect, tally, deadline, i, prefix), daemon=True)
        for i, connect in enumerate(connectors)
    ]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 120)
    return tally, time.monotonic() - started


def resident_mb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def sample_memory(pid, stop, peak):
    while not stop.is_set():
        try:
            peak[0] = max(peak[0], resident_mb(pid, "VmRSS"))
        except OSError:
            return
        stop.wait(0.2)


def report(engine, clients, tally, elapsed, memory):
    total = sum(len(v) for v in tally.latencies.values())
    failures = sum(tally.failures.values())
    print(f"\n{engine}: {clients} clients, {elapsed:.1f} s, {total} queries "
          f"({total / elapsed:.1f}/s), {failures} failed{memory}")
    print(f"| {'query':10} | {'done':>6} | {'per s':>7} | {'p50 ms':>8} | {'p99 ms':>8} |")
    print(f"|{'-' * 12}|{'-' * 8}|{'-' * 9}|{'-' * 10}|{'-' * 10}|")
    for kind, samples in tally.latencies.items():
        if samples:
            ordered = sorted(samples)
            p50 = statistics.median(ordered)
            p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)]
            print(f"| {kind:10} | {len(samples):6d} | {len(samples) / elapsed:7.1f} | {p50:8.1f} | {p99:8.1f} |")
        else:
            print(f"| {kind:10} | {0:6d} | {0:7.1f} | {'-':>8} | {'-':>8} |")
    for (kind, error), count in sorted(tally.failures.items()):
        print(f"  failed {count}x {kind}: {error}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sqe", required=True, help="the sqe binary")
    parser.add_argument("--scale-factor", default="0.1")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="Cannot disable autocommit")

    with tempfile.TemporaryDirectory() as data:
        flight_port = free_port()
        process, address, warehouse = start_local(args.sqe, args.scale_factor, data, flight_port)
        try:
            host, port = address.rsplit(":", 1)

            def trino_client():
                return trino.dbapi.connect(host=host, port=int(port), user="load", catalog="iceberg").cursor()

            def flight_client():
                return flight_sql.connect(f"grpc://127.0.0.1:{flight_port}").cursor()

            connectors = [trino_client if i % 2 == 0 else flight_client for i in range(args.clients)]
            stop, peak = threading.Event(), [0.0]
            sampler = threading.Thread(target=sample_memory, args=(process.pid, stop, peak), daemon=True)
            before = resident_mb(process.pid, "VmRSS")
            sampler.start()
            tally, elapsed = run_clients(connectors, args.seconds)
            stop.set()
            sampler.join()
            high_water = resident_mb(process.pid, "VmHWM")
            report(f"SQE (sqe local, SF {args.scale_factor}, Trino + Flight SQL clients)", args.clients, tally,
                   elapsed, f"; coordinator RSS {before:.0f} MB before, peak {peak[0]:.0f} MB sampled, "
                            f"high-water {high_water:.0f} MB")

            db = duckdb_over(warehouse)
            tally, elapsed = run_clients([db.cursor for _ in range(args.clients)], args.seconds, prefix="")
            report("DuckDB (this process, same Parquet files, one cursor per thread)", args.clients, tally,
                   elapsed, "")
        finally:
            process.terminate()
            process.wait(30)


if __name__ == "__main__":
    main()
