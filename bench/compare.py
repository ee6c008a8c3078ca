#!/usr/bin/env python3
"""Compares snn with libtorch (PyTorch's C++ API) on the cases of snn_bench.

    bench/compare.py [BUILD_DIR] [--runs N] [--reps N] [--only CASE ...]
                     [--output FILE] [--peer libtorch|torch2] [--python PYTHON]
                     [--taskset CPUS] [--no-build] [--variants VARIANT ...]

BUILD_DIR (default: build) is a Meson build directory with benchmarks on;
the script only runs ninja there to bring the four programs up to date:
snn_bench, torch_bench (built when libtorch is installed), plain_sgemm_mlp
and sgemm_peak. With --no-build it runs what is there (for a build directory
copied from another machine); sgemm_peak and plain_sgemm_mlp may then be
missing, and their columns and rows are left out.

--peer torch2 compares with PyTorch in Python instead of libtorch:
bench/torch2_cpu.py run by --python (default: python3), the PyTorch 2.x
version of the cases (oneDNN convolutions); it has no startup_* cases and
counts no allocations. --taskset CPUS runs every process under
`taskset -c CPUS`, so that both sides (and sgemm_peak) use the same cores.
--variants keeps only some kinds of rows: default, tuned (the peer's
thread settings, below) and subnormal (a long training run).

Each case runs as separate processes, snn and libtorch in alternation
(snn, torch, snn, torch, ...), N runs each (default 5). Every process prints
the median time of one call over its repetitions; the table shows the median
of those per-run medians. Threads are set through SNN_NUM_THREADS, which
both programs read (torch_bench passes it to torch::set_num_threads).

Columns: the case and its thread count; the OpenBLAS kernel in use; the
median microseconds per call of snn and of libtorch; their ratio
(libtorch / snn: how many times faster snn is); heap allocations per call of
each; snn's GFLOP/s and that as a percentage of this machine's measured
sgemm peak at the same thread count; the target and whether it is met
(targets are ratios to libtorch: left out with --peer torch2).

FLOPs are counted analytically from the model spec: 2 per multiply-add of the
dense and convolution layers (forward), and for a training step also the
weight gradients (as many again) and the input gradients of every layer but
the first. Activations, batchnorm, residual adds, dropout, pooling, the loss
and the optimiser are not counted.

startup_* rows time model creation with everything a training loop needs
(snn: snn_model_create, snn_preallocate, snn_preallocate_grads,
snn_optimiser_create; libtorch: the modules and the Adam optimiser, its other
buffers being made lazily during the first steps). Their "whole process"
rows are the wall time of a process that starts, loads the library, creates
the model once and exits.

"libtorch tuned" (with --peer torch2: PyTorch) is the fastest of a few
thread settings: one inter-op thread (torch::set_num_interop_threads(1))
with OMP_WAIT_POLICY PASSIVE or ACTIVE, and with OpenBLAS limited to one
thread.
OPENBLAS_CORETYPE, if set in the environment, is recorded and passed on
unchanged. Uses Python's standard library only.
"""

import argparse
import datetime
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time

TINY = "input 4; dense 32 tanh; dense 16 tanh; dense 4"
SEED = "input 100; dense 200 relu; dense 1"
MLP = "input 784; dense 128 relu; dense 64 relu; dense 10"
CNN = ("input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; "
       "flatten; dense 10")
DEFAULT_CNN = ("input 28x28x1; conv 3x3 32 relu pad=1; maxpool 2; conv 3x3 64 relu pad=1; "
               "maxpool 2; flatten; dense 128 relu; dense 10")
# FASHION_MNIST_RESNET_SPEC of examples/fashion_mnist/models.h
RESNET = "input 28x28x1; " + "".join(
    "conv 3 {c} pad=1 nobias init=he_normal; batchnorm; relu name=s{i}; "
    "conv 3 {c} pad=1 nobias init=he_normal; batchnorm; relu; "
    "conv 3 {c} pad=1 nobias init=he_normal; batchnorm; add s{i}; relu; {pool}".format(
        c=c, i=i, pool="maxpool 2; " if i < 3 else "")
    for i, c in ((1, 16), (2, 32), (3, 64))) + "flatten; dropout 0.4; dense 10"

