#!/usr/bin/env python3
"""Sums test results over every suite and prints one line:

    N passed, N failed, N skipped

Reads Meson's JSON test logs (one or more meson-logs/testlog.json files).
A Meson test whose output holds the results of an inner runner (cargo test,
NUnit, or a table-driven check printing "checks: N passed, N failed") is
counted by those inner results instead of as one test.
Exit status: 1 if anything failed, else 0.
"""
import json
import re
import sys

CARGO = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", re.M)
NUNIT = re.compile(r"^Tests run: (\d+), Errors: (\d+), Failures: (\d+), Inconclusive: (\d+), "
                   r"Time: [^,]*, Not run: (\d+), Invalid: (\d+), Ignored: (\d+)", re.M)
NUNIT_SHORT = re.compile(r"^Tests run: (\d+), Errors: (\d+), Failures: (\d+)", re.M)
PLAIN = re.compile(r"^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$", re.M)


def inner_counts(output):
    """(passed, failed, skipped) from an inner runner's output, or None."""
    found = False
    passed = failed = skipped = 0
    for m in CARGO.finditer(output):
        found = True
        passed += int(m.group(1))
        failed += int(m.group(2))
        skipped += int(m.group(3))
    long_form = list(NUNIT.finditer(output))
    for m in long_form:
        found = True
        run, errors, failures = int(m.group(1)), int(m.group(2)), int(m.group(3))
        failed += errors + failures
        passed += run - errors - failures
        skipped += int(m.group(5)) + int(m.group(7))
    if not long_form:
        for m in NUNIT_SHORT.finditer(output):
            found = True
            run, errors, failures = int(m.group(1)), int(m.group(2)), int(m.group(3))
            failed += errors + failures
            passed += run - errors - failures
    for m in PLAIN.finditer(output):
        found = True
        passed += int(m.group(1))
        failed += int(m.group(2))
        skipped += int(m.group(3) or 0)
    return (passed, failed, skipped) if found else None


def main(paths):
    passed = failed = skipped = 0
    failures = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                t = json.loads(line)
                result = t.get("result", "")
                output = (t.get("stdout") or "") + "\n" + (t.get("stderr") or "")
                inner = inner_counts(output) if result in ("OK", "FAIL", "EXPECTEDFAIL") else None
                if inner is not None:
                    p, fl, s = inner
                    if result == "FAIL" and fl == 0:
                        fl = 1  # the runner failed outside its own tests
                    passed, failed, skipped = passed + p, failed + fl, skipped + s
                    if fl:
                        failures.append(t.get("name", "?"))
                elif result in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif result == "SKIP":
                    skipped += 1
                else:
                    failed += 1
                    failures.append("%s (%s)" % (t.get("name", "?"), result))
    for name in failures:
        print("FAILED: %s" % name)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
