#!/usr/bin/env python3
"""Writes the golden files of tests/golden/data/ from PyTorch (CPU, float32).

Each case builds a PyTorch model equivalent to an snn spec, draws its
parameters, inputs and targets from a fixed seed, and records what PyTorch
computes: outputs, loss, the flat gradient, the gradient of the inputs, and
the parameters after five optimiser steps on the same batch. The C++ test
(test_golden.cpp) replays every case through the snn C API. PyTorch is needed
only to regenerate the files:

    python3 tests/golden/generate.py

File format (text, one case per file):
    spec <the snn spec>
    loss mse | xent
    optimiser <sgd|adam|adamw|rmsprop> <name>=<value> ...
    batch <n>
    then arrays, each a line "<name> <count>" followed by <count> numbers:
    params, inputs, targets (mse) or labels (xent), outputs, loss_value, gradients,
    input_gradients, params_after_steps.
Parameters are flat in snn's layout, which is PyTorch's state_dict order:
per layer the weight ([out][in] or [out][in][kh][kw]) then the bias.
"""
import os
import re

import torch
from torch import nn

STEPS = 5
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

ACTIVATIONS = {
    "identity": None,
    "relu": nn.ReLU,
    "leaky_relu": lambda: nn.LeakyReLU(0.01),
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
}


def pair(text):
    parts = [int(p) for p in text.split("x")]
    return (parts[0], parts[-1])


def build(spec):
    """Parses the subset of snn's spec used here into an nn.Sequential.
    Returns the model and the per-sample input shape."""
    layers = []
    shape = None
    for statement in [s.split() for s in spec.split(";")]:
        head, args = statement[0], statement[1:]
        options = {k: v for k, v in (a.split("=") for a in args if "=" in a)}
        flags = [a for a in args if "=" not in a]
        if head == "input":
            dims = [int(d) for d in args[0].split("x")]
            shape = (dims[0],) if len(dims) == 1 else (dims[2], dims[0], dims[1])
            channels = shape[0]
            features = shape[0]
            continue
        act = next((f for f in flags if f in ACTIVATIONS), "identity")
        if head == "dense":
            units = int(flags[0])
            layers.append(nn.Linear(features, units, bias="nobias" not in flags))
            features = units
        elif head == "conv":
            kernel, out = pair(flags[0]), int(flags[1])
            layers.append(nn.Conv2d(channels, out, kernel,
                                    stride=pair(options.get("stride", "1")),
                                    padding=pair(options.get("pad", "0")),
                                    bias="nobias" not in flags))
            channels = out
        elif head in ("maxpool", "avgpool"):
            kernel = pair(flags[0])
            stride = pair(options["stride"]) if "stride" in options else kernel
            pool = nn.MaxPool2d if head == "maxpool" else nn.AvgPool2d
            layers.append(pool(kernel, stride=stride))
        elif head == "flatten":
            layers.append(nn.Flatten())
            probe = nn.Sequential(*layers)(torch.zeros((1,) + shape))
            features = probe.shape[1]
        else:
            raise ValueError("unsupported layer " + head)
        if head in ("dense", "conv") and ACTIVATIONS[act] is not None:
            layers.append(ACTIVATIONS[act]())
    return nn.Sequential(*layers), shape


def make_optimiser(name, hp, params):
    if name == "sgd":
        return torch.optim.SGD(params, lr=hp["lr"], momentum=hp.get("momentum", 0.0),
                               nesterov=bool(hp.get("nesterov", 0)),
                               weight_decay=hp.get("weight_decay", 0.0))
    if name == "adam":
        return torch.optim.Adam(params, lr=hp["lr"], betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=hp.get("weight_decay", 0.0))
    if name == "adamw":
        return torch.optim.AdamW(params, lr=hp["lr"], betas=(0.9, 0.999), eps=1e-8,
                                 weight_decay=hp["weight_decay"])
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=hp["lr"], alpha=0.99, eps=1e-8,
                                   weight_decay=hp.get("weight_decay", 0.0))
    raise ValueError(name)


def flat(tensors):
    return torch.cat([t.detach().reshape(-1) for t in tensors])


def compute_loss(kind, y, target):
    if kind == "mse":
        return nn.functional.mse_loss(y, target)
    return nn.functional.cross_entropy(y, target)


def write_array(f, name, values, integer=False):
    values = values.reshape(-1).tolist()
    f.write("%s %d\n" % (name, len(values)))
    for i in range(0, len(values), 8):
        chunk = values[i:i + 8]
        f.write(" ".join(("%d" % v) if integer else ("%.9g" % v) for v in chunk) + "\n")


