"""Metadata as Trino clients and BI tools read it: SHOW and DESCRIBE, information_schema,
system.jdbc and system.metadata, and SQLAlchemy's inspector (the dialect Superset uses).

Run by tests/tests/integration/trino_http.rs against a cluster it started:
    python test_trino_metadata.py <host> <port>
"""

import sys
import unittest

import sqlalchemy as sa
import trino
from trino.exceptions import TrinoUserError

HOST, PORT = sys.argv[1], int(sys.argv[2])

NATION = [
    ["n_nationkey", "bigint", "", ""],
    ["n_name", "varchar", "", ""],
    ["n_regionkey", "bigint", "", ""],
    ["n_comment", "varchar", "", ""],
]
TPCH_TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]


def run(cursor, sql):
    cursor.execute(sql)
    return cursor.fetchall()


class Show(unittest.TestCase):
    def setUp(self):
        self.cur = trino.dbapi.connect(host=HOST, port=PORT, user="tester", catalog="iceberg", schema="tpch").cursor()

    def test_catalogs_schemas_tables(self):
        self.assertEqual(run(self.cur, "SHOW CATALOGS"), [["iceberg"], ["system"], ["tpch"]])
        self.assertEqual([d[0] for d in self.cur.description], ["Catalog"])
        schemas = [r[0] for r in run(self.cur, "SHOW SCHEMAS")]
        self.assertIn("tpch", schemas)
        self.assertIn("information_schema", schemas)
        self.assertEqual(run(self.cur, "SHOW SCHEMAS FROM system LIKE 'j%'"), [["jdbc"]])
        self.assertEqual([r[0] for r in run(self.cur, "SHOW TABLES")], TPCH_TABLES)
        self.assertEqual(run(self.cur, "SHOW TABLES FROM iceberg.tpch LIKE 'n%'"), [["nation"]])
        with self.assertRaises(TrinoUserError) as error:
            run(self.cur, "SHOW TABLES FROM no_such_schema")
        self.assertEqual(error.exception.error_name, "SCHEMA_NOT_FOUND")
        with self.assertRaises(TrinoUserError) as error:
            run(self.cur, "SHOW SCHEMAS FROM no_such_catalog")
        self.assertEqual(error.exception.error_name, "CATALOG_NOT_FOUND")

    def test_columns(self):
        self.assertEqual(run(self.cur, "DESCRIBE nation"), NATION)
        self.assertEqual([d[0] for d in self.cur.description], ["Column", "Type", "Extra", "Comment"])
        self.assertEqual(run(self.cur, "SHOW COLUMNS FROM iceberg.tpch.nation"), NATION)
        self.assertIn(["o_totalprice", "decimal(15,2)", "", ""], run(self.cur, "DESCRIBE orders"))
        with self.assertRaises(TrinoUserError) as error:
            run(self.cur, "DESCRIBE no_such_table")
        self.assertEqual(error.exception.error_name, "TABLE_NOT_FOUND")

    def test_show_create_table_round_trips(self):
        run(self.cur, "CREATE SCHEMA IF NOT EXISTS metadata_demo")
        run(self.cur, "DROP TABLE IF EXISTS metadata_demo.events")
        run(
            self.cur,
            "CREATE TABLE metadata_demo.events (id bigint, kind varchar, at timestamp) "
            "WITH (partitioning = ARRAY['bucket(id, 4)', 'day(at)'])",
        )
        text = run(self.cur, "SHOW CREATE TABLE metadata_demo.events")[0][0]
        self.assertTrue(text.startswith("CREATE TABLE iceberg.metadata_demo.events (\n   id bigint,"), text)
        self.assertIn("partitioning = ARRAY['bucket(id, 4)','day(at)']", text)
        self.assertIn("format = 'PARQUET'", text)
        # The text it prints creates the same table again.
        run(self.cur, "DROP TABLE metadata_demo.events")
        run(self.cur, text)
        self.assertEqual(run(self.cur, "SHOW CREATE TABLE metadata_demo.events")[0][0], text)

    def test_functions_and_session(self):
        rows = run(self.cur, "SHOW FUNCTIONS LIKE 'abs'")
        self.assertEqual({r[0] for r in rows}, {"abs"})
        self.assertEqual({tuple(r[3:5]) for r in rows}, {("scalar", True)})
        # A row per signature, Trino's type names (return type, argument types).
        signatures = {(r[1], r[2]) for r in rows}
        for expected in [("bigint", "bigint"), ("integer", "integer"), ("double", "double"), ("decimal(p,s)", "decimal(p,s)")]:
            self.assertIn(expected, signatures)
        self.assertNotIn("varchar", {r[2] for r in rows})
        # Window functions that count are bigint, as SQE plans them.
        rank = run(self.cur, "SHOW FUNCTIONS LIKE 'rank'")
        self.assertEqual([(r[1], r[2]) for r in rank], [("bigint", "")])
        # A function SQE rewrites lists no types rather than the rewritten one's.
        year = run(self.cur, "SHOW FUNCTIONS LIKE 'year'")
        self.assertEqual([(r[1], r[2]) for r in year], [(None, None)])
        names = [r[0] for r in run(self.cur, "SHOW FUNCTIONS")]
        for expected in ["count", "sum", "row_number", "version", "current_timezone", "date_add", "date_diff", "year", "count_if", "max_by"]:
            self.assertIn(expected, names)
        self.assertEqual(names.count("cardinality"), 1, "a respelled DataFusion function listed twice")
        count_if = run(self.cur, "SHOW FUNCTIONS LIKE 'count_if'")
        self.assertEqual(count_if[0][3], "aggregate")
        session = {r[0]: r for r in run(self.cur, "SHOW SESSION")}
        self.assertEqual(
            sorted(session),
            [
                "distributed_execution",
                "exchange_compression_codec",
                "expire_snapshots_min_retention",
                "join_distribution_type",
                "join_reordering_strategy",
                "query_max_run_time",
                "query_priority",
                "query_retry_attempts",
                "remove_orphan_files_min_retention",
                "retry_policy",
                "task_concurrency",
            ],
        )
        self.assertEqual(session["distributed_execution"][1:4], ["true", "true", "boolean"])
        self.assertEqual(session["retry_policy"][1:4], ["NONE", "NONE", "varchar"])
        self.assertEqual(session["query_retry_attempts"][1:4], ["4", "4", "integer"])
        self.assertEqual(session["exchange_compression_codec"][1:4], ["NONE", "NONE", "varchar"])
        self.assertEqual(session["join_reordering_strategy"][1:4], ["AUTOMATIC", "AUTOMATIC", "varchar"])


