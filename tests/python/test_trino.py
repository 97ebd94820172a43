"""The Trino client protocol through the Python `trino` client (DB-API) and raw HTTP.

Run by the Rust integration suite (tests/tests/integration/trino_http.rs) against a cluster it
started (coordinator + 2 workers, TPC-H SF 0.01):
    python test_trino.py <host> <port>
"""

import datetime
import math
import sys
import threading
import time
import unittest
from decimal import Decimal

import requests
import trino
from trino.exceptions import TrinoUserError

HOST, PORT = sys.argv[1], int(sys.argv[2])
BASE = f"http://{HOST}:{PORT}"


def connect(**kwargs):
    return trino.dbapi.connect(host=HOST, port=PORT, user="tester", catalog="iceberg", **kwargs)


class Queries(unittest.TestCase):
    def setUp(self):
        self.conn = connect(schema="tpch")
        self.cur = self.conn.cursor()

    def tearDown(self):
        self.conn.close()

    def test_count(self):
        self.cur.execute("SELECT count(*) FROM lineitem")
        self.assertGreater(self.cur.fetchone()[0], 50_000)

    def test_types_decode_to_python_values(self):
        self.cur.execute(
            """
            SELECT true AS b,
                   CAST(1 AS TINYINT) AS ti, CAST(2 AS SMALLINT) AS si, CAST(3 AS INTEGER) AS i,
                   CAST(4 AS BIGINT) AS bi,
                   CAST(1.5 AS REAL) AS r, CAST(2.25 AS DOUBLE) AS d,
                   CAST('NaN' AS DOUBLE) AS nan, CAST('Infinity' AS DOUBLE) AS inf,
                   CAST(-12.34 AS DECIMAL(10, 2)) AS dec,
                   'it''s' AS v, X'01FF' AS bin,
                   DATE '2024-02-29' AS dt,
                   CAST(TIMESTAMP '2024-02-29 12:34:56.123456' AS TIMESTAMP(6)) AS ts,
                   make_array(1, 2, NULL) AS arr,
                   named_struct('x', 1, 'y', 'a') AS rw,
                   map(['a', 'b'], [1, 2]) AS m,
                   CAST(NULL AS BIGINT) AS n,
                   INTERVAL '1 day 2 hours' AS iv
            """
        )
        row = self.cur.fetchone()
        names = [c[0] for c in self.cur.description]
        value = dict(zip(names, row))
        types = {c[0]: c[1] for c in self.cur.description}
        self.assertIs(value["b"], True)
        self.assertEqual((value["ti"], value["si"], value["i"], value["bi"]), (1, 2, 3, 4))
        self.assertEqual(types["ti"], "tinyint")
        self.assertEqual(types["bi"], "bigint")
        self.assertEqual(value["r"], 1.5)
        self.assertEqual(types["r"], "real")
        self.assertEqual(value["d"], 2.25)
        self.assertTrue(math.isnan(value["nan"]))
        self.assertEqual(value["inf"], math.inf)
        self.assertEqual(value["dec"], Decimal("-12.34"))
        self.assertEqual(types["dec"], "decimal(10, 2)")
        self.assertEqual(value["v"], "it's")
        self.assertEqual(types["v"], "varchar(4)")
        self.assertEqual(value["bin"], b"\x01\xff")
        self.assertEqual(value["dt"], datetime.date(2024, 2, 29))
        self.assertEqual(value["ts"], datetime.datetime(2024, 2, 29, 12, 34, 56, 123456))
        self.assertEqual(types["ts"], "timestamp(6)")
        self.assertEqual(value["arr"], [1, 2, None])
        self.assertEqual(types["arr"], "array(integer)")
        self.assertEqual(tuple(value["rw"]), (1, "a"))
        self.assertEqual(value["rw"].x, 1)
        self.assertEqual(value["rw"].y, "a")
        self.assertEqual(value["m"], {"a": 1, "b": 2})
        self.assertIsNone(value["n"])
        self.assertEqual(value["iv"], datetime.timedelta(days=1, hours=2))

    def test_reals_read_back_as_trino_writes_them(self):
        # Clients parse a real as a double: the digits must be Java's, as Trino sends them.
        self.cur.execute("SELECT CAST(1.4E-45 AS REAL), CAST(3.4028235E38 AS REAL), CAST(-2.8E-45 AS REAL)")
        self.assertEqual(self.cur.fetchone(), [1.4e-45, 3.4028235e38, -2.8e-45])

    def test_a_result_of_many_pages(self):
        self.cur.execute("SELECT count(*) FROM lineitem")
        expected = self.cur.fetchone()[0]
        self.cur.execute("SELECT l_orderkey, l_linenumber, l_comment FROM lineitem")
        seen = 0
        keys = set()
        while True:
            rows = self.cur.fetchmany(10_000)
            if not rows:
                break
            seen += len(rows)
            keys.update((r[0], r[1]) for r in rows)
        self.assertEqual(seen, expected)
        self.assertEqual(len(keys), expected, "every row exactly once")

    def test_ddl_and_dml(self):
        self.cur.execute("CREATE SCHEMA IF NOT EXISTS trino_demo")
        self.cur.fetchall()
        self.cur.execute("DROP TABLE IF EXISTS trino_demo.t")
        self.cur.fetchall()
        self.cur.execute("CREATE TABLE trino_demo.t (id BIGINT, name VARCHAR)")
        self.cur.fetchall()
        self.assertEqual(self.cur.update_type, "CREATE TABLE")
        self.cur.execute("INSERT INTO trino_demo.t VALUES (1, 'a'), (2, NULL)")
        self.assertEqual(self.cur.fetchall(), [[2]])
        self.assertEqual(self.cur.update_type, "INSERT")
        self.assertEqual(self.cur.rowcount, 2)
        self.cur.execute("SELECT * FROM trino_demo.t ORDER BY id")
        self.assertEqual(self.cur.fetchall(), [[1, "a"], [2, None]])

    def test_errors_have_trino_names(self):
        with self.assertRaises(TrinoUserError) as syntax:
            self.cur.execute("SELEC 1")
            self.cur.fetchall()
        self.assertEqual(syntax.exception.error_name, "SYNTAX_ERROR")
        with self.assertRaises(TrinoUserError) as missing:
            self.cur.execute("SELECT * FROM no_such_table")
            self.cur.fetchall()
        self.assertEqual(missing.exception.error_name, "TABLE_NOT_FOUND")
        self.assertIn("no_such_table", missing.exception.message)

    def test_cancel_stops_a_long_query(self):
        cur = self.conn.cursor()
        failure = []

        def run():
            try:
                cur.execute("SELECT count(*) FROM lineitem a CROSS JOIN lineitem b")
                cur.fetchall()
            except Exception as e:  # the cancelled query's error
                failure.append(e)

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.time() + 30
        while cur.query_id is None and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        cur.cancel()
        # The cross join would run for hours; ending at all means it was stopped.
        thread.join(120)
        self.assertFalse(thread.is_alive(), "the cancelled query kept running")
        self.assertEqual(len(failure), 1, "the cancelled query must end with an error")
        self.assertEqual(getattr(failure[0], "error_name", None), "USER_CANCELED", repr(failure[0]))
        # The coordinator answers again at once: the cross join is not hogging the cluster.
        self.cur.execute("SELECT 1")
        self.assertEqual(self.cur.fetchall(), [[1]])