# case name (as in snn_bench and torch_bench) -> spec, batch, training step?
CASES = {
    "tiny_train_step": (TINY, 32, True),
    "tiny_forward": (TINY, 32, False),
    "seed_forward": (SEED, 128, False),
    "mlp_train_step": (MLP, 64, True),
    "cnn_train_step": (CNN, 64, True),
    "cnn_inference_1000": (CNN, 1000, False),
    "default_cnn_train_step": (DEFAULT_CNN, 64, True),
    "resnet_train_step": (RESNET, 64, True),
    "startup_tiny": (TINY, 32, None),
    "startup_mlp": (MLP, 64, None),
    "startup_cnn": (CNN, 64, None),
}

# One row of the table: case, threads, which libtorch settings, target.
# A target is (minimum libtorch/snn ratio, text) or None.
ROWS = [
    ("tiny_train_step", 1, "default", (50.0, ">=50x")),
    ("tiny_forward", 1, "default", (10.0, ">=10x")),
    ("seed_forward", 1, "default", (1.2, ">=1.2x")),
    ("seed_forward", 2, "default", (1.2, ">=1.2x")),
    ("mlp_train_step", 2, "default", (3.0, ">=3x")),
    ("mlp_train_step", 2, "tuned", (1.5, ">=1.5x")),
    ("cnn_train_step", 2, "default", (2.0, ">=2x")),
    ("cnn_train_step", 2, "tuned", None),
    ("cnn_inference_1000", 2, "default", (2.0, ">=2x")),
    ("cnn_inference_1000", 2, "tuned", None),
    ("default_cnn_train_step", 2, "default", None),
    ("resnet_train_step", 2, "default", None),
    ("mlp_train_step", 2, "subnormal", None),
    ("startup_tiny", 1, "default", None),
    ("startup_mlp", 1, "default", None),
    ("startup_cnn", 1, "default", None),
]

# Training cases run about 550 steps by default. Past about 800 steps on the
# same batch, Adam's first moment of weights whose gradient is always zero
# (dead relu units, like always-black pixels in real data) decays into
# subnormal floats, which slow both engines' updates several-fold: one row
# measures that regime.
SUBNORMAL_STEPS = 3000

