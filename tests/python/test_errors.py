"""The same failures through both endpoints: Trino's errorName with the Python `trino` client,
the gRPC status code with ADBC's Flight SQL driver. (Cancelling is checked on both endpoints by
test_trino.py and test_flight_sql.py.)

Run by tests/tests/integration/lifecycle.rs against a cluster it started (TPC-H SF 0.01,
query_max_run_time 5 s, worker memory pools of 256 KiB):
    python test_errors.py <trino host> <trino port> <flight uri>
"""

import sys
import unittest
import warnings

import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import trino
from trino.exceptions import TrinoQueryError

HOST, PORT, FLIGHT = sys.argv[1], int(sys.argv[2]), sys.argv[3]
Status = adbc_driver_manager.AdbcStatusCode

warnings.filterwarnings("ignore", message="Cannot disable autocommit")

# A query that runs far longer than the cluster's 5 s limit.
ENDLESS = "SELECT count(*) FROM generate_series(1, 100000000000)"
# A self-join whose hash table does not fit a 256 KiB worker pool.
HUNGRY = "SELECT count(*) FROM tpch.lineitem a JOIN tpch.lineitem b ON a.l_orderkey = b.l_orderkey"

# (statement, Trino errorName, ADBC status)
CASES = [
    ("SELEC 1", "SYNTAX_ERROR", Status.INVALID_ARGUMENT),
    ("SELECT * FROM tpch.no_such_table", "TABLE_NOT_FOUND", Status.NOT_FOUND),
    ("SELECT * FROM no_such_schema.t", "SCHEMA_NOT_FOUND", Status.NOT_FOUND),
    ("SELECT * FROM no_such_catalog.s.t", "CATALOG_NOT_FOUND", Status.NOT_FOUND),
    ("SELECT no_such_column FROM tpch.nation", "COLUMN_NOT_FOUND", Status.NOT_FOUND),
    ("SELECT no_such_function(1)", "FUNCTION_NOT_FOUND", Status.NOT_FOUND),
    ("CREATE TABLE tpch.nation (a integer)", "TABLE_ALREADY_EXISTS", Status.ALREADY_EXISTS),
    ("CREATE SCHEMA tpch", "SCHEMA_ALREADY_EXISTS", Status.ALREADY_EXISTS),
    ("SELECT 1 / 0", "DIVISION_BY_ZERO", Status.INVALID_ARGUMENT),
    # Sums leaving bigint, in workers' partial aggregates and the final one.
    (
        "SELECT l_returnflag, sum(l_orderkey + 9223372036800000000) FROM tpch.lineitem GROUP BY 1",
        "NUMERIC_VALUE_OUT_OF_RANGE",
        Status.INVALID_ARGUMENT,
    ),
    ("SELECT sum(l_orderkey + 9223372036800000000) FROM tpch.lineitem", "NUMERIC_VALUE_OUT_OF_RANGE", Status.INVALID_ARGUMENT),
    # A function's refusal in the workers' tasks (read through the coordinator on the Trino
    # port, at the workers over Flight SQL).
    ("SELECT from_base64(l_comment) FROM tpch.lineitem", "INVALID_FUNCTION_ARGUMENT", Status.INVALID_ARGUMENT),
    # The SQL/JSON functions' own names, and a refusal of a value, from the workers' tasks.
    (
        "SELECT json_value(l_comment, 'lax $' ERROR ON ERROR) FROM tpch.lineitem",
        "JSON_INPUT_CONVERSION_ERROR",
        Status.INVALID_ARGUMENT,
    ),
    ("SELECT json_object(l_returnflag : 1, 'A' : 2) FROM tpch.lineitem", "NOT_SUPPORTED", Status.NOT_IMPLEMENTED),
    ("CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '/tmp/x'", "NOT_SUPPORTED", Status.NOT_IMPLEMENTED),
    (ENDLESS, "EXCEEDED_TIME_LIMIT", Status.TIMEOUT),
    (HUNGRY, "EXCEEDED_GLOBAL_MEMORY_LIMIT", None),
]


def trino_error(sql):
    conn = trino.dbapi.connect(host=HOST, port=PORT, user="tester", catalog="iceberg", schema="tpch")
    try:
        cur = conn.cursor()
        cur.execute(sql)
        cur.fetchall()
    except TrinoQueryError as e:
        return e
    finally:
        conn.close()
    return None


def flight_error(sql):
    with flight_sql.connect(FLIGHT) as conn, conn.cursor() as cur:
        try:
            cur.execute(sql)
            cur.fetchall()
        except adbc_driver_manager.Error as e:
            return e
    return None


class SameErrorsOnBothEndpoints(unittest.TestCase):
    def test_trino_error_names(self):
        for sql, name, _ in CASES:
            with self.subTest(sql=sql):
                error = trino_error(sql)
                self.assertIsNotNone(error, "the statement succeeded")
                self.assertEqual(error.error_name, name, error.message)
                self.assertNotIn("Error {", error.message, "a Rust debug dump")

    def test_grpc_codes(self):
        for sql, _, status in CASES:
            with self.subTest(sql=sql):
                error = flight_error(sql)
                self.assertIsNotNone(error, "the statement succeeded")
                if status is None:
                    # ADBC's driver has no status of its own for RESOURCE_EXHAUSTED (it says
                    # INTERNAL) and keeps gRPC's code name in its message.
                    self.assertIn("(ResourceExhausted;", str(error), str(error))
                else:
                    self.assertEqual(error.status_code, status, str(error))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
