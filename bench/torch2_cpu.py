#!/usr/bin/env python3
"""snn_bench's CPU cases in PyTorch (Python), for comparison with snn.

    bench/torch2_cpu.py [CASE ...] [--reps N] [--interop-threads N]
                        [--precision float32|bf16]
    bench/torch2_cpu.py --version

The twin of bench/snn_bench.c (and of bench/torch_bench.cpp, its libtorch
C++ version) for PyTorch 2.x, whose CPU convolutions go through oneDNN
(torch.backends.mkldnn); it runs with any torch >= 1.13. Same networks,
batches, losses, inputs and optimiser (Adam, learning rate 1e-3) as
snn_bench, same warm-up (reps/10 + 3 calls) and the same output, one line
per case:

    name median_us -

median_us: median over repetitions of one call (a forward pass under
torch.inference_mode, or a whole training step: zero_grad, forward, loss,
backward, Adam step); the allocation count that snn_bench prints is "-"
here. Modules stay in training mode for training steps, so batchnorm uses
the batch's statistics and dropout draws a new mask at every step, as snn's
training steps do. zero_grad sets gradients to None (PyTorch 2.x's default),
whichever version runs.

--precision bf16 runs the forward pass and the loss under
torch.autocast("cpu", dtype=torch.bfloat16), and backward and the optimiser
step outside it, as PyTorch's automatic mixed precision guide does: snn's
--precision bf16 (products in bf16, parameters and the rest float32).

Threads: SNN_NUM_THREADS (default: all cores) is passed to
torch.set_num_threads, as snn_bench and torch_bench read it. With
--interop-threads N, torch.set_num_interop_threads(N) is called first.
The startup_* cases of snn_bench are not here.
"""

import argparse
import os
import sys
import time

import torch
from torch import nn


class Residual(nn.Module):
    """x + body(x): a spec's "add NAME", the saved output NAME being x."""

    def __init__(self, *body):
        super().__init__()
        self.body = nn.Sequential(*body)

    def forward(self, x):
        return x + self.body(x)


def conv3x3(cin, cout):
    """conv 3 COUT pad=1 nobias init=he_normal"""
    conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
    nn.init.kaiming_normal_(conv.weight, mode="fan_in", nonlinearity="relu")
    return conv


def resnet_stage(cin, cout, pool):
    """conv 3 C pad=1 nobias; batchnorm; relu name=s;
    conv 3 C pad=1 nobias; batchnorm; relu;
    conv 3 C pad=1 nobias; batchnorm; add s; relu; [maxpool 2]"""
    layers = [conv3x3(cin, cout), nn.BatchNorm2d(cout), nn.ReLU(),
              Residual(conv3x3(cout, cout), nn.BatchNorm2d(cout), nn.ReLU(),
                       conv3x3(cout, cout), nn.BatchNorm2d(cout)),
              nn.ReLU()]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return layers


def make_net(net):
    """The networks of snn_bench's specs, layer for layer."""
    if net == "tiny":  # input 4; dense 32 tanh; dense 16 tanh; dense 4
        return nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 16), nn.Tanh(),
                             nn.Linear(16, 4))
    if net == "seed":  # input 100; dense 200 relu; dense 1
        return nn.Sequential(nn.Linear(100, 200), nn.ReLU(), nn.Linear(200, 1))
    if net == "mlp":  # input 784; dense 128 relu; dense 64 relu; dense 10
        return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                             nn.Linear(64, 10))
    if net == "cnn":
        # input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4;
        # flatten; dense 10.  28 -> 24 -> 12 -> 10 -> 2: 8*2*2 = 32 features.
        return nn.Sequential(nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 8, 3), nn.ReLU(), nn.MaxPool2d(4), nn.Flatten(),
                             nn.Linear(32, 10))
    if net == "default_cnn":
        # input 28x28x1; conv 3x3 32 relu pad=1; maxpool 2; conv 3x3 64 relu pad=1;
        # maxpool 2; flatten; dense 128 relu; dense 10.  28 -> 14 -> 7: 64*7*7.
        return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    if net == "resnet":
        # FASHION_MNIST_RESNET_SPEC (examples/fashion_mnist/models.h): three
        # stages, 16, 32 and 64 channels at 28x28, 14x14 and 7x7; flatten;
        # dropout 0.4; dense 10.
        return nn.Sequential(*resnet_stage(1, 16, True), *resnet_stage(16, 32, True),
                             *resnet_stage(32, 64, False), nn.Flatten(), nn.Dropout(0.4),
                             nn.Linear(64 * 7 * 7, 10))
    raise ValueError(net)


INPUT_SHAPE = {
    "tiny": (4,), "seed": (100,), "mlp": (784,),
    "cnn": (1, 28, 28), "default_cnn": (1, 28, 28), "resnet": (1, 28, 28),
}
OUTPUTS = {"tiny": 4, "seed": 1}  # the others: 10

