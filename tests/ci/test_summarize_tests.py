#!/usr/bin/env python3
"""Tests of tools/summarize_tests.py on crafted logs: every way a test can
end, the inner runners' own counts, and meson test invocations that failed
without a failing test in their log.

    test_summarize_tests.py PATH/TO/summarize_tests.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SUMMARIZER = None

# The closing lines of real runs (GoogleTest 1.12, NUnit 2.6.3, cargo).
GTEST_TWO_SKIPPED = """\
[==========] Running 5 tests from 1 test suite.
[ RUN      ] Gpu.Dense
[       OK ] Gpu.Dense (3 ms)
[ RUN      ] Gpu.Conv
test.cpp:10: Skipped
no GPU
[  SKIPPED ] Gpu.Conv (0 ms)
[ RUN      ] Gpu.Pool
test.cpp:14: Skipped

[  SKIPPED ] Gpu.Pool (0 ms)
[==========] 5 tests from 1 test suite ran. (5 ms total)
[  PASSED  ] 3 tests.
[  SKIPPED ] 2 tests, listed below:
[  SKIPPED ] Gpu.Conv
[  SKIPPED ] Gpu.Pool
"""

GTEST_ONE_FAILED = """\
[==========] 4 tests from 1 test suite ran. (0 ms total)
[  PASSED  ] 1 test.
[  SKIPPED ] 2 tests, listed below:
[  SKIPPED ] S.B
[  SKIPPED ] S.C
[  FAILED  ] 1 test, listed below:
[  FAILED  ] S.D

 1 FAILED TEST
  YOU HAVE 1 DISABLED TEST
"""

GTEST_CRASHED = """\
[==========] Running 3 tests from 1 test suite.
[ RUN      ] Files.Load
[       OK ] Files.Load (1 ms)
[ RUN      ] Files.Save
"""

NUNIT_INCONCLUSIVE = """\
ProcessModel: Default    DomainUsage: Single
Execution Runtime: mono-4.0
.F.F.N.N...
Tests run: 5, Errors: 1, Failures: 1, Inconclusive: 2, Time: 0.2302951 seconds
  Not run: 2, Invalid: 0, Ignored: 2, Skipped: 0

Errors and Failures:
1) Test Error : T.Err
"""

NUNIT_ALL_PASSED_ONE_INCONCLUSIVE = """\
Tests run: 40, Errors: 0, Failures: 0, Inconclusive: 1, Time: 3.5 seconds
  Not run: 0, Invalid: 0, Ignored: 0, Skipped: 0
"""

NUNIT_INVALID = """\
Tests run: 2, Errors: 0, Failures: 0, Inconclusive: 1, Time: 0.1016881 seconds
  Not run: 1, Invalid: 1, Ignored: 0, Skipped: 0
"""

CARGO_TWO_BINARIES = """\
running 3 tests
test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s
running 4 tests
test lifetimes::drop_order ... FAILED
test result: FAILED. 2 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s
error: 1 target failed:
"""

CARGO_CRASHED_AFTER_PASSING = """\
test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
error: test failed, to rerun pass `--test lifetimes`
Caused by:
  process didn't exit successfully (signal: 11, SIGSEGV: invalid memory reference)
