"""Seed 004 (distributed SQE: coordinator + workers) on real processes, through real clients.

Starts the `sqe` binary as one coordinator and registering workers, then checks, in order:
  1. the seed's invariants: Flight SQL answers, system.runtime.nodes lists the coordinator and
     both workers, a CTAS round-trip reads back in order, system.runtime.queries records
     FINISHED queries, the result cache serves a repeated count (per user; never with now())
     and is invalidated by an INSERT here and by one through a second coordinator on the same
     catalog, the Trino endpoint answers, and system.runtime.tasks shows fragments on
     worker-1 and worker-2;
  2. a killed worker shows `unreachable` within 3 heartbeat intervals, queries keep succeeding
     on the other, and it is `active` again once it is back;
  3. a rolling deploy under steady load: two v2 workers join, the coordinator's expected
     version is switched (config edit + SIGHUP), the v1 workers drain on SIGTERM while a long
     join runs on them, and exit once it is done: zero failed queries, and the tasks move to
     the v2 workers;
  4. a worker restarted at the same URL with a new version is noticed;
  5. a worker SIGKILLed while a distributed join runs on it: under retry_policy NONE the query
     fails naming the worker; under QUERY it runs again on the workers left and answers right,
     system.runtime.queries counting its attempts;
  6. the same for an INSERT of the join's count under QUERY: its first run had not begun to
     commit, so it runs again, and the row is in the table once;
  7. the coordinator SIGKILLed and started again while a Trino client polls a running join:
     the workers register again within their next heartbeats, the client's poll is answered
     with a 404 saying the query began before the restart, the workers close the old
     coordinator's task streams, and distributed queries run again.

Run by tests/tests/integration/processes.rs:
    python test_distributed_cluster.py <sqe binary> <work dir>
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
import warnings

import adbc_driver_flightsql.dbapi as flight_sql
import trino
from polling import eventually
from trino.exceptions import TrinoQueryError

SQE, WORK = sys.argv[1], sys.argv[2]
HEARTBEAT_SECS = 1
MISSED_HEARTBEATS = 3

warnings.filterwarnings("ignore", message="Cannot disable autocommit")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, timeout=60.0):
    def listening():
        if process.poll() is not None:
            raise AssertionError(f"{process.args} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            return False

    eventually(listening, f"port {port}", timeout)


def stack_settings():
    """The SQE_CATALOG__*/SQE_STORAGE__* settings of the REST catalog + S3 stack the suite runs
    with (scripts/test.sh starts one and exports SQE_STACK_DIR): every process gets them, so the
    configs' embedded catalog is replaced by the stack's. Without a stack, the embedded one."""
    directory = os.environ.get("SQE_STACK_DIR")
    if not directory:
        return {}
    settings = {}
    with open(os.path.join(directory, "stack.env")) as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            if key.startswith(("SQE_CATALOG__", "SQE_STORAGE__")):
                settings[key] = value
    return settings


STACK = stack_settings()


def write_config(name, text):
    path = os.path.join(WORK, f"{name}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


class Cluster:
    """The processes, their config files and logs under WORK."""

    def __init__(self):
        self.flight_port = free_port()
        self.trino_port = free_port()
        self.metrics_ports = {}
        self.worker_ports = {}
        self.processes = {}
        self.coordinator_config = os.path.join(WORK, "coordinator.toml")
        self.write_coordinator_config(expected_version="v1")

    def write_coordinator_config(self, expected_version):
        static = ", ".join(f'"http://127.0.0.1:{self.port_of(n)}"' for n in ("worker-1", "worker-2"))
        with open(self.coordinator_config, "w") as f:
            f.write(
                f"""
[coordinator]
node_id = "coordinator"
bind_address = "127.0.0.1"
flight_sql_port = {self.flight_port}
trino_http_port = {self.trino_port}
metrics_port = {self.metrics_port_of("coordinator")}
worker_urls = [{static}]
allow_unauthenticated_workers = true
worker_version_policy = "exact"
expected_worker_version = "{expected_version}"
worker_probe_interval_secs = 1
missed_heartbeats = {MISSED_HEARTBEATS}
# One scan task per byte: even small tables spread over every worker.
scan_bytes_per_partition = "1B"
# The trino client's first parameterized query probes with EXECUTE IMMEDIATE 'SELECT 1' and
# reads only its first page; like Trino, SQE ends such an abandoned query after the client
# timeout (300 s by default), which test_1b's "nothing runs now" waits for.
trino_client_timeout_secs = 5

