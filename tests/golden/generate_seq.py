#!/usr/bin/env python3
"""Writes the golden files of sequence models (tests/golden/data/) from PyTorch.

A spec becomes a PyTorch twin, SeqNet: an nn.ModuleList indexed by node
(index 0 the input), so its state_dict keys are "layers.<i>.<suffix>", the
names snn's model files give (a twin loads an snn file with
load_state_dict(strict=True)), and its parameters() order is snn's flat
order. Every module's forward takes (x, lengths): x is [n][T][F]
(batch_first) for a sequence, [n][T] int64 for token ids, [n][F] for a
vector; lengths is an int64 tensor [n] (T for every sample when the case
sets none).

The builders of the ops shared with vectors (input, dense, the activations,
layernorm, softmax, add, flatten) are here; each sequence op adds its own
in tests/golden/seq_ops/<module>.py, listed in OP_MODULES, which defines
    BUILDERS = {"keyword": build, ...}
        build(words, shape, ctx) -> (module, out_shape): words are the
        statement's tokens without name=, shape the input's Shape, ctx the
        Context (vocab, the shapes of earlier nodes by name)
    CASES = [dict(name=..., spec=..., loss="mse"|"xent", optimiser="adam", hp={...},
                  batch=..., seed=..., lengths=[...] or None, mode="train"|"eval",
                  steps=3, prepare=fn(model, inputs) -> inputs or None), ...]

Everything is drawn in float32 (parameters from PyTorch's own
initialisation, then layernorm weights moved from 1 and 0; inputs from the
case's seed) and computed in float64. The file format is generate.py's,
with "tokens" (integers) in place of "inputs" for token models and a
"lengths" array when the case sets lengths. Labels of a sequence output are
one per step, some -1 (ignored), and the steps past a sample's length are
left out of the loss (cross_entropy with ignore_index=-1 on them), as snn
does. Run (PyTorch 2 needed only here):

    python3 tests/golden/generate_seq.py [case ...]
"""
import collections
import importlib
import math
import os
import re
import sys

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate  # noqa: E402  (make_optimiser, flat, write_array, randomise_norms)

OP_MODULES = ["seqops", "attention", "rnn"]

Shape = collections.namedtuple("Shape", "kind features steps")  # kind: vector | seq | tokens


class Context:
    def __init__(self):
        self.vocab = 0
        self.shapes = {}  # name= of earlier nodes -> (index, Shape)


def activation(name):
    return {
        "identity": lambda z: z,
        "relu": torch.relu,
        "leaky_relu": lambda z: nn.functional.leaky_relu(z, 0.01),
        "tanh": torch.tanh,
        "sigmoid": torch.sigmoid,
        "gelu": nn.functional.gelu,
        "silu": nn.functional.silu,
    }[name]


ACTIVATIONS = ("identity", "relu", "leaky_relu", "tanh", "sigmoid", "gelu", "silu")


class Input(nn.Module):
    def forward(self, x, lengths):
        return x


class Dense(nn.Module):
    """nn.Linear on the last axis, then the activation."""

    def __init__(self, features, units, bias, act):
        super().__init__()
        linear = nn.Linear(features, units, bias=bias)
        self.weight = linear.weight
        self.bias = linear.bias if bias else None
        self.act = activation(act)

    def forward(self, x, lengths):
        return self.act(nn.functional.linear(x, self.weight, self.bias))


