"""TPC-DS's 99 queries through SQE beside DuckDB over the same rows: every SQE answer is checked
against DuckDB's, and each engine is timed warm, best of N, the engines alternating query by
query.

The data and the queries are DuckDB's tpcds extension's (its PyPI wheel,
`duckdb-extension-tpcds`): `dsdgen` generates the 24 tables at a scale factor, each is
ingested into an SQE Iceberg table (`iceberg.tpcds.<table>`) over Flight SQL (ADBC's bulk
ingest), and `tpcds_queries()` gives the 99 queries (the specification's, with DuckDB's
qualification parameters). SQE is reached through Flight SQL (ADBC), distributed over its
workers; DuckDB runs the same text over its own copy of the tables, except where Trino's
decimal arithmetic answers otherwise: there it runs the text with Trino's rounding written in
(TRINO_DECIMALS). Rows that tie in a query's ORDER BY may come in either order.

    # start `sqe local`, load TPC-DS at a scale factor and benchmark it
    .venv/bin/python benches/tpcds.py --sqe target/release/sqe --scale-factor 1 --runs 3

    # check a running SQE only (the test suite's smoke run): exit 1 if an answer differs,
    # apart from the known failures below
    .venv/bin/python benches/tpcds.py --flight grpc://127.0.0.1:50051 --scale-factor 0.01 --runs 0 --check
"""

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import adbc_driver_flightsql.dbapi as flight_sql
import duckdb
import duckdb_extension_tpcds

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tpch import difference, free_port, timed  # noqa: E402

# Where Trino's decimal arithmetic gives another answer than DuckDB's, the referee's text of
# the query rounds as Trino does: a quotient of decimals (or of a decimal and an integer) has the
# larger scale of the two, rounded half up, and `avg` of a decimal keeps its scale; DuckDB
# divides in double. Each pattern must match the query's text.
TRINO_DECIMALS = {
    44: [(r"avg\(ss_net_profit\)", "round(avg(ss_net_profit), 2)")],
    53: [
        (r"avg\(sum\(ss_sales_price\)\) OVER \(PARTITION BY i_manufact_id\)",
         "round(avg(sum(ss_sales_price)) OVER (PARTITION BY i_manufact_id), 2)"),
        (r"ABS \(sum_sales - avg_quarterly_sales\)/ avg_quarterly_sales",
         "round(ABS (sum_sales - avg_quarterly_sales)/ avg_quarterly_sales, 2)"),
    ],
    58: [
        (r"(\w\w)_item_rev/\(\(ss_item_rev\+cs_item_rev\+ws_item_rev\)/3\)",
         r"round(\1_item_rev/round((ss_item_rev+cs_item_rev+ws_item_rev)/3, 2), 2)"),
        (r"\(ss_item_rev\+cs_item_rev\+ws_item_rev\)/3 average",
         "round((ss_item_rev+cs_item_rev+ws_item_rev)/3, 2) average"),
    ],
    61: [
        (r"cast\(promotions AS decimal\(15,4\)\)/cast\(total AS decimal\(15,4\)\)",
         "round(cast(promotions AS decimal(15,4))/cast(total AS decimal(15,4)), 4)"),
    ],
    63: [
        (r"avg\(sum\(ss_sales_price\)\) OVER \(PARTITION BY i_manager_id\)",
         "round(avg(sum(ss_sales_price)) OVER (PARTITION BY i_manager_id), 2)"),
        (r"ABS \(sum_sales - avg_monthly_sales\) / avg_monthly_sales",
         "round(ABS (sum_sales - avg_monthly_sales) / avg_monthly_sales, 2)"),
    ],
    66: [(r"sum\((\w+)_sales/w_warehouse_sq_ft\)", r"sum(round(\1_sales/w_warehouse_sq_ft, 2))")],
    75: [
        (r"CAST\(curr_yr.sales_cnt AS DECIMAL\(17,2\)\)/CAST\(prev_yr.sales_cnt AS DECIMAL\(17,2\)\)",
         "round(CAST(curr_yr.sales_cnt AS DECIMAL(17,2))/CAST(prev_yr.sales_cnt AS DECIMAL(17,2)), 2)"),
    ],
    83: [
        (r"\((\w\w)_item_qty\*1.0000\)/\(sr_item_qty\+cr_item_qty\+wr_item_qty\)/3.0000",
         r"round(round((\1_item_qty*1.0000)/(sr_item_qty+cr_item_qty+wr_item_qty), 4)/3.0000, 4)"),
        (r"\(sr_item_qty\+cr_item_qty\+wr_item_qty\)/3.0 average",
         "round((sr_item_qty+cr_item_qty+wr_item_qty)/3.0, 1) average"),
    ],
}

