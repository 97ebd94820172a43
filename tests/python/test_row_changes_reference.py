"""DELETE, UPDATE and MERGE through SQE's Trino endpoint answer what DuckDB answers for the same
statements on the same rows: another engine as referee, where tests/tests/integration/
row_changes.rs models the expected rows itself.

A copy of TPC-H's orders (partitioned by status, several files per partition) goes through a
sequence of row-level changes: position deletes across files, updates of plain and partition
columns, a delete by subquery, a MERGE with a conditional delete, update and insert, a
whole-partition delete. After each statement the changed-row count and every row of the table
must be DuckDB's.

Run by tests/tests/integration/row_changes.rs against a cluster it started:
    python test_row_changes_reference.py <host> <port> <warehouse dir>
"""

import glob
import os
import sys
import unittest

import duckdb
import trino

HOST, PORT, WAREHOUSE = sys.argv[1], int(sys.argv[2]), sys.argv[3]

COLUMNS = "o_orderkey, o_custkey, o_orderstatus, o_totalprice, o_orderdate, o_orderpriority"

# Valid in both dialects; each one changes rows the ones before left.
STATEMENTS = [
    # Some rows of every file: position deletes.
    "DELETE FROM ref.orders WHERE o_totalprice < 20000",
    "UPDATE ref.orders SET o_orderpriority = '0-NONE', o_totalprice = o_totalprice + 1 "
    "WHERE o_custkey % 7 = 3",
    "DELETE FROM ref.orders WHERE o_custkey IN "
    "(SELECT c_custkey FROM tpch.customer WHERE c_nationkey = 5)",
    # Matched rows deleted or updated by condition, the ones deleted above inserted again.
    "MERGE INTO ref.orders AS t "
    "USING (SELECT o_orderkey AS k, o_custkey AS c, o_orderstatus AS s, o_totalprice AS p, "
    "o_orderdate AS d FROM tpch.orders WHERE o_orderkey % 5 = 0) AS src "
    "ON t.o_orderkey = src.k "
    "WHEN MATCHED AND t.o_orderstatus = 'O' AND src.p > 150000 THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET o_totalprice = t.o_totalprice * 2, o_orderpriority = 'merged' "
    "WHEN NOT MATCHED THEN INSERT VALUES (src.k, src.c, src.s, src.p, src.d, 'inserted')",
    "UPDATE ref.orders SET o_custkey = NULL WHERE o_orderdate < DATE '1993-01-01'",
    # Rows move between partitions.
    "UPDATE ref.orders SET o_orderstatus = 'P' WHERE o_orderkey % 11 = 0",
    # A whole partition.
    "DELETE FROM ref.orders WHERE o_orderstatus = 'F'",
    "DELETE FROM ref.orders WHERE o_custkey IS NULL AND o_orderpriority LIKE '1%'",
    "MERGE INTO ref.orders AS t USING tpch.customer AS c ON t.o_custkey = c.c_custkey "
    "WHEN MATCHED AND c.c_mktsegment = 'BUILDING' THEN UPDATE SET o_orderpriority = c.c_mktsegment",
]


def duckdb_reference():
    db = duckdb.connect()
    db.execute("CREATE SCHEMA tpch")
    db.execute("CREATE SCHEMA ref")
    for table in ["orders", "customer"]:
        files = sorted(glob.glob(os.path.join(WAREHOUSE, "tpch", table, "data", "*.parquet")))
        if not files:
            raise RuntimeError(f"no data files for {table} under {WAREHOUSE}")
        listed = ", ".join(f"'{f}'" for f in files)
        db.execute(f"CREATE VIEW tpch.{table} AS SELECT * FROM read_parquet([{listed}])")
    db.execute(f"CREATE TABLE ref.orders AS SELECT {COLUMNS} FROM tpch.orders")
    return db


class RowChangesAgainstDuckDB(unittest.TestCase):
    def setUp(self):
        self.conn = trino.dbapi.connect(
            host=HOST, port=PORT, user="tester", catalog="iceberg", schema="tpch"
        )
        self.sqe = self.conn.cursor()
        self.sqe.execute("CREATE SCHEMA IF NOT EXISTS ref")
        self.sqe.fetchall()
        self.sqe.execute("DROP TABLE IF EXISTS ref.orders")
        self.sqe.fetchall()
        # Two inserts of halves: several files in every partition.
        self.sqe.execute(
            "CREATE TABLE ref.orders WITH (partitioning = ARRAY['o_orderstatus'], format_version = 2) "
            f"AS SELECT {COLUMNS} FROM tpch.orders WHERE o_orderkey % 2 = 0"
        )
        self.sqe.fetchall()
        self.sqe.execute(
            f"INSERT INTO ref.orders SELECT {COLUMNS} FROM tpch.orders WHERE o_orderkey % 2 = 1"
        )
        self.sqe.fetchall()
        self.duck = duckdb_reference()

    def tearDown(self):
        self.conn.close()
        self.duck.close()

    def rows(self):
        order = "SELECT * FROM ref.orders ORDER BY o_orderkey"
        self.sqe.execute(order)
        ours = [list(row) for row in self.sqe.fetchall()]
        theirs = [list(row) for row in self.duck.execute(order).fetchall()]
        return ours, theirs

    def test_every_change_leaves_duckdbs_rows(self):
        ours, theirs = self.rows()
        self.assertEqual(len(ours), 15000)
        self.assertEqual(ours, theirs)
        files = self.sqe
        files.execute('SELECT count(*) FROM ref."orders$files"')
        self.assertGreater(files.fetchall()[0][0], 3, "several files in the partitions")
        for sql in STATEMENTS:
            with self.subTest(sql=sql):
                self.sqe.execute(sql)
                self.sqe.fetchall()
                changed = self.duck.execute(sql).fetchall()[0][0]
                self.assertEqual(self.sqe.rowcount, changed, sql)
                self.assertGreater(changed, 0, f"the sequence changes rows at every step: {sql}")
                ours, theirs = self.rows()
                self.assertEqual(len(ours), len(theirs), sql)
                differing = [(a, b) for a, b in zip(ours, theirs) if a != b]
                self.assertEqual(differing[:5], [], sql)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
