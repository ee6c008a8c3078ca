#!/usr/bin/env python3
"""bench/gpu_bench.c's cases in PyTorch on a GPU, for comparison with snn.

    bench/torch_gpu.py [CASE ...] [--mode eager|best|both] [--rounds N]
    bench/torch_gpu.py --version

Same networks (bench/torch2_cpu.py's, layer for layer), batches, losses,
inputs, optimiser (Adam, learning rate 1e-3) and timing as gpu_bench: the
data are uploaded once; a round is a number of calls in a row (about 20 ms)
followed by torch.cuda.synchronize(), and the line printed is

    name/mode median_us min_us steps_per_round

with the median over rounds of the time per call. Modes:
  eager  zero_grad(set_to_none), forward, loss, backward, Adam's default
         (foreach) step, as a plain training loop writes it;
  best   Adam(fused=True, capturable=True) and the whole step (or forward
         pass) captured once in a CUDA Graph and replayed.
Both run with torch.backends.cudnn.benchmark = True. TF32 is off (matmul and
cuDNN) except in the cases whose name says tf32, as in gpu_bench.
"""

import argparse
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch2_cpu import make_net as cpu_net, filled  # noqa: E402

# name -> network, batch, train, tf32 (gpu_bench's cases, in its order)
CASES = {
    "seed_forward_128": ("seed", 128, False, False),
    "mlp_train_64": ("mlp", 64, True, False),
    "cnn_train_64": ("cnn", 64, True, False),
    "default_cnn_train_64": ("default_cnn", 64, True, False),
    "default_cnn_train_512": ("default_cnn", 512, True, False),
    "default_cnn_forward_64": ("default_cnn", 64, False, False),
    "big_mlp_tf32_train_1024": ("big_mlp", 1024, True, True),
    "resnet_train_64": ("resnet", 64, True, False),
    "resnet_train_512": ("resnet", 512, True, False),
}
INPUT_SHAPE = {"seed": (100,), "mlp": (784,), "big_mlp": (1024,),
               "cnn": (1, 28, 28), "default_cnn": (1, 28, 28), "resnet": (1, 28, 28)}
OUTPUTS = {"seed": 1}  # the others: 10


def make_net(net):
    if net == "big_mlp":  # input 1024; dense 4096 relu; dense 4096 relu; dense 10
        return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                             nn.Linear(4096, 10))
    return cpu_net(net)


def time_rounds(name, rounds, call):
    """Warms up, sizes a round to about 20 ms, then prints the median and the
    minimum time per call over `rounds` rounds."""
    steps = 10
    for _ in range(2):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            call()
        torch.cuda.synchronize()
        per = (time.perf_counter() - t0) / steps * 1e6
    steps = max(5, min(400, int(20000.0 / max(per, 1.0))))
    times = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            call()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / steps * 1e6)
    times.sort()
    print("%s %.1f %.1f %d" % (name, times[len(times) // 2], times[0], steps), flush=True)


def run(name, mode, rounds):
    net_name, batch, train, tf32 = CASES[name]
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    torch.manual_seed(0)
    net = make_net(net_name).to(dev)
    x = filled((batch,) + INPUT_SHAPE[net_name], 2654435761, 1000).to(dev)
    outputs = OUTPUTS.get(net_name, 10)
    label = "%s/%s" % (name, mode)
    if not train:
        net.eval()
        if mode == "eager":
            def fwd():
                with torch.inference_mode():
                    net(x)
            time_rounds(label, rounds, fwd)
            return
        with torch.no_grad():
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    net(x)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = net(x)  # noqa: F841 (kept alive with the graph)
        time_rounds(label, rounds, g.replay)
        return
    net.train()
    if outputs == 1:
        target = filled((batch, 1), 40503, 100).to(dev)
        loss_fn = nn.functional.mse_loss
    else:
        target = (torch.arange(batch, dtype=torch.int64) % outputs).to(dev)
        loss_fn = nn.functional.cross_entropy
    if mode == "eager":
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            loss_fn(net(x), target).backward()
            opt.step()
        time_rounds(label, rounds, step)
        return
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, fused=True, capturable=True)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(net(x), target).backward()
        opt.step()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        loss_fn(net(x), target).backward()
        opt.step()
    time_rounds(label, rounds, g.replay)


def version():
    p = torch.cuda.get_device_properties(0)
    return "PyTorch %s, CUDA %s, cuDNN %s, %s (%d SMs)" % (
        torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), p.name,
        p.multi_processor_count)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="cases to run (default: all)")
    parser.add_argument("--mode", choices=("eager", "best", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--version", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no GPU: torch.cuda.is_available() is False")
        sys.exit(77)
    if args.version:
        print(version())
        return
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        sys.exit("unknown cases: %s (cases: %s)" % (" ".join(unknown), " ".join(CASES)))
    modes = ("eager", "best") if args.mode == "both" else (args.mode,)
    for name in CASES:
        if args.cases and name not in args.cases:
            continue
        for mode in modes:
            try:
                run(name, mode, args.rounds)
            except Exception as e:  # report and go on with the next case
                print("%s/%s - - - (%s: %s)" % (name, mode, type(e).__name__, e), flush=True)


if __name__ == "__main__":
    main()