# Queries whose answers SQE does not give yet, each with the reason; --check fails on any other
# failure, and on any of these that passes, so the list stays true.
KNOWN_FAILURES = {}


def referee_text(number, sql):
    """The query as DuckDB answers it with Trino's decimal rounding (TRINO_DECIMALS)."""
    for pattern, replacement in TRINO_DECIMALS.get(number, []):
        sql, count = re.subn(pattern, replacement, sql)
        if not count:
            raise RuntimeError(f"Q{number}: {pattern!r} is not in the query")
    return sql


def tpcds_database(scale_factor):
    """DuckDB with the TPC-DS tables generated at `scale_factor`."""
    db = duckdb.connect()
    extension = os.path.join(
        os.path.dirname(duckdb_extension_tpcds.__file__),
        "extensions",
        f"v{duckdb.__version__}",
        "tpcds.duckdb_extension",
    )
    db.execute(f"LOAD '{extension}'")
    db.execute(f"CALL dsdgen(sf={scale_factor})")
    return db


def start_local(binary, data):
    """`sqe local` (its own TPC-H sample kept small) on free ports; its Flight SQL URI once it
    answers."""
    flight_port, trino_port = free_port(), free_port()
    log = open(os.path.join(data, "sqe.log"), "w")
    process = subprocess.Popen(
        [binary, "local", "--data-dir", data, "--flight-sql-port", str(flight_port),
         "--trino-http-port", str(trino_port), "--scale-factor", "0.01"],
        stdout=log, stderr=log,
    )
    uri = f"grpc://127.0.0.1:{flight_port}"
    deadline = time.time() + 600
    while True:
        try:
            with flight_sql.connect(uri) as connection, connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                cursor.fetchall()
            return process, uri
        except Exception:
            if time.time() > deadline or process.poll() is not None:
                raise RuntimeError(f"sqe local did not start; see {log.name}")
            time.sleep(0.5)


