"""A dbt project (tests/dbt: a seed, two table models, two incremental models, generic and
singular tests) built against SQE with the dbt-trino adapter, twice: the second build rebuilds
every table the way dbt-trino does (a new table, ALTER TABLE RENAME TO, DROP), and the tables'
rows are checked through the Trino client. A test that must fail fails, so dbt's verdicts come
from SQE's answers. The incremental models then take new and changed rows by MERGE and by
DELETE + INSERT.

Run by tests/tests/integration/trino_http.rs against a cluster it started:
    python test_dbt.py <host> <port>
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import trino

HOST, PORT = sys.argv[1], int(sys.argv[2])
PROJECT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dbt")
DBT = os.path.join(os.path.dirname(sys.executable), "dbt")
SCHEMA = "dbt_project"

PROFILE = f"""
sqe:
  target: dev
  outputs:
    dev:
      type: trino
      method: none
      user: dbt
      host: {HOST}
      port: {PORT}
      database: iceberg
      schema: {SCHEMA}
      threads: 2
      http_scheme: http
"""


def rows(sql):
    cur = trino.dbapi.connect(host=HOST, port=PORT, user="tester", catalog="iceberg", schema=SCHEMA).cursor()
    cur.execute(sql)
    return cur.fetchall()


class DbtProject(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="sqe-dbt-")
        cls.project = os.path.join(cls.dir, "project")
        shutil.copytree(PROJECT, cls.project)
        with open(os.path.join(cls.dir, "profiles.yml"), "w") as f:
            f.write(PROFILE)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def dbt(self, *args):
        env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
        done = subprocess.run(
            [DBT, *args, "--profiles-dir", self.dir, "--project-dir", self.project],
            capture_output=True,
            text=True,
            env=env,
            cwd=self.project,
        )
        with open(os.path.join(self.project, "target", "run_results.json")) as f:
            results = {r["unique_id"]: r["status"] for r in json.load(f)["results"]}
        return done, results

    def test_build_twice_then_a_failing_test(self):
        for attempt in ("first", "rebuild"):
            done, results = self.dbt("build", "--exclude", "tag:must_fail")
            self.assertEqual(done.returncode, 0, f"{attempt}:\n{done.stdout}\n{done.stderr}")
            self.assertEqual(
                sorted(set(results.values())), ["pass", "success"], f"{attempt}: {results}"
            )
            self.assertEqual(len(results), 10, results)
            self.assertEqual(
                rows("SELECT id, name, age, city FROM adults ORDER BY id"),
                [[1, "ann", 31, "oslo"], [3, "cid", 45, "oslo"], [4, "dee", 38, "lima"]],
            )
            self.assertEqual(
                rows("SELECT city, adults, mean_age FROM cities ORDER BY city"),
                [["lima", 1, 38.0], ["oslo", 2, 38.0]],
            )
        # cities is rebuilt in place by CREATE OR REPLACE TABLE: its first snapshot, then an overwrite.
        self.assertEqual(
            rows('SELECT operation FROM "cities$snapshots" ORDER BY committed_at'), [["append"], ["overwrite"]]
        )
        # No table or view dbt renamed or dropped on the way is left behind.
        tables = sorted(r[0] for r in rows(f"SHOW TABLES FROM {SCHEMA}"))
        self.assertEqual(tables, ["adults", "cities", "people", "people_merged", "people_replaced"])
        self.assertEqual(
            rows(f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{SCHEMA}' AND table_type = 'VIEW'"),
            [["adults"]],
        )

        done, results = self.dbt("test", "--select", "tag:must_fail")
        self.assertNotEqual(done.returncode, 0, done.stdout)
        self.assertEqual(list(results.values()), ["fail"], results)

    def test_incremental_models_take_new_and_changed_rows(self):
        done, results = self.dbt("run", "--select", "tag:incremental", "--full-refresh", "--vars", "{upto: 2}")
        self.assertEqual(done.returncode, 0, f"{done.stdout}\n{done.stderr}")
        for model in ("people_merged", "people_replaced"):
            self.assertEqual(rows(f"SELECT id, age FROM {model} ORDER BY id"), [[1, 31], [2, 27]], model)
        # Rows 1 and 2 change, 3 and 4 are new: merged and replaced by their unique key.
        done, results = self.dbt("run", "--select", "tag:incremental", "--vars", "{upto: 4, bump: 10}")
        self.assertEqual(done.returncode, 0, f"{done.stdout}\n{done.stderr}")
        self.assertEqual(sorted(set(results.values())), ["success"], results)
        for model in ("people_merged", "people_replaced"):
            self.assertEqual(
                rows(f"SELECT id, name, age, city FROM {model} ORDER BY id"),
                [[1, "ann", 41, "oslo"], [2, "bob", 37, "rome"], [3, "cid", 55, "oslo"], [4, "dee", 48, "lima"]],
                model,
            )
        self.assertEqual(rows("SELECT operation FROM \"people_merged$snapshots\" ORDER BY committed_at DESC LIMIT 1"), [["overwrite"]])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
