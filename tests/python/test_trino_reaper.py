"""A query whose client stops asking for pages is cancelled and forgotten.

Run by tests/tests/integration/trino_http.rs against a coordinator started with
trino_client_timeout_secs = 1:
    python test_trino_reaper.py <host> <port>
"""

import sys
import time
import unittest

import requests

HOST, PORT = sys.argv[1], int(sys.argv[2])
BASE = f"http://{HOST}:{PORT}"
HEADERS = {"X-Trino-User": "tester"}


class Reaper(unittest.TestCase):
    def test_an_abandoned_query_is_cancelled(self):
        # Runs for hours unless stopped.
        first = requests.post(
            f"{BASE}/v1/statement",
            data="SELECT count(*) FROM range(100000) a CROSS JOIN range(100000) b",
            headers=HEADERS,
        ).json()
        page = requests.get(first["nextUri"]).json()
        self.assertNotIn("error", page)
        info = f"{BASE}/v1/query/{first['id']}"
        self.assertEqual(requests.get(info).status_code, 200)
        # The client goes away. Asking about the query does not keep it alive; only pages do.
        deadline = time.time() + 60
        while requests.get(info).status_code == 200 and time.time() < deadline:
            time.sleep(0.5)
        self.assertEqual(requests.get(info).status_code, 404, "the abandoned query was never reaped")
        self.assertEqual(requests.get(page["nextUri"]).status_code, 404)
        # The coordinator is free again.
        answer = requests.post(f"{BASE}/v1/statement", data="SELECT 1", headers=HEADERS).json()
        data = answer.get("data", [])
        while "nextUri" in answer:
            answer = requests.get(answer["nextUri"]).json()
            data += answer.get("data", [])
        self.assertNotIn("error", answer)
        self.assertEqual(data, [[1]])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
