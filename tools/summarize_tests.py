#!/usr/bin/env python3
"""Sums test results over every suite and prints one line:

    N passed, N failed, N skipped

    summarize_tests.py [--run NAME STATUS LOG]... [LOG]...

Each LOG is a file of JSON lines, one test or check per line, with at least
"name" and "result" (Meson's meson-logs/testlog.json, or the checks .ci/run
records). A test whose output holds the results of an inner runner is
counted by those inner results instead of as one test:

  - GoogleTest: passed, failed and skipped cases (GTEST_SKIP) from its
    closing summary; disabled cases count as skipped;
  - cargo test: each "test result:" line (ignored tests count as skipped);
  - NUnit 2.6 console: Inconclusive, Ignored and other tests not run count
    as skipped, Errors, Failures and Invalid as failed.

A test that exited with a failure counts at least one failure, whatever its
output says, and a test whose runner reports failures fails even if it
exited with 0.

--run names one `meson test` invocation: its exit status and the log it
wrote. It counts one failure when the log is missing, or when the status is
not 0 but the log records no failure (Meson itself failed: a build error,
a test that could not start), so a run cannot fail unseen.

Before that line it prints one line per --run, "NAME: N passed, N failed,
N skipped", so the summary says which runs (and settings) it counted, and
it names each failure with the run it came from, each followed by up to
six lines of its output that say why (lines with "error", "fail", "panicked"
or "assert"; else its last lines), each indented with "  | ", so that the
tail of a CI log says why a test failed.

Exit status: 1 if anything failed, else 0.
"""
import argparse
import json
import re
import sys

GTEST_RAN = re.compile(r"^\[==========\] (\d+) tests? from \d+ test (?:suites?|cases?) ran\.", re.M)
GTEST_PASSED = re.compile(r"^\[  PASSED  \] (\d+) tests?\.", re.M)
GTEST_SKIPPED = re.compile(r"^\[  SKIPPED \] (\d+) tests?, listed below:", re.M)
GTEST_DISABLED = re.compile(r"^\s*YOU HAVE (\d+) DISABLED TESTS?", re.M)
CARGO = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", re.M)
# NUnit 2.6 prints its summary on two lines:
#   Tests run: 5, Errors: 1, Failures: 1, Inconclusive: 2, Time: 0.23 seconds
#     Not run: 2, Invalid: 0, Ignored: 2, Skipped: 0
# "Tests run" includes the inconclusive tests; "Not run" includes the
# invalid, ignored and skipped ones.
NUNIT = re.compile(r"^Tests run: (\d+), Errors: (\d+), Failures: (\d+), Inconclusive: (\d+), "
                   r"Time: [^\n]*?(?:\n\s*|, )Not run: (\d+), Invalid: (\d+)", re.M)


class Counts:
    def __init__(self, passed=0, failed=0, skipped=0):
        self.passed, self.failed, self.skipped = passed, failed, skipped

    def add(self, other):
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped

    def total(self):
        return self.passed + self.failed + self.skipped


def gtest_counts(output):
    counts = Counts()
    found = False
    # One summary per program run; PASSED and SKIPPED follow their RAN line.
    for ran in GTEST_RAN.finditer(output):
        found = True
        rest = output[ran.end():]
        following = GTEST_RAN.search(rest)
        block = rest[:following.start()] if following else rest
        n = int(ran.group(1))
        p = GTEST_PASSED.search(block)
        s = GTEST_SKIPPED.search(block)
        d = GTEST_DISABLED.search(block)
        passed = int(p.group(1)) if p else 0
        skipped = int(s.group(1)) if s else 0
        counts.add(Counts(passed, n - passed - skipped, skipped + (int(d.group(1)) if d else 0)))
    return counts if found else None


def cargo_counts(output):
    found = list(CARGO.finditer(output))
    if not found:
        return None
    counts = Counts()
    for m in found:
        counts.add(Counts(int(m.group(1)), int(m.group(2)), int(m.group(3))))
    return counts


