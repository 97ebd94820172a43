"""system.runtime.{nodes,queries,tasks} and kill_query (both endpoints), through the Trino client and ADBC.

Run by tests/tests/integration/runtime_tables.rs against a cluster of a coordinator and two
workers it started, with `[client_auth] admin_users = ["admin"]` (a user sees its own queries,
an administrator everyone's; the Flight SQL client here is `anonymous`):
    python test_runtime_tables.py <host> <trino port> <flight uri>
"""

import sys
import threading
import unittest
import uuid
import warnings

import adbc_driver_flightsql.dbapi as flight_sql
import trino
from trino.exceptions import TrinoQueryError, TrinoUserError
from polling import eventually

HOST, PORT, FLIGHT_URI = sys.argv[1], int(sys.argv[2]), sys.argv[3]
LINEITEM_ROWS = 60175  # TPC-H lineitem at SF 0.01

warnings.filterwarnings("ignore", message="Cannot disable autocommit")


def cursor(user="ann"):
    conn = trino.dbapi.connect(
        host=HOST, port=PORT, user=user, catalog="iceberg", schema="tpch", source="runtime-test"
    )
    return conn.cursor()


def rows(sql, params=None, user="ann"):
    cur = cursor(user)
    cur.execute(sql, params) if params is not None else cur.execute(sql)
    return cur.fetchall()