class MetadataTables(unittest.TestCase):
    def setUp(self):
        self.cur = trino.dbapi.connect(host=HOST, port=PORT, user="tester", catalog="iceberg", schema="tpch").cursor()

    def test_information_schema(self):
        tables = run(
            self.cur,
            "SELECT table_catalog, table_name, table_type FROM information_schema.tables "
            "WHERE table_schema = 'tpch' ORDER BY 2",
        )
        self.assertEqual(tables, [["iceberg", t, "BASE TABLE"] for t in TPCH_TABLES])
        columns = run(
            self.cur,
            "SELECT column_name, data_type, is_nullable, ordinal_position FROM information_schema.columns "
            "WHERE table_schema = 'tpch' AND table_name = 'nation' ORDER BY ordinal_position",
        )
        self.assertEqual(columns, [[c, t, "NO", i + 1] for i, (c, t, _, _) in enumerate(NATION)])
        self.assertIn(["iceberg", "tpch"], run(self.cur, "SELECT * FROM information_schema.schemata"))
        self.assertEqual(run(self.cur, "SELECT count(*) FROM information_schema.views"), [[0]])
        # Every catalog has its own.
        self.assertIn(
            ["jdbc", "columns"],
            run(self.cur, "SELECT table_schema, table_name FROM system.information_schema.tables"),
        )

    def test_system_jdbc(self):
        self.assertEqual(
            run(self.cur, "SELECT * FROM system.jdbc.catalogs ORDER BY 1"), [["iceberg"], ["system"], ["tpch"]]
        )
        self.assertIn(["tpch", "iceberg"], run(self.cur, "SELECT * FROM system.jdbc.schemas"))
        tables = run(
            self.cur,
            "SELECT table_cat, table_schem, table_name, table_type FROM system.jdbc.tables "
            "WHERE table_schem = 'tpch' ORDER BY table_name",
        )
        self.assertEqual(tables, [["iceberg", "tpch", t, "TABLE"] for t in TPCH_TABLES])
        columns = run(
            self.cur,
            "SELECT column_name, data_type, type_name, column_size, decimal_digits, nullable, ordinal_position "
            "FROM system.jdbc.columns WHERE table_cat = 'iceberg' AND table_schem = 'tpch' AND table_name = 'orders' "
            "AND column_name IN ('o_orderkey', 'o_totalprice', 'o_orderdate', 'o_comment') ORDER BY ordinal_position",
        )
        self.assertEqual(
            columns,
            [
                ["o_orderkey", -5, "bigint", 19, 0, 0, 1],
                ["o_totalprice", 3, "decimal(15,2)", 15, 2, 0, 4],
                ["o_orderdate", 91, "date", 10, None, 0, 5],
                ["o_comment", 12, "varchar", None, None, 0, 9],
            ],
        )
        self.assertEqual(len(self.cur.description), 7)
        types = {r[0]: r[1] for r in run(self.cur, "SELECT type_name, data_type FROM system.jdbc.types")}
        self.assertEqual(types["bigint"], -5)
        self.assertEqual(types["varchar"], 12)
        self.assertEqual(run(self.cur, "SELECT * FROM system.jdbc.table_types ORDER BY 1"), [["TABLE"], ["VIEW"]])
        for empty in ["attributes", "procedures", "procedure_columns", "pseudo_columns", "super_tables", "super_types", "udts"]:
            self.assertEqual(run(self.cur, f"SELECT count(*) FROM system.jdbc.{empty}"), [[0]], empty)

    def test_system_metadata(self):
        self.assertEqual(
            run(self.cur, "SELECT catalog_name, connector_name FROM system.metadata.catalogs ORDER BY 1"),
            [["iceberg", "iceberg"], ["system", "system"], ["tpch", "tpch"]],
        )
        self.assertEqual(
            run(
                self.cur,
                "SELECT table_name, comment FROM system.metadata.table_comments "
                "WHERE catalog_name = 'iceberg' AND schema_name = 'tpch' AND table_name = 'region'",
            ),
            [["region", None]],
        )

    def test_dbt_lists_relations(self):
        # dbt-trino's relation listing, before every seed, run and test.
        listed = run(
            self.cur,
            """
            SELECT t.table_catalog AS database, t.table_name AS name, t.table_schema AS schema,
                   CASE WHEN mv.name IS NOT NULL THEN 'materialized_view'
                        WHEN t.table_type = 'BASE TABLE' THEN 'table'
                        WHEN t.table_type = 'VIEW' THEN 'view'
                        ELSE t.table_type END AS table_type
            FROM iceberg.information_schema.tables t
            LEFT JOIN (SELECT * FROM system.metadata.materialized_views
                       WHERE catalog_name = 'iceberg' AND schema_name = 'tpch') mv
              ON mv.catalog_name = t.table_catalog AND mv.schema_name = t.table_schema
             AND mv.name = t.table_name
            WHERE t.table_schema = 'tpch' AND t.table_name = 'nation'
            """,
        )
        self.assertEqual(listed, [["iceberg", "nation", "tpch", "table"]])

    def test_property_tables(self):
        properties = run(
            self.cur,
            "SELECT property_name, default_value, type FROM system.metadata.table_properties "
            "WHERE catalog_name = 'iceberg' ORDER BY 1",
        )
        self.assertEqual(
            properties,
            [
                ["format", "PARQUET", "varchar"],
                ["format_version", "2", "integer"],
                ["location", "", "varchar"],
                ["partitioning", "[]", "array(varchar)"],
                ["sorted_by", "[]", "array(varchar)"],
            ],
        )
        for empty in ["schema_properties", "column_properties", "analyze_properties", "materialized_view_properties"]:
            self.assertEqual(
                run(self.cur, f"SELECT catalog_name, property_name, default_value, type, description FROM system.metadata.{empty}"),
                [],
                empty,
            )

    def test_system_catalog_is_read_only(self):
        with self.assertRaises(TrinoUserError) as error:
            run(self.cur, "CREATE TABLE system.jdbc.mine (id bigint)")
        self.assertEqual(error.exception.error_name, "NOT_SUPPORTED")


