"""Tables written by another engine (pyiceberg) through the same REST catalog and S3 store read
back through SQE exactly as pyiceberg reads them: partition transforms (identity, bucket, day,
month, year), schema evolution by field id (a renamed and an added column), rows deleted by
rewriting their files, and rows deleted by position-delete files (merge-on-read); and SQE's own
DELETEs, UPDATEs and schema changes on pyiceberg's tables read back in pyiceberg exactly as SQE
reads them.

Usage: test_pyiceberg_interop.py <trino host> <trino port> <namespace> <stack dir>
The stack's settings come from <stack dir>/stack.env (scripts/stack.sh).
"""

import datetime
import os
import re
import sys
import unittest
import uuid
import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import trino
from pyiceberg.catalog import load_catalog
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestContent, ManifestWriterV2
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _FastAppendFiles
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, MonthTransform, YearTransform
from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType, TimestampType

HOST, PORT, NAMESPACE, STACK_DIR = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


def stack_settings():
    with open(os.path.join(STACK_DIR, "stack.env")) as f:
        return dict(line.strip().split("=", 1) for line in f if "=" in line)


STACK = stack_settings()
CATALOG = load_catalog(
    "stack",
    **{
        "type": "rest",
        "uri": STACK["SQE_CATALOG__CATALOG_URL"],
        "s3.endpoint": STACK["SQE_STORAGE__S3_ENDPOINT"],
        "s3.access-key-id": STACK["SQE_STORAGE__S3_ACCESS_KEY_ID"],
        "s3.secret-access-key": STACK["SQE_STORAGE__S3_SECRET_ACCESS_KEY"],
        "s3.region": STACK["SQE_STORAGE__S3_REGION"],
    },
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestampType(), required=False),
    NestedField(3, "category", StringType(), required=False),
    NestedField(4, "amount", DoubleType(), required=False),
)
ARROW = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us"), nullable=True),
        pa.field("category", pa.string(), nullable=True),
        pa.field("amount", pa.float64(), nullable=True),
    ]
)
START = datetime.datetime(2024, 11, 28, 6, 0, 0)


def rows(first, last):
    """Rows spread over days, months and years, three categories, and a null or two."""
    ids = list(range(first, last + 1))
    return pa.table(
        {
            "id": ids,
            "ts": [START + datetime.timedelta(days=17 * i, hours=i) for i in ids],
            "category": [None if i % 11 == 0 else "abc"[i % 3] for i in ids],
            "amount": [i * 1.5 for i in ids],
        },
        schema=ARROW,
    )


def sqe(sql, session=None):
    conn = trino.dbapi.connect(
        host=HOST,
        port=PORT,
        user="interop",
        catalog="iceberg",
        schema=NAMESPACE,
        session_properties=session or {},
    )
    try:
        cur = conn.cursor()
        cur.execute(sql)
        rows = cur.fetchall()
        # Statements without a result (ALTER TABLE, COMMENT) have no columns.
        return rows, [d[0] for d in cur.description or []]
    finally:
        conn.close()


def files_in_plan(sql):
    """Data files the Iceberg scans of `sql`'s plan read, as EXPLAIN shows them."""
    plan, _ = sqe(f"EXPLAIN {sql}")
    text = "\n".join(str(cell) for row in plan for cell in row)
    return sum(int(n) for n in re.findall(r"IcebergScanExec: .*?files=(\d+)", text))


def as_rows(table, columns):
    table = table.sort_by("id")
    return [[table.column(c)[i].as_py() for c in columns] for i in range(table.num_rows)]


# Position-delete files (the spec's reserved field ids for their two columns).
POSITION_DELETE_ARROW = pa.schema(
    [
        pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": b"2147483546"}),
        pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"2147483545"}),
    ]
)


class _DeleteManifestWriter(ManifestWriterV2):
    """pyiceberg's v2 manifest writer, writing a manifest of delete files."""

    def content(self):
        return ManifestContent.DELETES

    @property
    def _meta(self):
        return {**super()._meta, "content": "deletes"}


class _AddDeleteFiles(_FastAppendFiles):
    """A snapshot that adds delete files, as merge-on-read engines commit a DELETE.

    pyiceberg 0.12 deletes by rewriting data files only, so its own snapshot producer is given a
    delete manifest writer; the files, the manifest and the commit are pyiceberg's.
    """

    def new_manifest_writer(self, spec):
        return _DeleteManifestWriter(
            spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression
        )