[catalog]
type = "sql"
name = "iceberg"
uri = "{WORK}/catalog.db"
warehouse = "{WORK}/warehouse"

[client_auth]
# The test's Trino user reads the Flight SQL client's queries in system.runtime too.
admin_users = ["seed"]

[query_cache]
enabled = true
max_memory_mb = 128
ttl_secs = 300

[query_history]
max_entries = 10000
ttl_secs = 1800
"""
            )

    def metrics_port_of(self, name):
        return self.metrics_ports.setdefault(name, free_port())

    def port_of(self, name):
        return self.worker_ports.setdefault(name, free_port())

    def start(self, name, args, **extra_env):
        log = open(os.path.join(WORK, f"{name}.log"), "a")
        env = dict(os.environ, SQE_LOG="info", **STACK, **extra_env)
        process = subprocess.Popen([SQE, *args], cwd=WORK, stdout=subprocess.DEVNULL, stderr=log, env=env)
        self.processes[name] = process
        return process

    def start_coordinator(self):
        # Structured logs: each query's "query ended" line carries its ids.
        process = self.start(
            "coordinator", ["coordinator", "--config", self.coordinator_config], SQE_LOG_FORMAT="json"
        )
        wait_for_port(self.flight_port, process)
        wait_for_port(self.trino_port, process)

    def start_worker(self, name, version):
        port = self.port_of(name)
        path = write_config(
            name,
            f"""
[worker]
node_id = "{name}"
bind_address = "127.0.0.1"
flight_port = {port}
metrics_port = {self.metrics_port_of(name)}
coordinator_url = "http://127.0.0.1:{self.flight_port}"
heartbeat_interval_secs = {HEARTBEAT_SECS}
shutdown_grace_secs = 1
memory_limit = "512MB"
allow_unauthenticated_workers = true
version = "{version}"
""",
        )
        process = self.start(name, ["worker", "--config", path])
        wait_for_port(port, process)
        return process

    def start_second_coordinator(self):
        """A coordinator without workers on the same catalog; returns its Trino port."""
        flight, trino_port = free_port(), free_port()
        path = write_config(
            "coordinator-2",
            f"""
[coordinator]
node_id = "coordinator-2"
bind_address = "127.0.0.1"
flight_sql_port = {flight}
trino_http_port = {trino_port}

