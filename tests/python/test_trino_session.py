"""A Trino client's session through the Python `trino` client: USE, session properties,
prepared statements (EXECUTE IMMEDIATE and the legacy PREPARE/EXECUTE/DEALLOCATE path) and
transactions.

Run by tests/tests/integration/trino_http.rs against a cluster it started:
    python test_trino_session.py <host> <port>
"""

import datetime
import re
import sys
import unittest
from decimal import Decimal

import requests
import trino
from trino.exceptions import TrinoQueryError, TrinoUserError
from trino.transaction import IsolationLevel

HOST, PORT = sys.argv[1], int(sys.argv[2])
BASE = f"http://{HOST}:{PORT}"


def connect(**kwargs):
    kwargs.setdefault("catalog", "iceberg")
    return trino.dbapi.connect(host=HOST, port=PORT, user="tester", **kwargs)


def run(cursor, sql, params=None):
    if params is None:
        cursor.execute(sql)
    else:
        cursor.execute(sql, params)
    return cursor.fetchall()


class Session(unittest.TestCase):
    def test_use_sets_catalog_and_schema_for_later_statements(self):
        conn = connect()
        cur = conn.cursor()
        self.assertEqual(run(cur, "USE tpch"), [])
        self.assertEqual(cur.update_type, "USE")
        self.assertEqual(conn._client_session.schema, "tpch")
        self.assertEqual(conn._client_session.catalog, "iceberg")
        self.assertEqual(run(cur, "SELECT count(*) FROM nation"), [[25]])
        self.assertEqual(run(cur, "SELECT current_catalog, current_schema"), [["iceberg", "tpch"]])
        with self.assertRaises(TrinoUserError) as missing:
            run(cur, "USE no_such_schema")
        self.assertEqual(missing.exception.error_name, "SCHEMA_NOT_FOUND")
        self.assertEqual(conn._client_session.schema, "tpch", "a failed USE changes nothing")

    def test_current_catalog_and_schema_are_what_the_client_set(self):
        # As in Trino: NULL for what the client did not set.
        unset = trino.dbapi.connect(host=HOST, port=PORT, user="tester").cursor()
        self.assertEqual(run(unset, "SELECT current_catalog, current_schema"), [[None, None]])
        catalog_only = connect().cursor()
        self.assertEqual(run(catalog_only, "SELECT current_catalog, current_schema"), [["iceberg", None]])

    def test_session_functions(self):
        cur = connect(schema="tpch", timezone="Europe/Paris").cursor()
        rows = run(cur, "SELECT version(), current_user, current_timezone()")
        self.assertEqual(rows[0][1:], ["tester", "Europe/Paris"])
        self.assertRegex(rows[0][0], r"^\d+\.\d+\.\d+")
        self.assertEqual([d[0] for d in cur.description], ["_col0", "_col1", "_col2"])
        # The session zone is the one timestamps with time zone are produced in.
        ((now,),) = run(cur, "SELECT now()")
        self.assertEqual(str(now.tzinfo), "Europe/Paris")
        self.assertLess(abs(now - datetime.datetime.now(datetime.timezone.utc)).total_seconds(), 300)

    def test_unknown_time_zone_is_a_user_error(self):
        headers = {"X-Trino-User": "tester", "X-Trino-Time-Zone": "Mars/Olympus_Mons"}
        results = requests.post(f"{BASE}/v1/statement", data="SELECT 1", headers=headers).json()
        while "nextUri" in results:
            results = requests.get(results["nextUri"], headers=headers).json()
        self.assertEqual(results["stats"]["state"], "FAILED")
        self.assertEqual(results["error"]["errorType"], "USER_ERROR")
        self.assertIn("Time zone not supported: Mars/Olympus_Mons", results["error"]["message"])

    def test_set_and_reset_session_round_trip_through_the_client(self):
        conn = connect(schema="tpch")
        cur = conn.cursor()
        run(cur, "SET SESSION task_concurrency = 1")
        self.assertEqual(cur.update_type, "SET SESSION")
        self.assertEqual(conn._client_session.properties, {"task_concurrency": "1"})
        self.assertEqual(
            run(cur, "SHOW SESSION LIKE 'task_concurrency'")[0][:2], ["task_concurrency", "1"]
        )
        self.assertEqual(run(cur, "SELECT count(*) FROM orders"), [[15000]])
        run(cur, "SET SESSION query_max_run_time = '90s'")
        self.assertEqual(conn._client_session.properties["query_max_run_time"], "90s", "kept as written, as Trino keeps it")
        run(cur, "RESET SESSION task_concurrency")
        self.assertEqual(conn._client_session.properties, {"query_max_run_time": "90s"})

    def test_set_role_all_or_none_reaches_the_client_and_other_roles_do_not_exist(self):
        conn = connect(schema="tpch")
        cur = conn.cursor()
        run(cur, "SET ROLE ALL")
        self.assertEqual(cur.update_type, "SET ROLE")
        self.assertEqual(conn._client_session.roles, {"system": "ALL"})
        # The client now sends the role with each statement; it is taken.
        self.assertEqual(run(cur, "SELECT count(*) FROM nation"), [[25]])
        self.assertEqual(cur._request.http_headers["X-Trino-Role"], "system=ALL")
        run(cur, "SET ROLE NONE IN system")
        self.assertEqual(conn._client_session.roles, {"system": "NONE"})
        with self.assertRaises(TrinoUserError) as refused:
            run(cur, "SET ROLE admin")
        self.assertEqual(refused.exception.error_name, "ROLE_NOT_FOUND")
        with self.assertRaises(TrinoUserError) as refused:
            run(cur, "SET ROLE ALL IN iceberg")
        self.assertEqual(refused.exception.error_name, "NOT_SUPPORTED")

    def test_invalid_properties_are_errors(self):
        cur = connect(schema="tpch").cursor()
        for statement in [
            "SET SESSION no_such_property = 1",
            "SET SESSION task_concurrency = 'eight'",
            "SET SESSION task_concurrency = 3",
            "SET SESSION join_distribution_type = 'SIDEWAYS'",
            "SET SESSION join_reordering_strategy = 'COST'",
            "RESET SESSION no_such_property",
        ]:
            with self.assertRaises(TrinoUserError, msg=statement) as error:
                run(cur, statement)
            self.assertEqual(error.exception.error_name, "INVALID_SESSION_PROPERTY", statement)
        # A property the client sends in its headers is checked as well.
        bad = connect(schema="tpch", session_properties={"no_such_property": "1"}).cursor()
        with self.assertRaises(TrinoUserError) as error:
            run(bad, "SELECT 1")
        self.assertEqual(error.exception.error_name, "INVALID_SESSION_PROPERTY")

    def explain(self, **properties):
        cur = connect(schema="tpch", session_properties=properties).cursor()
        rows = run(cur, "EXPLAIN SELECT count(*) FROM lineitem l JOIN orders o ON l.l_orderkey = o.o_orderkey")
        return "\n".join(r[1] for r in rows)

    def test_properties_change_how_queries_run(self):
        default = self.explain()
        self.assertIn("DistributedExec", default)
        self.assertIn("CollectLeft", default)
        self.assertNotIn("DistributedExec", self.explain(distributed_execution="false"))
        partitioned = self.explain(join_distribution_type="PARTITIONED")
        self.assertIn("mode=Partitioned", partitioned)
        self.assertNotIn("CollectLeft", partitioned)
        cur = connect(schema="tpch", session_properties={"query_max_run_time": "1s"}).cursor()
        with self.assertRaises(TrinoQueryError) as error:
            run(cur, "SELECT count(*) FROM lineitem a CROSS JOIN lineitem b")
        self.assertEqual(error.exception.error_name, "EXCEEDED_TIME_LIMIT")

    # Written fact table first: lineitem joined with partsupp on the part alone (many rows
    # each), and only then with the orders and customers that narrow it.
    FACT_FIRST = """SELECT count(*), sum(l.l_quantity) FROM lineitem l
        JOIN partsupp ps ON l.l_partkey = ps.ps_partkey
        JOIN orders o ON l.l_orderkey = o.o_orderkey
        JOIN customer c ON o.o_custkey = c.c_custkey
        WHERE c.c_mktsegment = 'BUILDING' AND o.o_orderdate < DATE '1994-01-01'"""

    def joins_top_down(self, **properties):
        """The join conditions of FACT_FIRST's logical plan, outermost join first."""
        cur = connect(schema="tpch", session_properties=properties).cursor()
        rows = run(cur, "EXPLAIN " + self.FACT_FIRST)
        logical = next(r[1] for r in rows if r[0] == "logical_plan")
        return [
            "partkey" if "partkey" in line else "orderkey" if "orderkey" in line else "custkey"
            for line in re.findall(r"Inner Join: (.*)", logical)
        ]

    def test_join_reordering_strategy(self):
        written = self.joins_top_down(join_reordering_strategy="NONE")
        self.assertEqual(written, ["custkey", "orderkey", "partkey"])
        # By estimated sizes (the tables' row counts): orders and customers first, partsupp last.
        self.assertEqual(self.joins_top_down(), ["partkey", "orderkey", "custkey"])
        answers = [
            run(connect(schema="tpch", session_properties={"join_reordering_strategy": s}).cursor(), self.FACT_FIRST)
            for s in ["AUTOMATIC", "NONE"]
        ]
        self.assertGreater(answers[0][0][0], 0)
        self.assertEqual(answers[0], answers[1])

    def transferred(self, **properties):
        """Bytes the coordinator received from the workers' tasks for a wide text column."""
        cur = connect(schema="tpch", session_properties=properties).cursor()
        rows = run(cur, "EXPLAIN ANALYZE SELECT l_comment FROM lineitem WHERE l_orderkey > 0")
        text = "\n".join(str(r[1]) for r in rows)
        match = re.search(r"NetworkCoalesceExec.*?bytes_transferred=([0-9.]+) (K|M)?B", text)
        self.assertIsNotNone(match, text)
        return float(match.group(1)) * {"K": 1e3, "M": 1e6, None: 1}[match.group(2)]

    def test_exchange_compression_changes_what_nodes_send(self):
        plain = self.transferred(exchange_compression_codec="NONE")
        # Off unless asked (Trino's default too).
        self.assertAlmostEqual(self.transferred() / plain, 1.0, delta=0.05)
        for codec in ["LZ4", "ZSTD"]:
            compressed = self.transferred(exchange_compression_codec=codec)
            self.assertLess(compressed, 0.8 * plain, codec)