# name -> network, batch, loss ("mse", "xent" or None: forward only), in
# snn_bench's order.
CASES = {
    "seed_forward": ("seed", 128, None),
    "mlp_train_step": ("mlp", 64, "xent"),
    "tiny_train_step": ("tiny", 32, "mse"),
    "tiny_forward": ("tiny", 32, None),
    "cnn_train_step": ("cnn", 64, "xent"),
    "cnn_inference_1000": ("cnn", 1000, None),
    "cnn_inference_1": ("cnn", 1, None),
    "default_cnn_train_step": ("default_cnn", 64, "xent"),
    "default_cnn_inference_1": ("default_cnn", 1, None),
    "default_cnn_inference_64": ("default_cnn", 64, None),
    "seed_forward_1": ("seed", 1, None),
    "mlp_inference_1": ("mlp", 1, None),
    "resnet_train_step": ("resnet", 64, "xent"),
}


def default_reps(name, batch, loss):
    # As snn_bench: training cases stay below the steps where Adam's moments
    # of always-zero gradients turn subnormal.
    if batch >= 1000 or (("cnn" in name or "resnet" in name) and batch >= 64):
        return 50
    return 500 if loss else 2000


def filled(shape, multiplier, modulus):
    """Element i is (i * multiplier % modulus) / modulus, as snn_bench fills
    its inputs (2654435761, 1000) and targets (40503, 100)."""
    count = 1
    for d in shape:
        count *= d
    i = torch.arange(count, dtype=torch.int64)
    return (i * multiplier % modulus).to(torch.float32).div_(modulus).reshape(shape)


def time_calls(name, reps, call):
    """Times call() reps times after reps/10 + 3 warm-up calls; prints the
    median in microseconds."""
    for _ in range(reps // 10 + 3):
        call()
    times = []
    clock = time.perf_counter_ns
    for _ in range(reps):
        t0 = clock()
        call()
        times.append((clock() - t0) / 1e3)
    times.sort()
    print("%s %.2f -" % (name, times[reps // 2]), flush=True)


def run(name, reps, precision):
    net_name, batch, loss = CASES[name]
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")
    torch.manual_seed(0)
    net = make_net(net_name)
    x = filled((batch,) + INPUT_SHAPE[net_name], 2654435761, 1000)
    outputs = OUTPUTS.get(net_name, 10)
    if loss is None:
        net.eval()  # no batchnorm or dropout in these networks: the same computation
        with torch.inference_mode(), autocast:
            time_calls(name, reps, lambda: net(x))
        return
    net.train()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    if loss == "mse":
        target = filled((batch, outputs), 40503, 100)
        loss_fn = nn.functional.mse_loss
    else:
        target = torch.arange(batch, dtype=torch.int64) % outputs
        loss_fn = nn.functional.cross_entropy

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = loss_fn(net(x), target)
        loss.backward()
        opt.step()

    time_calls(name, reps, step)


def version():
    """PyTorch's version, its oneDNN (MKL-DNN) and BLAS, in one line."""
    mkldnn = torch.backends.mkldnn
    onednn = "oneDNN " + ("on" if mkldnn.is_available() and mkldnn.enabled else "off")
    parts = ["PyTorch %s (Python %s)" % (torch.__version__, sys.version.split()[0])]
    for line in torch.__config__.show().splitlines():
        line = line.strip(" -")
        if line.startswith(("Intel(R) MKL-DNN", "Intel(R) oneDNN")):
            onednn += ": " + line.replace(" (Git Hash N/A)", "")
        elif line.startswith(("CPU capability", "Intel(R) Math Kernel")):
            parts.append(line)
        elif line.startswith("Build settings:"):
            settings = line[len("Build settings:"):].split(",")
            parts += [s.strip() for s in settings if s.strip().startswith("BLAS_INFO=")]
    return "; ".join(parts[:1] + [onednn] + parts[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="cases to run (default: all)")
    parser.add_argument("--reps", type=int, default=0, help="repetitions per case")
    parser.add_argument("--interop-threads", type=int, default=0)
    parser.add_argument("--precision", choices=("float32", "bf16"), default="float32")
    parser.add_argument("--version", action="store_true", help="print the versions and exit")
    args = parser.parse_args()
    if args.version:
        print(version())
        return
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        sys.exit("unknown case%s: %s (cases: %s)" % (
            "s" if len(unknown) > 1 else "", " ".join(unknown), " ".join(CASES)))
    if args.interop_threads > 0:
        torch.set_num_interop_threads(args.interop_threads)
    threads = int(os.environ.get("SNN_NUM_THREADS", "0") or 0)
    torch.set_num_threads(threads if threads > 0 else (os.cpu_count() or 1))
    for name, (_, batch, loss) in CASES.items():
        if args.cases and name not in args.cases:
            continue
        reps = args.reps if args.reps > 0 else default_reps(name, batch, loss)
        run(name, reps, args.precision)


if __name__ == "__main__":
    main()
