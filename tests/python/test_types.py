"""Every Trino type SQE supports, round-tripped as a client sees it: through the Trino endpoint
(the Python `trino` client's values and type names), through Flight SQL (ADBC: Arrow types
and values), and stored in an Iceberg column and read back (the type Trino's Iceberg
connector stores it as). The expectations are Trino's documentation's, and what the
trino-python-client's own type tests expect of a Trino server.

Run by tests/tests/integration/types.rs against a cluster it started:
    python test_types.py <trino host> <trino port> <flight sql uri>
"""

import datetime
import decimal
import math
import sys
import unittest
import uuid
import warnings
from zoneinfo import ZoneInfo

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa
import trino
from dateutil.relativedelta import relativedelta
from trino.exceptions import TrinoUserError

HOST, PORT, FLIGHT = sys.argv[1], int(sys.argv[2]), sys.argv[3]

warnings.filterwarnings("ignore", message="Cannot disable autocommit")

D = decimal.Decimal
UTC = datetime.timezone.utc


def tz(hours, minutes=0):
    return datetime.timezone(datetime.timedelta(hours=hours, minutes=minutes))


NAN = object()  # NaN equals nothing; compared with math.isnan

# One row per Trino type: its values as SQL literals with the Python value the trino client
# gives for each, the Arrow type ADBC sees, and the type of an Iceberg column made from it
# (None: Iceberg has no such type, and the CTAS is refused).
MATRIX = [
    ("boolean", [("true", True), ("false", False), ("CAST(NULL AS BOOLEAN)", None)], pa.bool_(), "boolean"),
    ("tinyint", [("CAST(-128 AS TINYINT)", -128), ("CAST(127 AS TINYINT)", 127)], pa.int8(), "integer"),
    ("smallint", [("CAST(-32768 AS SMALLINT)", -32768), ("SMALLINT '32767'", 32767)], pa.int16(), "integer"),
    # (`-2147483648` alone is `bigint`, as in Trino: the minus applies to 2147483648.)
    ("integer", [("CAST(-2147483648 AS INTEGER)", -2147483648), ("2147483647", 2147483647), ("CAST(NULL AS INTEGER)", None)], pa.int32(), "integer"),
    (
        "bigint",
        [("CAST(-9223372036854775808 AS BIGINT)", -9223372036854775808), ("9223372036854775807", 9223372036854775807)],
        pa.int64(),
        "bigint",
    ),
    (
        "real",
        [
            ("CAST(3.4028235E38 AS REAL)", 3.4028235e38),
            ("CAST(1.4E-45 AS REAL)", 1.4e-45),
            ("CAST('Infinity' AS REAL)", math.inf),
            ("CAST('NaN' AS REAL)", NAN),
        ],
        pa.float32(),
        "real",
    ),
    (
        "double",
        [
            ("CAST(1.7976931348623157E308 AS DOUBLE)", 1.7976931348623157e308),
            ("CAST(4.9E-324 AS DOUBLE)", 5e-324),
            ("CAST('-Infinity' AS DOUBLE)", -math.inf),
            ("CAST('NaN' AS DOUBLE)", NAN),
        ],
        pa.float64(),
        "double",
    ),
    ("decimal(3, 1)", [("DECIMAL '10.3'", D("10.3")), ("DECIMAL '-10.3'", D("-10.3"))], pa.decimal128(3, 1), "decimal(3, 1)"),
    (
        "decimal(38, 38)",
        [("CAST('0.3123' AS DECIMAL(38,38))", D("0.3123")), ("DECIMAL '0.99999999999999999999999999999999999999'", D("0.99999999999999999999999999999999999999"))],
        pa.decimal128(38, 38),
        "decimal(38, 38)",
    ),
    ("decimal(18, 4)", [("CAST('234.123456789123456789' AS DECIMAL(18,4))", D("234.1235"))], pa.decimal128(18, 4), "decimal(18, 4)"),
    ("varchar(3)", [("'aaa'", "aaa"), ("'😂é '", "😂é ")], pa.string(), "varchar"),
    ("varchar(16)", [("U&'Hello winter \\2603 !'", "Hello winter ☃ !")], pa.string(), "varchar"),
    ("varchar(1)", [("CAST('bbb' AS VARCHAR(1))", "b"), ("CAST(NULL AS VARCHAR(1))", None)], pa.string(), "varchar"),
    ("char(5)", [("CAST('ccc' AS CHAR(5))", "ccc  ")], pa.string(), "varchar"),
    ("char(1)", [("CAST('😂' AS CHAR(1))", "😂"), ("CAST('ddd' AS CHAR)", "d")], pa.string(), "varchar"),
    ("varbinary", [("X'65683F'", b"eh?"), ("X''", b""), ("CAST('' AS VARBINARY)", b"")], pa.binary(), "varbinary"),
    (
        "date",
        [
            ("DATE '0001-01-01'", datetime.date(1, 1, 1)),
            ("DATE '1582-10-04'", datetime.date(1582, 10, 4)),
            ("DATE '1952-04-03'", datetime.date(1952, 4, 3)),
            ("DATE '9999-12-31'", datetime.date(9999, 12, 31)),
        ],
        pa.date32(),
        "date",
    ),
    ("time(0)", [("TIME '23:59:59'", datetime.time(23, 59, 59))], pa.time32("s"), "time(6)"),
    ("time(3)", [("TIME '12:34:56.123'", datetime.time(12, 34, 56, 123000))], pa.time32("ms"), "time(6)"),
    ("time(6)", [("TIME '00:00:00.000001'", datetime.time(0, 0, 0, 1))], pa.time64("us"), "time(6)"),
    (
        "timestamp(0)",
        [("TIMESTAMP '2001-08-22 03:04:05'", datetime.datetime(2001, 8, 22, 3, 4, 5))],
        pa.timestamp("s"),
        "timestamp(6)",
    ),
    (
        "timestamp(3)",
        [
            ("TIMESTAMP '2001-08-22 12:34:56.123'", datetime.datetime(2001, 8, 22, 12, 34, 56, 123000)),
            ("TIMESTAMP '0001-01-01 01:23:45.123'", datetime.datetime(1, 1, 1, 1, 23, 45, 123000)),
            ("TIMESTAMP '1582-10-04 01:23:45.123'", datetime.datetime(1582, 10, 4, 1, 23, 45, 123000)),
        ],
        pa.timestamp("ms"),
        "timestamp(6)",
    ),
    (
        "timestamp(6)",
        [("TIMESTAMP '9999-12-31 23:59:59.999999'", datetime.datetime(9999, 12, 31, 23, 59, 59, 999999))],
        pa.timestamp("us"),
        "timestamp(6)",
    ),
    (
        "timestamp(3) with time zone",
        [
            ("TIMESTAMP '2001-08-22 12:34:56.123 -08:00'", datetime.datetime(2001, 8, 22, 12, 34, 56, 123000, tzinfo=tz(-8))),
            ("TIMESTAMP '2001-08-22 12:34:56.123 +05:30'", datetime.datetime(2001, 8, 22, 12, 34, 56, 123000, tzinfo=tz(5, 30))),
        ],
        None,  # one zone per column in Arrow: each literal keeps its own, checked alone below
        "timestamp(6) with time zone",
    ),
    (
        "timestamp(3) with time zone",
        [("TIMESTAMP '2001-08-22 12:34:56.123 Asia/Kolkata'", datetime.datetime(2001, 8, 22, 12, 34, 56, 123000, tzinfo=ZoneInfo("Asia/Kolkata")))],
        pa.timestamp("ms", tz="Asia/Kolkata"),
        "timestamp(6) with time zone",
    ),
    (
        "interval year to month",
        [
            ("INTERVAL '10' YEAR", relativedelta(years=10)),
            ("INTERVAL '-18' MONTH", relativedelta(years=-1, months=-6)),
            ("INTERVAL '178956970-7' YEAR TO MONTH", relativedelta(years=178956970, months=7)),
        ],
        None,  # pyarrow reads no year-month intervals
        None,
    ),
    (
        "interval day to second",
        [
            ("INTERVAL '2' DAY", datetime.timedelta(days=2)),
            ("INTERVAL '1 11:11:11.116555' DAY TO SECOND", datetime.timedelta(days=1, seconds=40271, microseconds=116000)),
            ("INTERVAL '-5 23:59:57.000' DAY TO SECOND", datetime.timedelta(days=-6, seconds=3)),
            ("INTERVAL '45:32.123' MINUTE TO SECOND", datetime.timedelta(seconds=2732, microseconds=123000)),
        ],
        None,  # pyarrow reads no day-time intervals
        None,
    ),
    # The python client gives json as its text; Iceberg has no json type (nor does Trino's
    # Iceberg connector), so a CTAS of one is refused.
    (
        "json",
        [
            ("CAST('{}' AS JSON)", '"{}"'),
            ("CAST('a \" complex '' string :' AS JSON)", '"a \\" complex \' string :"'),
            ("JSON '{\"b\": [1, 2.5], \"a\": null}'", '{"a":null,"b":[1,2.5]}'),
            ("CAST(NULL AS JSON)", None),
        ],
        pa.string(),
        None,
    ),
    # 16 bytes, Arrow's canonical uuid extension for ADBC, Iceberg's uuid in a table.
    (
        "uuid",
        [
            ("UUID '12151fd2-7586-11e9-8f9e-2a86e4085a59'", uuid.UUID("12151fd2-7586-11e9-8f9e-2a86e4085a59")),
            ("CAST('0E984725-C51C-4BF4-9960-E1C80E27ABA0' AS UUID)", uuid.UUID("0e984725-c51c-4bf4-9960-e1c80e27aba0")),
            ("CAST(NULL AS UUID)", None),
        ],
        pa.uuid(),
        "uuid",
    ),
    # IPv6, IPv4 held IPv4-mapped; the python client gives the text. ADBC reads its 16 bytes
    # (Arrow has no IP address type); Iceberg has no such type (nor does Trino's connector).
    (
        "ipaddress",
        [
            ("IPADDRESS '2001:db8::1'", "2001:db8::1"),
            ("CAST('10.0.0.1' AS IPADDRESS)", "10.0.0.1"),
            ("CAST(NULL AS IPADDRESS)", None),
        ],
        None,
        None,
    ),
    ("array(integer)", [("ARRAY[1, 2, NULL]", [1, 2, None]), ("CAST(NULL AS ARRAY(INTEGER))", None)], pa.list_(pa.int32()), "array(integer)"),
    ("array(varbinary)", [("ARRAY[X'01', NULL]", [b"\x01", None])], pa.list_(pa.binary()), "array(varbinary)"),
    # Trino types these literals array(array(varchar(1))) and map(varchar(1), integer); SQE
    # reports no lengths inside arrays, maps and rows (docs/sql.md), so they are cast here.
    (
        "array(array(varchar))",
        [("CAST(ARRAY[ARRAY['a'], ARRAY['b', 'c']] AS ARRAY(ARRAY(VARCHAR)))", [["a"], ["b", "c"]])],
        pa.list_(pa.list_(pa.string())),
        "array(array(varchar))",
    ),
    (
        "map(varchar, integer)",
        [("CAST(MAP(ARRAY['a', 'b'], ARRAY[1, 2]) AS MAP(VARCHAR, INTEGER))", {"a": 1, "b": 2})],
        None,
        "map(varchar, integer)",
    ),
    (
        "row(x bigint, y double)",
        [("CAST(ROW(1, 2e0) AS ROW(x BIGINT, y DOUBLE))", (1, 2.0))],
        pa.struct([("x", pa.int64()), ("y", pa.float64())]),
        "row(x bigint, y double)",
    ),
]

