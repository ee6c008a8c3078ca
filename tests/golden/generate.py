#!/usr/bin/env python3
"""Writes the golden files of tests/golden/data/ from PyTorch (CPU, float32).

Each case builds a PyTorch model equivalent to an snn spec, draws its
parameters, inputs and targets from a fixed seed, and records what PyTorch
computes: outputs, loss, the flat gradient, the gradient of the inputs, and
the parameters after five optimiser steps on the same batch. Two
exceptions: tanh is rounded from float64 (RoundedTanh: PyTorch's float32
tanh is one ulp off near saturation), and a few extreme cases compute in
float64 where float32 PyTorch loses the digits they check (in_double). The
C++ test (test_golden.cpp) replays every case through the snn C API. PyTorch
is needed only to regenerate the files (all of them, or the cases named; the
files written by another PyTorch version may differ in the last digits):

    python3 tests/golden/generate.py [case ...]

File format (text, one case per file):
    spec <the snn spec>
    loss mse | xent
    optimiser <sgd|adam|adamw|rmsprop> <name>=<value> ...
    batch <n>
    tolerance <absolute tolerance>   (optional, stricter than the default)
    then arrays, each a line "<name> <count>" followed by <count> numbers:
    params, inputs, targets (mse) or labels (xent), outputs, loss_value, gradients,
    input_gradients, params_after_steps.
Parameters are flat in snn's layout, which is PyTorch's state_dict order:
per layer the weight ([out][in] or [out][in][kh][kw]) then the bias.
"""
import os
import re
import sys

import torch
from torch import nn

STEPS = 5
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

class RoundedTanhFunction(torch.autograd.Function):
    """tanh rounded from float64 (PyTorch's float32 tanh is one ulp off near
    saturation: it gives -1 at z = -8.73, where the rounded tanh is
    -0.99999994), with PyTorch's own derivative from the output."""

    @staticmethod
    def forward(ctx, z):
        y = torch.tanh(z.double()).to(z.dtype)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad, y)


class RoundedTanh(nn.Module):
    def forward(self, z):
        return RoundedTanhFunction.apply(z)


