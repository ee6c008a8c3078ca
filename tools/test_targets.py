#!/usr/bin/env python3
"""Prints the build targets (ninja's names, relative to the build directory)
that the tests of the given suites run, so that a build for a few suites
need not build every target (the cross builds of .ci/run):

    test_targets.py BUILD_DIR SUITE... [--no-suite SUITE]...
    ninja -C BUILD_DIR $(test_targets.py BUILD_DIR unit golden)

A test belongs to a suite as `meson test --suite` reads it: by the suite's
own name or by project:suite. The targets are the test's executable (when
the build makes it) and what the test depends on: the targets among its
arguments and its depends.
"""
import argparse
import json
import os
import subprocess
import sys


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir")
    parser.add_argument("suites", nargs="+")
    parser.add_argument("--no-suite", action="append", default=[])
    args = parser.parse_args(argv)
    build = os.path.abspath(args.build_dir)

    def introspect(what):
        return json.loads(subprocess.check_output(["meson", "introspect", build, what]))

    tests, targets = introspect("--tests"), introspect("--targets")
    by_id = {t["id"]: t for t in targets}
    wanted, unwanted = set(args.suites), set(args.no_suite)
    out = set()
    for t in tests:
        names = set(t["suite"]) | {s.split(":", 1)[-1] for s in t["suite"]}
        if not names & wanted or names & unwanted:
            continue
        for dep in t.get("depends", []):
            for f in by_id.get(dep, {}).get("filename", []):
                out.add(os.path.relpath(f, build))
        exe = os.path.abspath(t["cmd"][0])
        if exe.startswith(build + os.sep):
            out.add(os.path.relpath(exe, build))
    print("\n".join(sorted(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
