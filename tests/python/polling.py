"""Waiting for a cluster to reach a state, shared by the test scripts."""

import time


def eventually(check, what, timeout=30.0, interval=0.1):
    """Polls `check` until it returns a truthy value; fails with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still {value!r} after {timeout}s")
        time.sleep(interval)