def nunit_counts(output):
    found = list(NUNIT.finditer(output))
    if not found:
        return None
    counts = Counts()
    for m in found:
        run, errors, failures, inconclusive, not_run, invalid = (int(g) for g in m.groups())
        counts.add(Counts(run - errors - failures - inconclusive, errors + failures + invalid,
                          inconclusive + not_run - invalid))
    return counts


def inner_counts(output):
    """Counts from an inner runner's output, or None when there is none."""
    for parse in (gtest_counts, cargo_counts, nunit_counts):
        counts = parse(output)
        if counts is not None:
            return counts
    return None


WHY = re.compile(r"error|fail|panicked|assert|timeout|timed out", re.I)


def why(output, lines=6, width=200):
    """Up to `lines` lines of a failed test's output saying why it failed."""
    text = [l.rstrip() for l in output.splitlines() if l.strip()]
    # A runner's own summary of a failure ("[  FAILED  ]", "test result")
    # repeats its cause: the first matching lines come first.
    hits = [l for l in text if WHY.search(l)]
    chosen = hits[:lines] if hits else text[-lines:]
    return ["  | " + l[:width] for l in chosen]


def count_test(t):
    """(Counts, failure description or None) of one line of a log; a
    failure's description is followed by lines of its output (why())."""
    name = t.get("name", "?")
    result = t.get("result", "")
    output = (t.get("stdout") or "") + "\n" + (t.get("stderr") or "")
    inner = inner_counts(output) if result in ("OK", "FAIL") else None
    if inner is not None and inner.total() > 0:
        if result == "FAIL" and inner.failed == 0:
            inner.failed = 1  # the runner failed outside its own tests
        return inner, ("\n".join(["%s (%d failed)" % (name, inner.failed)] + why(output))
                       if inner.failed else None)
    if result in ("OK", "EXPECTEDFAIL"):
        return Counts(passed=1), None
    if result == "SKIP":
        return Counts(skipped=1), None
    return Counts(failed=1), "\n".join(["%s (%s)" % (name, result or "no result")] + why(output))


def read_log(path):
    """The tests of one log, or raises OSError / ValueError."""
    tests = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if line:
                tests.append(json.loads(line))
    return tests


def summarize(runs, logs):
    """(Counts, [(run name, Counts)], failure descriptions) over every --run
    and plain log."""
    total = Counts()
    per_run = []
    failures = []

    def count_log(path, run=None):
        counts = Counts()
        try:
            tests = read_log(path)
        except (OSError, ValueError) as e:
            counts.failed += 1
            failures.append("%s cannot be read (%s)" % (path, e))
            return counts
        for t in tests:
            c, failure = count_test(t)
            counts.add(c)
            if failure:
                failures.append("%s: %s" % (run, failure) if run else failure)
        return counts

    for name, status, path in runs:
        counts = count_log(path, name)
        if status != "0" and counts.failed == 0:
            counts.failed += 1
            failures.append("%s: meson test exited with %s and its log records no failure"
                            % (name, status))
        per_run.append((name, counts))
        total.add(counts)
    for path in logs:
        total.add(count_log(path))
    return total, per_run, failures


def main(argv):
    parser = argparse.ArgumentParser(description="Sums test results over test logs.")
    parser.add_argument("--run", nargs=3, action="append", default=[],
                        metavar=("NAME", "STATUS", "LOG"),
                        help="a meson test invocation: its exit status and its JSON log")
    parser.add_argument("logs", nargs="*", metavar="LOG", help="a JSON lines log")
    args = parser.parse_args(argv)
    total, per_run, failures = summarize(args.run, args.logs)
    for name, c in per_run:
        print("%s: %d passed, %d failed, %d skipped" % (name, c.passed, c.failed, c.skipped))
    for f in failures:
        print("FAILED: %s" % f)
    print("%d passed, %d failed, %d skipped" % (total.passed, total.failed, total.skipped))
    return 1 if total.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