def generate(name, spec, loss, optimiser, hp, batch, seed):
    torch.manual_seed(seed)
    model, shape = build(spec)
    params = list(model.parameters())
    x = torch.randn((batch,) + shape)
    with torch.no_grad():
        outputs = model(x).reshape(batch, -1)
    if loss == "mse":
        target = torch.randn(outputs.shape)
    else:
        target = torch.randint(0, outputs.shape[1], (batch,))
    initial = flat(params)

    xg = x.clone().requires_grad_(True)
    y = model(xg)
    value = compute_loss(loss, y.reshape(batch, -1), target)
    value.backward()
    gradients = flat([p.grad for p in params])
    input_gradients = xg.grad.detach().clone()

    opt = make_optimiser(optimiser, hp, params)
    for _ in range(STEPS):
        opt.zero_grad()
        compute_loss(loss, model(x).reshape(batch, -1), target).backward()
        opt.step()

    with open(os.path.join(OUT_DIR, name + ".golden"), "w") as f:
        f.write("spec %s\n" % spec)
        f.write("loss %s\n" % loss)
        f.write("optimiser %s %s\n" % (optimiser, " ".join("%s=%r" % kv for kv in hp.items())))
        f.write("batch %d\n" % batch)
        write_array(f, "params", initial)
        write_array(f, "inputs", x)
        if loss == "mse":
            write_array(f, "targets", target)
        else:
            write_array(f, "labels", target, integer=True)
        write_array(f, "outputs", y.detach())
        write_array(f, "loss_value", value.detach())
        write_array(f, "gradients", gradients)
        write_array(f, "input_gradients", input_gradients)
        write_array(f, "params_after_steps", flat(params))


ADAM = ("adam", {"lr": 0.01})

CASES = [
    # Multilayer perceptrons: every activation, both losses, every optimiser.
    ("mlp_relu_mse_adam", "input 16; dense 24 relu; dense 1", "mse", *ADAM, 6),
    ("mlp_all_activations_xent_adam",
     "input 4; dense 32 tanh; dense 16 sigmoid; dense 4 leaky_relu; dense 3", "xent", *ADAM, 8),
    ("mlp_nobias_xent_adamw", "input 10; dense 8 relu nobias; dense 5", "xent",
     "adamw", {"lr": 0.01, "weight_decay": 0.01}, 5),
    ("mlp_tanh_mse_sgd_nesterov", "input 6; dense 12 tanh; dense 4 identity", "mse",
     "sgd", {"lr": 0.05, "momentum": 0.9, "nesterov": 1}, 4),
    ("mlp_sigmoid_mse_rmsprop", "input 8; dense 10 sigmoid; dense 3 leaky_relu", "mse",
     "rmsprop", {"lr": 0.01}, 5),
    ("mlp_leaky_relu_xent_sgd", "input 5; dense 7 leaky_relu; dense 2", "xent",
     "sgd", {"lr": 0.1}, 6),
    ("mlp_sgd_momentum_weight_decay", "input 6; dense 9 relu; dense 3 tanh", "mse",
     "sgd", {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.001}, 4),
    ("mlp_adam_l2_weight_decay", "input 7; dense 6 sigmoid; dense 4", "xent",
     "adam", {"lr": 0.01, "weight_decay": 0.01}, 3),
    # Convolutions.
    ("conv_1to4_stride1_pad0_relu", "input 6x6x1; conv 3x3 4 relu", "mse", *ADAM, 3),
    ("conv_3to5_stride2_pad1_identity", "input 7x7x3; conv 3x3 5 stride=2 pad=1", "mse",
     *ADAM, 2),
    ("conv_2to3_kernel3x2_tanh", "input 6x5x2; conv 3x2 3 tanh stride=2x1 pad=1x0", "mse",
     "rmsprop", {"lr": 0.01}, 3),
    ("conv_1x1_relu", "input 4x4x3; conv 1 5 relu", "mse", "sgd", {"lr": 0.1}, 2),
    ("conv_kernel_equals_input", "input 5x5x2; conv 5x5 3 relu; flatten; dense 2", "xent",
     *ADAM, 4),
    ("conv_nobias_sigmoid_pad2", "input 4x5x2; conv 3x3 2 sigmoid pad=2 nobias; flatten; dense 3",
     "xent", "adamw", {"lr": 0.01, "weight_decay": 0.01}, 3),
    ("conv_leaky_relu_stride2", "input 8x8x2; conv 2x2 3 leaky_relu stride=2", "mse",
     "sgd", {"lr": 0.05, "momentum": 0.9, "nesterov": 1}, 2),
    # Pooling: dividing and non-dividing sizes, rectangular windows, overlap.
    ("maxpool_2_over_6x6", "input 6x6x2; maxpool 2; flatten; dense 3", "xent", *ADAM, 3),
    ("maxpool_3_over_7x7_floor", "input 7x7x1; conv 1 2; maxpool 3", "mse", *ADAM, 2),
    ("maxpool_2x3_stride1", "input 5x6x2; conv 1 2 relu; maxpool 2x3 stride=1", "mse", *ADAM, 2),
    ("avgpool_2_over_6x6", "input 6x6x2; avgpool 2; flatten; dense 3", "xent", *ADAM, 3),
    ("avgpool_3_over_7x7_floor", "input 7x7x1; conv 1 2; avgpool 3", "mse", *ADAM, 2),
    ("avgpool_2x3_stride1", "input 5x6x2; conv 1 2 tanh; avgpool 2x3 stride=1", "mse",
     *ADAM, 2),
    # A whole CNN.
    ("cnn_xent_adam",
     "input 12x12x2; conv 3x3 4 relu pad=1; maxpool 2; conv 3x3 6 tanh stride=2; avgpool 2; "
     "flatten; dense 5", "xent", *ADAM, 4),
]


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for seed, (name, spec, loss, optimiser, hp, batch) in enumerate(CASES):
        assert re.fullmatch(r"[a-z0-9_]+", name)
        generate(name, spec, loss, optimiser, hp, batch, 1000 + seed)
    print("wrote %d cases to %s" % (len(CASES), OUT_DIR))


if __name__ == "__main__":
    main()