# Literals whose precision is more than the type they are cast to: Trino rounds, half up.
ROUNDED = [
    ("CAST(TIMESTAMP '2001-08-22 12:34:56.1239' AS TIMESTAMP(3))", "timestamp(3)", datetime.datetime(2001, 8, 22, 12, 34, 56, 124000)),
    ("CAST(TIMESTAMP '2001-08-22 23:59:59.9999995' AS TIMESTAMP(6))", "timestamp(6)", datetime.datetime(2001, 8, 23)),
    ("CAST(TIME '23:59:59.9999' AS TIME(3))", "time(3)", datetime.time(0, 0)),
    ("CAST(TIMESTAMP '1969-12-31 23:59:59.1234' AS TIMESTAMP(3))", "timestamp(3)", datetime.datetime(1969, 12, 31, 23, 59, 59, 123000)),
]

# Types SQE does not have (docs/sql.md lists them): refused by name, never a different value.
NOT_SUPPORTED = [
    "CAST(NULL AS TIME WITH TIME ZONE)",
    "TIME '12:34:56.123 -08:00'",
    "TIMESTAMP '2001-08-22 00:00:00.000000000001'",
]


def same(actual, expected):
    if expected is NAN:
        return isinstance(actual, float) and math.isnan(actual)
    if isinstance(expected, tuple):
        # The trino client's rows are named tuples.
        return isinstance(actual, tuple) and tuple(actual) == expected
    if isinstance(expected, datetime.datetime) and expected.tzinfo is not None:
        return actual == expected and actual.utcoffset() == expected.utcoffset()
    return actual == expected and type(actual) is type(expected)