ACTIVATIONS = {
    "identity": None,
    "relu": nn.ReLU,
    "leaky_relu": lambda: nn.LeakyReLU(0.01),
    "tanh": RoundedTanh,
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
    betas = (hp.get("beta1", 0.9), hp.get("beta2", 0.999))
    eps = hp.get("epsilon", 1e-8)
    if name == "sgd":
        return torch.optim.SGD(params, lr=hp["lr"], momentum=hp.get("momentum", 0.0),
                               nesterov=bool(hp.get("nesterov", 0)),
                               weight_decay=hp.get("weight_decay", 0.0))
    if name == "adam":
        return torch.optim.Adam(params, lr=hp["lr"], betas=betas, eps=eps,
                                weight_decay=hp.get("weight_decay", 0.0))
    if name == "adamw":
        return torch.optim.AdamW(params, lr=hp["lr"], betas=betas, eps=eps,
                                 weight_decay=hp["weight_decay"])
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=hp["lr"], alpha=hp.get("alpha", 0.99), eps=eps,
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


def generate(name, spec, loss, optimiser, hp, batch, seed, prepare=None, in_double=False,
             tolerance=None):
    """prepare(model, x) may change the drawn parameters and inputs and fix
    the labels. in_double computes the reference in float64 (from the same
    float32 parameters and inputs) where float32 PyTorch itself loses the
    digits the case is about; tolerance is then a stricter absolute
    tolerance of the single-pass values than the test's default."""
    torch.manual_seed(seed)
    model, shape = build(spec)
    params = list(model.parameters())
    x = torch.randn((batch,) + shape)
    labels = None
    if prepare is not None:
        with torch.no_grad():
            x, labels = prepare(model, x)
    if in_double:
        model = model.double()
        params = list(model.parameters())
        x = x.double()
    with torch.no_grad():
        outputs = model(x).reshape(batch, -1)
    if loss == "mse":
        target = torch.randn(outputs.shape).to(outputs.dtype)
    elif labels is not None:
        target = torch.tensor(labels)
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
        if tolerance is not None:
            f.write("tolerance %r\n" % tolerance)
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


def fixed_logits(logits, labels):
    """Makes every row's logits `logits` (the bias of the one dense layer, the
    inputs zero) and the labels `labels`: the loss is checked on exactly these
    values, and the SGD steps move only the bias, so no sum of large products
    is rounded differently by the two libraries."""
    def prepare(model, x):
        model[0].bias.copy_(torch.tensor(logits))
        return torch.zeros_like(x), labels
    return prepare


def saturated_first_layer(biases, weight_scale):
    """Sets the first layer's biases to `biases` and scales its weights by
    `weight_scale`, so that every sample's pre-activation of unit j stays
    near biases[j]: in the saturated range of tanh and sigmoid."""
    def prepare(model, x):
        model[0].bias.copy_(torch.tensor(biases))
        model[0].weight.mul_(weight_scale)
        return x, None
    return prepare


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
    # Extremes. Logits: tied at 1e4 (loss log 2, gradient +-0.5), a confident
    # row (loss 6.1e-7, where float32 PyTorch gives 7.2e-7), logits near +-88
    # (exp of their differences underflows). The references are computed in
    # double and held to 1e-9.
    ("xent_logits_1e4_tied", "input 4; dense 3", "xent", "sgd", {"lr": 0.1}, 2,
     {"prepare": fixed_logits([1e4, 1e4, -1e4], [1, 0]), "in_double": True, "tolerance": 1e-9}),
    ("xent_logits_confident", "input 4; dense 3", "xent", "sgd", {"lr": 0.1}, 2,
     {"prepare": fixed_logits([20.0, 5.0, 5.0], [0, 0]), "in_double": True, "tolerance": 1e-9}),
    ("xent_logits_88", "input 4; dense 4", "xent", "sgd", {"lr": 0.1, "momentum": 0.9}, 4,
     {"prepare": fixed_logits([88.0, -88.0, 87.5, -87.0], [0, 1, 2, 3]), "in_double": True,
      "tolerance": 1e-9}),
    # Saturated activations: pre-activations near |z| 8 to 20, where the
    # derivatives are tiny but not zero (tanh's until |z| = 9.01, sigmoid's
    # until z = 16.6), and Adam or RMSProp turns a tiny gradient into a full
    # step.
    ("saturated_tanh_mse_adam", "input 4; dense 6 tanh", "mse", *ADAM, 5,
     {"prepare": saturated_first_layer([8.0, -8.3, 8.6, -8.8, 9.5, -12.0], 0.2)}),
    ("saturated_sigmoid_mse_adam", "input 4; dense 6 sigmoid", "mse", *ADAM, 5,
     {"prepare": saturated_first_layer([8.0, -8.0, 12.0, -12.0, 16.0, -20.0], 0.2)}),
    ("saturated_tanh_sigmoid_xent_rmsprop", "input 5; dense 8 tanh; dense 6 sigmoid; dense 3",
     "xent", "rmsprop", {"lr": 0.01}, 4,
     {"prepare": saturated_first_layer([8.0, -8.2, 8.4, -8.6, 8.8, -9.0, 7.9, -20.0], 0.2)}),
    # Optimiser settings near their limits: decay rates near 1 (whose
    # complements lose three digits if rounded in float), epsilon near the
    # smallest normal float, large learning rates.
    ("adam_beta2_0_99999", "input 6; dense 8 tanh; dense 3", "mse",
     "adam", {"lr": 0.1, "beta2": 0.99999}, 4),
    ("adamw_beta1_beta2_near_1", "input 6; dense 8 sigmoid; dense 3", "xent",
     "adamw", {"lr": 0.1, "beta1": 0.9999, "beta2": 0.99999, "weight_decay": 0.01}, 4),
    ("rmsprop_alpha_0_99999", "input 6; dense 8 sigmoid; dense 3", "mse",
     "rmsprop", {"lr": 3e-4, "alpha": 0.99999}, 4),
    ("adam_large_lr_tiny_epsilon", "input 6; dense 8 tanh; dense 3", "mse",
     "adam", {"lr": 1.0, "epsilon": 1.2e-38}, 4),
    ("sgd_large_lr", "input 6; dense 8 sigmoid; dense 3", "mse", "sgd", {"lr": 2.0}, 4),
]


def main(names):
    os.makedirs(OUT_DIR, exist_ok=True)
    unknown = set(names) - {case[0] for case in CASES}
    if unknown:
        raise SystemExit("no such case: " + ", ".join(sorted(unknown)))
    written = 0
    for seed, (name, spec, loss, optimiser, hp, batch, *options) in enumerate(CASES):
        assert re.fullmatch(r"[a-z0-9_]+", name)
        if names and name not in names:
            continue
        generate(name, spec, loss, optimiser, hp, batch, 1000 + seed,
                 **(options[0] if options else {}))
        written += 1
    print("wrote %d cases to %s" % (written, OUT_DIR))


if __name__ == "__main__":
    main(sys.argv[1:])
