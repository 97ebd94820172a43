"""SQE's Flight SQL endpoint through the real ADBC driver and pyarrow.

Run by the Rust integration suite (tests/tests/integration/flight_sql.rs) against a cluster it
started: `python test_flight_sql.py open <uri>` or `python test_flight_sql.py auth <uri>`.
"""

import datetime
import decimal
import sys
import threading
import time
import unittest
import warnings

import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import pyarrow as pa

URI = ""

warnings.filterwarnings("ignore", message="Cannot disable autocommit")


def connect(**db_kwargs):
    return flight_sql.connect(URI, db_kwargs=db_kwargs or None)


class OpenEndpoint(unittest.TestCase):
    """A coordinator without client authentication, with TPC-H at scale 0.01."""

    def setUp(self):
        self.conn = connect()
        self.cur = self.conn.cursor()

    def tearDown(self):
        self.cur.close()
        self.conn.close()

    def test_count(self):
        self.cur.execute("SELECT count(*) AS n FROM tpch.lineitem")
        self.assertEqual(self.cur.fetchall(), [(60175,)])

    def test_every_supported_type(self):
        self.cur.execute(
            "SELECT CAST(1 AS INT) i, CAST(2 AS BIGINT) b, CAST(1.25 AS REAL) r, CAST(1.5 AS DOUBLE) d, "
            "CAST('12.34' AS DECIMAL(10,2)) dec, 'héllo' s, true t, DATE '2024-01-02' dt, "
            "TIMESTAMP '2024-01-02 03:04:05.123456' ts, CAST(NULL AS INT) n, X'0102' bin, TIME '10:11:12' tm"
        )
        self.assertEqual(
            self.cur.fetchall(),
            [
                (
                    1,
                    2,
                    1.25,
                    1.5,
                    decimal.Decimal("12.34"),
                    "héllo",
                    True,
                    datetime.date(2024, 1, 2),
                    datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
                    None,
                    b"\x01\x02",
                    datetime.time(10, 11, 12),
                )
            ],
        )

    def test_compressed_results_read_as_plain_ones(self):
        # The Go driver under ADBC decompresses LZ4 and ZSTD buffers as it reads.
        sql = "SELECT l_orderkey, l_quantity, l_shipdate, l_comment FROM tpch.lineitem ORDER BY l_orderkey, l_linenumber"
        self.cur.execute(sql)
        plain = self.cur.fetch_arrow_table()
        self.assertEqual(plain.num_rows, 60175)
        for codec in ("lz4", "zstd"):
            with connect(**{"adbc.flight.sql.rpc.call_header.x-sqe-ipc-compression": codec}) as conn, conn.cursor() as cur:
                cur.execute(sql)
                self.assertTrue(cur.fetch_arrow_table().equals(plain), codec)
        # The header does reach the server: a codec it does not know is refused.
        with self.assertRaises(Exception) as refused:
            with connect(**{"adbc.flight.sql.rpc.call_header.x-sqe-ipc-compression": "brotli"}) as conn, conn.cursor() as cur:
                cur.execute(sql)
                cur.fetch_arrow_table()
        self.assertIn("brotli", str(refused.exception))

    def test_parallel_endpoints_hold_the_coordinators_rows(self):
        # A distributed scan is answered with one endpoint per partition of its last stage,
        # each at its worker; the driver reads them in parallel. Through the coordinator (the
        # header off) it is one endpoint. Same rows, same schema.
        sql = "SELECT l_orderkey, l_linenumber, l_quantity, l_shipdate, l_comment FROM tpch.lineitem"
        key = [("l_orderkey", "ascending"), ("l_linenumber", "ascending")]
        self.cur.execute(sql)
        parallel = self.cur.fetch_arrow_table()
        partitions, schema = self.cur.adbc_execute_partitions(sql)
        self.assertGreater(len(partitions), 1)
        parts = []
        for partition in partitions:
            self.cur.adbc_read_partition(partition)
            parts.append(self.cur.fetch_arrow_table())
        one_by_one = pa.concat_tables(parts)
        header = {"adbc.flight.sql.rpc.call_header.x-sqe-parallel-endpoints": "false"}
        with connect(**header) as conn, conn.cursor() as cur:
            single_partitions, _ = cur.adbc_execute_partitions(sql)
            self.assertEqual(len(single_partitions), 1)
            cur.adbc_read_partition(single_partitions[0])
            cur.fetch_arrow_table()
            cur.execute(sql)
            single = cur.fetch_arrow_table()
        self.assertEqual(single.num_rows, 60175)
        self.assertEqual(parallel.schema, single.schema)
        self.assertEqual(one_by_one.schema, schema)
        self.assertTrue(parallel.sort_by(key).equals(single.sort_by(key)))
        self.assertTrue(one_by_one.sort_by(key).equals(single.sort_by(key)))

    def test_ddl_runs_without_reading_its_result(self):
        # ADBC's common pattern: execute a statement on a short-lived cursor, never fetch.
        with self.conn.cursor() as cur:
            cur.execute("CREATE SCHEMA IF NOT EXISTS unread")
        with self.conn.cursor() as cur:
            cur.execute("CREATE TABLE unread.t AS SELECT 1 AS n")
        self.cur.execute("SELECT n FROM unread.t")
        self.assertEqual(self.cur.fetchall(), [(1,)])
        with self.conn.cursor() as cur:
            cur.execute("DROP TABLE unread.t")

    def test_table_types_match_the_catalog(self):
        self.cur.execute("SELECT l_orderkey, l_quantity, l_shipdate, l_comment FROM tpch.lineitem LIMIT 1")
        schema = self.cur.fetch_arrow_table().schema
        self.assertEqual(schema.field("l_orderkey").type, pa.int64())
        self.assertEqual(schema.field("l_quantity").type, pa.decimal128(15, 2))
        self.assertEqual(schema.field("l_shipdate").type, pa.date32())
        self.assertEqual(schema.field("l_comment").type, pa.string())

    def test_more_than_a_million_rows_stream(self):
        self.cur.execute("SELECT value FROM generate_series(1, 1500000)")
        reader = self.cur.fetch_record_batch()
        rows, total, batches = 0, 0, 0
        for batch in reader:
            batches += 1
            rows += batch.num_rows
            total += pa.compute.sum(batch.column(0)).as_py() or 0
        self.assertEqual(rows, 1500000)
        self.assertEqual(total, 1500000 * 1500001 // 2)
        self.assertGreater(batches, 10, "the result arrives in many batches, not one")

    def test_prepared_statement_with_parameters(self):
        sql = "SELECT n_name FROM tpch.nation WHERE n_regionkey = $1 ORDER BY n_name"
        self.cur.execute(sql, parameters=(1,))
        self.assertEqual(
            [r[0] for r in self.cur.fetchall()],
            ["ARGENTINA", "BRAZIL", "CANADA", "PERU", "UNITED STATES"],
        )
        self.cur.execute(sql, parameters=(4,))
        self.assertEqual(
            [r[0] for r in self.cur.fetchall()],
            ["EGYPT", "IRAN", "IRAQ", "JORDAN", "SAUDI ARABIA"],
        )

    def test_prepared_statement_with_question_mark_parameters(self):
        # JDBC's and ADBC's placeholder, as the Flight SQL JDBC driver sends it.
        self.cur.execute(
            "SELECT n_name FROM tpch.nation WHERE n_regionkey = ? AND n_name <> ? ORDER BY n_name",
            parameters=(1, "PERU"),
        )
        self.assertEqual(
            [r[0] for r in self.cur.fetchall()],
            ["ARGENTINA", "BRAZIL", "CANADA", "UNITED STATES"],
        )

    def test_execute_schema(self):
        schema = self.cur.adbc_execute_schema("SELECT n_name, n_nationkey + 1 AS k FROM tpch.nation")
        self.assertEqual(schema.names, ["n_name", "k"])
        self.assertEqual(schema.field("k").type, pa.int64())

    def test_get_objects_lists_tpch_with_types(self):
        objects = self.conn.adbc_get_objects(depth="columns", db_schema_filter="tpch").read_all().to_pylist()
        self.assertEqual([c["catalog_name"] for c in objects], ["iceberg"])
        schemas = objects[0]["catalog_db_schemas"]
        self.assertEqual([s["db_schema_name"] for s in schemas], ["tpch"])
        tables = {t["table_name"]: t for t in schemas[0]["db_schema_tables"]}
        self.assertEqual(
            sorted(tables),
            ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"],
        )
        columns = {c["column_name"]: c["xdbc_type_name"] for c in tables["lineitem"]["table_columns"]}
        self.assertEqual(columns["l_orderkey"], "BIGINT")
        self.assertEqual(columns["l_quantity"], "DECIMAL(15,2)")
        self.assertEqual(columns["l_shipdate"], "DATE")
        self.assertEqual(columns["l_comment"], "VARCHAR")

    def test_session_schema(self):
        self.assertEqual(self.conn.adbc_current_db_schema, "default")
        self.conn.adbc_current_db_schema = "tpch"
        self.assertEqual(self.conn.adbc_current_db_schema, "tpch")
        self.cur.execute("SELECT count(*) FROM region")
        self.assertEqual(self.cur.fetchall(), [(5,)])

    def test_ingest_create_append_replace(self):
        self.cur.execute("CREATE SCHEMA IF NOT EXISTS ingest")
        self.cur.fetchall()
        table = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", None])})
        self.assertEqual(self.cur.adbc_ingest("people", table, mode="create", db_schema_name="ingest"), 3)
        self.assertEqual(self.cur.adbc_ingest("people", table, mode="append", db_schema_name="ingest"), 3)
        self.cur.execute("SELECT count(*), count(name) FROM ingest.people")
        self.assertEqual(self.cur.fetchall(), [(6, 4)])
        self.cur.execute('SELECT snapshot_id FROM ingest."people$snapshots" ORDER BY committed_at DESC LIMIT 1')
        ((before,),) = self.cur.fetchall()
        self.assertEqual(self.cur.adbc_ingest("people", table.slice(0, 1), mode="replace", db_schema_name="ingest"), 1)
        self.cur.execute("SELECT * FROM ingest.people")
        self.assertEqual(self.cur.fetchall(), [(1, "a")])
        # The same columns: one overwrite snapshot of the same table, its history kept.
        self.cur.execute('SELECT operation FROM ingest."people$snapshots" ORDER BY committed_at')
        self.assertEqual(self.cur.fetchall(), [("append",), ("append",), ("overwrite",)])
        self.cur.execute(f"SELECT count(*) FROM ingest.people FOR VERSION AS OF {before}")
        self.assertEqual(self.cur.fetchall(), [(6,)])
        # Other columns: the same table given them with its rows in one commit, its history kept.
        self.cur.execute('SELECT snapshot_id FROM ingest."people$snapshots" ORDER BY committed_at DESC LIMIT 1')
        ((narrow,),) = self.cur.fetchall()
        wider = table.append_column("score", pa.array([1.5, 2.5, 3.5]))
        self.assertEqual(self.cur.adbc_ingest("people", wider, mode="replace", db_schema_name="ingest"), 3)
        self.cur.execute("SELECT id, name, score FROM ingest.people ORDER BY id")
        self.assertEqual(self.cur.fetchall(), [(1, "a", 1.5), (2, "b", 2.5), (3, None, 3.5)])
        self.cur.execute('SELECT operation FROM ingest."people$snapshots" ORDER BY committed_at')
        self.assertEqual(self.cur.fetchall(), [("append",), ("append",), ("overwrite",), ("append",)])
        self.cur.execute(f"SELECT * FROM ingest.people FOR VERSION AS OF {narrow}")
        self.assertEqual(self.cur.fetchall(), [(1, "a")])
        self.cur.execute("SHOW TABLES FROM ingest")
        self.assertEqual(self.cur.fetchall(), [("people",)])
        # A replace whose client's data source fails part-way is all or nothing: the driver may
        # end the upload cleanly with what it sent (then the server commits those rows, after the
        # client has heard its own error) or break it off (then nothing changes); never a mix.
        def failing():
            yield wider.to_batches()[0]
            raise RuntimeError("the client's data source failed")

        narrow_schema = wider.schema.remove(2)
        reader = pa.RecordBatchReader.from_batches(narrow_schema, (b.drop_columns(["score"]) for b in failing()))
        with self.assertRaises(Exception):
            self.cur.adbc_ingest("people", reader, mode="replace", db_schema_name="ingest")
        # The server may commit what the driver sent after the client has heard its error, so
        # the table is read at the snapshot that was counted, not at whatever is current then.
        time.sleep(2)
        self.cur.execute('SELECT snapshot_id FROM ingest."people$snapshots" ORDER BY committed_at')
        ids = [snapshot for (snapshot,) in self.cur.fetchall()]
        snapshots = len(ids)
        self.cur.execute(f"SELECT * FROM ingest.people FOR VERSION AS OF {ids[-1]} ORDER BY id")
        rows = self.cur.fetchall()
        if snapshots == 4:
            self.assertEqual(rows, [(1, "a", 1.5), (2, "b", 2.5), (3, None, 3.5)])
        else:
            self.assertEqual((snapshots, rows), (5, [(1, "a"), (2, "b"), (3, None)]))
        with self.assertRaises(adbc_driver_manager.Error) as failed:
            self.cur.adbc_ingest("people", table, mode="create", db_schema_name="ingest")
        self.assertIn("already exists", str(failed.exception))

    def test_incremental_execution_polls_the_query_and_reads_its_rows(self):
        """ADBC's incremental execution is PollFlightInfo: the first call answers with the
        query's partition (readable before the query completes), the next reports the end with
        no new partitions; a failing query fails the call that polls it."""
        incremental = {adbc_driver_manager.StatementOptions.INCREMENTAL.value: "true"}
        self.cur.adbc_statement.set_options(**incremental)
        sql = "SELECT l_orderkey, l_linenumber FROM tpch.lineitem"
        partitions, schema = self.cur.adbc_execute_partitions(sql)
        self.assertEqual(len(partitions), 1)
        self.assertEqual(schema.names, ["l_orderkey", "l_linenumber"])
        with self.conn.cursor() as reader:
            reader.adbc_read_partition(partitions[0])
            rows = reader.fetchall()
        self.assertEqual(len(rows), 60175)
        self.assertEqual(len(set(rows)), 60175, "every row once")
        more, _ = self.cur.adbc_execute_partitions(sql)
        self.assertEqual(more, [], "the query is complete")
        with self.conn.cursor() as failing:
            failing.adbc_statement.set_options(**incremental)
            with self.assertRaises(adbc_driver_manager.ProgrammingError) as failed:
                failing.adbc_execute_partitions("SELECT CAST(l_comment AS INTEGER) FROM tpch.lineitem")
            self.assertIn("Cannot cast '", str(failed.exception))

    def test_cancel_stops_a_running_query(self):
        cursor = self.conn.cursor()
        outcome = {}

        def run():
            try:
                cursor.execute("SELECT count(*) FROM generate_series(1, 100000000000)")
                outcome["rows"] = cursor.fetchall()
            except adbc_driver_manager.Error as e:
                outcome["error"] = e

        thread = threading.Thread(target=run)
        thread.start()
        time.sleep(2)
        cursor.adbc_cancel()
        thread.join(30)
        self.assertFalse(thread.is_alive(), "the query did not stop")
        self.assertIn("error", outcome)
        self.assertEqual(outcome["error"].status_code, adbc_driver_manager.AdbcStatusCode.CANCELLED, str(outcome["error"]))
        cursor.close()
        # The server is still fine.
        self.cur.execute("SELECT 1")
        self.assertEqual(self.cur.fetchall(), [(1,)])

    def test_error_codes(self):
        with self.assertRaises(adbc_driver_manager.ProgrammingError) as syntax:
            self.cur.execute("SELEC 1")
        self.assertEqual(syntax.exception.status_code, adbc_driver_manager.AdbcStatusCode.INVALID_ARGUMENT)
        self.assertIn("syntax error", str(syntax.exception))
        with self.assertRaises(adbc_driver_manager.Error) as missing:
            self.cur.execute("SELECT * FROM tpch.nope")
        self.assertEqual(missing.exception.status_code, adbc_driver_manager.AdbcStatusCode.NOT_FOUND)


class AuthenticatedEndpoint(unittest.TestCase):
    """A coordinator whose only user is alice / s3cret."""

    def test_right_password(self):
        with connect(username="alice", password="s3cret") as conn, conn.cursor() as cur:
            cur.execute("SELECT 1 AS one")
            self.assertEqual(cur.fetchall(), [(1,)])

    def test_wrong_password(self):
        with self.assertRaises(adbc_driver_manager.Error) as failed:
            with connect(username="alice", password="nope") as conn, conn.cursor() as cur:
                cur.execute("SELECT 1")
        self.assertEqual(failed.exception.status_code, adbc_driver_manager.AdbcStatusCode.UNAUTHENTICATED)

    def test_no_credentials(self):
        with self.assertRaises(adbc_driver_manager.Error) as failed:
            with connect() as conn, conn.cursor() as cur:
                cur.execute("SELECT 1")
        self.assertEqual(failed.exception.status_code, adbc_driver_manager.AdbcStatusCode.UNAUTHENTICATED)


if __name__ == "__main__":
    suite, URI = sys.argv[1], sys.argv[2]
    case = {"open": OpenEndpoint, "auth": AuthenticatedEndpoint}[suite]
    result = unittest.TextTestRunner(verbosity=2).run(unittest.defaultTestLoader.loadTestsFromTestCase(case))
    sys.exit(0 if result.wasSuccessful() else 1)
