#!/usr/bin/env python3
"""The "scale on paper" model of docs/distributed.md: how long a ring
all-reduce of each example network's gradient takes, against the time one
training step computes, for 2 to 64 ranks and 10, 25 and 100 Gb/s links.

    python3 docs/scaling_model.py > table.md

Ring all-reduce of S bytes over p ranks moves 2(p-1)/p * S bytes through
each rank's link, so it takes T_comm = 2(p-1)/p * S / B at bandwidth B (plus
2(p-1) message latencies, left out of the main table: see the last table).
With the batch per rank fixed (weak scaling), one step takes
T_compute + T_comm when nothing overlaps, and p ranks process
p * T_compute / (T_compute + T_comm) times the images of one.

The compute times are medians of build/bench/snn_bench (one CPU thread,
batch 64, forward + backprop + Adam), edit STEP_MS to use your own.
"""

# name: (parameters, measured step time in ms at batch 64, one thread)
NETWORKS = {
    "simplenns CNN (1 906 params)": (1906, 5.86),
    "MLP 784-128-64-10 (109 386 params)": (109386, 0.73),
    "default CNN (421 642 params)": (421642, 27.1),
}
BATCH = 64
RANKS = [2, 4, 8, 16, 32, 64]
GBITS = [10, 25, 100]
LATENCY_US = 10.0  # one message on a TCP/Ethernet cluster; about 2 us with RDMA


def comm_ms(params, ranks, gbits, bytes_per_value=4, latency_us=0.0):
    size = params * bytes_per_value
    bandwidth = gbits * 1e9 / 8  # bytes per second
    seconds = 2 * (ranks - 1) / ranks * size / bandwidth + 2 * (ranks - 1) * latency_us * 1e-6
    return seconds * 1e3


def main():
    print("Communication time per step (ms) and its share of the step "
          "(T_comm / (T_compute + T_comm)), fp32 gradients, no overlap, "
          f"batch {BATCH} per rank.\n")
    for name, (params, step) in NETWORKS.items():
        print(f"**{name}**, compute {step:g} ms per step, gradient "
              f"{params * 4 / 1e6:.3g} MB\n")
        print("| ranks | " + " | ".join(f"{g} Gb/s" for g in GBITS) + " |")
        print("|---:|" + "---:|" * len(GBITS))
        for p in RANKS:
            cells = []
            for g in GBITS:
                t = comm_ms(params, p, g)
                share = t / (step + t)
                cells.append(f"{t:.3g} ms ({100 * share:.0f}%)")
            print(f"| {p} | " + " | ".join(cells) + " |")
        print()

    print("What pushes communication back, at 64 ranks and 10 Gb/s: the share of "
          "the step spent communicating with fp32 gradients; with fp16 gradients "
          "(half the bytes); with a per-rank batch four times larger (compute x4, "
          "same bytes); and the per-rank batch at which compute equals "
          "communication (fp32).\n")
    print("| network | fp32 | fp16 | batch 256 per rank | break-even batch per rank |")
    print("|---|---:|---:|---:|---:|")
    for name, (params, step) in NETWORKS.items():
        t32 = comm_ms(params, 64, 10)
        t16 = comm_ms(params, 64, 10, bytes_per_value=2)
        big = 4 * step
        even = BATCH * t32 / step
        print(f"| {name} | {100 * t32 / (step + t32):.0f}% | {100 * t16 / (step + t16):.0f}% "
              f"| {100 * t32 / (big + t32):.0f}% | {even:.2g} |")
    print()

    print(f"With {LATENCY_US:g} us per message, a ring all-reduce over p ranks adds "
          f"2(p-1) x {LATENCY_US:g} us whatever the size, which is what dominates "
          "the small networks:\n")
    print("| network | 8 ranks, 25 Gb/s | 64 ranks, 25 Gb/s |")
    print("|---|---:|---:|")
    for name, (params, step) in NETWORKS.items():
        cells = []
        for p in (8, 64):
            t = comm_ms(params, p, 25, latency_us=LATENCY_US)
            cells.append(f"{t:.3g} ms ({100 * t / (step + t):.0f}%)")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
