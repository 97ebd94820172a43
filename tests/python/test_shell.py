"""`sqe shell` in a pseudo-terminal, the way a person uses it.

Run by the Rust integration suite (tests/tests/integration/shell.rs) against a running cluster:
    python test_shell.py <sqe binary> <flight sql port> <history file>
"""

import sys

import pexpect

SQE, PORT, HISTORY = sys.argv[1], sys.argv[2], sys.argv[3]
TIMEOUT = 60
PROMPT = "sqe:tpch> "


def spawn(pager):
    shell = pexpect.spawn(
        SQE,
        ["shell", "--port", PORT, "--history-file", HISTORY],
        env={"TERM": "xterm", "PATH": "/usr/bin:/bin", "SQE_PAGER": pager},
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 200),
    )
    shell.logfile_read = sys.stdout
    return shell


def leave(shell):
    shell.send("quit\r")
    shell.expect(pexpect.EOF)
    shell.close()
    if shell.exitstatus != 0:
        raise SystemExit(f"the shell exited with {shell.exitstatus}")


def leave_the_pager_midway(shell, statement):
    """Runs an endless statement whose pager quits early: the prompt comes back, no error."""
    shell.send(statement + "\r")
    shell.expect_exact("sqe:default> ")
    if "Error" in shell.before or "failed" in shell.before:
        raise SystemExit(f"leaving the pager is not an error: {shell.before}")


def main():
    # Every result goes through the pager, which marks its lines.
    shell = spawn("sed 's/^/paged: /'")
    shell.expect_exact("sqe:default> ")

    # A statement over two lines; keywords are drawn in colour as they are typed.
    shell.send("SELECT count(*) AS nations\r")
    shell.expect_exact("\x1b[1;34mSELECT\x1b[0m")
    shell.send("FROM tpch.nation;\r")
    shell.expect(r"paged: \| 25 +\|")
    shell.expect(r"\(1 rows, ")

    # USE changes the session's schema and the prompt.
    shell.send("USE tpch;\r")
    shell.expect_exact(PROMPT)

    # Tab completes a table of the default schema, and a column of a named table.
    shell.send("SELECT nation.n_nam\t")
    shell.expect_exact("n_name")
    shell.send(" FROM nati\t")
    shell.expect_exact("nation")
    shell.send(" WHERE n_nationkey = 7;\r")
    shell.expect("paged: .*GERMANY")
    shell.expect_exact(PROMPT)
    # Two Tabs list the tables of a schema.
    shell.send("SELECT * FROM tpch.\t\t")
    shell.expect("lineitem")
    shell.expect("supplier")
    shell.sendintr()
    shell.expect_exact(PROMPT)

    # A statement that does not parse stays in the editor, the error pointed at.
    shell.send("SELECT (1 FROM nation;\r")
    shell.expect_exact("SYNTAX_ERROR")
    shell.expect_exact("^")
    shell.sendintr()
    shell.expect_exact(PROMPT)

    # Errors the server finds carry Trino's error name, and the session goes on.
    shell.send("SELECT * FROM no_such_table;\r")
    shell.expect_exact("Query failed (TABLE_NOT_FOUND)")
    shell.expect_exact(PROMPT)

    # Backslash commands.
    shell.send("\\d nation\r")
    shell.expect("n_regionkey")
    shell.expect_exact(PROMPT)
    shell.send("\\dt\r")
    shell.expect("lineitem")
    shell.expect_exact(PROMPT)
    shell.send("\\x\r")
    shell.expect_exact("Expanded display is on.")
    shell.send("SELECT n_name, n_regionkey FROM nation WHERE n_nationkey = 7;\r")
    shell.expect_exact("paged: -[ RECORD 1 ]")
    shell.expect(r"paged: n_name +\| GERMANY")
    shell.send("\\x off\r")
    shell.expect_exact("Expanded display is off.")
    shell.send("\\timing\r")
    shell.expect_exact("Timing is off.")
    shell.send("\\format csv\r")
    shell.expect_exact("Output format is Csv.")
    shell.send("SELECT n_name FROM nation WHERE n_nationkey = 7;\r")
    shell.expect_exact("paged: n_name")
    shell.expect_exact("paged: GERMANY")
    shell.expect_exact("(1 rows)")
    shell.send("\\format table\r")
    shell.expect_exact("Output format is Table.")

    # Interactive results stop showing rows at the limit and say how many there were.
    shell.send("\\maxrows 5\r")
    shell.expect_exact("Results show at most 5 rows.")
    shell.send("SELECT n_nationkey FROM nation ORDER BY n_nationkey;\r")
    shell.expect_exact("(5 of 25 rows shown; \\maxrows 0 shows all)")
    shown = shell.before
    if "| 4 " not in shown or "| 5 " in shown:
        raise SystemExit(f"expected rows 0 to 4 only: {shown}")

    # Counting a long result past the limit stops at Ctrl-C, the rows shown kept.
    shell.send("\\maxrows 1\r")
    shell.expect_exact("Results show at most 1 rows.")
    shell.send("SELECT a.l_orderkey FROM lineitem a CROSS JOIN lineitem b;\r")
    # The rows within the limit are shown at once, before the counting.
    shell.expect("paged: \\| l_orderkey")
    shell.expect(r"COUNTING \d+\.\d+s")
    shell.sendintr()
    shell.expect(r"\(1 rows shown, at least [\d,]+ in all: counting stopped\)")
    shell.expect_exact(PROMPT)
    shell.send("\\maxrows 1000\r")

    # A long query shows progress (a bar with the server's percentage of completed splits)
    # and Ctrl-C cancels it, not the shell.
    shell.send("SELECT count(*) FROM lineitem a CROSS JOIN lineitem b;\r")
    shell.expect(r"(PLANNING|RUNNING) \d+\.\d+s")
    shell.expect(r"RUNNING \[[=> ]{20}\] +\d+%  \d+\.\d+s")
    shell.sendintr()
    shell.expect_exact("Query cancelled")
    shell.expect_exact(PROMPT)

    # Ctrl-C at the prompt drops the unfinished statement.
    shell.send("SELECT 'never run'\r")
    shell.sendintr()
    shell.expect_exact(PROMPT)
    shell.send("SELECT 'after interrupt' AS s;\r")
    shell.expect(r"paged: \| after interrupt \|")
    shell.expect_exact(PROMPT)
    leave(shell)

    # A pager left early (as `q` in less) ends the result quietly; the session goes on.
    shell = spawn("head -n 2")
    shell.expect_exact("sqe:default> ")
    shell.send("\\maxrows 0\r")
    shell.expect_exact("Results show all their rows.")
    shell.expect_exact("sqe:default> ")
    leave_the_pager_midway(shell, "SELECT * FROM tpch.lineitem a CROSS JOIN tpch.lineitem b;")
    # CSV too (its writer words the closed pipe as its own error).
    shell.send("\\format csv\r")
    shell.expect_exact("Output format is Csv.")
    shell.expect_exact("sqe:default> ")
    leave_the_pager_midway(
        shell, "SELECT a.l_orderkey FROM tpch.lineitem a CROSS JOIN tpch.lineitem b;"
    )
    shell.send("SELECT 'still here' AS s;\r")
    shell.expect_exact("still here")
    shell.expect_exact("sqe:default> ")
    leave(shell)
    print("\nOK")


if __name__ == "__main__":
    main()
