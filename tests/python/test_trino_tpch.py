"""Trino's `tpch` catalog through the Python `trino` client, as its own tests and Trino users
use it: schemas per scale factor, Trino's column names and types, Trino's answers, read-only,
and `CREATE TABLE ... AS SELECT ... FROM tpch...` to load data into Iceberg.

Run by tests/tests/integration/trino_http.rs against a cluster it started:
    python test_trino_tpch.py <host> <port>
"""

import datetime
import sys
import unittest

import trino
from trino.exceptions import TrinoUserError

HOST, PORT = sys.argv[1], int(sys.argv[2])

TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]

# What Trino's connector answers for the tiny schema (scale factor 0.01).
TINY_ROWS = {
    "region": 5,
    "nation": 25,
    "supplier": 100,
    "customer": 1500,
    "part": 2000,
    "partsupp": 8000,
    "orders": 15000,
    "lineitem": 60175,
}

# DESCRIBE tpch.tiny.<table> in Trino (column naming SIMPLIFIED, money as double).
NATION = [
    ["nationkey", "bigint", "", ""],
    ["name", "varchar(25)", "", ""],
    ["regionkey", "bigint", "", ""],
    ["comment", "varchar(152)", "", ""],
]
LINEITEM = [
    ["orderkey", "bigint", "", ""],
    ["partkey", "bigint", "", ""],
    ["suppkey", "bigint", "", ""],
    ["linenumber", "integer", "", ""],
    ["quantity", "double", "", ""],
    ["extendedprice", "double", "", ""],
    ["discount", "double", "", ""],
    ["tax", "double", "", ""],
    ["returnflag", "varchar(1)", "", ""],
    ["linestatus", "varchar(1)", "", ""],
    ["shipdate", "date", "", ""],
    ["commitdate", "date", "", ""],
    ["receiptdate", "date", "", ""],
    ["shipinstruct", "varchar(25)", "", ""],
    ["shipmode", "varchar(10)", "", ""],
    ["comment", "varchar(44)", "", ""],
]


def run(cursor, sql):
    cursor.execute(sql)
    return cursor.fetchall()


class Tpch(unittest.TestCase):
    def setUp(self):
        self.conn = trino.dbapi.connect(host=HOST, port=PORT, user="tester", catalog="tpch", schema="tiny")
        self.cur = self.conn.cursor()

    def tearDown(self):
        self.conn.close()

    def test_schemas_are_scale_factors(self):
        schemas = [r[0] for r in run(self.cur, "SHOW SCHEMAS FROM tpch")]
        for listed in ["information_schema", "tiny", "sf1", "sf100", "sf1000"]:
            self.assertIn(listed, schemas)
        self.assertEqual([r[0] for r in run(self.cur, "SHOW TABLES")], TABLES)
        # Any scale factor answers, listed or not.
        self.assertEqual(run(self.cur, 'SELECT count(*) FROM tpch."sf0.02".region'), [[5]])
        with self.assertRaises(TrinoUserError) as error:
            run(self.cur, "SELECT * FROM tpch.big.nation")
        self.assertIn(error.exception.error_name, ["SCHEMA_NOT_FOUND", "TABLE_NOT_FOUND"])

    def test_trino_names_and_types(self):
        self.assertEqual(run(self.cur, "DESCRIBE nation"), NATION)
        self.assertEqual(run(self.cur, "DESCRIBE tpch.sf1.lineitem"), LINEITEM)
        row = run(self.cur, "SELECT custkey, name, acctbal FROM customer WHERE custkey = 1")
        self.assertEqual(row, [[1, "Customer#000000001", 711.56]])
        self.assertEqual([d[1] for d in self.cur.description], ["bigint", "varchar(25)", "double"])
        self.assertEqual(self.cur.description[1][3], 25)
        date = run(self.cur, "SELECT orderdate FROM orders WHERE orderkey = 1")[0][0]
        self.assertIsInstance(date, datetime.date)

    def test_tiny_answers_as_trino_does(self):
        for table, rows in TINY_ROWS.items():
            self.assertEqual(run(self.cur, f"SELECT count(*) FROM {table}"), [[rows]], table)
        self.assertEqual(run(self.cur, "SELECT name FROM nation WHERE nationkey = 0"), [["ALGERIA"]])
        self.assertEqual(
            run(self.cur, "SELECT r.name FROM region r JOIN nation n ON n.regionkey = r.regionkey WHERE n.name = 'JAPAN'"),
            [["ASIA"]],
        )
        # Iceberg sample tables at the same scale factor hold the same rows (prefixed, decimal).
        differing = run(
            self.cur,
            "SELECT count(*) FROM (SELECT orderkey, linenumber, extendedprice, shipdate FROM tpch.tiny.lineitem "
            "EXCEPT SELECT l_orderkey, l_linenumber, CAST(l_extendedprice AS double), l_shipdate "
            "FROM iceberg.tpch.lineitem)",
        )
        self.assertEqual(differing, [[0]])

    def test_read_only(self):
        for statement in [
            "CREATE TABLE tpch.tiny.t (a integer)",
            "INSERT INTO tpch.tiny.region VALUES (9, 'MARS', 'red')",
            "DROP TABLE tpch.tiny.nation",
            "CREATE SCHEMA tpch.mine",
        ]:
            with self.assertRaises(TrinoUserError, msg=statement) as error:
                run(self.cur, statement)
            self.assertEqual(error.exception.error_name, "NOT_SUPPORTED", statement)
        self.assertEqual(run(self.cur, "SELECT count(*) FROM region"), [[5]])

    def test_load_iceberg_from_tpch(self):
        cur = self.cur
        run(cur, "CREATE SCHEMA IF NOT EXISTS iceberg.loaded")
        try:
            created = run(cur, "CREATE TABLE iceberg.loaded.customer AS SELECT * FROM tpch.tiny.customer")
            self.assertEqual(created, [[1500]])
            self.assertEqual(
                run(
                    cur,
                    "SELECT n.name, count(*) FROM iceberg.loaded.customer c JOIN tpch.tiny.nation n "
                    "ON c.nationkey = n.nationkey WHERE n.name = 'ALGERIA' GROUP BY n.name",
                ),
                run(
                    cur,
                    "SELECT n.name, count(*) FROM tpch.tiny.customer c JOIN tpch.tiny.nation n "
                    "ON c.nationkey = n.nationkey WHERE n.name = 'ALGERIA' GROUP BY n.name",
                ),
            )
            columns = [r[0] for r in run(cur, "DESCRIBE iceberg.loaded.customer")]
            self.assertEqual(columns[:3], ["custkey", "name", "address"])
        finally:
            run(cur, "DROP SCHEMA iceberg.loaded CASCADE")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