def select(cases):
    return "SELECT " + ", ".join(f"{sql} AS c{i}" for i, (sql, _) in enumerate(cases))


class Types(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.trino = trino.dbapi.connect(host=HOST, port=PORT, user="tester", catalog="iceberg", schema="default")
        cls.flight = flight_sql.connect(FLIGHT)
        cur = cls.trino.cursor()
        cur.execute("CREATE SCHEMA IF NOT EXISTS iceberg.type_matrix")
        cur.fetchall()

    @classmethod
    def tearDownClass(cls):
        cur = cls.trino.cursor()
        cur.execute("DROP SCHEMA iceberg.type_matrix CASCADE")
        cur.fetchall()
        cls.trino.close()
        cls.flight.close()

    def trino_rows(self, sql):
        cur = self.trino.cursor()
        cur.execute(sql)
        return cur.fetchall(), [d[1] for d in cur.description]

    def test_through_the_trino_endpoint(self):
        for type_name, cases, _, _ in MATRIX:
            with self.subTest(type=type_name):
                rows, types = self.trino_rows(select(cases))
                self.assertEqual(types, [type_name] * len(cases))
                for (sql, expected), actual in zip(cases, rows[0]):
                    self.assertTrue(same(actual, expected), f"{sql}: {actual!r}, expected {expected!r}")

    def test_through_flight_sql(self):
        for type_name, cases, arrow_type, _ in MATRIX:
            if arrow_type is None:
                continue
            with self.subTest(type=type_name):
                with self.flight.cursor() as cur:
                    cur.execute(select(cases))
                    table = cur.fetch_arrow_table()
                for i, (sql, expected) in enumerate(cases):
                    self.assertEqual(table.schema.field(i).type, arrow_type, sql)
                    actual = table.column(i)[0].as_py()
                    if arrow_type == pa.float32() and expected is not NAN:
                        # A real read as Python's double: compare at the real's precision.
                        expected = pa.scalar(expected, pa.float32()).as_py()
                    if isinstance(expected, dict):
                        actual = dict(actual)
                    if isinstance(expected, tuple):
                        actual = tuple(actual.values())
                    self.assertTrue(same(actual, expected), f"{sql}: {actual!r}, expected {expected!r}")

    def test_stored_in_iceberg(self):
        for n, (type_name, cases, _, stored) in enumerate(MATRIX):
            with self.subTest(type=type_name):
                table = f"iceberg.type_matrix.t{n}"
                if stored is None:
                    with self.assertRaises(TrinoUserError) as refused:
                        self.trino_rows(f"CREATE TABLE {table} AS {select(cases)}")
                    self.assertEqual(refused.exception.error_name, "NOT_SUPPORTED")
                    self.assertIn(type_name, refused.exception.message)
                    continue
                self.trino_rows(f"CREATE TABLE {table} AS {select(cases)}")
                rows, types = self.trino_rows(f"SELECT * FROM {table}")
                self.assertEqual(types, [stored] * len(cases))
                for (sql, expected), actual in zip(cases, rows[0]):
                    if isinstance(expected, datetime.datetime) and expected.tzinfo is not None:
                        # Iceberg keeps the instant; Trino reads it back in UTC.
                        expected = expected.astimezone(ZoneInfo("UTC"))
                    if isinstance(expected, datetime.time) and isinstance(actual, datetime.time):
                        self.assertEqual(actual, expected, sql)
                        continue
                    self.assertTrue(same(actual, expected), f"{sql}: {actual!r}, expected {expected!r}")

    def test_precision_lowered_rounds(self):
        for sql, type_name, expected in ROUNDED:
            with self.subTest(sql=sql):
                rows, types = self.trino_rows(f"SELECT {sql}")
                self.assertEqual(types, [type_name])
                self.assertEqual(rows[0][0], expected)
        # A time(9) stored in Iceberg (microseconds) rounds too.
        self.trino_rows("CREATE TABLE iceberg.type_matrix.nanos AS SELECT TIME '12:34:56.1234567' AS t, TIMESTAMP '2001-08-22 12:34:56.1234565' AS ts")
        rows, types = self.trino_rows("SELECT t, ts FROM iceberg.type_matrix.nanos")
        self.assertEqual(types, ["time(6)", "timestamp(6)"])
        self.assertEqual(rows, [[datetime.time(12, 34, 56, 123457), datetime.datetime(2001, 8, 22, 12, 34, 56, 123457)]])

    def run_statement(self, sql):
        cur = self.trino.cursor()
        cur.execute(sql)
        cur.fetchall()

    def test_uuid_columns(self):
        known = uuid.UUID("12151fd2-7586-11e9-8f9e-2a86e4085a59")
        self.run_statement("CREATE TABLE iceberg.type_matrix.ids (id uuid, n integer)")
        self.run_statement(f"INSERT INTO iceberg.type_matrix.ids VALUES (UUID '{known}', 1), (uuid(), 2), (NULL, 3)")
        rows, types = self.trino_rows(f"SELECT id, n FROM iceberg.type_matrix.ids WHERE id = UUID '{known}'")
        self.assertEqual((rows, types), ([[known, 1]], ["uuid", "integer"]))
        rows, _ = self.trino_rows("SELECT n, CAST(id AS varchar) FROM iceberg.type_matrix.ids ORDER BY n")
        self.assertEqual([r[0] for r in rows], [1, 2, 3])
        self.assertEqual(rows[0][1], str(known))
        self.assertRegex(rows[1][1], "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        self.assertIsNone(rows[2][1])
        self.run_statement("ALTER TABLE iceberg.type_matrix.ids ADD COLUMN other uuid")
        described, _ = self.trino_rows("DESCRIBE iceberg.type_matrix.ids")
        self.assertEqual([(r[0], r[1]) for r in described], [("id", "uuid"), ("n", "integer"), ("other", "uuid")])

    def test_unsupported_types_are_refused_by_name(self):
        for sql in NOT_SUPPORTED:
            with self.subTest(sql=sql):
                with self.assertRaises(TrinoUserError) as refused:
                    self.trino_rows(f"SELECT {sql}")
                self.assertEqual(refused.exception.error_name, "NOT_SUPPORTED")
        with self.assertRaises(TrinoUserError) as refused:
            self.trino_rows("SELECT CAST(42 AS VARBINARY)")
        self.assertEqual(refused.exception.error_name, "TYPE_MISMATCH")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