def delete_positions(table, doomed_ids):
    """Writes one position-delete file per data file holding a doomed id and commits them all in
    one snapshot; returns the paths of the files it wrote."""
    delete_files = []
    for task in table.scan().plan_files():
        data_file = task.file
        with table.io.new_input(data_file.file_path).open() as f:
            ids = pq.read_table(f, columns=["id"]).column("id").to_pylist()
        positions = [pos for pos, i in enumerate(ids) if i in doomed_ids]
        if not positions:
            continue
        path = f"{table.location()}/data/pos-{uuid.uuid4().hex[:12]}.parquet"
        deletes = pa.table({"file_path": [data_file.file_path] * len(positions), "pos": positions}, schema=POSITION_DELETE_ARROW)
        with table.io.new_output(path).create(overwrite=True) as f:
            pq.write_table(deletes, f)
        delete_file = DataFile.from_args(
            _table_format_version=2,
            content=DataFileContent.POSITION_DELETES,
            file_path=path,
            file_format=FileFormat.PARQUET,
            partition=data_file.partition,
            record_count=len(positions),
            file_size_in_bytes=len(table.io.new_input(path)),
        )
        delete_file.spec_id = data_file.spec_id
        delete_files.append(delete_file)
    with table.transaction() as tx:
        producer = _AddDeleteFiles(operation=Operation.OVERWRITE, transaction=tx, io=table.io)
        for delete_file in delete_files:
            producer.append_data_file(delete_file)
        producer.commit()
    return {f.file_path for f in delete_files}


def evolve_and_append(name, first, last):
    """Renames `amount` to `value`, adds a `note` column, then appends rows `first`..`last`
    with notes; the table as it is then."""
    table = CATALOG.load_table(f"{NAMESPACE}.{name}")
    with table.update_schema() as update:
        update.rename_column("amount", "value")
        update.add_column("note", StringType())
    table = CATALOG.load_table(f"{NAMESPACE}.{name}")
    later = rows(first, last).rename_columns(["id", "ts", "category", "value"])
    later = later.append_column(pa.field("note", pa.string()), pa.array([f"n{i}" for i in range(first, last + 1)]))
    table.append(later)
    return table