"""


def entry(name, result, stdout="", returncode=None):
    if returncode is None:
        returncode = {"OK": 0, "SKIP": 77, "FAIL": 1}.get(result, -15)
    return {"name": name, "result": result, "returncode": returncode, "stdout": stdout}


class SummarizerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def log(self, name, entries):
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8") as f:
            for e in entries:
                f.write(json.dumps(e) + "\n")
        return path

    def summarize(self, *args):
        """(exit status, lines printed)."""
        p = subprocess.run([sys.executable, SUMMARIZER, *args], capture_output=True, text=True)
        self.assertEqual(p.stderr, "")
        return p.returncode, p.stdout.splitlines()

    def assert_summary(self, args, passed, failed, skipped):
        status, lines = self.summarize(*args)
        self.assertEqual(lines[-1], "%d passed, %d failed, %d skipped" % (passed, failed, skipped))
        self.assertEqual(status, 1 if failed else 0)
        return lines

    def test_passing_tests_are_counted_and_exit_zero(self):
        path = self.log("ok.json", [entry("unit / a", "OK"), entry("unit / b", "OK")])
        self.assertEqual(self.assert_summary([path], 2, 0, 0), ["2 passed, 0 failed, 0 skipped"])

    def test_a_failed_test_fails_the_summary_and_is_named(self):
        path = self.log("fail.json", [entry("unit / a", "OK"), entry("files / load", "FAIL")])
        lines = self.assert_summary([path], 1, 1, 0)
        self.assertIn("FAILED: files / load (FAIL)", lines)

    def test_a_failure_is_followed_by_the_lines_of_its_output_that_say_why(self):
        cargo = ("   Compiling snn v0.1.0\n" + "note: filler\n" * 50 +
                 "error[E0425]: cannot find function `snn_x` in crate `sys`\n" + "more filler\n" * 50 +
                 "error: could not compile `snn` (lib) due to 1 previous error\n")
        path = self.log("why.json", [entry("bindings / rust package", "FAIL", cargo),
                                     entry("unit / quiet", "FAIL", "".join("line %d\n" % k for k in range(40)))])
        lines = self.assert_summary([path], 0, 2, 0)
        at = lines.index("FAILED: bindings / rust package (FAIL)")
        self.assertEqual(lines[at + 1:at + 3], ["  | error[E0425]: cannot find function `snn_x` in crate `sys`",
                                                "  | error: could not compile `snn` (lib) due to 1 previous error"])
        # Without such lines, the last lines of the output.
        at = lines.index("FAILED: unit / quiet (FAIL)")
        self.assertEqual(lines[at + 1:at + 7], ["  | line %d" % k for k in range(34, 40)])
        self.assertEqual(lines[at + 7], "0 passed, 2 failed, 0 skipped")

    def test_a_timeout_is_a_failure(self):
        path = self.log("timeout.json", [entry("robust / fork", "TIMEOUT")])
        lines = self.assert_summary([path], 0, 1, 0)
        self.assertIn("FAILED: robust / fork (TIMEOUT)", lines)

    def test_an_unexpected_pass_and_a_harness_error_are_failures(self):
        path = self.log("odd.json", [entry("a", "UNEXPECTEDPASS", returncode=0),
                                     entry("b", "ERROR"), entry("c", "")])
        self.assert_summary([path], 0, 3, 0)

    def test_exit_code_77_is_a_skip(self):
        path = self.log("skip.json", [entry("gpu / layers", "SKIP", "skipped: no usable GPU\n")])
        self.assert_summary([path], 0, 0, 1)

    def test_gtest_skipped_cases_are_skipped(self):
        path = self.log("gtest.json", [entry("unit / gpu cases", "OK", GTEST_TWO_SKIPPED)])
        self.assert_summary([path], 3, 0, 2)

    def test_gtest_failed_and_disabled_cases(self):
        path = self.log("gtest-fail.json", [entry("unit / s", "FAIL", GTEST_ONE_FAILED)])
        lines = self.assert_summary([path], 1, 1, 3)
        self.assertIn("FAILED: unit / s (1 failed)", lines)

    def test_a_gtest_program_that_crashed_before_its_summary_fails(self):
        path = self.log("crash.json", [entry("files / files", "FAIL", GTEST_CRASHED, -11)])
        self.assert_summary([path], 0, 1, 0)

    def test_nunit_inconclusive_and_ignored_are_skipped(self):
        path = self.log("nunit.json", [entry("bindings / csharp", "FAIL", NUNIT_INCONCLUSIVE, 2)])
        self.assert_summary([path], 1, 2, 4)

    def test_nunit_inconclusive_in_a_passing_run_is_not_a_pass(self):
        path = self.log("nunit-ok.json",
                        [entry("bindings / csharp", "OK", NUNIT_ALL_PASSED_ONE_INCONCLUSIVE)])
        self.assert_summary([path], 39, 0, 1)

    def test_nunit_invalid_tests_are_failures(self):
        path = self.log("nunit-invalid.json", [entry("bindings / csharp", "OK", NUNIT_INVALID)])
        self.assert_summary([path], 1, 1, 1)

    def test_cargo_failures_and_ignored_tests_are_counted(self):
        path = self.log("cargo.json", [entry("bindings / rust", "FAIL", CARGO_TWO_BINARIES, 101)])
        lines = self.assert_summary([path], 5, 2, 1)
        self.assertIn("FAILED: bindings / rust (2 failed)", lines)

    def test_a_runner_that_failed_outside_its_tests_counts_a_failure(self):
        path = self.log("cargo-crash.json",
                        [entry("bindings / rust", "FAIL", CARGO_CRASHED_AFTER_PASSING, 101)])
        self.assert_summary([path], 5, 1, 0)

    def test_a_runner_reporting_failures_fails_even_if_it_exited_zero(self):
        path = self.log("cargo-zero.json", [entry("bindings / rust", "OK", CARGO_TWO_BINARIES)])
        self.assert_summary([path], 5, 2, 1)

    def test_checks_recorded_outside_meson_are_counted(self):
        path = self.log("extra.jsonl", [entry("valgrind sine", "OK"), entry("asan build", "FAIL"),
                                        entry("fashion_mnist data", "SKIP")])
        self.assert_summary([path], 1, 1, 1)

    def test_logs_add_up(self):
        a = self.log("a.json", [entry("a", "OK"), entry("b", "SKIP")])
        b = self.log("b.json", [entry("c", "OK", GTEST_TWO_SKIPPED), entry("d", "TIMEOUT")])
        self.assert_summary([a, b], 4, 1, 3)

    def test_a_meson_run_that_failed_without_a_failing_test_counts_a_failure(self):
        path = self.log("release.json", [entry("a", "OK")])
        lines = self.assert_summary(["--run", "release", "125", path], 1, 1, 0)
        self.assertIn("FAILED: release: meson test exited with 125 and its log records no failure",
                      lines)

    def test_a_meson_run_with_failing_tests_is_counted_by_its_tests(self):
        path = self.log("release.json", [entry("a", "OK"), entry("b", "FAIL")])
        self.assert_summary(["--run", "release", "1", path], 1, 1, 0)

    def test_a_passing_meson_run(self):
        path = self.log("release.json", [entry("a", "OK"), entry("b", "SKIP")])
        extra = self.log("extra.jsonl", [entry("fuzz", "OK")])
        self.assert_summary(["--run", "release", "0", path, extra], 2, 0, 1)

    def test_each_run_is_listed_with_its_counts_and_named_in_its_failures(self):
        as_set = self.log("as_set.json", [entry("unit", "OK", GTEST_TWO_SKIPPED)])
        other = self.log("other.json", [entry("unit", "OK"), entry("gemm", "FAIL")])
        lines = self.assert_summary(["--run", "release; OPENBLAS_CORETYPE unset", "0", as_set,
                                     "--run", "release; OPENBLAS_CORETYPE=Haswell", "1", other], 4, 1, 2)
        self.assertEqual(lines[0], "release; OPENBLAS_CORETYPE unset: 3 passed, 0 failed, 2 skipped")
        self.assertEqual(lines[1], "release; OPENBLAS_CORETYPE=Haswell: 1 passed, 1 failed, 0 skipped")
        self.assertIn("FAILED: release; OPENBLAS_CORETYPE=Haswell: gemm (FAIL)", lines)

    def test_a_meson_run_that_wrote_no_log_is_a_failure(self):
        missing = os.path.join(self.dir.name, "never-written.json")
        lines = self.assert_summary(["--run", "asan", "0", missing], 0, 1, 0)
        self.assertTrue(any(line.startswith("FAILED: " + missing + " cannot be read")
                            for line in lines))

    def test_an_unreadable_log_is_a_failure(self):
        path = os.path.join(self.dir.name, "broken.json")
        with open(path, "w") as f:
            f.write('{"name": "a", "result": "OK"}\n{"name": "b", "res\n')
        self.assert_summary([path], 0, 1, 0)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_summarize_tests.py PATH/TO/summarize_tests.py")
    SUMMARIZER = sys.argv.pop(1)
    unittest.main()