def load(db, cursor):
    """Every TPC-DS table of `db` into `iceberg.tpcds` through ADBC's bulk ingest."""
    cursor.execute("CREATE SCHEMA IF NOT EXISTS tpcds")
    cursor.fetchall()
    tables = [name for (name,) in db.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
    for table in tables:
        # Batches of 8Ki rows: a gRPC message has a size limit (16 MB in ADBC).
        rows = db.execute(f"SELECT * FROM {table}").fetch_record_batch(rows_per_batch=8192)
        cursor.adbc_ingest(table, rows, mode="replace", db_schema_name="tpcds")
    return tables


def sorted_rows(rows):
    return sorted(rows, key=lambda row: tuple((value is None, repr(value)) for value in row))


def compare(ours, theirs):
    """Where SQE's rows differ from DuckDB's, or None. Rows that tie in a query's ORDER BY may
    come in either order, so rows in another order are compared once more sorted."""
    differs = difference(ours, theirs)
    if differs is None or len(ours) != len(theirs):
        return differs
    if difference(sorted_rows(ours), sorted_rows(theirs)) is None:
        return None
    return differs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sqe", help="an sqe binary: start `sqe local` with it")
    parser.add_argument("--flight", help="Flight SQL URI of a running SQE (instead of --sqe)")
    parser.add_argument("--scale-factor", type=float, default=1.0, help="TPC-DS scale factor")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per query and engine after a warm-up run (best is kept; 0: check only)")
    parser.add_argument("--queries", help="comma-separated query numbers (default: all 99)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every answer is DuckDB's, apart from the known failures")
    args = parser.parse_args()
    if bool(args.sqe) == bool(args.flight):
        parser.error("give --sqe or --flight")

    print(f"generating TPC-DS SF {args.scale_factor} with DuckDB's dsdgen ...", flush=True)
    db = tpcds_database(args.scale_factor)
    wanted = {int(n) for n in args.queries.split(",")} if args.queries else None
    queries = [(n, q) for n, q in db.execute("SELECT query_nr, query FROM tpcds_queries() ORDER BY 1").fetchall()
               if wanted is None or n in wanted]
    with tempfile.TemporaryDirectory() as data:
        process, uri = start_local(args.sqe, data) if args.sqe else (None, args.flight)
        try:
            with flight_sql.connect(uri) as connection:
                started = time.perf_counter()
                with connection.cursor() as cursor:
                    tables = load(db, cursor)
                print(f"loaded {len(tables)} tables into iceberg.tpcds in {time.perf_counter() - started:.1f} s", flush=True)
                # The queries name tables without a schema (Flight SQL's session option).
                connection.adbc_current_db_schema = "tpcds"
                with connection.cursor() as cursor:
                    failures = report(db, cursor, queries, args.runs)
        finally:
            if process is not None:
                process.terminate()
                process.wait(timeout=60)
    if args.check:
        unexpected = sorted(set(failures) - set(KNOWN_FAILURES))
        mended = sorted(n for n in KNOWN_FAILURES if n not in failures and (wanted is None or n in wanted))
        for n in unexpected:
            print(f"Q{n} failed or differs: {failures[n]}")
        for n in mended:
            print(f"Q{n} now gives DuckDB's answer: take it off KNOWN_FAILURES")
        if unexpected or mended:
            sys.exit(1)
        known = f"; the other {len(failures)} are the known failures" if failures else ""
        print(f"OK: {len(queries) - len(failures)} of {len(queries)} answers are DuckDB's{known}")


def run_sqe(cursor, sql):
    cursor.execute(sql)
    return cursor.fetchall()


def report(db, cursor, queries, runs):
    """Runs and checks each query; prints the table; returns {query: why} of those that fail."""
    best = {"DuckDB": {}, "SQE": {}}
    failures = {}
    print("| query | DuckDB s | SQE s | SQE / DuckDB | answer |")
    print("|---|---:|---:|---:|---|")
    for number, sql in queries:
        outcome = None
        referee = referee_text(number, sql)
        for run in range(runs + 1):  # the first run warms caches and is not timed
            seconds, expected = timed(lambda: db.execute(referee).fetchall())
            if run:
                best["DuckDB"][number] = min(best["DuckDB"].get(number, math.inf), seconds)
            try:
                seconds, rows = timed(lambda: run_sqe(cursor, sql))
            except Exception as e:  # a failed query is reported, not fatal
                outcome = f"failed: {' '.join(str(e).split())[:160]}"
                break
            outcome = outcome or compare(rows, expected)
            if run:
                best["SQE"][number] = min(best["SQE"].get(number, math.inf), seconds)
        if outcome:
            failures[number] = outcome
        duck = best["DuckDB"].get(number, math.nan)
        ours = best["SQE"].get(number, math.nan)
        ratio = ours / duck if duck else math.nan
        same = "same as DuckDB" + (" with Trino's decimal rounding" if number in TRINO_DECIMALS else "")
        print(f"| Q{number} | {duck:.3f} | {ours:.3f} | {ratio:.2f} | {outcome or same} |", flush=True)
    passed = [n for n, _ in queries if n not in failures]
    duck = sum(best["DuckDB"].get(n, 0) for n in passed)
    ours = sum(best["SQE"].get(n, 0) for n in passed)
    ratio = ours / duck if duck else math.nan
    print(f"| total (answers as DuckDB's) | **{duck:.3f}** | **{ours:.3f}** | {ratio:.2f} | "
          f"{len(passed)} of {len(queries)} as DuckDB |")
    return failures


if __name__ == "__main__":
    main()