class SqlAlchemy(unittest.TestCase):
    def setUp(self):
        self.engine = sa.create_engine(f"trino://tester@{HOST}:{PORT}/iceberg/tpch")

    def tearDown(self):
        self.engine.dispose()

    def test_inspector(self):
        inspector = sa.inspect(self.engine)
        self.assertIn("tpch", inspector.get_schema_names())
        self.assertEqual(inspector.get_table_names("tpch"), TPCH_TABLES)
        self.assertTrue(inspector.has_table("nation", schema="tpch"))
        self.assertFalse(inspector.has_table("no_such_table", schema="tpch"))
        self.assertEqual(inspector.get_view_names("tpch"), [])
        columns = inspector.get_columns("orders", schema="tpch")
        by_name = {c["name"]: c for c in columns}
        self.assertEqual(len(columns), 9)
        self.assertIsInstance(by_name["o_orderkey"]["type"], sa.BigInteger)
        self.assertIsInstance(by_name["o_totalprice"]["type"], sa.DECIMAL)
        self.assertEqual((by_name["o_totalprice"]["type"].precision, by_name["o_totalprice"]["type"].scale), (15, 2))
        self.assertIsInstance(by_name["o_orderdate"]["type"], sa.Date)
        self.assertFalse(by_name["o_orderkey"]["nullable"])
        self.assertEqual(inspector.get_table_comment("nation", schema="tpch"), {"text": None})
        self.assertIn("iceberg", self.engine.dialect.get_catalog_names(self.engine.connect()))

    def test_reflected_table_and_bound_parameters(self):
        with self.engine.connect() as conn:
            region = sa.Table("region", sa.MetaData(), autoload_with=conn, schema="tpch")
            self.assertEqual([c.name for c in region.columns], ["r_regionkey", "r_name", "r_comment"])
            rows = conn.execute(
                sa.select(region.c.r_name).where(region.c.r_regionkey < 2).order_by(region.c.r_name)
            ).fetchall()
            self.assertEqual([r[0] for r in rows], ["AFRICA", "AMERICA"])
            text = sa.text("SELECT count(*) FROM nation WHERE n_regionkey = :r AND n_name LIKE :p")
            self.assertEqual(conn.execute(text, {"r": 1, "p": "%A%"}).scalar(), 4)
            self.assertIsNotNone(self.engine.dialect.server_version_info)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
