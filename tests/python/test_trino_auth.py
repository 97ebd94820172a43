"""Authentication on the Trino protocol port over HTTPS: HTTP Basic against the configured
users and bearer JWTs from an identity provider, through the Python `trino` client and raw
HTTP.

Run by tests/tests/integration/trino_http.rs against a coordinator it started with TLS and
`[client_auth]` (users alice/s3cret and bob/hunter2, an HS256 JWT secret, issuer
https://idp.test):
    python test_trino_auth.py <host> <port> <ca.pem> <jwt-secret>
"""

import base64
import hashlib
import hmac
import json
import os
import sys
import time
import unittest

import requests
import trino
from trino.auth import BasicAuthentication, JWTAuthentication
from trino.exceptions import HttpError

HOST, PORT, CA, JWT_SECRET = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# requests lets these variables override a session's `verify` (which the trino client sets from
# its `verify` argument); the test's CA must win.
for variable in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
    os.environ.pop(variable, None)
BASE = f"https://{HOST}:{PORT}"


def jwt(claims, secret=JWT_SECRET):
    def b64(data):
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=")

    signing_input = b64({"alg": "HS256", "typ": "JWT"}) + b"." + b64(claims)
    signature = hmac.new(secret.encode(), signing_input, hashlib.sha256).digest()
    return (signing_input + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")).decode()


def connect(user, auth):
    return trino.dbapi.connect(
        host=HOST, port=PORT, user=user, auth=auth, http_scheme="https", verify=CA, catalog="iceberg"
    )


def run(conn, sql):
    cur = conn.cursor()
    cur.execute(sql)
    return cur.fetchall()


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class Basic(unittest.TestCase):
    def test_the_python_client_logs_in(self):
        conn = connect("alice", BasicAuthentication("alice", "s3cret"))
        self.assertEqual(run(conn, "SELECT current_user"), [["alice"]])
        # Every page of a longer query is authenticated too.
        self.assertEqual(len(run(conn, "SELECT * FROM range(200000)")), 200000)

    def test_wrong_or_missing_credentials_get_401(self):
        with self.assertRaises(HttpError) as error:
            run(connect("alice", BasicAuthentication("alice", "wrong")), "SELECT 1")
        self.assertIn("401", str(error.exception))
        missing = requests.post(f"{BASE}/v1/statement", data="SELECT 1", headers={"X-Trino-User": "alice"}, verify=CA)
        self.assertEqual(missing.status_code, 401)
        self.assertIn("Basic", missing.headers["WWW-Authenticate"])
        unknown = requests.post(
            f"{BASE}/v1/statement", data="SELECT 1", headers={"Authorization": basic("mallory", "s3cret")}, verify=CA
        )
        self.assertEqual(unknown.status_code, 401)

    def test_no_impersonation(self):
        response = requests.post(
            f"{BASE}/v1/statement",
            data="SELECT 1",
            headers={"Authorization": basic("alice", "s3cret"), "X-Trino-User": "bob"},
            verify=CA,
        )
        self.assertEqual(response.status_code, 403)
        self.assertIn("cannot impersonate", response.text)

    def test_queries_are_private_to_their_user(self):
        alice = {"Authorization": basic("alice", "s3cret")}
        bob = {"Authorization": basic("bob", "hunter2")}
        first = requests.post(f"{BASE}/v1/statement", data="SELECT 1", headers=alice, verify=CA).json()
        self.assertTrue(first["nextUri"].startswith("https://"), first["nextUri"])
        self.assertEqual(requests.get(first["nextUri"], headers=bob, verify=CA).status_code, 404)
        self.assertEqual(requests.delete(first["nextUri"], headers=bob, verify=CA).status_code, 404)
        self.assertEqual(requests.get(first["nextUri"], headers={}, verify=CA).status_code, 401)
        page = requests.get(first["nextUri"], headers=alice, verify=CA)
        self.assertEqual(page.status_code, 200)

    def test_info_needs_no_credentials(self):
        self.assertTrue(requests.get(f"{BASE}/v1/info", verify=CA).json()["coordinator"])

    def test_plain_http_is_not_served(self):
        with self.assertRaises(requests.exceptions.ConnectionError):
            requests.post(f"http://{HOST}:{PORT}/v1/statement", data="SELECT 1", headers={"X-Trino-User": "a"}, timeout=5)


class Jwt(unittest.TestCase):
    def test_identity_provider_token(self):
        token = jwt({"sub": "carol", "iss": "https://idp.test", "exp": int(time.time()) + 600})
        conn = connect("carol", JWTAuthentication(token))
        self.assertEqual(run(conn, "SELECT current_user"), [["carol"]])

    def test_bad_tokens_get_401(self):
        now = int(time.time())
        for token in [
            jwt({"sub": "carol", "iss": "https://idp.test", "exp": now + 600}, secret="guessed"),
            jwt({"sub": "carol", "iss": "https://elsewhere.test", "exp": now + 600}),
            jwt({"sub": "carol", "iss": "https://idp.test", "exp": now - 600}),
            "not.a.token",
        ]:
            response = requests.post(
                f"{BASE}/v1/statement", data="SELECT 1", headers={"Authorization": f"Bearer {token}"}, verify=CA
            )
            self.assertEqual(response.status_code, 401, token)
            self.assertIn("Bearer", response.headers["WWW-Authenticate"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
