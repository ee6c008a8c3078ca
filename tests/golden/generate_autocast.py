#!/usr/bin/env python3
"""Writes the autocast golden files (tests/golden/autocast/*.golden).

Each case builds the PyTorch twin of an snn spec (generate.py's Graph for
images and vectors, generate_seq.py's SeqNet for sequences), draws float32
parameters, state and inputs from a fixed seed, and records one training
step's forward and backward pass twice:
    the reference: computed in float64 from the float32 values
        (outputs, loss_value, gradients, input_gradients);
    autocast: float32 modules under torch.autocast("cpu", dtype=torch.bfloat16),
        the loss computed in float32 from the outputs, the backward pass
        outside the context, as a training loop with autocast runs it
        (autocast_outputs, autocast_loss_value, autocast_gradients,
        autocast_input_gradients).
Autocast rounds the outputs of its bf16 ops to bf16, where snn keeps float32
activations and rounds only the operands of its products: snn at bf16 is
expected closer to the reference than autocast is. tests/golden/
test_autocast.cpp replays the cases through the C API at bf16 and compares.
The file format is generate.py's, the float64 reference written with 17
digits and float32 values with the 9 that give them exactly; the "steps"
line is 0 (no optimiser step is recorded). Run (PyTorch 2):

    python3 tests/golden/generate_autocast.py [case ...]
"""
import os
import sys

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate  # noqa: E402
import generate_seq  # noqa: E402

OUT_DIR = os.path.join(HERE, "autocast")

CASES = [
    dict(name="autocast_mlp", spec="input 16; dense 24 relu; dense 16 tanh; dense 6", batch=12, seed=11),
    # The default CNN of examples/fashion_mnist, its channels and image scaled down.
    dict(name="autocast_default_cnn",
         spec="input 12x12x1; conv 3x3 6 relu pad=1; maxpool 2; conv 3x3 8 relu pad=1; maxpool 2; flatten; "
              "dense 16 relu; dense 10", batch=6, seed=12),
    # One stage of the resnet example: a convolution and a residual block.
    dict(name="autocast_resnet_block",
         spec="input 12x12x3; conv 3 6 pad=1 nobias; batchnorm; relu name=s1; conv 3 6 pad=1 nobias; batchnorm; "
              "relu; conv 3 6 pad=1 nobias; batchnorm; add s1; relu; maxpool 2; flatten; dense 5",
         batch=6, seed=13),
    dict(name="autocast_conv1d_lstm_attention", sequence=True,
         spec="input seq 8x4; conv1d 3 8 pad=1 relu; lstm 8; attention heads=2; seqpool mean; dense 4",
         batch=5, seed=14),
]


def write_array(f, name, values, integer=False):
    form = "%d" if integer else "%.17g" if values.dtype == torch.float64 else "%.9g"
    values = values.detach().reshape(-1).double().tolist()
    f.write("%s %d\n" % (name, len(values)))
    for i in range(0, len(values), 6):
        f.write(" ".join(form % v for v in values[i:i + 6]) + "\n")


def build(case):
    """The twin, its input, forward(model, x) and its parameters in snn's order."""
    torch.manual_seed(case["seed"])
    if case.get("sequence"):
        net = generate_seq.SeqNet(case["spec"])
        x = generate_seq.draw_inputs(net, case["batch"])
        lengths = torch.full((case["batch"],), net.input_shape.steps, dtype=torch.int64)
        classes = net.out_shape.features
        return net, x, (lambda model, v: model(v, lengths)), classes
    net, shape = generate.build(case["spec"])
    x = torch.randn((case["batch"],) + tuple(shape))
    return net, x, (lambda model, v: model(v)), net.out_shape[0]


def run(model, forward, x, labels, autocast):
    """Outputs, loss, parameter and input gradients of one training pass."""
    model.zero_grad()
    x = x.clone().requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        y = forward(model, x)
    loss = nn.functional.cross_entropy(y.float() if autocast else y, labels)
    loss.backward()
    grads = generate.flat([p.grad if p.grad is not None else torch.zeros_like(p) for p in model.parameters()])
    return y, loss, grads, x.grad


def write_case(case):
    net, x, forward, classes = build(case)
    with torch.no_grad():
        generate.randomise_norms(net)
    labels = torch.randint(0, classes, (case["batch"],))
    params = generate.flat(net.parameters()).clone()
    state = generate.flat_state(net).clone()
    net.train()
    # Batchnorm's running statistics move in each pass: both start from the same.
    saved = {k: v.clone() for k, v in net.state_dict().items()}
    ref = run(net.double(), forward, x.double(), labels, autocast=False)
    net.float().load_state_dict(saved)
    low = run(net, forward, x, labels, autocast=True)
    with open(os.path.join(OUT_DIR, case["name"] + ".golden"), "w") as f:
        f.write("spec %s\n" % case["spec"])
        f.write("loss xent\n")
        f.write("optimiser sgd lr=0.1\n")
        f.write("batch %d\n" % case["batch"])
        f.write("mode train\n")
        f.write("steps 0\n")
        write_array(f, "params", params)
        if state.numel():
            write_array(f, "state", state)
        write_array(f, "inputs", x)
        write_array(f, "labels", labels, integer=True)
        for prefix, (y, loss, grads, xg) in (("", ref), ("autocast_", low)):
            for key, values in (("outputs", y), ("loss_value", loss), ("gradients", grads),
                                ("input_gradients", xg)):
                write_array(f, prefix + key, values)


def main(names):
    generate_seq.load_op_modules()
    for case in CASES:
        if names and case["name"] not in names:
            continue
        write_case(case)
        print("wrote", case["name"])


if __name__ == "__main__":
    main(sys.argv[1:])