def delete_rows(table, predicate):
    """pyiceberg's copy-on-write delete (its warnings about the rewrite silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table.delete(predicate)


class PyicebergTablesThroughSqe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        CATALOG.create_namespace(NAMESPACE)

    def check_same(self, name, columns):
        """SQE's rows of `name` are pyiceberg's, in order, with the same column names."""
        expected = as_rows(CATALOG.load_table(f"{NAMESPACE}.{name}").scan().to_arrow(), columns)
        got, names = sqe(f"SELECT {', '.join(columns)} FROM {name} ORDER BY id")
        self.assertEqual(names, columns)
        self.assertEqual([list(r) for r in got], expected)
        return got

    def test_partitioned_table_with_evolution_and_deletes(self):
        spec = PartitionSpec(
            PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="category"),
            PartitionField(source_id=2, field_id=1001, transform=DayTransform(), name="ts_day"),
            PartitionField(source_id=1, field_id=1002, transform=BucketTransform(4), name="id_bucket"),
        )
        table = CATALOG.create_table(f"{NAMESPACE}.events", schema=SCHEMA, partition_spec=spec)
        table.append(rows(1, 20))
        table.append(rows(21, 30))
        # Schema evolution: SQE must follow field ids, not names or positions.
        table = evolve_and_append("events", 31, 35)
        # Rows deleted after they were written (pyiceberg rewrites the files that held them).
        delete_rows(table, "id = 3 or id = 32")

        got = self.check_same("events", ["id", "ts", "category", "value", "note"])
        ids = [r[0] for r in got]
        self.assertEqual(len(ids), 33)
        self.assertNotIn(3, ids)
        self.assertNotIn(32, ids)
        self.assertEqual(got[0][4], None, "rows written before the column existed read it as null")
        self.assertEqual(got[-1][4], "n35")
        # Partition pruning: a filter on the partition column plans fewer files (EXPLAIN shows
        # the scan's files after pruning).
        every = files_in_plan("SELECT * FROM events")
        only_b = files_in_plan("SELECT * FROM events WHERE category = 'b'")
        self.assertTrue(0 < only_b < every, f"files planned: {only_b} of {every}")
        # Filters on partition columns and on the renamed column.
        (count,), = sqe("SELECT count(*) FROM events WHERE category = 'b'")[0]
        expected = sum(1 for i in range(1, 36) if i not in (3, 32) and i % 11 != 0 and i % 3 == 1)
        self.assertEqual(count, expected)
        (total,), = sqe("SELECT sum(value) FROM events WHERE ts >= TIMESTAMP '2025-06-01 00:00:00'")[0]
        cutoff = datetime.datetime(2025, 6, 1)
        self.assertAlmostEqual(
            total,
            sum(i * 1.5 for i in range(1, 36) if i not in (3, 32) and START + datetime.timedelta(days=17 * i, hours=i) >= cutoff),
        )

    def test_position_delete_files(self):
        spec = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="category"))
        table = CATALOG.create_table(f"{NAMESPACE}.posdel", schema=SCHEMA, partition_spec=spec)
        table.append(rows(1, 30))
        table.append(rows(31, 60))
        doomed = {4, 5, 17, 30, 31, 59}
        written = delete_positions(table, doomed)
        self.assertGreater(len(written), 1, "deletes spread over several files and partitions")
        table = CATALOG.load_table(f"{NAMESPACE}.posdel")
        summary = table.current_snapshot().summary
        self.assertEqual(summary["added-position-deletes"], str(len(doomed)))
        # A position-delete file applies to its partition's data files (its rows name the file).
        planned = {d.file_path for t in table.scan().plan_files() for d in t.delete_files}
        self.assertEqual(planned, written)

        got = self.check_same("posdel", ["id", "ts", "category", "amount"])
        ids = [r[0] for r in got]
        self.assertEqual(ids, [i for i in range(1, 61) if i not in doomed])
        (count, total), = sqe("SELECT count(*), sum(id) FROM posdel WHERE category = 'b'")[0]
        kept_b = [i for i in range(1, 61) if i not in doomed and i % 11 != 0 and i % 3 == 1]
        self.assertEqual((count, total), (len(kept_b), sum(kept_b)))

    def test_every_snapshot_reads_back_as_pyiceberg_reads_it(self):
        table = CATALOG.create_table(f"{NAMESPACE}.travel", schema=SCHEMA)
        table.append(rows(1, 10))
        table.append(rows(11, 20))
        table = evolve_and_append("travel", 21, 25)
        delete_rows(table, "id = 2 or id = 22")
        table = CATALOG.load_table(f"{NAMESPACE}.travel")
        snapshots = table.snapshots()
        self.assertGreaterEqual(len(snapshots), 4)
        listed, _ = sqe('SELECT snapshot_id, parent_id FROM "travel$snapshots" ORDER BY committed_at, snapshot_id')
        self.assertEqual(
            sorted(map(tuple, listed)),
            sorted((s.snapshot_id, s.parent_snapshot_id) for s in snapshots),
        )
        for snapshot in snapshots:
            # Each snapshot in the schema it was written with: amount before the rename.
            expected = table.scan(snapshot_id=snapshot.snapshot_id).to_arrow().sort_by("id")
            columns = expected.column_names
            got, names = sqe(f"SELECT * FROM travel FOR VERSION AS OF {snapshot.snapshot_id} ORDER BY id")
            self.assertEqual(names, columns, snapshot.snapshot_id)
            self.assertEqual([list(r) for r in got], as_rows(expected, columns), snapshot.snapshot_id)

    def test_sqe_deletes_read_back_in_pyiceberg(self):
        """SQE's DELETEs and UPDATEs on a table pyiceberg wrote: pyiceberg reads exactly SQE's rows after
        each, through the same REST catalog (SQE's own commit) and store."""
        spec = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="category"))
        table = CATALOG.create_table(f"{NAMESPACE}.sqedel", schema=SCHEMA, partition_spec=spec)
        table.append(rows(1, 30))
        table.append(rows(31, 60))
        live = {r[0]: r for r in as_rows(table.scan().to_arrow(), ["id", "ts", "category", "amount"])}

        def delete(sql, doomed):
            (count,), = sqe(sql)[0]
            self.assertEqual(count, len(doomed), sql)
            for i in doomed:
                del live[i]
            got = self.check_same("sqedel", ["id", "ts", "category", "amount"])
            self.assertEqual([r[0] for r in got], sorted(live), sql)
            return CATALOG.load_table(f"{NAMESPACE}.sqedel").current_snapshot().summary

        # A whole partition: its files are removed, no delete file is written.
        summary = delete("DELETE FROM sqedel WHERE category = 'a'", [i for i in live if live[i][2] == "a"])
        self.assertEqual(summary.operation, Operation.DELETE)
        self.assertIn("deleted-data-files", summary.additional_properties)
        self.assertNotIn("added-delete-files", summary.additional_properties)
        # Some rows of several files: position delete files pyiceberg applies.
        doomed = [i for i in live if i % 4 == 0]
        summary = delete("DELETE FROM sqedel WHERE id % 4 = 0", doomed)
        self.assertEqual(summary["added-position-deletes"], str(len(doomed)))
        # A subquery, and rows deleted before not counted again; NULL categories stay.
        doomed = [i for i in live if live[i][3] > 60.0 and live[i][2] is not None]
        delete(
            "DELETE FROM sqedel WHERE id IN (SELECT id FROM sqedel WHERE amount > 60.0) AND category IS NOT NULL",
            doomed,
        )
        # UPDATE: masked old versions, new rows in their (new) partitions, as pyiceberg reads them.
        changed = [i for i in live if live[i][2] == "b"]
        (count,), = sqe("UPDATE sqedel SET amount = amount + 1000, category = 'z' WHERE category = 'b'")[0]
        self.assertEqual(count, len(changed))
        for i in changed:
            live[i] = [live[i][0], live[i][1], "z", live[i][3] + 1000]
        got = self.check_same("sqedel", ["id", "ts", "category", "amount"])
        self.assertEqual([list(r) for r in got], [list(live[i]) for i in sorted(live)])
        self.assertEqual(CATALOG.load_table(f"{NAMESPACE}.sqedel").current_snapshot().summary.operation, Operation.OVERWRITE)
        # "$files" and "$manifests" list what pyiceberg's inspection lists: data and delete files.
        inspect = CATALOG.load_table(f"{NAMESPACE}.sqedel").inspect
        theirs = sorted(
            (r["content"], r["file_path"], r["record_count"], r["file_size_in_bytes"])
            for r in inspect.files().to_pylist()
        )
        ours, _ = sqe('SELECT content, file_path, record_count, file_size_in_bytes FROM "sqedel$files"')
        self.assertEqual(sorted(tuple(r) for r in ours), theirs)
        self.assertIn(1, {r[0] for r in theirs})
        theirs = sorted((r["path"], r["length"], r["added_snapshot_id"]) for r in inspect.manifests().to_pylist())
        ours, _ = sqe('SELECT path, length, added_snapshot_id FROM "sqedel$manifests"')
        self.assertEqual(sorted(tuple(r) for r in ours), theirs)
        delete("DELETE FROM sqedel", list(live))

    def test_format_1_tables_lose_whole_files_only(self):
        table = CATALOG.create_table(f"{NAMESPACE}.sqedel1", schema=SCHEMA, properties={"format-version": "1"})
        table.append(rows(1, 10))
        with self.assertRaises(trino.exceptions.TrinoUserError) as refused:
            sqe("DELETE FROM sqedel1 WHERE id = 1")
        self.assertEqual(refused.exception.error_name, "NOT_SUPPORTED")
        self.check_same("sqedel1", ["id", "ts", "category", "amount"])
        (count,), = sqe("DELETE FROM sqedel1 WHERE id > 0")[0]
        self.assertEqual(count, 10)
        table = CATALOG.load_table(f"{NAMESPACE}.sqedel1")
        self.assertEqual(table.scan().to_arrow().num_rows, 0)
        self.assertEqual(table.current_snapshot().summary["deleted-data-files"], "1")

    def test_sqe_schema_changes_read_back_in_pyiceberg(self):
        """SQE's RENAME COLUMN, SET DATA TYPE and COMMENT ON COLUMN are new schemas through the REST
        catalog (SQE's own commit): pyiceberg reads the old rows under the new name and type."""
        schema = Schema(
            NestedField(1, "id", LongType(), required=True),
            NestedField(2, "qty", IntegerType(), required=False),
        )
        table = CATALOG.create_table(f"{NAMESPACE}.evolved", schema=schema)
        table.append(pa.table({"id": [1, 2], "qty": [10, None]}, schema=pa.schema(
            [pa.field("id", pa.int64(), nullable=False), pa.field("qty", pa.int32())])))
        sqe("ALTER TABLE evolved RENAME COLUMN qty TO quantity")
        sqe("ALTER TABLE evolved ALTER COLUMN quantity SET DATA TYPE bigint")
        sqe("COMMENT ON COLUMN evolved.quantity IS 'units'")
        sqe("INSERT INTO evolved VALUES (3, 5000000000)")
        table = CATALOG.load_table(f"{NAMESPACE}.evolved")
        field = table.schema().find_field("quantity")
        self.assertEqual((field.field_id, field.field_type, field.doc), (2, LongType(), "units"))
        self.assertEqual(len(table.schemas()), 4)
        got = self.check_same("evolved", ["id", "quantity"])
        self.assertEqual([list(r) for r in got], [[1, 10], [2, None], [3, 5000000000]])

    def test_sqe_create_or_replace_keeps_the_table_and_its_history(self):
        """CREATE OR REPLACE TABLE with other columns and partitioning is one commit of the same
        table through the REST catalog (SQE's own): pyiceberg reads the new columns, spec and rows,
        and the old snapshot still reads in its old columns."""
        sqe("CREATE TABLE replaced AS SELECT value AS id, 'old' AS tag FROM generate_series(1, 4)")
        before = CATALOG.load_table(f"{NAMESPACE}.replaced")
        old_snapshot = before.current_snapshot().snapshot_id
        rows, _ = sqe(
            "CREATE OR REPLACE TABLE replaced WITH (partitioning = ARRAY['bucket(id, 4)']) AS "
            "SELECT value AS id, value * 1.5 AS amount FROM generate_series(1, 6)"
        )
        self.assertEqual(rows, [[6]])
        table = CATALOG.load_table(f"{NAMESPACE}.replaced")
        self.assertEqual(table.metadata.table_uuid, before.metadata.table_uuid)
        self.assertEqual([f.name for f in table.schema().fields], ["id", "amount"])
        self.assertGreater(table.schema().find_field("id").field_id, before.metadata.last_column_id)
        self.assertEqual([str(f.transform) for f in table.spec().fields], ["bucket[4]"])
        current = table.current_snapshot()
        self.assertIsNone(current.parent_snapshot_id)
        self.assertEqual(current.summary.operation, Operation.APPEND)
        got = table.scan().to_arrow().sort_by("id")
        self.assertEqual(got.column("amount").to_pylist(), [1.5, 3.0, 4.5, 6.0, 7.5, 9.0])
        old = table.scan(snapshot_id=old_snapshot).to_arrow().sort_by("id")
        self.assertEqual(old.column_names, ["id", "tag"])
        self.assertEqual(old.column("tag").to_pylist(), ["old"] * 4)
        rows, _ = sqe(f"SELECT id, tag FROM replaced FOR VERSION AS OF {old_snapshot} WHERE id = 2")
        self.assertEqual(rows, [[2, "old"]])
        rows, _ = sqe("SELECT sum(amount) FROM replaced WHERE id > 4")
        self.assertEqual(rows, [[16.5]])
        # No rows and other columns: the commit leaves the table without a current snapshot.
        sqe("CREATE OR REPLACE TABLE replaced (name varchar)")
        table = CATALOG.load_table(f"{NAMESPACE}.replaced")
        self.assertIsNone(table.current_snapshot())
        self.assertEqual(table.scan().to_arrow().num_rows, 0)
        self.assertEqual(len(table.snapshots()), 2)

    def test_sqe_maintenance_reads_back_in_pyiceberg(self):
        """optimize, expire_snapshots and remove_orphan_files on a table pyiceberg wrote: one replace
        snapshot pyiceberg reads as SQE does, old snapshots and their files gone, orphans gone."""
        spec = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="category"))
        table = CATALOG.create_table(f"{NAMESPACE}.maint", schema=SCHEMA, partition_spec=spec)
        for first in (1, 31, 61):
            table.append(rows(first, first + 29))
        (deleted,), = sqe("DELETE FROM maint WHERE id % 5 = 0")[0]
        self.assertEqual(deleted, 18)
        before = self.check_same("maint", ["id", "ts", "category", "amount"])
        old_files = [r["file_path"] for r in CATALOG.load_table(f"{NAMESPACE}.maint").inspect.files().to_pylist()]

        (rewritten,), = sqe("ALTER TABLE maint EXECUTE optimize")[0]
        self.assertEqual(rewritten, 90 - 18)
        table = CATALOG.load_table(f"{NAMESPACE}.maint")
        self.assertEqual(table.current_snapshot().summary.operation, Operation.REPLACE)
        self.assertEqual(self.check_same("maint", ["id", "ts", "category", "amount"]), before)
        files = table.inspect.files().to_pylist()
        self.assertEqual({r["content"] for r in files}, {0}, "no delete file is left")
        self.assertEqual(len(files), 4, "one file per category (a, b, c and NULL)")

        short = {"expire_snapshots_min_retention": "0s", "remove_orphan_files_min_retention": "0s"}
        sqe("ALTER TABLE maint EXECUTE expire_snapshots(retention_threshold => '0s')", short)
        table = CATALOG.load_table(f"{NAMESPACE}.maint")
        self.assertEqual(len(table.snapshots()), 1)
        self.assertEqual(self.check_same("maint", ["id", "ts", "category", "amount"]), before)
        self.assertFalse(any(table.io.new_input(f).exists() for f in old_files), "expired files stay")

        orphan = f"{table.location()}/data/orphan-{uuid.uuid4().hex}.parquet"
        with table.io.new_output(orphan).create() as out:
            out.write(b"left by a crashed writer")
        sqe("ALTER TABLE maint EXECUTE remove_orphan_files(retention_threshold => '0s')", short)
        self.assertFalse(table.io.new_input(orphan).exists())
        self.assertTrue(all(table.io.new_input(r["file_path"]).exists() for r in files))
        self.assertEqual(self.check_same("maint", ["id", "ts", "category", "amount"]), before)

    def test_sqe_upgrades_the_format_and_evolves_partitioning(self):
        """SET PROPERTIES format_version = 2, partitioning = ARRAY[...] on a format 1 table pyiceberg
        wrote: one commit; rows written after go by the new spec, and part of a file can be deleted."""
        table = CATALOG.create_table(f"{NAMESPACE}.evolving", schema=SCHEMA, properties={"format-version": "1"})
        table.append(rows(1, 20))
        sqe("ALTER TABLE evolving SET PROPERTIES format_version = 2, partitioning = ARRAY['category', 'bucket(id, 2)']")
        table = CATALOG.load_table(f"{NAMESPACE}.evolving")
        self.assertEqual(table.format_version, 2)
        self.assertEqual(
            [(f.name, str(f.transform)) for f in table.spec().fields],
            [("category", "identity"), ("id_bucket", "bucket[2]")],
        )
        sqe("INSERT INTO evolving SELECT id + 100, ts, category, amount FROM evolving")
        (count,), = sqe("DELETE FROM evolving WHERE id % 3 = 0")[0]
        self.assertEqual(count, 13)
        got = self.check_same("evolving", ["id", "ts", "category", "amount"])
        self.assertEqual(len(got), 27)
        specs = {r["spec_id"] for r in CATALOG.load_table(f"{NAMESPACE}.evolving").inspect.files().to_pylist()}
        self.assertEqual(specs, {0, table.spec().spec_id})

    def test_sort_orders_are_shared_with_pyiceberg(self):
        """A sort order pyiceberg gave a table is the one SQE's writes follow, and SQE's sorted_by is
        the table's sort order in pyiceberg: every file SQE writes is in it and records its id."""
        order = SortOrder(SortField(source_id=4, transform=IdentityTransform(), direction=SortDirection.DESC))
        CATALOG.create_table(f"{NAMESPACE}.presorted", schema=SCHEMA, sort_order=order)
        values = ", ".join(
            f"({i}, NULL, '{'abc'[i % 3]}', {'NULL' if i % 7 == 0 else (i * 37) % 101})" for i in range(1, 60)
        )
        sqe(f"INSERT INTO presorted VALUES {values}")
        sqe("CREATE TABLE sqesorted (id bigint, category varchar) WITH (sorted_by = ARRAY['category', 'id DESC'])")
        sqe("INSERT INTO sqesorted SELECT id, category FROM presorted")
        sqe("INSERT INTO sqesorted VALUES (3, 'b'), (1, NULL), (2, 'b')")

        table = CATALOG.load_table(f"{NAMESPACE}.sqesorted")
        self.assertEqual(
            [(table.schema().find_column_name(f.source_id), f.direction, f.null_order) for f in table.sort_order().fields],
            [("category", SortDirection.ASC, NullOrder.NULLS_FIRST), ("id", SortDirection.DESC, NullOrder.NULLS_LAST)],
        )
        for name, keys in (("presorted", [("amount", "descending")]), ("sqesorted", [("category", "ascending"), ("id", "descending")])):
            table = CATALOG.load_table(f"{NAMESPACE}.{name}")
            files = table.inspect.files().to_pylist()
            self.assertTrue(files, name)
            for f in files:
                self.assertEqual(f["sort_order_id"], table.sort_order().order_id, f["file_path"])
                with table.io.new_input(f["file_path"]).open() as stream:
                    data = pq.read_table(stream)
                nulls = "at_start" if keys[0][1] == "ascending" else "at_end"
                self.assertEqual(data, data.sort_by(keys, null_placement=nulls), f["file_path"])

    def test_sqe_views_are_iceberg_views_in_the_rest_catalog(self):
        """SQE's CREATE [OR REPLACE] VIEW and DROP VIEW through the REST catalog's view endpoints:
        pyiceberg loads the view with SQE's SQL (dialect trino) and columns."""
        sqe("CREATE TABLE viewed (id bigint, name varchar)")
        sqe("INSERT INTO viewed VALUES (1, 'a'), (2, 'b')")
        sqe("CREATE VIEW named_two COMMENT 'the second' AS SELECT name FROM viewed WHERE id = 2")
        self.assertIn((NAMESPACE, "named_two"), [tuple(i) for i in CATALOG.list_views(NAMESPACE)])
        view = CATALOG.load_view(f"{NAMESPACE}.named_two").metadata
        version = next(v for v in view.versions if v.version_id == view.current_version_id)
        (sql,) = version.representations
        sql = sql.root  # pyiceberg wraps each kind of representation
        self.assertEqual((sql.dialect, sql.sql), ("trino", "SELECT name FROM viewed WHERE id = 2"))
        self.assertEqual(view.properties.get("comment"), "the second")
        # SECURITY DEFINER (Trino's default) keeps its owner where Trino does.
        self.assertEqual(view.properties.get("trino.run-as-owner"), "interop")
        self.assertEqual(sqe("SELECT * FROM named_two")[0], [["b"]])
        sqe("CREATE OR REPLACE VIEW named_two SECURITY INVOKER AS SELECT name, id FROM viewed WHERE id = 1")
        self.assertEqual(sqe("SELECT * FROM named_two")[0], [["a", 1]])
        view = CATALOG.load_view(f"{NAMESPACE}.named_two").metadata
        self.assertEqual(len(view.versions), 2)
        self.assertNotIn("comment", view.properties)
        self.assertNotIn("trino.run-as-owner", view.properties)
        sqe("DROP VIEW named_two")
        self.assertFalse(CATALOG.view_exists(f"{NAMESPACE}.named_two"))

    def test_month_and_year_partitions(self):
        for name, transform in (("monthly", MonthTransform()), ("yearly", YearTransform())):
            spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=transform, name=f"ts_{name}"))
            table = CATALOG.create_table(f"{NAMESPACE}.{name}", schema=SCHEMA, partition_spec=spec)
            table.append(rows(1, 40))
            self.check_same(name, ["id", "ts", "category", "amount"])
            (n,), = sqe(f"SELECT count(*) FROM {name} WHERE ts < TIMESTAMP '2025-01-01 00:00:00'")[0]
            self.assertEqual(n, sum(1 for i in range(1, 41) if START + datetime.timedelta(days=17 * i, hours=i) < datetime.datetime(2025, 1, 1)))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