class Prepared(unittest.TestCase):
    VALUES = [
        (3, "bigint"),
        (1.5, "double"),
        ("it's", "varchar"),
        (True, "boolean"),
        (datetime.date(2024, 2, 29), "date"),
        (Decimal("12.34"), "decimal"),
        (b"\x00\xff", "varbinary"),
    ]

    def test_qmark_parameters_through_execute_immediate(self):
        cur = connect(schema="tpch").cursor()
        self.assertEqual(run(cur, "SELECT n_name FROM nation WHERE n_nationkey = ?", (3,)), [["CANADA"]])
        values = tuple(v for v, _ in self.VALUES)
        row = run(cur, "SELECT " + ", ".join("?" for _ in values), values)[0]
        self.assertEqual(row, list(values))
        self.assertEqual(run(cur, "SELECT ?, '?'", (None,)), [[None, "?"]])
        with self.assertRaises(TrinoUserError) as error:
            run(cur, "SELECT ?", (1, 2))
        self.assertEqual(error.exception.error_name, "INVALID_PARAMETER_USAGE")

    def test_legacy_prepare_execute_deallocate(self):
        conn = connect(schema="tpch", legacy_prepared_statements=True)
        cur = conn.cursor()
        rows = run(cur, "SELECT n_name FROM nation WHERE n_regionkey = ? ORDER BY 1 LIMIT 2", (1,))
        self.assertEqual(rows, [["ARGENTINA"], ["BRAZIL"]])
        self.assertEqual(conn._client_session.prepared_statements, {}, "deallocated after use")
        # DML through the same path reports its row count.
        run(cur, "CREATE SCHEMA IF NOT EXISTS session_demo")
        run(cur, "DROP TABLE IF EXISTS session_demo.p")
        run(cur, "CREATE TABLE session_demo.p (id bigint, name varchar)")
        run(cur, "INSERT INTO session_demo.p VALUES (?, ?)", (7, "seven"))
        self.assertEqual(cur.rowcount, 1)
        self.assertEqual(run(cur, "SELECT * FROM session_demo.p"), [[7, "seven"]])

    def test_explicit_prepare_and_describe(self):
        conn = connect(schema="tpch")
        cur = conn.cursor()
        run(
            cur,
            "PREPARE q FROM SELECT n_name, n_regionkey + 1, n_regionkey * 2 AS twice "
            "FROM nation WHERE n_nationkey = ?",
        )
        self.assertEqual(cur.update_type, "PREPARE")
        self.assertIn("q", conn._client_session.prepared_statements)
        self.assertEqual(run(cur, "DESCRIBE INPUT q"), [[0, "bigint"]])
        self.assertEqual(
            run(cur, "DESCRIBE OUTPUT q"),
            [
                ["n_name", "iceberg", "tpch", "nation", "varchar", 0, False],
                # Aliased: named with AS, as Trino reports it (not: computed).
                ["_col1", "", "", "", "bigint", 8, False],
                ["twice", "", "", "", "bigint", 8, True],
            ],
        )
        # The client's describe() (PREPARE + DESCRIBE OUTPUT): the types its result's columns
        # have, lengths of varchar included.
        self.assertEqual(
            [
                (d.name, d.table, d.type)
                for d in connect().cursor().describe(
                    "SELECT name, CAST(regionkey AS integer) k FROM tpch.tiny.region"
                )
            ],
            [("name", "region", "varchar(25)"), ("k", "", "integer")],
        )
        self.assertEqual(run(cur, "EXECUTE q USING 5"), [["ETHIOPIA", 1, 0]])
        with self.assertRaises(TrinoUserError) as error:
            run(cur, "EXECUTE q")
        self.assertEqual(error.exception.error_name, "INVALID_PARAMETER_USAGE")
        run(cur, "DEALLOCATE PREPARE q")
        self.assertNotIn("q", conn._client_session.prepared_statements)
        with self.assertRaises(TrinoUserError) as error:
            run(cur, "EXECUTE q USING 5")
        self.assertEqual(error.exception.error_name, "NOT_FOUND")
        with self.assertRaises(TrinoUserError) as error:
            run(cur, "PREPARE bad FROM SELEC 1")
        self.assertEqual(error.exception.error_name, "SYNTAX_ERROR")

    def test_parameters_cannot_inject_statements(self):
        cur = connect(schema="tpch").cursor()
        hostile = "x'); DROP TABLE nation; --"
        self.assertEqual(run(cur, "SELECT count(*) FROM nation WHERE n_name = ?", (hostile,)), [[0]])
        self.assertEqual(run(cur, "SELECT count(*) FROM nation"), [[25]])