class Protocol(unittest.TestCase):
    """Edges of the HTTP protocol a client library hides."""

    HEADERS = {"X-Trino-User": "tester", "X-Trino-Catalog": "iceberg", "X-Trino-Schema": "tpch"}

    def post(self, sql, headers=None):
        return requests.post(f"{BASE}/v1/statement", data=sql.encode(), headers=headers or self.HEADERS)

    def test_info(self):
        info = requests.get(f"{BASE}/v1/info").json()
        self.assertTrue(info["coordinator"])
        self.assertFalse(info["starting"])
        self.assertIn("version", info["nodeVersion"])
        self.assertEqual(requests.get(f"{BASE}/v1/info/state").json(), "ACTIVE")

    def test_bad_requests(self):
        self.assertEqual(self.post("").status_code, 400)
        missing_user = self.post("SELECT 1", headers={"X-Trino-Catalog": "iceberg"})
        self.assertEqual(missing_user.status_code, 400)
        self.assertIn("X-Trino-User", missing_user.text)
        bad_session = self.post("SELECT 1", headers={**self.HEADERS, "X-Trino-Session": "novalue"})
        self.assertEqual(bad_session.status_code, 400)

    def test_paging_tokens(self):
        first = self.post("SELECT n_nationkey FROM nation ORDER BY 1").json()
        self.assertEqual(first["stats"]["state"], "QUEUED")
        next_uri = first["nextUri"]
        rows = []
        previous = None
        while next_uri:
            page = requests.get(next_uri, params={"maxWait": "2s", "targetResultSize": "64B"})
            self.assertEqual(page.status_code, 200)
            again = requests.get(next_uri)
            self.assertEqual(again.json().get("data"), page.json().get("data"), "a repeated nextUri is the same page")
            if previous:
                self.assertEqual(requests.get(previous).status_code, 410, "an older page is gone")
            body = page.json()
            self.assertNotIn("error", body)
            rows.extend(r[0] for r in body.get("data", []))
            previous, next_uri = next_uri, body.get("nextUri")
        self.assertEqual(rows, list(range(25)))
        self.assertEqual(body["stats"]["state"], "FINISHED")
        self.assertEqual(body["columns"][0]["type"], "bigint")
        self.assertEqual(body["columns"][0]["typeSignature"], {"rawType": "bigint", "arguments": []})

    def test_wrong_slug_and_delete(self):
        first = self.post("SELECT count(*) FROM lineitem a CROSS JOIN lineitem b").json()
        uri = first["nextUri"]
        parts = uri.split("/")
        wrong = "/".join(parts[:-2] + ["wrongslug", parts[-1]])
        self.assertEqual(requests.get(wrong).status_code, 404)
        self.assertEqual(requests.delete(uri).status_code, 204)
        after = requests.get(uri).json()
        self.assertEqual(after["stats"]["state"], "FAILED")
        self.assertEqual(after["error"]["errorName"], "USER_CANCELED")
        self.assertEqual(requests.delete(f"{BASE}/v1/query/{first['id']}").status_code, 204)


