"""Django's runner as the SWE-bench harness has it: the labels, the command, ``parse_log_django``'s
rules on logs in the runner's own format (unittest's verbose output at ``--verbosity 2``), and a label
found under either Python's form of a test's name."""

from __future__ import annotations

from agentic_rubrics.sandbox.testlogs import (
    command,
    directives,
    outcome_filter,
    parse_outcomes,
    runner_for,
    statuses,
)
from agentic_rubrics.sandbox.testlogs_django import canonical, labels, parse_log

# the shape ./tests/runtests.py --verbosity 2 prints (Python < 3.11: "test_x (module.Class)")
LOG = """\
Testing against Django installed in '/testbed/django' with up to 8 processes
Importing application aggregation
Operations to perform:
  Synchronize unmigrated apps: aggregation, auth, contenttypes
Creating test database for alias 'default'...
System check identified no issues (0 silenced).
test_add_implementation (aggregation.tests.AggregateTestCase) ... ok
test_aggregate_alias (aggregation.tests.AggregateTestCase) ... FAIL
test_count_distinct_expression (aggregation.tests.AggregateTestCase) ... ERROR
test_ticket11881 (aggregation.tests.AggregateTestCase)
Subqueries do not needlessly contain ORDER BY, SELECT FOR UPDATE or ... ok
test_mysql_only (aggregation.tests.AggregateTestCase) ... skipped 'MySQL specific'
test_prints (aggregation.tests.AggregateTestCase) ... some output of the test
ok
test_server (view_tests.tests.ServerTests) ... Internal Server Error: /raises/
ok

======================================================================
ERROR: test_count_distinct_expression (aggregation.tests.AggregateTestCase)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/aggregation/tests.py", line 20, in test_count_distinct_expression
sqlite3.OperationalError: near "WHEN": syntax error

======================================================================
FAIL: test_aggregate_alias (aggregation.tests.AggregateTestCase)
----------------------------------------------------------------------
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 8 tests in 0.101s

FAILED (failures=1, errors=1, skipped=1)
Destroying test database for alias 'default'...
"""


def test_django_is_run_as_the_harness_runs_it() -> None:
    assert runner_for("django/django") == "django"
    patch = (
        "diff --git a/tests/aggregation/tests.py b/tests/aggregation/tests.py\n"
        "diff --git a/tests/template_tests/filter_tests/test_floatformat.py b/tests/x\n"
        "diff --git a/tests/fixtures/data.json b/tests/fixtures/data.json\n"
    )
    files = directives(patch)
    assert labels(["tests/aggregation/tests.py", "tests/a/b/test_c.py"]) == [
        "aggregation.tests",
        "a.b.test_c",
    ]
    text = command("django", "/venv/bin/python", files)
    assert text == (
        'PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" /venv/bin/python ./tests/runtests.py'
        " --verbosity 2 --settings=test_sqlite --parallel 1 aggregation.tests x"
    )


def test_the_log_is_read_rule_for_rule_as_parse_log_django() -> None:
    assert parse_log(LOG) == {
        "test_add_implementation (aggregation.tests.AggregateTestCase)": "PASSED",
        "test_aggregate_alias (aggregation.tests.AggregateTestCase)": "FAILED",
        "test_count_distinct_expression (aggregation.tests.AggregateTestCase)": "ERROR",
        # a test with a docstring is named by the docstring's first line
        "Subqueries do not needlessly contain ORDER BY, SELECT FOR UPDATE or": "PASSED",
        "test_mysql_only (aggregation.tests.AggregateTestCase)": "SKIPPED",
        # "ok" on a line of its own passes the last test that printed " ... "
        "test_prints (aggregation.tests.AggregateTestCase)": "PASSED",
        "test_server (view_tests.tests.ServerTests)": "PASSED",
        # the failure reports' headers: the word after the colon, as the harness splits them
        "test_count_distinct_expression": "ERROR",
        "test_aggregate_alias": "FAILED",
    }


def test_only_the_lines_the_parser_reads_are_kept_and_they_parse_the_same() -> None:
    import re

    kept = "\n".join(line for line in LOG.split("\n") if re.search(outcome_filter("django"), line))
    assert "Traceback" not in kept and "Ran 8 tests" not in kept
    assert parse_log(kept) == parse_log(LOG)
    outcomes = parse_outcomes("django", kept)
    assert outcomes["test_mysql_only (aggregation.tests.AggregateTestCase)"] == "skipped"
    # the headers' bare names are the same tests as their full names: counted once
    assert "test_aggregate_alias" not in outcomes and len(outcomes) == 7
    assert parse_outcomes("django", "FAIL: test_lost (m.C)\n") == {"test_lost": "failed"}


def test_a_label_is_found_under_either_pythons_form() -> None:
    long = "test_zero_values (template_tests.filter_tests.test_floatformat.FunctionTests.test_zero_values)"
    short = "test_zero_values (template_tests.filter_tests.test_floatformat.FunctionTests)"
    assert canonical(long) == short and canonical(short) == short
    assert canonical("Regression test for #12345 (the issue) ... ") == (
        "Regression test for #12345 (the issue) ... "
    )
    # a class attribute named otherwise is not a method's long form
    assert canonical("test_a (m.C.test_b)") == "test_a (m.C.test_b)"
    log = f"{long} ... ok\ntest_b (m.C.test_b) ... FAIL\nA docstring line. ... ok\n"
    outcomes = parse_outcomes("django", log)
    wanted = [short, long, "test_b (m.C)", "A docstring line.", "test_gone (m.C)"]
    assert statuses("django", outcomes, wanted) == {
        short: "passed",
        long: "passed",
        "test_b (m.C)": "failed",
        "A docstring line.": "passed",
    }
    # other runners compare names exactly
    assert statuses("pytest", {"a::b": "passed"}, ["a::b", "a::c"]) == {"a::b": "passed"}


def test_a_log_with_no_status_reads_as_nothing() -> None:
    log = "Traceback (most recent call last):\nImportError: cannot import name 'x'\n"
    assert parse_outcomes("django", log) == {}
    assert parse_log("FAIL:\nERROR:\n") == {}