class Transactions(unittest.TestCase):
    def test_reads_in_a_transaction_and_writes_refused(self):
        conn = connect(schema="tpch", isolation_level=IsolationLevel.READ_COMMITTED)
        cur = conn.cursor()
        self.assertIsNotNone(conn.transaction)
        transaction_id = conn._client_session.transaction_id
        self.assertNotIn(transaction_id, (None, "NONE"))
        self.assertEqual(run(cur, "SELECT count(*) FROM region"), [[5]])
        with self.assertRaises(TrinoUserError) as error:
            run(cur, "CREATE TABLE session_demo.never (id bigint)")
        self.assertEqual(error.exception.error_name, "NOT_SUPPORTED")
        self.assertIn("autocommit", error.exception.message)
        conn.commit()
        # After COMMIT the id is gone on the server too.
        headers = {"X-Trino-User": "tester", "X-Trino-Transaction-Id": transaction_id}
        self.assertEqual(self.error_of("SELECT 1", headers), "UNKNOWN_TRANSACTION")

    def test_commit_without_transaction(self):
        headers = {"X-Trino-User": "tester", "X-Trino-Transaction-Id": "NONE"}
        self.assertEqual(self.error_of("COMMIT", headers), "NOT_IN_TRANSACTION")
        self.assertEqual(self.error_of("START TRANSACTION", {"X-Trino-User": "tester"}), "INCOMPATIBLE_CLIENT")

    def error_of(self, sql, headers):
        body = requests.post(f"{BASE}/v1/statement", data=sql, headers=headers).json()
        while "nextUri" in body:
            body = requests.get(body["nextUri"]).json()
        return body.get("error", {}).get("errorName")

    def test_started_transaction_header(self):
        response = requests.post(
            f"{BASE}/v1/statement",
            data="START TRANSACTION",
            headers={"X-Trino-User": "tester", "X-Trino-Transaction-Id": "NONE"},
        ).json()
        started = None
        while True:
            page = requests.get(response["nextUri"])
            started = page.headers.get("X-Trino-Started-Transaction-Id") or started
            response = page.json()
            if "nextUri" not in response:
                break
        self.assertEqual(response["updateType"], "START TRANSACTION")
        self.assertIsNotNone(started)
        rollback = requests.post(
            f"{BASE}/v1/statement",
            data="ROLLBACK",
            headers={"X-Trino-User": "tester", "X-Trino-Transaction-Id": started},
        ).json()
        cleared = None
        while "nextUri" in rollback:
            page = requests.get(rollback["nextUri"])
            cleared = page.headers.get("X-Trino-Clear-Transaction-Id") or cleared
            rollback = page.json()
        self.assertEqual(cleared, "true")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
