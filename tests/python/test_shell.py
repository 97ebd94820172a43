"""`sqe shell` in a pseudo-terminal, the way a person uses it.

Run by the Rust integration suite (tests/tests/integration/shell.rs) against a running cluster:
    python test_shell.py <sqe binary> <flight sql port> <history file>
"""

import sys

import pexpect

SQE, PORT, HISTORY = sys.argv[1], sys.argv[2], sys.argv[3]
TIMEOUT = 60


def main():
    shell = pexpect.spawn(
        SQE,
        ["shell", "--port", PORT, "--history-file", HISTORY],
        env={"TERM": "xterm", "PATH": "/usr/bin:/bin"},
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 200),
    )
    shell.logfile_read = sys.stdout

    shell.expect_exact("sqe:default> ")
    # A statement over two lines: the continuation prompt, then the result.
    shell.send("SELECT count(*) AS nations\r")
    shell.expect_exact("-> ")
    shell.send("FROM tpch.nation;\r")
    shell.expect(r"\| 25 +\|")
    shell.expect(r"\(1 rows, ")

    # USE changes the session's schema and the prompt.
    shell.send("USE tpch;\r")
    shell.expect_exact("sqe:tpch> ")
    shell.send("SELECT n_name FROM nation WHERE n_nationkey = 7;\r")
    shell.expect("GERMANY")
    shell.expect_exact("sqe:tpch> ")

    # Errors are shown and the session goes on.
    shell.send("SELECT * FROM no_such_table;\r")
    shell.expect_exact("Query failed (NotFound)")
    shell.expect_exact("sqe:tpch> ")

    # A long query shows progress and Ctrl-C cancels it, not the shell.
    shell.send("SELECT count(*) FROM lineitem a CROSS JOIN lineitem b;\r")
    shell.expect(r"(PLANNING|RUNNING) \d+\.\d+s")
    shell.expect(r"RUNNING \d+\.\d+s")
    shell.sendintr()
    shell.expect_exact("Query cancelled")
    shell.expect_exact("sqe:tpch> ")

    # Ctrl-C at the prompt drops the unfinished statement.
    shell.send("SELECT 'never run'\r")
    shell.expect_exact("-> ")
    shell.sendintr()
    shell.expect_exact("sqe:tpch> ")
    shell.send("SELECT 'after interrupt' AS s;\r")
    shell.expect(r"\| after interrupt \|")
    shell.expect_exact("sqe:tpch> ")

    shell.send("quit\r")
    shell.expect(pexpect.EOF)
    shell.close()
    if shell.exitstatus != 0:
        raise SystemExit(f"the shell exited with {shell.exitstatus}")
    print("\nOK")


if __name__ == "__main__":
    main()
