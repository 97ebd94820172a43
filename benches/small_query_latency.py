"""Latency of small queries end to end, as clients see it: `SELECT 1` and a small distributed
aggregate over Flight SQL (ADBC) and `SELECT 1` over the Trino protocol (the python `trino`
client), p50 and p99 over sequential calls on one connection.

Each `--sqe` binary gets a fresh `sqe local` (2 in-process workers, TPC-H SF 0.01); with two
binaries (say, before and after a change) the runs alternate A, B, A, B so both see the same
machine. Run with the project virtualenv (`scripts/test.sh` creates it):

    .venv/bin/python benches/small_query_latency.py --sqe target/release/sqe [--sqe other/sqe] \
        [--calls 200] [--rounds 2]
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time
import urllib.request
import warnings

import adbc_driver_flightsql.dbapi as flight_sql
import trino

CASES = [
    ("Flight SQL: SELECT 1", "flight", "SELECT 1"),
    ("Flight SQL: nation aggregate", "flight", "SELECT n_regionkey, count(*) FROM tpch.nation GROUP BY n_regionkey"),
    ("Trino: SELECT 1", "trino", "SELECT 1"),
]


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentiles(samples):
    samples = sorted(samples)
    return statistics.median(samples), samples[max(0, int(len(samples) * 0.99) - 1)]


def run_one(binary, calls):
    flight_port, trino_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as data:
        log = open(os.path.join(data, "sqe.log"), "w")
        local = subprocess.Popen(
            [binary, "local", "--data-dir", data, "--flight-sql-port", str(flight_port),
             "--trino-http-port", str(trino_port), "--scale-factor", "0.01"],
            stdout=log, stderr=log,
        )
        try:
            deadline = time.time() + 120
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{trino_port}/v1/info", timeout=1)
                    break
                except OSError:
                    if time.time() > deadline or local.poll() is not None:
                        raise RuntimeError(f"sqe local did not start; see {log.name}")
                    time.sleep(0.5)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                flight = flight_sql.connect(f"grpc://127.0.0.1:{flight_port}")
            cursors = {
                "flight": flight.cursor(),
                "trino": trino.dbapi.connect(host="127.0.0.1", port=trino_port, user="bench").cursor(),
            }
            results = {}
            for name, endpoint, sql in CASES:
                cursor = cursors[endpoint]
                samples = []
                for i in range(calls + 1):
                    started = time.perf_counter()
                    cursor.execute(sql)
                    cursor.fetchall()
                    if i > 0:  # the first call warms the connection
                        samples.append((time.perf_counter() - started) * 1000)
                results[name] = percentiles(samples)
            cursors["flight"].close()
            flight.close()
            return results
        finally:
            local.terminate()
            local.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sqe", action="append", required=True, help="an sqe binary (give two to compare)")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="fresh clusters per binary")
    args = parser.parse_args()
    best = {b: {} for b in args.sqe}
    for _ in range(args.rounds):
        for binary in args.sqe:
            for name, (p50, p99) in run_one(binary, args.calls).items():
                old = best[binary].get(name)
                if old is None or p50 < old[0]:
                    best[binary][name] = (p50, p99)
    header = "| case | " + " | ".join(f"`{b}` p50 / p99 ms" for b in args.sqe) + " |"
    print(header)
    print("|---|" + "---:|" * len(args.sqe))
    for name, _, _ in CASES:
        cells = " | ".join(f"{best[b][name][0]:.1f} / {best[b][name][1]:.1f}" for b in args.sqe)
        print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