[catalog]
type = "sql"
name = "iceberg"
uri = "{WORK}/catalog.db"
warehouse = "{WORK}/warehouse"
""",
        )
        process = self.start("coordinator-2", ["coordinator", "--config", path])
        wait_for_port(trino_port, process)
        return trino_port

    def stop(self, name):
        process = self.processes.pop(name)
        process.terminate()
        process.wait(timeout=60)

    def stop_all(self):
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()


CLUSTER = Cluster()


def trino_rows(sql, params=None, user="seed"):
    conn = trino.dbapi.connect(
        host="127.0.0.1", port=CLUSTER.trino_port, user=user, catalog="iceberg", schema="demo", source="seed-004"
    )
    cur = conn.cursor()
    cur.execute(sql, params) if params is not None else cur.execute(sql)
    return cur.fetchall()


def trino_query(sql, user="seed"):
    """The single value a query returns, and its query id."""
    conn = trino.dbapi.connect(
        host="127.0.0.1", port=CLUSTER.trino_port, user=user, catalog="iceberg", schema="demo", source="seed-004"
    )
    cur = conn.cursor()
    cur.execute(sql)
    return cur.fetchall()[0][0], cur.query_id


def cache_use(query_id):
    """What the result cache did for a query, from system.runtime.queries."""
    return trino_rows("SELECT result_cache FROM system.runtime.queries WHERE query_id = ?", [query_id])[0][0]


def flight_rows(sql):
    with flight_sql.connect(f"grpc://127.0.0.1:{CLUSTER.flight_port}") as conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def nodes():
    """node_id -> (version, state) of the workers, as system.runtime.nodes shows them."""
    return {
        node: (version, state)
        for node, version, state, coordinator in trino_rows(
            "SELECT node_id, node_version, state, coordinator FROM system.runtime.nodes"
        )
        if not coordinator
    }


def scrape(name, path="/metrics"):
    """(status, body) of a process's observability port."""
    url = f"http://127.0.0.1:{CLUSTER.metrics_port_of(name)}{path}"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metrics(name):
    """{(metric name, frozenset of label pairs): value} from a /metrics scrape."""
    status, body = scrape(name)
    assert status == 200, (status, body)
    samples = {}
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r'([a-z_]+)(?:\{(.*)\})? (\S+)', line)
        assert match, f"not in the text format: {line!r}"
        labels = frozenset(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        samples[(match.group(1), labels)] = float(match.group(3))
    return samples


def machine_memory():
    """The memory this machine's processes may have: MemTotal, or a lower cgroup limit."""
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text != "max" and 0 < int(text) < 1 << 62:
            total = min(total, int(text))
        break
    return total


def metric(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


def workers_of(query_id):
    rows = trino_rows("SELECT DISTINCT node_id FROM system.runtime.tasks WHERE query_id = ?", [query_id])
    return {r[0] for r in rows}


def distributed_count(marker, client="trino"):
    """A grouped count over every scan task; returns (query id, total) for Trino."""
    sql = f"SELECT bucket, count(*) AS {marker} FROM numbers GROUP BY bucket"
    if client == "flight":
        return None, sum(r[1] for r in flight_rows(sql.replace("FROM numbers", "FROM iceberg.demo.numbers")))
    conn = trino.dbapi.connect(
        host="127.0.0.1", port=CLUSTER.trino_port, user="seed", catalog="iceberg", schema="demo", source="seed-004"
    )
    cur = conn.cursor()
    cur.execute(sql)
    total = sum(r[1] for r in cur.fetchall())
    return cur.query_id, total


# Two n % 2 classes of 10005 rows each: 2 * 10005^2 pairs, seconds of work per task.
PAIRS = "numbers a JOIN numbers b ON a.n % 2 = b.n % 2"
PAIR_COUNT = 2 * 10005 * 10005


def active_workers():
    return {node for node, (_, state) in nodes().items() if state == "active"}


def busy_workers(marker, spared="worker-1"):
    """The workers (but `spared`) given a task of the query whose text has `marker` that has
    not finished. PLANNED counts: a task shows RUNNING only once its worker's progress is
    polled, by when a short task may be done and its worker no longer needed."""
    return [
        r[0]
        for r in trino_rows(
            "SELECT DISTINCT t.node_id FROM system.runtime.tasks t JOIN system.runtime.queries q "
            f"ON t.query_id = q.query_id WHERE strpos(q.query, '{marker}') > 0 AND q.state = 'RUNNING' "
            f"AND t.state IN ('PLANNED', 'RUNNING') AND t.node_id <> '{spared}'"
        )
    ]


def killed_mid_join(sql, marker, policy):
    """Runs `sql` (text with `marker`, over PAIRS) under `policy` and SIGKILLs a worker (never
    worker-1) while one of its tasks runs there: (the victim, {"rows": ...} or {"error": (name,
    message)})."""
    outcome = {}

    def run():
        conn = trino.dbapi.connect(
            host="127.0.0.1", port=CLUSTER.trino_port, user="seed", catalog="iceberg", schema="demo",
            source="seed-004", session_properties={"retry_policy": policy},
        )
        cur = conn.cursor()
        try:
            cur.execute(sql)
            outcome["rows"] = cur.fetchall()
        except TrinoQueryError as e:
            outcome["error"] = (e.error_name, e.message)

    thread = threading.Thread(target=run)
    thread.start()
    victim = eventually(lambda: busy_workers(marker), "a task of the join running")[0]
    CLUSTER.processes[victim].kill()
    CLUSTER.processes.pop(victim).wait()
    thread.join(timeout=300)
    assert not thread.is_alive(), f"{marker} never ended"
    # The next phase starts with the victim out of the rotation (a query of its own would
    # otherwise meet it first, and fail or retry for that).
    eventually(lambda: nodes().get(victim, ("", "unreachable"))[1] == "unreachable", f"{victim} unreachable")
    return victim, outcome


def runs_of(marker):
    """(query id, attempts, state) of the queries whose text has `marker`."""
    return trino_rows(
        "SELECT query_id, attempts, state FROM system.runtime.queries "
        f"WHERE strpos(query, '{marker}') > 0 AND strpos(query, 'system.runtime') = 0"
    )


class DistributedCluster(unittest.TestCase):
    """The phases share one cluster and run in order (unittest sorts by name)."""

    @classmethod
    def setUpClass(cls):
        CLUSTER.start_worker("worker-1", "v1")
        CLUSTER.start_worker("worker-2", "v1")
        CLUSTER.start_coordinator()
        eventually(
            lambda: nodes() == {"worker-1": ("v1", "active"), "worker-2": ("v1", "active")},
            "both workers registered and active",
        )

    @classmethod
    def tearDownClass(cls):
        CLUSTER.stop_all()

    def test_1_seed_invariants(self):
        # Connectivity over Flight SQL.
        self.assertEqual(flight_rows("SELECT 1 AS one"), [(1,)])
        # The topology.
        listed = trino_rows("SELECT node_id, coordinator, state FROM system.runtime.nodes ORDER BY node_id")
        self.assertEqual(
            listed,
            [["coordinator", True, "active"], ["worker-1", False, "active"], ["worker-2", False, "active"]],
        )
        # CTAS round-trip, read back in order, over Flight SQL.
        flight_rows("CREATE SCHEMA iceberg.demo")
        flight_rows(
            "CREATE TABLE iceberg.demo.numbers AS "
            "SELECT value AS n, value % 7 AS bucket FROM generate_series(1, 20000)"
        )
        head = flight_rows("SELECT n FROM iceberg.demo.numbers ORDER BY n LIMIT 5")
        self.assertEqual(head, [(1,), (2,), (3,), (4,), (5,)])
        if STACK:
            # Over the REST catalog, the data files are in the S3 store.
            data = os.path.join(os.environ["SQE_STACK_DIR"], "s3", "warehouse", "demo", "numbers", "data")
            self.assertTrue(any(name.endswith(".parquet") for name in os.listdir(data)), data)
        # The Trino endpoint answers, and its history records FINISHED queries of both endpoints.
        self.assertEqual(trino_rows("SELECT count(*) FROM numbers"), [[20000]])
        finished = trino_rows(
            "SELECT DISTINCT endpoint FROM system.runtime.queries WHERE state = 'FINISHED' ORDER BY endpoint"
        )
        self.assertEqual(finished, [["flight_sql"], ["trino"]])
        # The result cache: a count read twice is served the second time; an INSERT evicts it.
        count = "SELECT count(*) FROM numbers WHERE bucket = 3"
        before, first = trino_query(count)
        again, second = trino_query(count)
        self.assertEqual((again, cache_use(first), cache_use(second)), (before, "miss", "hit"))
        # Another user asking the same is not served someone else's result.
        _, other_user = trino_query(count, user="someone-else")
        self.assertEqual(cache_use(other_user), "miss")
        # Non-deterministic functions bypass it.
        _, clock = trino_query("SELECT count(*), max(now()) FROM numbers")
        self.assertEqual(cache_use(clock), "bypass")
        trino_rows("INSERT INTO numbers SELECT value, 3 FROM generate_series(20001, 20005)")
        after, third = trino_query(count)
        self.assertEqual((after, cache_use(third)), (before + 5, "miss"))
        # A commit through another coordinator over the same catalog: the snapshot this one
        # finds when it plans the query is not the cached one.
        self.assertEqual(trino_query(count)[0], before + 5)
        other = CLUSTER.start_second_coordinator()
        try:
            conn = trino.dbapi.connect(host="127.0.0.1", port=other, user="seed", catalog="iceberg", schema="demo")
            cur = conn.cursor()
            cur.execute("INSERT INTO numbers SELECT value, 3 FROM generate_series(20006, 20010)")
            self.assertEqual(cur.fetchall(), [[5]])
        finally:
            CLUSTER.stop("coordinator-2")
        latest, fourth = trino_query(count)
        self.assertEqual((latest, cache_use(fourth)), (before + 10, "miss"))
        # A query that forces a split runs fragments on both workers.
        query_id, total = distributed_count("split")
        self.assertEqual(total, 20010)
        self.assertEqual(workers_of(query_id), {"worker-1", "worker-2"})

    def test_1a_each_query_has_a_trace_id_continuing_the_callers(self):
        caller = "4bf92f3577b34da6a3ce929d0e0e4736"
        traceparent = f"00-{caller}-00f067aa0ba902b7-01"
        conn = trino.dbapi.connect(
            host="127.0.0.1", port=CLUSTER.trino_port, user="seed", catalog="iceberg", schema="demo",
            http_headers={"traceparent": traceparent},
        )
        cur = conn.cursor()
        cur.execute("SELECT count(*) FROM numbers WHERE bucket = 5")
        cur.fetchall()
        traced_query = cur.query_id
        _, plain_1 = trino_query("SELECT count(*) FROM numbers WHERE bucket = 6")
        _, plain_2 = trino_query("SELECT count(*) FROM numbers WHERE bucket = 6")
        marker = "traced_flight"
        with flight_sql.connect(
            f"grpc://127.0.0.1:{CLUSTER.flight_port}",
            db_kwargs={"adbc.flight.sql.rpc.call_header.traceparent": traceparent},
        ) as fconn, fconn.cursor() as fcur:
            fcur.execute(f"SELECT 1 AS {marker}")
            fcur.fetchall()

        def trace_of(query_id):
            return trino_rows("SELECT trace_id FROM system.runtime.queries WHERE query_id = ?", [query_id])[0][0]

        self.assertEqual(trace_of(traced_query), caller)
        # Trino clients are told the trace id on every page.
        request = urllib.request.Request(
            f"http://127.0.0.1:{CLUSTER.trino_port}/v1/statement",
            data=b"SELECT 1",
            headers={"X-Trino-User": "seed", "traceparent": traceparent},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            self.assertEqual(response.headers["X-SQE-Trace-Id"], caller)
            next_uri = json.loads(response.read()).get("nextUri")
        while next_uri:
            with urllib.request.urlopen(next_uri, timeout=30) as response:
                self.assertEqual(response.headers["X-SQE-Trace-Id"], caller)
                next_uri = json.loads(response.read()).get("nextUri")

        def ended_lines():
            with open(os.path.join(WORK, "coordinator.log")) as log:
                lines = [json.loads(line) for line in log if line.startswith("{")]
            return [
                line for line in lines
                if line.get("fields", {}).get("message") == "query ended"
                and line.get("span", {}).get("query_id") == traced_query
            ]

        (ended,) = eventually(ended_lines, "the traced query's log line")
        self.assertEqual(ended["span"]["trace_id"], caller)
        self.assertEqual(ended["fields"]["state"], "FINISHED")
        flight_trace = trino_rows(
            "SELECT trace_id FROM system.runtime.queries WHERE strpos(query, ?) > 0 AND endpoint = 'flight_sql'",
            [marker],
        )
        self.assertEqual(flight_trace, [[caller]])
        ids = [trace_of(plain_1), trace_of(plain_2)]
        for trace in ids:
            self.assertRegex(trace, r"^[0-9a-f]{32}$")
            self.assertNotEqual(trace, "0" * 32)
            self.assertNotEqual(trace, caller)
        self.assertNotEqual(ids[0], ids[1], "each query is its own trace")

    def test_1b_metrics_and_probes_after_the_workload(self):
        coordinator = metrics("coordinator")
        self.assertGreaterEqual(metric(coordinator, "sqe_queries_total", endpoint="trino", state="FINISHED"), 10)
        self.assertGreaterEqual(metric(coordinator, "sqe_queries_total", endpoint="flight_sql", state="FINISHED"), 4)
        self.assertGreaterEqual(
            metric(coordinator, "sqe_query_duration_seconds_count", endpoint="trino"),
            metric(coordinator, "sqe_queries_total", endpoint="trino", state="FINISHED"),
        )
        self.assertGreaterEqual(metric(coordinator, "sqe_query_output_rows_total", endpoint="trino"), 10)
        # Rows have a size: at least 8 bytes for each of those rows' single BIGINT column.
        self.assertGreaterEqual(metric(coordinator, "sqe_query_output_bytes_total", endpoint="trino"), 80)
        self.assertGreaterEqual(metric(coordinator, "sqe_result_cache_hits_total"), 1)
        self.assertGreaterEqual(metric(coordinator, "sqe_result_cache_misses_total"), 3)
        self.assertEqual(metric(coordinator, "sqe_workers", state="active"), 2)
        self.assertEqual(metric(coordinator, "sqe_workers", state="unreachable"), 0)
        # The CTAS and one INSERT through this coordinator (the other went through another).
        self.assertEqual(metric(coordinator, "sqe_iceberg_commits_total"), 2)
        # Nothing runs now (records and streams close just after their clients are served).
        try:
            eventually(lambda: metric(metrics("coordinator"), "sqe_queries_running") == 0, "no query running")
        except AssertionError as e:
            unended = trino_rows(
                "SELECT query_id, state, endpoint, query FROM system.runtime.queries "
                "WHERE state NOT IN ('FINISHED', 'FAILED', 'CANCELED')"
            )
            raise AssertionError(f"{e}; not ended: {unended}") from e
        for name in ("worker-1", "worker-2"):
            worker = metrics(name)
            self.assertGreater(metric(worker, "sqe_worker_tasks_received_total"), 0)
            eventually(
                lambda: metric(metrics(name), "sqe_worker_task_streams_open") == 0, f"{name} idle"
            )
            self.assertEqual(metric(worker, "sqe_worker_registered"), 1)
            self.assertEqual(scrape(name, "/readyz")[0], 200)
            self.assertEqual(scrape(name, "/healthz"), (200, "ok\n"))
        self.assertEqual(scrape("coordinator", "/readyz"), (200, "ready\n"))
        # Memory pools: the workers' as configured; the coordinator's config sets none, so it
        # takes 70% of what the machine (or its container) has.
        for name in ("worker-1", "worker-2"):
            self.assertEqual(metric(metrics(name), "sqe_memory_pool_limit_bytes"), 512 * 1024 * 1024)
        self.assertAlmostEqual(
            metric(coordinator, "sqe_memory_pool_limit_bytes"), 0.7 * machine_memory(), delta=1024 * 1024
        )

    def test_2_a_killed_worker_becomes_unreachable_and_queries_go_on(self):
        CLUSTER.processes["worker-2"].kill()
        CLUSTER.processes["worker-2"].wait()
        killed = time.monotonic()
        # Within 3 heartbeat intervals (the last heartbeat was at most one interval before the
        # kill), plus a second for this poll and the query reading the table.
        limit = MISSED_HEARTBEATS * HEARTBEAT_SECS + 1.0
        eventually(lambda: nodes()["worker-2"][1] == "unreachable", "worker-2 unreachable", timeout=limit)
        detected = time.monotonic() - killed
        print(f"killed worker shown unreachable after {detected:.1f}s (limit {limit:.1f}s)")
        for i in range(3):
            query_id, total = distributed_count(f"after_kill_{i}")
            self.assertEqual(total, 20010)
            # With one worker left the planner may keep the whole plan on the coordinator.
            self.assertNotIn("worker-2", workers_of(query_id))
        # Back at the same URL: active again once it heartbeats.
        CLUSTER.start_worker("worker-2", "v1")
        eventually(lambda: nodes()["worker-2"] == ("v1", "active"), "worker-2 back")
        query_id, _ = distributed_count("after_restart")
        self.assertEqual(workers_of(query_id), {"worker-1", "worker-2"})

    def test_3_rolling_deploy_under_load_fails_no_query(self):
        results = {"ok": 0, "failed": []}
        phase = ["v1"]  # in each query's text, so the history tells before and after the switch
        stop = threading.Event()
        lock = threading.Lock()

        def load(client):
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    _, total = distributed_count(f"load_{phase[0]}_{client}_{i}", client)
                    if total < 20010:
                        raise AssertionError(f"wrong total {total}")
                    with lock:
                        results["ok"] += 1
                except Exception as e:  # noqa: BLE001 - every failure is the finding
                    with lock:
                        results["failed"].append(f"{client} #{i}: {e}")

        threads = [threading.Thread(target=load, args=(c,)) for c in ("trino", "flight", "trino")]
        for t in threads:
            t.start()
        try:
            # The new version joins: registered, up, but no tasks yet.
            CLUSTER.start_worker("worker-3", "v2")
            CLUSTER.start_worker("worker-4", "v2")
            eventually(
                lambda: {n: s for n, s in nodes().items() if n in ("worker-3", "worker-4")}
                == {"worker-3": ("v2", "incompatible"), "worker-4": ("v2", "incompatible")},
                "the v2 workers registered",
            )
            # A long join running on the v1 workers when they are told to drain.
            long = {}

            def long_join():
                try:
                    long["count"] = trino_rows(
                        "SELECT count(*) AS long_drain FROM numbers a JOIN numbers b ON a.n % 2 = b.n % 2"
                    )[0][0]
                except Exception as e:  # noqa: BLE001
                    long["error"] = str(e)

            long_thread = threading.Thread(target=long_join)
            long_thread.start()
            long_query_on_v1 = (
                "SELECT DISTINCT t.node_id FROM system.runtime.tasks t JOIN system.runtime.queries q "
                "ON t.query_id = q.query_id WHERE strpos(q.query, 'long_drain') > 0 AND q.state = 'RUNNING'"
            )
            eventually(
                lambda: {r[0] for r in trino_rows(long_query_on_v1)} == {"worker-1", "worker-2"},
                "the long join running on both v1 workers",
            )
            # The switch: the coordinator now sends tasks to v2 only.
            CLUSTER.write_coordinator_config(expected_version="v2")
            CLUSTER.processes["coordinator"].send_signal(signal.SIGHUP)
            eventually(
                lambda: nodes()
                == {
                    "worker-1": ("v1", "incompatible"),
                    "worker-2": ("v1", "incompatible"),
                    "worker-3": ("v2", "active"),
                    "worker-4": ("v2", "active"),
                },
                "only v2 active after the switch",
            )
            phase[0] = "v2"
            # Drain the old version: SIGTERM, finish running tasks, deregister, exit 0.
            for name in ("worker-1", "worker-2"):
                CLUSTER.processes[name].send_signal(signal.SIGTERM)
            self.assertTrue(trino_rows(long_query_on_v1), "the long join still runs as the drain starts")
            eventually(
                lambda: {n: s for n, (_, s) in nodes().items() if n in ("worker-1", "worker-2")}
                == {"worker-1": "draining", "worker-2": "draining"},
                "the v1 workers draining",
            )
            long_thread.join(timeout=300)
            # The drain waited for it: its tasks on the v1 workers ran to the end.
            self.assertEqual(long, {"count": 200200050})
            for name in ("worker-1", "worker-2"):
                self.assertEqual(CLUSTER.processes[name].wait(timeout=120), 0, f"{name} exit status")
            eventually(lambda: results["ok"] >= 10, "queries after the drain", timeout=60)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=120)
        print(f"rolling deploy: {results['ok']} queries, {len(results['failed'])} failed")
        self.assertEqual(results["failed"], [])
        self.assertGreater(results["ok"], 0)
        # The drained workers left; being in worker_urls, they stay listed, unreachable.
        self.assertEqual(
            nodes(),
            {
                "worker-1": ("v1", "unreachable"),
                "worker-2": ("v1", "unreachable"),
                "worker-3": ("v2", "active"),
                "worker-4": ("v2", "active"),
            },
        )
        # Queries started after the switch ran their tasks on the v2 workers only.
        after = trino_rows(
            "SELECT DISTINCT t.node_id FROM system.runtime.tasks t JOIN system.runtime.queries q "
            "ON t.query_id = q.query_id WHERE strpos(q.query, 'load_v2_') > 0"
        )
        self.assertEqual({r[0] for r in after}, {"worker-3", "worker-4"})

    def test_4_a_restarted_worker_with_a_new_version_is_noticed(self):
        CLUSTER.start_worker("worker-1", "v2")
        eventually(lambda: nodes().get("worker-1") == ("v2", "active"), "worker-1 back at v2")
        query_id, total = distributed_count("after_upgrade")
        self.assertGreaterEqual(total, 20010)
        self.assertEqual(workers_of(query_id), {"worker-1", "worker-3", "worker-4"})

    def test_5_a_worker_killed_mid_query_fails_it_or_is_retried_by_policy(self):
        # NONE (Trino's default): the query fails, and its error says which worker went.
        victim, failed = killed_mid_join(f"SELECT count(*) AS killed_none FROM {PAIRS}", "killed_none", "NONE")
        self.assertIn("error", failed, failed)
        name, message = failed["error"]
        self.assertIn(name, ("REMOTE_HOST_GONE", "GENERIC_INTERNAL_ERROR"), message)
        self.assertIn(f"127.0.0.1:{CLUSTER.port_of(victim)}", message)
        [[_, attempts, state]] = runs_of("killed_none")
        self.assertEqual((attempts, state), (1, "FAILED"))
        # Three workers again, then QUERY: planned again on the workers left, the right answer,
        # its runs counted, and what ran last ran on none of the killed workers.
        CLUSTER.start_worker("worker-5", "v2")
        eventually(lambda: nodes().get("worker-5") == ("v2", "active"), "worker-5 active")
        second_victim, retried = killed_mid_join(
            f"SELECT count(*) AS killed_retried FROM {PAIRS}", "killed_retried", "QUERY"
        )
        self.assertEqual(retried, {"rows": [[PAIR_COUNT]]})
        [[query_id, attempts, state]] = runs_of("killed_retried")
        self.assertGreaterEqual(attempts, 2)
        self.assertEqual(state, "FINISHED")
        self.assertFalse(workers_of(query_id) & {victim, second_victim}, workers_of(query_id))

    def test_6_an_insert_that_lost_a_worker_before_committing_runs_again(self):
        trino_rows("CREATE TABLE pair_counts (pairs bigint)")
        CLUSTER.start_worker("worker-6", "v2")
        eventually(lambda: nodes().get("worker-6") == ("v2", "active"), "worker-6 active")
        sql = f"INSERT INTO pair_counts SELECT count(*) AS killed_insert FROM {PAIRS}"
        _, outcome = killed_mid_join(sql, "killed_insert", "QUERY")
        self.assertEqual(outcome, {"rows": [[1]]}, "one row inserted")
        [[_, attempts, state]] = runs_of("killed_insert")
        self.assertGreaterEqual(attempts, 2)
        self.assertEqual(state, "FINISHED")
        # Its first run committed nothing, its second once: the row is there once.
        self.assertEqual(trino_rows("SELECT pairs FROM pair_counts"), [[PAIR_COUNT]])
        self.assertEqual(trino_rows("SELECT count(*) FROM \"pair_counts$snapshots\""), [[1]])

    def test_7_a_coordinator_restarted_while_a_client_polls(self):
        workers = active_workers()
        self.assertGreaterEqual(len(workers), 2, workers)
        outcome = {}

        def poll():
            # Retries a refused connection as a client would (exponential backoff), so it polls
            # through the restart and asks the new coordinator about the old query.
            conn = trino.dbapi.connect(
                host="127.0.0.1", port=CLUSTER.trino_port, user="seed", catalog="iceberg",
                schema="demo", source="seed-004", max_attempts=16,
            )
            cur = conn.cursor()
            try:
                cur.execute(f"SELECT count(*) AS polled_through_restart FROM {PAIRS}")
                outcome["rows"] = cur.fetchall()
            except Exception as e:  # the test asserts on what it is
                outcome["error"] = e

        thread = threading.Thread(target=poll)
        thread.start()
        eventually(lambda: busy_workers("polled_through_restart", spared=None), "a task of the join running")
        coordinator = CLUSTER.processes.pop("coordinator")
        coordinator.kill()
        coordinator.wait()
        CLUSTER.start_coordinator()
        # Every live worker heartbeats to the new process and registers again at its next beat.
        eventually(
            lambda: active_workers() == workers,
            "the workers registered with the restarted coordinator",
            timeout=3 * HEARTBEAT_SECS + 2,
        )
        thread.join(timeout=300)
        self.assertFalse(thread.is_alive(), "the client never ended")
        error = outcome.get("error")
        self.assertIsInstance(error, trino.exceptions.HttpError, outcome)
        self.assertIn("404", str(error))
        self.assertIn("before this coordinator restarted", str(error))
        # The dead coordinator's tasks are gone from the workers: no stream of it stays open.
        for worker in workers:
            eventually(
                lambda: metric(metrics(worker), "sqe_worker_task_streams_open") == 0,
                f"{worker} holds no task stream of the old coordinator",
                timeout=60,
            )
        # And the cluster answers distributed queries again.
        query_id, total = distributed_count("after_coordinator_restart")
        self.assertGreaterEqual(total, 20010)
        self.assertEqual(workers_of(query_id), workers)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
