#!/usr/bin/env python3
"""Checks, from Meson's list of the registered tests, that only the device
suite runs the GPU tests with both sides on the CPU: every test of suite
'gpu' whose program or script is one of this folder's sets
SNN_TEST_GPU_AS_CPU to '0' (so a value inherited from the environment
cannot apply), and every test that sets it to '1' belongs to suite
'device' alone.

    check_gpu_env.py BUILD/meson-info/intro-tests.json GPU_SOURCE_DIR GPU_BUILD_DIR
"""
import json
import os
import sys


def suites(test):
    # Meson names suites "project:suite".
    return {s.split(":")[-1] for s in test.get("suite", [])}


def runs_from(test, dirs):
    return any(os.path.dirname(os.path.abspath(c)) in dirs for c in test.get("cmd", []))


def problems(tests, dirs):
    found = []
    gpu = [t for t in tests if "gpu" in suites(t) and runs_from(t, dirs)]
    as_cpu = [t for t in tests if t.get("env", {}).get("SNN_TEST_GPU_AS_CPU") == "1"]
    if not gpu:
        found.append("no test of suite gpu runs a program of the gpu folder")
    if not as_cpu:
        found.append("no test runs the GPU comparisons with both sides on the CPU")
    for t in gpu:
        value = t.get("env", {}).get("SNN_TEST_GPU_AS_CPU")
        if value != "0":
            found.append("%s (suite gpu) sets SNN_TEST_GPU_AS_CPU to %r, not '0'"
                         % (t["name"], value))
    for t in as_cpu:
        if suites(t) != {"device"}:
            found.append("%s sets SNN_TEST_GPU_AS_CPU=1 in suites %s, not in suite device alone"
                         % (t["name"], sorted(suites(t))))
    return found, len(gpu), len(as_cpu)


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__)
    with open(argv[1], encoding="utf-8") as f:
        tests = json.load(f)
    dirs = {os.path.abspath(d) for d in argv[2:4]}
    found, gpu, as_cpu = problems(tests, dirs)
    for p in found:
        print(p)
    if found:
        return 1
    print("%d gpu tests run on the GPU; %d device tests run both sides on the CPU" % (gpu, as_cpu))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