class Spooling(unittest.TestCase):
    """Trino's spooling protocol, as the python client speaks it when given an encoding."""

    SQL = """SELECT l_orderkey, l_linenumber, l_comment, l_extendedprice, l_shipdate, l_tax
             FROM lineitem ORDER BY l_orderkey, l_linenumber"""

    def fetch(self, **kwargs):
        conn = connect(schema="tpch", **kwargs)
        try:
            cur = conn.cursor()
            cur.execute(self.SQL)
            return cur.fetchall()
        finally:
            conn.close()

    def test_every_encoding_reads_the_classic_protocols_rows(self):
        classic = self.fetch()
        self.assertGreater(len(classic), 50_000)
        for encoding in ["json", "json+zstd", "json+lz4"]:
            with self.subTest(encoding=encoding):
                self.assertEqual(self.fetch(encoding=encoding), classic)

    def test_segments_are_spooled_then_acknowledged_and_deleted(self):
        conn = connect(schema="tpch", encoding="json+zstd")
        try:
            cur = conn.cursor("segment")
            cur.execute(self.SQL)
            segments = cur.fetchall()
        finally:
            conn.close()
        kinds = [type(s.segment).__name__ for s in segments]
        self.assertIn("SpooledSegment", kinds)
        spooled = [s.segment for s in segments if type(s.segment).__name__ == "SpooledSegment"]
        rows = sum(s.segment.metadata["rowsCount"] for s in segments)
        self.assertEqual(rows, len(self.fetch()))
        first = spooled[0]
        headers = {k: v[0] for k, v in first.headers.items()}
        self.assertEqual(requests.get(first.uri).status_code, 404, "the URI alone reaches nothing")
        data = requests.get(first.uri, headers=headers)
        self.assertEqual(data.status_code, 200)
        self.assertEqual(len(data.content), first.metadata["segmentSize"])
        self.assertEqual(requests.get(first.ack_uri, headers=headers).status_code, 200)
        self.assertEqual(requests.get(first.uri, headers=headers).status_code, 404, "acknowledged, it is deleted")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
