"""The web UI in a real browser (Debian's headless Chromium, driven by Selenium through
chromedriver) against a coordinator with two workers, while queries run.

Run by tests/tests/integration/web_ui.rs:
    python test_web_ui.py <host> <trino port> <screenshot directory>

The port has no client authentication: the login form takes a user name, as the Trino
endpoint takes `X-Trino-User`; `admin_users = ["admin"]`.
"""

import os
import sys
import threading
import time
import unittest

import trino
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from trino.exceptions import TrinoQueryError

HOST, PORT, SHOTS = sys.argv[1], int(sys.argv[2]), sys.argv[3]
UI = f"http://{HOST}:{PORT}/ui"
# A join that runs for seconds on the test cluster, its build side a stage of its own.
SLOW = (
    "SELECT count(*) FROM lineitem a JOIN lineitem b ON a.l_linenumber = b.l_linenumber "
    "WHERE a.l_orderkey < 30000"
)
ENDLESS = "SELECT count(*) FROM lineitem a CROSS JOIN lineitem b"


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def run_in_background(sql, user="ann"):
    """Runs `sql` on a thread; returns (thread, cursor, outcome list)."""
    conn = trino.dbapi.connect(host=HOST, port=PORT, user=user, catalog="iceberg", schema="tpch")
    cur = conn.cursor()
    outcome = []

    def run():
        try:
            cur.execute(sql)
            outcome.append(cur.fetchall())
        except TrinoQueryError as e:
            outcome.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, cur, outcome


class WebUi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(SHOTS, exist_ok=True)
        cls.driver = browser()
        cls.wait = WebDriverWait(cls.driver, 60, poll_frequency=0.1)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()

    def shot(self, name):
        self.driver.save_screenshot(os.path.join(SHOTS, f"{name}.png"))

    def log_in(self, user):
        self.driver.delete_all_cookies()
        self.driver.get(UI)
        self.wait.until(lambda d: d.find_elements(By.ID, "user"))
        self.driver.find_element(By.ID, "user").send_keys(user)
        self.driver.find_element(By.ID, "login-button").click()
        self.wait.until(lambda d: d.find_elements(By.ID, "queries"))

    def query_row(self, query_id):
        """The list's row of the query as (state, progress or None), read in one script."""
        return self.driver.execute_script(
            """const row = [...document.querySelectorAll('tr.query')]
                   .find((r) => r.dataset.queryId === arguments[0]);
               if (!row) return null;
               const bar = row.querySelector('.progress');
               return [row.dataset.state, bar ? parseFloat(bar.dataset.progress) : null];""",
            query_id,
        )

    def click_link_to(self, query_id):
        try:
            self.driver.find_element(By.CSS_SELECTOR, f'tr.query[data-query-id="{query_id}"] a').click()
            return True
        except StaleElementReferenceException:
            return False

    def test_0_login_shows_the_cluster_with_both_workers(self):
        self.driver.get(UI)
        self.wait.until(lambda d: d.find_elements(By.ID, "login"))
        self.shot("login")
        self.log_in("ann")
        self.wait.until(lambda d: d.find_element(By.ID, "active-workers").text == "2")
        workers = self.driver.find_elements(By.CSS_SELECTOR, "#workers tr")[1:]
        self.assertEqual(len(workers), 2)
        self.assertIn("ann", self.driver.find_element(By.ID, "whoami").text)

    def test_1_the_progress_bar_moves_while_a_query_runs(self):
        self.log_in("ann")
        thread, cur, outcome = run_in_background(SLOW)
        query_id = WebDriverWait(cur, 30).until(lambda c: c.query_id)
        readings, shot = [], False
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            row = self.query_row(query_id)
            if row is not None:
                state, progress = row
                if progress is not None:
                    readings.append((state, progress))
                if state == "RUNNING" and progress is not None and not shot:
                    self.shot("cluster-running")
                    shot = True
                if state == "FINISHED":
                    break
            time.sleep(0.1)
        thread.join(60)
        self.assertEqual(outcome and type(outcome[0]), list, outcome)
        running = [p for state, p in readings if state == "RUNNING"]
        self.assertTrue(running, f"the list never showed the running query's progress: {readings}")
        self.assertLess(min(running), 100.0)
        self.assertEqual(readings[-1], ("FINISHED", 100.0))
        self.assertEqual([p for _, p in readings], sorted(p for _, p in readings), "progress never goes back")

    def test_2_the_query_page_shows_stages_and_its_kill_button_ends_the_query(self):
        self.log_in("ann")
        thread, cur, outcome = run_in_background(ENDLESS)
        query_id = WebDriverWait(cur, 30).until(lambda c: c.query_id)
        self.wait.until(lambda d: self.query_row(query_id) is not None)
        # The row's link, as a person clicks it (found again if a poll redrew the list).
        self.wait.until(lambda d: self.click_link_to(query_id))
        self.wait.until(lambda d: d.find_elements(By.ID, "query-id"))
        self.assertEqual(self.driver.find_element(By.ID, "query-id").text, query_id)
        self.assertIn("CROSS JOIN", self.driver.find_element(By.ID, "sql").text)
        # Its stages and their tasks on the two workers.
        self.wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "table.stage")) >= 1)
        workers = set(
            self.driver.execute_script(
                "return [...document.querySelectorAll('table.stage tr td:nth-child(2)')]"
                ".map((td) => td.textContent.trim().split(/\\s+/)[0]);"
            )
        )
        self.assertEqual(len(workers), 2, workers)
        self.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".progress"))
        self.shot("query-running")
        self.driver.find_element(By.ID, "kill").click()
        self.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".state-CANCELED"))
        self.wait.until(lambda d: d.find_elements(By.ID, "query-error"))
        self.assertIn("ADMINISTRATIVELY_KILLED", self.driver.find_element(By.ID, "query-error").text)
        self.assertFalse(self.driver.find_elements(By.ID, "kill"), "an ended query has no kill button")
        self.shot("query-killed")
        thread.join(60)
        self.assertFalse(thread.is_alive(), "the killed query kept running")
        self.assertIsInstance(outcome[0], TrinoQueryError)
        self.assertIn("killed from the web UI by ann", str(outcome[0]))

    def test_3_another_user_sees_neither_the_query_nor_its_kill_button(self):
        self.log_in("ann")
        thread, cur, outcome = run_in_background(ENDLESS)
        query_id = WebDriverWait(cur, 30).until(lambda c: c.query_id)
        self.log_in("bob")
        time.sleep(1.5)
        self.assertIsNone(self.query_row(query_id), "bob sees ann's query")
        self.driver.get(f"{UI}#/query/{query_id}")
        self.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".error"))
        self.assertFalse(self.driver.find_elements(By.ID, "kill"))
        # The administrator sees it and may end it.
        self.log_in("admin")
        self.wait.until(lambda d: self.query_row(query_id) is not None)
        self.driver.get(f"{UI}#/query/{query_id}")
        self.wait.until(lambda d: d.find_elements(By.ID, "kill"))
        self.driver.find_element(By.ID, "kill").click()
        self.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".state-CANCELED"))
        thread.join(60)
        self.assertIn("killed from the web UI by admin", str(outcome[0]))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