class Activation(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.act = activation(act)

    def forward(self, x, lengths):
        return self.act(x)


class LayerNorm(nn.LayerNorm):
    """nn.LayerNorm over a vector, or over each step's features."""

    def forward(self, x, lengths):
        return super().forward(x)


class Softmax(nn.Module):
    def forward(self, x, lengths):
        return torch.softmax(x, dim=-1)


class Flatten(nn.Module):
    def forward(self, x, lengths):
        return x.reshape(x.shape[0], -1)


class Add(nn.Module):
    """The previous output plus node `other`'s (SeqNet passes both)."""

    def __init__(self, other):
        super().__init__()
        self.other = other

    def forward(self, x, lengths, y):
        return x + y


def build_dense(words, shape, ctx):
    units, act, bias = int(words[1]), "identity", True
    for w in words[2:]:
        if w in ACTIVATIONS:
            act = w
        elif w == "nobias":
            bias = False
        else:
            raise ValueError("dense option " + w)
    out = Shape(shape.kind, units, shape.steps)
    return Dense(shape.features, units, bias, act), out


def build_layernorm(words, shape, ctx):
    eps = 1e-5
    for w in words[1:]:
        eps = float(w.split("=")[1])
    return LayerNorm(shape.features, eps=eps), shape


def build_flatten(words, shape, ctx):
    return Flatten(), Shape("vector", shape.features * shape.steps, 1)


def build_add(words, shape, ctx):
    index, other = ctx.shapes[words[1]]
    assert other == shape, (other, shape)
    return Add(index), shape


BUILDERS = {
    "dense": build_dense,
    "layernorm": build_layernorm,
    "softmax": lambda words, shape, ctx: (Softmax(), shape),
    "flatten": build_flatten,
    "add": build_add,
}
for _act in ACTIVATIONS[1:]:
    BUILDERS[_act] = lambda words, shape, ctx, act=_act: (Activation(act), shape)


def statements(spec):
    for part in re.split(r"[;\n]", spec):
        words = part.split()
        if words:
            yield words


class SeqNet(nn.Module):
    def __init__(self, spec):
        super().__init__()
        ctx = Context()
        modules, shape = [], None
        for i, words in enumerate(statements(spec)):
            name = next((w[5:] for w in words if w.startswith("name=")), None)
            words = [w for w in words if not w.startswith("name=")]
            if i == 0:
                assert words[0] == "input"
                if words[1] == "seq":
                    t, f = (int(v) for v in words[2].split("x"))
                    shape = Shape("seq", f, t)
                elif words[1] == "tokens":
                    ctx.vocab = int(words[3].split("=")[1])
                    shape = Shape("tokens", 1, int(words[2]))
                else:
                    shape = Shape("vector", int(words[1]), 1)
                module = Input()
            else:
                module, shape = BUILDERS[words[0]](words, shape, ctx)
            modules.append(module)
            if name:
                ctx.shapes[name] = (i, shape)
        self.layers = nn.ModuleList(modules)
        self.input_shape = Shape(*self._input(spec))
        self.out_shape = shape
        self.vocab = ctx.vocab

    @staticmethod
    def _input(spec):
        words = next(statements(spec))
        if words[1] == "seq":
            t, f = (int(v) for v in words[2].split("x"))
            return "seq", f, t
        if words[1] == "tokens":
            return "tokens", 1, int(words[2])
        return "vector", int(words[1]), 1

    def forward(self, x, lengths):
        outs = [x]
        for module in list(self.layers)[1:]:
            if isinstance(module, Add):
                outs.append(module(outs[-1], lengths, outs[module.other]))
            else:
                outs.append(module(outs[-1], lengths))
        return outs[-1]


def load_op_modules():
    sys.path.insert(0, os.path.join(HERE, "seq_ops"))
    cases = []
    for name in OP_MODULES:
        module = importlib.import_module(name)
        BUILDERS.update(module.BUILDERS)
        cases += module.CASES
    return cases


def draw_inputs(net, batch):
    shape = net.input_shape
    if shape.kind == "tokens":
        return torch.randint(0, net.vocab, (batch, shape.steps))
    if shape.kind == "seq":
        return torch.randn(batch, shape.steps, shape.features)
    return torch.randn(batch, shape.features)


def sequence_loss(kind, y, target, lengths, sequence_output):
    """mse over every value; cross-entropy over the rows that count."""
    batch = y.shape[0]
    if kind == "mse":
        return nn.functional.mse_loss(y.reshape(batch, -1), target)
    if not sequence_output:
        return nn.functional.cross_entropy(y, target)
    steps = y.shape[1]
    padded = torch.arange(steps).unsqueeze(0) >= lengths.unsqueeze(1)
    labels = target.masked_fill(padded, -1)
    return nn.functional.cross_entropy(y.reshape(batch * steps, -1), labels.reshape(-1), ignore_index=-1)


def reference(case):
    torch.manual_seed(case["seed"])
    net = SeqNet(case["spec"])
    batch = case["batch"]
    x = draw_inputs(net, batch)
    with torch.no_grad():
        generate.randomise_norms(net)
        if case.get("prepare"):
            x = case["prepare"](net, x)
    steps_in = net.input_shape.steps
    lengths = case.get("lengths")
    lengths_t = torch.tensor(lengths if lengths else [steps_in] * batch, dtype=torch.int64)
    out = net.out_shape
    sequence_output = out.kind == "seq"
    loss = case["loss"]
    if loss == "mse":
        target = torch.randn(batch, out.features * out.steps)
    elif sequence_output:
        target = torch.randint(0, out.features, (batch, out.steps))
        target[torch.rand(batch, out.steps) < 0.2] = -1
    else:
        target = torch.randint(0, out.features, (batch,))
    tokens = net.input_shape.kind == "tokens"
    arrays = {"params": generate.flat(net.parameters()), "tokens" if tokens else "inputs": x}
    if lengths:
        arrays["lengths"] = lengths_t
    arrays["targets" if loss == "mse" else "labels"] = target

    net = net.double()
    net.train(case.get("mode", "train") == "train")
    params = list(net.parameters())
    xd = x if tokens else x.double().requires_grad_(True)
    if loss == "mse":
        target = target.double()
    y = net(xd, lengths_t)
    value = sequence_loss(loss, y, target, lengths_t, sequence_output)
    value.backward()
    arrays.update(outputs=y.detach(), loss_value=value.detach(),
                  gradients=generate.flat([p.grad if p.grad is not None else torch.zeros_like(p) for p in params]))
    if not tokens:
        arrays["input_gradients"] = xd.grad.detach()
    opt = generate.make_optimiser(case["optimiser"], case["hp"], params)
    opt.step()
    for _ in range(case.get("steps", 3) - 1):
        opt.zero_grad()
        sequence_loss(loss, net(xd.detach() if not tokens else xd, lengths_t), target, lengths_t,
                      sequence_output).backward()
        opt.step()
    arrays["params_after_steps"] = generate.flat(params)
    return arrays


def write_case(case):
    arrays = reference(case)
    with open(os.path.join(generate.OUT_DIR, case["name"] + ".golden"), "w") as f:
        f.write("spec %s\n" % case["spec"])
        f.write("loss %s\n" % case["loss"])
        f.write("optimiser %s %s\n" % (case["optimiser"], " ".join("%s=%r" % kv for kv in case["hp"].items())))
        f.write("batch %d\n" % case["batch"])
        f.write("mode %s\n" % case.get("mode", "train"))
        f.write("steps %d\n" % case.get("steps", 3))
        # Arrays of sums that cancel (generate.generate_graph's `cancels`).
        for key, fraction in case.get("cancels", {}).items():
            f.write("cancellation_%s %r\n" % (key, fraction))
        for key in ("params", "inputs", "tokens", "lengths", "targets", "labels", "outputs", "loss_value",
                    "gradients", "input_gradients", "params_after_steps"):
            if key in arrays:
                generate.write_array(f, key, arrays[key], integer=key in ("tokens", "lengths", "labels"))


ADAM = {"lr": 0.01}

# The ops shared with vectors, acting on the last axis of a sequence.
CASES = [
    # (An output of -0.0004 sums terms near 1: the outputs are marked as sums
    # that cancel, 1e-6 of the largest, as AVX2's and AVX-512's dot products
    # round it 1.2e-7 apart.)
    dict(name="seq_dense_gelu_layernorm", spec="input seq 6x5; dense 7 gelu; layernorm; dense 4",
         loss="xent", optimiser="adam", hp=ADAM, batch=3, seed=1, lengths=[6, 1, 4],
         cancels={"outputs": 1e-6}),
    dict(name="seq_dense_tanh_mse", spec="input seq 4x3; dense 5 tanh; dense 2", loss="mse",
         optimiser="sgd", hp={"lr": 0.1, "momentum": 0.9}, batch=2, seed=2),
    dict(name="seq_softmax_residual", spec="input seq 5x4; dense 4 name=a; relu; dense 4; add a; softmax; "
         "flatten; dense 3", loss="xent", optimiser="adam", hp=ADAM, batch=4, seed=3, mode="eval"),
    dict(name="seq_saturated_layernorm", spec="input seq 3x6; layernorm eps=0.001; sigmoid; dense 3",
         loss="xent", optimiser="adam", hp=ADAM, batch=2, seed=4, lengths=[3, 2],
         prepare=lambda net, x: (net.layers[1].weight.mul_(30.0), x)[1]),
    # layernorm over 2 features: its input gradient is invstd (g - mean(g))
    # eps / (var + eps), the small difference of two nearly equal terms where
    # var >> eps (each step's two tanh values differ by 0.24 to 0.85 here);
    # the last dense x100 makes the gradients large against the absolute
    # tolerance.
    dict(name="seq_layernorm_2_features", spec="input seq 3x4; dense 2 tanh; layernorm; dense 3",
         loss="mse", optimiser="adam", hp=ADAM, batch=2, seed=7,
         prepare=lambda net, x: (net.layers[3].weight.mul_(100.0), x)[1]),
]


def main(names):
    cases = CASES + load_op_modules()
    known = {c["name"] for c in cases}
    unknown = set(names) - known
    if unknown:
        raise SystemExit("no such case: " + ", ".join(sorted(unknown)))
    written = 0
    for case in cases:
        assert re.fullmatch(r"[a-z0-9_]+", case["name"])
        if names and case["name"] not in names:
            continue
        write_case(case)
        written += 1
    print("wrote %d cases to %s" % (written, generate.OUT_DIR))


if __name__ == "__main__":
    main(sys.argv[1:])
