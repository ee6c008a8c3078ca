#!/usr/bin/env python3
"""Times two builds of snn_bench against each other (before and after a change).

    bench/ab.py OLD_SNN_BENCH NEW_SNN_BENCH [--runs N] [--reps N]
                [--threads T] [CASE ...]

Each case runs as separate processes, old and new in alternation (old, new,
old, new, ...), N runs each (default 5), with SNN_NUM_THREADS=T (default 2).
Every process prints the median microseconds of one call over its
repetitions; the table shows, per case, the median of those per-run medians
for each build and their ratio (old / new: above 1, the new build is
faster). Cases default to every training and inference case of snn_bench
(not the startup ones). Uses Python's standard library only.
"""

import argparse
import os
import statistics
import subprocess
import sys

CASES = ["seed_forward", "mlp_train_step", "tiny_train_step", "tiny_forward", "cnn_train_step",
         "cnn_inference_1000", "default_cnn_train_step", "resnet_train_step"]


def run(program, case, reps, threads):
    env = dict(os.environ, SNN_NUM_THREADS=str(threads))
    argv = [program, case] + (["--reps", str(reps)] if reps else [])
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == case:
            return float(fields[1])
    raise RuntimeError(f"{program} printed no line for {case}: {out!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("cases", nargs="*", default=CASES)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reps", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_intermixed_args()
    for program in (args.old, args.new):
        if not os.access(program, os.X_OK):
            sys.exit(f"not an executable: {program}")
    print(f"threads {args.threads}, {args.runs} runs per build and case, alternating; "
          "median of per-run medians, microseconds per call")
    print()
    print("| case | old us | new us | old / new |")
    print("|---|---|---|---|")
    for case in args.cases:
        times = {"old": [], "new": []}
        for _ in range(args.runs):
            times["old"].append(run(args.old, case, args.reps, args.threads))
            times["new"].append(run(args.new, case, args.reps, args.threads))
        old, new = statistics.median(times["old"]), statistics.median(times["new"])
        print(f"| {case} | {old:.2f} | {new:.2f} | {old / new:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