class RuntimeTables(unittest.TestCase):
    def test_nodes_lists_the_coordinator_and_both_workers(self):
        nodes = rows(
            "SELECT node_id, http_uri, node_version, coordinator, state, last_heartbeat "
            "FROM system.runtime.nodes ORDER BY coordinator DESC, node_id"
        )
        self.assertEqual(len(nodes), 3, nodes)
        coordinator, *workers = nodes
        self.assertEqual(coordinator[3:5], [True, "active"])
        self.assertTrue(coordinator[1].startswith("http://"), coordinator)
        for worker in workers:
            self.assertEqual(worker[3:5], [False, "active"], worker)
            self.assertTrue(worker[1].startswith("http://127.0.0.1:"), worker)
            self.assertIsNotNone(worker[5], "a reachable worker has been seen")
        self.assertEqual(len({w[0] for w in workers}), 2)

    def test_a_flight_sql_query_is_recorded_with_its_tasks_on_both_workers(self):
        marker = f"flight_{uuid.uuid4().hex[:8]}"
        with flight_sql.connect(FLIGHT_URI) as conn, conn.cursor() as cur:
            cur.execute(f"SELECT count(*) AS {marker} FROM iceberg.tpch.lineitem")
            self.assertEqual(cur.fetchall(), [(LINEITEM_ROWS,)])
        query_id, state, endpoint, output_rows, tasks = eventually(
            lambda: rows(
                "SELECT query_id, state, endpoint, output_rows, distributed_tasks "
                "FROM system.runtime.queries WHERE query LIKE ? AND endpoint = 'flight_sql'",
                [f"%{marker}%"],
                user="admin",
            ),
            "the Flight SQL query in the history",
        )[0]
        self.assertEqual((state, endpoint, output_rows), ("FINISHED", "flight_sql", 1))
        self.assertGreater(tasks, 1)

        def task_rows():
            found = rows(
                "SELECT stage_id, task_id, node_id, state, input_rows, output_rows "
                "FROM system.runtime.tasks WHERE query_id = ?",
                [query_id],
                user="admin",
            )
            return found if all(r[4] is not None for r in found) else None

        found = eventually(task_rows, "task metrics from the workers")
        self.assertEqual(len(found), tasks)
        self.assertEqual(len({r[2] for r in found}), 2, f"tasks on both workers: {found}")
        self.assertTrue(all(r[3] == "FINISHED" for r in found), found)
        # The leaf stage's tasks read every row exactly once between them (stages are numbered
        # from the leaves up).
        leaf = min(r[0] for r in found)
        self.assertEqual(sum(r[4] for r in found if r[0] == leaf), LINEITEM_ROWS, found)
        # The bytes the leaf tasks' scans read are the query's (no scan ran on the coordinator).
        task_bytes = rows("SELECT sum(bytes_scanned) FROM system.runtime.tasks WHERE query_id = ?", [query_id], "admin")
        query_bytes = rows("SELECT bytes_scanned FROM system.runtime.queries WHERE query_id = ?", [query_id], "admin")
        self.assertGreater(task_bytes[0][0], 0)
        self.assertEqual(query_bytes, task_bytes)

    def test_a_query_on_the_coordinator_reports_bytes_scanned_and_peak_memory(self):
        conn = trino.dbapi.connect(
            host=HOST, port=PORT, user="ann", catalog="iceberg", schema="tpch",
            session_properties={"distributed_execution": "false"},
        )
        cur = conn.cursor()
        cur.execute("SELECT l_returnflag, l_linestatus, count(*), sum(l_quantity) FROM lineitem GROUP BY 1, 2 ORDER BY 1, 2")
        self.assertEqual(len(cur.fetchall()), 4)
        query_id = cur.query_id
        scanned, peak, tasks = eventually(
            lambda: [
                r for r in rows(
                    "SELECT bytes_scanned, peak_memory_bytes, distributed_tasks FROM system.runtime.queries "
                    "WHERE query_id = ?",
                    [query_id],
                )
                if r[0] is not None
            ],
            "the query's scan metrics",
        )[0]
        self.assertEqual(tasks, 0)
        self.assertGreater(scanned, 0)
        # The hash aggregation and sort held coordinator memory.
        self.assertGreater(peak, 0)

    def test_failures_are_recorded_with_their_error(self):
        with self.assertRaises(TrinoUserError):
            rows("SELECT * FROM no_such_table_here")
        recorded = rows(
            "SELECT state, error_code, error_message, user, source FROM system.runtime.queries "
            "WHERE query = 'SELECT * FROM no_such_table_here'"
        )
        self.assertEqual(len(recorded), 1, recorded)
        state, code, message, user, source = recorded[0]
        self.assertEqual((state, code, user, source), ("FAILED", "TABLE_NOT_FOUND", "ann", "runtime-test"))
        self.assertIn("no_such_table_here", message)

    def test_kill_query_cancels_a_running_query_of_its_own_user(self):
        cur = cursor()
        failure = []

        def run():
            try:
                cur.execute(
                    "SELECT a.l_orderkey, b.l_partkey FROM lineitem a "
                    "JOIN lineitem b ON a.l_linenumber = b.l_linenumber"
                )
                while cur.fetchmany(1000):
                    pass
            except TrinoQueryError as e:
                failure.append(e)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        query_id = eventually(lambda: cur.query_id, "the long query's id")
        eventually(
            lambda: len(
                rows(
                    "SELECT node_id FROM system.runtime.nodes "
                    "WHERE NOT coordinator AND running_tasks > 0"
                )
            )
            == 2,
            "the long query running on both workers",
        )

        with self.assertRaises(TrinoUserError) as denied:
            rows(f"CALL system.runtime.kill_query(query_id => '{query_id}')", user="bob")
        self.assertEqual(denied.exception.error_name, "PERMISSION_DENIED")

        rows(f"CALL system.runtime.kill_query(query_id => '{query_id}', message => 'too slow')")
        self.assert_killed(thread, failure, query_id, "too slow")
        running = rows("SELECT sum(running_tasks) FROM system.runtime.nodes")
        self.assertEqual(running, [[0]])

        with self.assertRaises(TrinoUserError) as again:
            rows(f"CALL system.runtime.kill_query(query_id => '{query_id}')")
        self.assertIn("not running", again.exception.message)
        with self.assertRaises(TrinoUserError) as unknown:
            rows("CALL system.runtime.kill_query(query_id => 'no_such_query')")
        self.assertEqual(unknown.exception.error_name, "NOT_FOUND")

    def test_kill_query_over_flight_sql(self):
        marker = f"flight_kill_{uuid.uuid4().hex[:8]}"
        failure = []

        def run():
            try:
                with flight_sql.connect(FLIGHT_URI) as conn, conn.cursor() as cur:
                    cur.execute(
                        f"SELECT a.l_orderkey AS {marker}, b.l_partkey FROM iceberg.tpch.lineitem a "
                        "JOIN iceberg.tpch.lineitem b ON a.l_linenumber = b.l_linenumber"
                    )
                    while cur.fetchmany(1000):
                        pass
            except Exception as e:  # noqa: BLE001 - the kill's error is the expected outcome
                failure.append(e)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        query_id = eventually(
            lambda: rows(
                "SELECT query_id FROM system.runtime.queries WHERE strpos(query, ?) > 0 AND state = 'RUNNING'",
                [marker],
                user="admin",
            ),
            "the long Flight SQL query running",
        )[0][0]
        # Its owner is the Flight SQL client's user (anonymous here), not ann: to her it is not there.
        self.assertEqual(rows("SELECT count(*) FROM system.runtime.queries WHERE query_id = ?", [query_id]), [[0]])
        with self.assertRaises(TrinoUserError) as denied:
            rows(f"CALL system.runtime.kill_query(query_id => '{query_id}')")
        self.assertEqual(denied.exception.error_name, "PERMISSION_DENIED")
        with flight_sql.connect(FLIGHT_URI) as conn, conn.cursor() as cur:
            cur.execute(f"CALL system.runtime.kill_query(query_id => '{query_id}', message => 'via flight')")
            self.assertEqual(cur.fetchall(), [("CALL",)])
        self.assert_killed(thread, failure, query_id, "via flight")

    def test_a_user_sees_only_its_own_queries_and_tasks_and_an_admin_everyone_s(self):
        marker = f"private_{uuid.uuid4().hex[:8]}"
        cur = cursor("ann")
        cur.execute(f"SELECT count(*) AS {marker} FROM lineitem")
        self.assertEqual(cur.fetchall(), [[LINEITEM_ROWS]])
        query_id = cur.query_id
        for user, expected in (("bob", 0), ("admin", 1), ("ann", 1)):
            seen = rows("SELECT count(*) FROM system.runtime.queries WHERE query_id = ?", [query_id], user)
            self.assertEqual(seen, [[expected]], user)
        tasks = eventually(
            lambda: rows("SELECT count(*) FROM system.runtime.tasks WHERE query_id = ?", [query_id], "admin")[0][0],
            "the query's tasks",
        )
        self.assertGreater(tasks, 0)
        self.assertEqual(rows("SELECT count(*) FROM system.runtime.tasks WHERE query_id = ?", [query_id], "bob"), [[0]])
        self.assertEqual(rows("SELECT count(*) FROM system.runtime.tasks WHERE query_id = ?", [query_id], "ann"), [[tasks]])

    def test_the_trino_client_sees_progress_rise_during_a_long_query(self):
        """Splits are the tasks' partitions on the workers; the client's stats report them."""
        cur = cursor()
        samples, runtime = [], []
        done = threading.Event()

        def watch():
            while not done.is_set():
                stats = cur.stats
                if stats and stats.get("state") == "RUNNING":
                    samples.append(dict(stats))
                    if cur.query_id and not runtime:
                        found = rows(
                            "SELECT total_splits, completed_splits, progress_percentage "
                            "FROM system.runtime.queries WHERE query_id = ?",
                            [cur.query_id],
                        )
                        if found and found[0][2] is not None and found[0][2] > 0:
                            tasks = rows(
                                "SELECT DISTINCT state FROM system.runtime.tasks WHERE query_id = ?",
                                [cur.query_id],
                            )
                            runtime.append((found[0], {t[0] for t in tasks}))
                done.wait(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            cur.execute(
                "SELECT count(*) FROM lineitem a JOIN lineitem b ON a.l_linenumber = b.l_linenumber "
                "WHERE a.l_orderkey < 30000"
            )
            self.assertEqual(len(cur.fetchall()), 1)
        finally:
            done.set()
            watcher.join(10)
        final = cur.stats
        percentages = [s["progressPercentage"] for s in samples if s["progressPercentage"] is not None]
        self.assertTrue(percentages, f"no progress reported while running: {samples[-3:]}")
        self.assertEqual(percentages, sorted(percentages), "progress never goes back")
        self.assertTrue(any(0 < p < 100 for p in percentages), percentages)
        running = samples[-1]
        self.assertGreater(running["totalSplits"], 0)
        self.assertEqual(
            running["queuedSplits"] + running["runningSplits"] + running["completedSplits"],
            running["totalSplits"],
        )

        def stage_splits(stage):
            return stage["totalSplits"] + sum(stage_splits(s) for s in stage["subStages"])

        self.assertTrue(running["rootStage"]["subStages"], "the distributed stages under the coordinator's")
        self.assertEqual(stage_splits(running["rootStage"]), running["totalSplits"])
        self.assertEqual(final["progressPercentage"], 100.0)
        self.assertEqual(final["completedSplits"], final["totalSplits"])
        # system.runtime showed the same progress while the query ran.
        self.assertTrue(runtime, "system.runtime.queries reported no progress while the query ran")
        (total, completed, percentage), task_states = runtime[0]
        self.assertGreater(total, 0)
        self.assertLessEqual(completed, total)
        self.assertTrue(0 < percentage <= 100, percentage)
        self.assertTrue(task_states <= {"PLANNED", "RUNNING", "FINISHED"}, task_states)
        finished = rows(
            "SELECT total_splits, completed_splits, progress_percentage FROM system.runtime.queries WHERE query_id = ?",
            [cur.query_id],
        )
        self.assertEqual(finished, [[final["totalSplits"], final["totalSplits"], 100.0]])

    def assert_killed(self, thread, failure, query_id, message):
        """The client's thread ended with one error; the history says who killed it and why."""
        thread.join(60)
        self.assertFalse(thread.is_alive(), "the killed query kept running")
        self.assertEqual(len(failure), 1, "the killed query ends with an error")
        state, code, recorded = rows(
            "SELECT state, error_code, error_message FROM system.runtime.queries WHERE query_id = ?",
            [query_id],
            user="admin",
        )[0]
        self.assertEqual((state, code), ("CANCELED", "ADMINISTRATIVELY_KILLED"))
        self.assertEqual(recorded, f"Query killed. Message: {message}")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
