#!/usr/bin/env python3
"""Times snn_bench cases at each instruction-set cap (SNN_CPU_ISA).

    bench/isa_compare.py SNN_BENCH [--runs N] [--reps N] [--threads T]
                         [--levels L,L,...] [CASE ...]

Each case runs as separate processes, one per level in turn (avx512_bf16,
avx2, portable, avx512_bf16, ...), N runs each (default 5), with
SNN_NUM_THREADS=T (default 1) and SNN_CPU_ISA set to the level. Every process
prints the median microseconds of one call over its repetitions; the table
shows, per case, the median of those per-run medians at each level and its
ratio to the first level's (above 1: slower than the first). Cases default to
the batch-1 inference of the MLP 784-128-64-10 and of the default CNN
(snn_bench's mlp_inference_1 and default_cnn_inference_1, the same as
`snn_bench --spec SPEC --batch 1 --forward`). The cap reaches snn's own
kernels, not OpenBLAS's (OPENBLAS_CORETYPE) nor the loops the loader picks
by processor (lib/cpu/multiversion.h). Python's standard library only.
"""

import argparse
import os
import statistics
import subprocess
import sys

CASES = ["mlp_inference_1", "default_cnn_inference_1"]
LEVELS = "avx512_bf16,avx512,avx2,portable"


def run(program, case, reps, threads, level):
    env = dict(os.environ, SNN_NUM_THREADS=str(threads), SNN_CPU_ISA=level)
    argv = [program, case] + (["--reps", str(reps)] if reps else [])
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == case:
            return float(fields[1])
    raise RuntimeError(f"{program} printed no line for {case}: {out!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("program")
    parser.add_argument("cases", nargs="*", default=CASES)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reps", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--levels", default=LEVELS)
    args = parser.parse_intermixed_args()
    if not os.access(args.program, os.X_OK):
        sys.exit(f"not an executable: {args.program}")
    levels = [l for l in args.levels.split(",") if l]
    known = LEVELS.split(",")
    for level in levels:
        if level not in known:
            sys.exit(f"unknown level {level!r} (one of {', '.join(known)})")
    print(f"threads {args.threads}, {args.runs} runs per level and case, levels in turn; "
          "median of per-run medians, microseconds per call")
    print()
    print("| case | " + " | ".join(f"{l} us" for l in levels) + " | " +
          " | ".join(f"{l} / {levels[0]}" for l in levels[1:]) + " |")
    print("|---|" + "---|" * (2 * len(levels) - 1))
    for case in args.cases:
        times = {l: [] for l in levels}
        for _ in range(args.runs):
            for l in levels:
                times[l].append(run(args.program, case, args.reps, args.threads, l))
        med = {l: statistics.median(times[l]) for l in levels}
        cells = [f"{med[l]:.2f}" for l in levels] + [f"{med[l] / med[levels[0]]:.2f}x" for l in levels[1:]]
        print(f"| {case} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