TORCH_TUNED = [
    ("interop 1, OMP passive", {"OMP_WAIT_POLICY": "PASSIVE"}, ["--interop-threads", "1"]),
    ("interop 1, OMP active", {"OMP_WAIT_POLICY": "ACTIVE"}, ["--interop-threads", "1"]),
    ("interop 1, OMP passive, OpenBLAS 1 thread",
     {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_NUM_THREADS": "1"}, ["--interop-threads", "1"]),
]


# Layers whose output has the shape of their input (add: of its first input).
SHAPE_KEEPING = {"relu", "leaky_relu", "tanh", "sigmoid", "gelu", "silu", "softmax",
                 "batchnorm", "layernorm", "dropout", "add"}


def parse_spec(spec):
    """Layers of a spec as (kind, options) with the shapes tracked: returns a
    list of multiply-add counts per sample of the dense and conv layers.
    Options without "=" other than sizes (nobias) and those with it that do
    not change shapes (name=, init=, ...) are ignored; "conv K N" is a KxK
    convolution."""
    macs = []
    shape = None  # (channels, height, width)
    for part in re.split(r"[;\n]", spec):
        words = part.split()
        if not words:
            continue
        kind, args = words[0], words[1:]
        opts = dict(a.split("=", 1) for a in args if "=" in a)
        plain = [a for a in args if "=" not in a and a != "nobias"]
        if kind == "input":
            dims = [int(d) for d in plain[0].split("x")]
            shape = (dims[2], dims[0], dims[1]) if len(dims) == 3 else (dims[0], 1, 1)
        elif kind == "dense":
            n = int(plain[0])
            features = shape[0] * shape[1] * shape[2]
            macs.append(features * n)
            shape = (n, 1, 1)
        elif kind == "conv":
            kh, kw = pair(plain[0])
            out = int(plain[1])
            sh, sw = pair(opts.get("stride", "1"))
            ph, pw = pair(opts.get("pad", "0"))
            c, h, w = shape
            ho = (h + 2 * ph - kh) // sh + 1
            wo = (w + 2 * pw - kw) // sw + 1
            macs.append(out * ho * wo * c * kh * kw)
            shape = (out, ho, wo)
        elif kind in ("maxpool", "avgpool"):
            kh, kw = pair(plain[0])
            sh, sw = pair(opts.get("stride", plain[0]))
            c, h, w = shape
            shape = (c, (h - kh) // sh + 1, (w - kw) // sw + 1)
        elif kind == "flatten":
            shape = (shape[0] * shape[1] * shape[2], 1, 1)
        elif kind == "globalavgpool":
            shape = (shape[0], 1, 1)
        elif kind in SHAPE_KEEPING:
            pass
        else:
            raise ValueError("unknown layer " + kind)
    return macs


def pair(text):
    parts = [int(p) for p in text.split("x")]
    return (parts[0], parts[-1])


def case_flops(case):
    spec, batch, train = CASES[case]
    if train is None:
        return None
    macs = parse_spec(spec)
    forward = 2 * sum(macs)
    if not train:
        return forward * batch
    # forward + weight gradients + input gradients of all but the first layer
    return (3 * forward - 2 * macs[0]) * batch


def run_program(argv, env_extra, threads):
    env = dict(os.environ)
    env["SNN_NUM_THREADS"] = str(threads)
    env.update(env_extra)
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall_us = (time.perf_counter() - t0) * 1e6
    if done.returncode != 0:
        sys.exit("failed: %s\n%s" % (shlex.join(argv), done.stderr))
    results = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3:
            # allocations: "-" where not counted (torch2_cpu.py)
            results[fields[0]] = (float(fields[1]),
                                  None if fields[2] == "-" else float(fields[2]))
    return results, wall_us


def lscpu():
    info = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return info
    for line in out.splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            info[key.strip()] = value.strip()
    return info


def cpu_topology(cpus):
    """ " (socket/core of each CPU: 0/0, 0/1)" for a taskset list, where
    /sys tells; two CPUs on one core share its execution units."""
    ids = []
    try:
        for part in cpus.split(","):
            first, _, last = part.partition("-")
            ids += range(int(first), int(last or first) + 1)
        where = []
        for cpu in ids:
            topo = "/sys/devices/system/cpu/cpu%d/topology/" % cpu
            with open(topo + "physical_package_id") as f, open(topo + "core_id") as g:
                where.append("%s/%s" % (f.read().strip(), g.read().strip()))
    except (OSError, ValueError):
        return ""
    return " (socket/core of each CPU: %s)" % ", ".join(where)


def sgemm_peaks(program, prefix=()):
    """Best of three runs of sgemm_peak: {threads: GFLOP/s}, corename, config."""
    peaks, corename, config = {}, "?", "?"
    if not os.path.exists(program):
        return peaks, corename, config
    for _ in range(3):
        out = subprocess.run(list(prefix) + [program, "1", "2"], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            fields = line.split()
            if fields[:1] == ["corename"]:
                corename = fields[1]
            elif fields[:1] == ["config"]:
                config = " ".join(fields[1:])
            elif fields[:1] == ["sgemm_peak"]:
                t, g = int(fields[1]), float(fields[2])
                peaks[t] = max(peaks.get(t, 0.0), g)
    return peaks, corename, config


def median_or_none(values):
    """Median, or None when a value is missing (allocations not counted)."""
    if not values or any(v is None for v in values):
        return None
    return statistics.median(values)


def fmt(value, digits=1):
    if value is None:
        return "-"
    if value >= 1000:
        return "%.0f" % value
    return "%.*f" % (digits, value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir", nargs="?", default="build")
    parser.add_argument("--runs", type=int, default=5, help="processes per side and case")
    parser.add_argument("--reps", type=int, default=0, help="repetitions inside a process")
    parser.add_argument("--only", nargs="*", default=[], help="cases to run")
    parser.add_argument("--output", help="also write the report (Markdown) to this file")
    parser.add_argument("--peer", choices=["libtorch", "torch2"], default="libtorch",
                        help="libtorch: torch_bench; torch2: bench/torch2_cpu.py (PyTorch)")
    parser.add_argument("--python", default="python3",
                        help="the Python with PyTorch that runs torch2_cpu.py")
    parser.add_argument("--taskset", metavar="CPUS",
                        help="run every process under taskset -c CPUS")
    parser.add_argument("--no-build", action="store_true",
                        help="do not run ninja; use the programs as they are")
    parser.add_argument("--variants", nargs="*", choices=["default", "tuned", "subnormal"],
                        default=["default", "tuned", "subnormal"], help="kinds of rows to run")
    args = parser.parse_args()

    bench = os.path.join(args.build_dir, "bench")
    targets = ["bench/snn_bench", "bench/sgemm_peak", "bench/plain_sgemm_mlp"]
    snn_bench = os.path.join(bench, "snn_bench")
    build_ninja = os.path.join(args.build_dir, "build.ninja")
    prefix = ["taskset", "-c", args.taskset] if args.taskset else []
    if args.peer == "torch2":
        peer_name = "PyTorch"
        peer_cmd = prefix + [args.python, os.path.join(os.path.dirname(os.path.abspath(
            __file__)), "torch2_cpu.py")]
        have_torch = True
    else:
        peer_name = "libtorch"
        peer_cmd = prefix + [os.path.join(bench, "torch_bench")]
        if args.no_build:
            have_torch = os.path.exists(peer_cmd[-1])
        else:
            have_torch = os.path.exists(build_ninja) and \
                "bench/torch_bench:" in open(build_ninja).read()
        if have_torch:
            targets.append("bench/torch_bench")
    if not args.no_build:
        subprocess.run(["ninja", "-C", args.build_dir] + targets, check=True,
                       stdout=subprocess.DEVNULL)
    if not os.path.exists(snn_bench):
        sys.exit("no %s: build it first" % snn_bench)
    plain_mlp = os.path.join(bench, "plain_sgemm_mlp")
    have_plain = os.path.exists(plain_mlp)

    def peer_has(case):
        # torch2_cpu.py has no startup_* cases
        return have_torch and not (args.peer == "torch2" and case.startswith("startup_"))

    cpu = lscpu()
    model = cpu.get("Model name", platform.processor() or "?")
    cores = int(cpu.get("Core(s) per socket", "0") or 0) * int(cpu.get("Socket(s)", "1") or 1)
    header = [
        "date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "command: bench/compare.py %s" % shlex.join(sys.argv[1:]),
        "machine: %s, %s CPUs (%d cores), %s" % (model, cpu.get("CPU(s)", "?"), cores,
                                                   platform.platform()),
        "load average at start: %s" % " ".join("%.2f" % x for x in os.getloadavg()),
        "OPENBLAS_CORETYPE: %s" % os.environ.get("OPENBLAS_CORETYPE", "(not set)"),
    ]
    if args.taskset:
        header.append("every process pinned: taskset -c %s%s" % (args.taskset,
                                                                 cpu_topology(args.taskset)))
    peaks, corename, config = sgemm_peaks(os.path.join(bench, "sgemm_peak"), prefix)
    header.append("OpenBLAS: %s" % config)
    if have_torch:
        done = subprocess.run(peer_cmd + ["--version"], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit("failed: %s --version\n%s" % (shlex.join(peer_cmd), done.stderr))
        header.append(done.stdout.strip())
    header.append("OpenBLAS core: %s; sgemm peak (1024^3): %s" % (
        corename, ", ".join("%d thread%s %.1f GFLOP/s" % (t, "" if t == 1 else "s", g)
                            for t, g in sorted(peaks.items()))))
    if not have_torch:
        header.append("libtorch: not built (install libtorch-dev and reconfigure)")
    header.append("runs: %d processes per side and case, alternating; median of per-run medians"
                  % args.runs)
    for line in header:
        print(line, flush=True)

    reps = ["--reps", str(args.reps)] if args.reps > 0 else []
    rows = [r for r in ROWS if (not args.only or r[0] in args.only) and r[2] in args.variants]
    table = []
    tuned_cache = {}
    for case, threads, variant, target in rows:
        first_row = len(table)
        if args.peer != "libtorch":
            target = None  # the targets are ratios to libtorch
        row_reps = reps
        if variant == "subnormal":
            row_reps = ["--reps", str(SUBNORMAL_STEPS)]
        sides = {"snn": (prefix + [snn_bench, case] + row_reps, {})}
        if peer_has(case):
            if variant != "tuned":
                sides["torch"] = (peer_cmd + [case] + row_reps, {})
            else:
                for label, env, extra in TORCH_TUNED:
                    sides["torch: " + label] = (peer_cmd + [case] + extra + reps, env)
        if case == "seed_forward" and have_plain:
            sides["plain"] = (prefix + [plain_mlp] + reps, {})
        if case.startswith("startup_"):
            # whole processes that create the model once: exec, dynamic
            # loading, creation, exit
            sides["snn once"] = (prefix + [snn_bench, case, "--reps", "1"], {})
            if peer_has(case):
                sides["torch once"] = (peer_cmd + [case, "--reps", "1"], {})
        medians = {k: [] for k in sides}
        allocs = {k: [] for k in sides}
        walls = {k: [] for k in sides}
        for _ in range(args.runs):
            for name, (argv, env) in sides.items():
                results, wall = run_program(argv, env, threads)
                us, allocations = results[case]
                medians[name].append(us)
                allocs[name].append(allocations)
                walls[name].append(wall)
        med = {k: statistics.median(v) for k, v in medians.items()}
        torch_name = None
        torch_keys = [k for k in med if k.startswith("torch") and k != "torch once"]
        if torch_keys:
            torch_name = min(torch_keys, key=lambda k: med[k])
        snn_us = med["snn"]
        torch_us = med[torch_name] if torch_name else None
        ratio = torch_us / snn_us if torch_us else None
        flops = case_flops(case)
        gflops = flops / snn_us / 1e3 if flops else None
        peak = peaks.get(threads)
        pct = 100.0 * gflops / peak if gflops and peak else None
        status = "-"
        target_text = target[1] if target else "-"
        if target and ratio is not None:
            status = "met" if ratio >= target[0] else "missed"
        label = {"default": case, "tuned": case + " (torch tuned)",
                 "subnormal": case + " (%d steps)" % SUBNORMAL_STEPS}[variant]
        if variant == "tuned" and torch_name:
            tuned_cache[case] = torch_name[len("torch: "):]
        table.append([label, str(threads), corename, fmt(snn_us, 2), fmt(torch_us, 2),
                      fmt(ratio, 2) + ("x" if ratio else ""),
                      fmt(median_or_none(allocs["snn"]), 0),
                      fmt(median_or_none(allocs[torch_name]), 0) if torch_name else "-",
                      fmt(gflops, 2), fmt(pct, 1), target_text, status])
        if case == "seed_forward" and have_plain:
            plain_us = med["plain"]
            rel = snn_us / plain_us
            table.append(["seed_forward vs plain sgemm", str(threads), corename, fmt(snn_us, 2),
                          "plain " + fmt(plain_us, 2), "snn/plain %.2fx" % rel,
                          fmt(statistics.median(allocs["snn"]), 0),
                          fmt(statistics.median(allocs["plain"]), 0), fmt(gflops, 2),
                          fmt(pct, 1), "<=1.0x", "met" if rel <= 1.0 else "missed"])
        if case.startswith("startup_"):
            snn_wall = statistics.median(walls["snn once"])
            torch_wall = statistics.median(walls["torch once"]) if torch_name else None
            table.append([case + " whole process", str(threads), corename, fmt(snn_wall, 0),
                          fmt(torch_wall, 0),
                          fmt(torch_wall / snn_wall, 2) + "x" if torch_wall else "-",
                          "-", "-", "-", "-", "-", "-"])
        for row in table[first_row:]:
            print(" | ".join(row), flush=True)

    columns = ["case", "threads", "openblas core", "snn us", peer_name + " us",
               "ratio (torch/snn)" if args.peer == "libtorch"
               else "ratio (%s/snn, >1: snn faster)" % peer_name, "snn allocs/call", "torch allocs/call", "snn GFLOP/s",
               "% sgemm peak", "target", "status"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(r) + " |" for r in table]
    notes = []
    for case, label in tuned_cache.items():
        notes.append("%s tuned, %s: fastest setting was %s" % (peer_name, case, label))
    images = []
    for r in table:
        name = r[0].split(" ")[0]
        if name in ("cnn_train_step", "cnn_inference_1000", "default_cnn_train_step",
                    "resnet_train_step") and "whole" not in r[0]:
            batch = CASES[name][1]
            snn_ips = batch / float(r[3]) * 1e6
            torch_ips = batch / float(r[4]) * 1e6 if r[4] != "-" else None
            images.append("%s: snn %.0f images/s, %s %s images/s" % (
                r[0], snn_ips, peer_name, "%.0f" % torch_ips if torch_ips else "-"))
    print()
    print("\n".join(lines))
    print()
    print("\n".join(images + notes))
    if args.output:
        with open(args.output, "w") as f:
            f.write("# snn vs %s\n\n" % peer_name)
            f.write("\n".join("- " + h for h in header) + "\n\n")
            f.write("\n".join(lines) + "\n\n")
            f.write("\n".join("- " + n for n in images + notes) + "\n")


if __name__ == "__main__":
    main()
