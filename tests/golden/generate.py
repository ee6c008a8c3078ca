#!/usr/bin/env python3
"""Writes the golden files of tests/golden/data/ from PyTorch (CPU).

Each case builds a PyTorch model equivalent to an snn spec, draws its
parameters, inputs and targets from a fixed seed, and records what PyTorch
computes: outputs, loss, the flat gradient, the gradient of the inputs, and
the parameters after optimiser steps on the same batch.

The first cases (CASES: dense, conv and pooling chains) compute in float32
and take five steps. Two exceptions: tanh is rounded from float64
(RoundedTanh: PyTorch's float32 tanh is one ulp off near saturation), and a
few extreme cases compute in float64 where float32 PyTorch loses the digits
they check (in_double). The cases of the graph engine's ops (GRAPH_CASES:
activation layers, gelu, silu, softmax, batchnorm, layernorm, dropout,
globalavgpool, add, concat) compute in float64 from float32 parameters,
state and inputs, in training or inference mode, and record the state
(batchnorm's running statistics) before and after their steps. The C++ test
(test_golden.cpp) replays every case through the snn C API. PyTorch is
needed only to regenerate the files (all of them, or the cases named; the
float32 files written by another PyTorch version may differ in the last
digits):

    python3 tests/golden/generate.py [case ...]

File format (text, one case per file):
    spec <the snn spec>
    loss mse | xent | huber delta=<d> | smooth_l1 beta=<b> | bce
    optimiser <sgd|adam|adamw|rmsprop|lion> <name>=<value> ...
    batch <n>
    mode train | eval                 (optional, train by default: the mode of
                                       the forward cache, module.train()/eval())
    steps <n>                         (optional, 5 by default)
    tolerance <absolute tolerance>    (optional, stricter than the default)
    tolerance_<array> <absolute tolerance>
                                      (optional, stricter still for that array)
    then arrays, each a line "<name> <count>" followed by <count> numbers:
    params, state (if the model has any), inputs, targets (mse) or labels
    (xent), outputs, loss_value, gradients, input_gradients,
    params_after_steps, state_after_steps (if the model has state).
Parameters are flat in snn's layout, which is PyTorch's parameters() order:
per layer the weight ([out][in] or [out][in][kh][kw]; batchnorm [C],
layernorm the sample's shape) then the bias. The state is flat the same way:
per batchnorm layer running_mean [C], running_var [C], num_batches_tracked.
The graph cases count their passes as the C++ test runs them: the first
forward and backward pass (the outputs and gradients recorded) feeds the
first step, and every further step runs a forward and backward pass of its
own, so in training mode the running statistics move once per step.
"""
import math
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


class Gelu(nn.Module):
    """nn.GELU's exact form x Phi(x), with Phi(x) = erfc(-x / sqrt 2) / 2:
    PyTorch's 1 + erf(x / sqrt 2) rounds to 0 below x = -8.3 even in
    float64, losing the far negative tail (gelu(-10) = -7.6e-23)."""

    def forward(self, x):
        return 0.5 * x * torch.erfc(-x * math.sqrt(0.5))


ACTIVATIONS = {
    "identity": None,
    "relu": nn.ReLU,
    "leaky_relu": lambda: nn.LeakyReLU(0.01),
    "tanh": RoundedTanh,
    "sigmoid": nn.Sigmoid,
    "gelu": Gelu,
    "silu": nn.SiLU,
}


def pair(text):
    parts = [int(p) for p in text.split("x")]
    return (parts[0], parts[-1])


class Graph(nn.Module):
    """The layers of a spec in order, each reading the previous output or,
    with from=ID, the output of the layer named ID; add and concat also read
    the output of the layer they name. graph[i] is the i-th layer after the
    input (its dense or conv module before the activation), and parameters()
    is in spec order, as snn's flat vector."""

    def __init__(self, layers, acts, joins, sources):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.acts = nn.ModuleList(acts)
        self.joins = joins  # per layer: None, or ("add" | "concat", index into the outputs)
        self.sources = sources  # per layer: the index into the outputs it reads first

    def __getitem__(self, i):
        return self.layers[i]

    def forward(self, x):
        outputs = [x]  # the input, then every layer's output
        for layer, act, join, source in zip(self.layers, self.acts, self.joins, self.sources):
            x = outputs[source]
            if join is None:
                x = act(layer(x))
            elif join[0] == "add":
                x = x + outputs[join[1]]
            else:
                x = torch.cat([x, outputs[join[1]]], dim=1)
            outputs.append(x)
        return x


def build(spec):
    """Parses snn's spec into a Graph of PyTorch modules. Returns the model
    and the per-sample input shape; model.out_shape is the per-sample output
    shape."""
    layers, acts, joins, sources = [], [], [], []
    shapes = []  # per-sample shapes of the input and of every layer's output
    names = {}  # name -> index into shapes (and into Graph.forward's outputs)
    for statement in [s.split() for s in spec.split(";")]:
        head, args = statement[0], statement[1:]
        options = {k: v for k, v in (a.split("=") for a in args if "=" in a)}
        flags = [a for a in args if "=" not in a]
        act = next((f for f in flags if f in ACTIVATIONS), "identity")
        join = None
        source = names[options["from"]] if "from" in options else len(shapes) - 1
        if head != "input":
            shape = shapes[source]
        if head == "input":
            dims = [int(d) for d in args[0].split("x")]
            shape = (dims[0],) if len(dims) == 1 else (dims[2], dims[0], dims[1])
        elif head == "dense":
            units = int(flags[0])
            layer = nn.Linear(shape[0], units, bias="nobias" not in flags)
            shape = (units,)
        elif head == "conv":
            kernel, out = pair(flags[0]), int(flags[1])
            stride, pad = pair(options.get("stride", "1")), pair(options.get("pad", "0"))
            layer = nn.Conv2d(shape[0], out, kernel, stride=stride, padding=pad,
                              bias="nobias" not in flags)
            shape = (out,) + tuple((shape[1 + d] + 2 * pad[d] - kernel[d]) // stride[d] + 1
                                   for d in range(2))
        elif head in ("maxpool", "avgpool"):
            kernel = pair(flags[0])
            stride = pair(options["stride"]) if "stride" in options else kernel
            pool = nn.MaxPool2d if head == "maxpool" else nn.AvgPool2d
            layer = pool(kernel, stride=stride)
            shape = (shape[0],) + tuple((shape[1 + d] - kernel[d]) // stride[d] + 1
                                        for d in range(2))
        elif head == "globalavgpool":
            layer = nn.AdaptiveAvgPool2d(1)
            shape = (shape[0], 1, 1)
        elif head == "flatten":
            layer = nn.Flatten()
            shape = (math.prod(shape),)
        elif head in ACTIVATIONS:
            layer = ACTIVATIONS[head]()
        elif head == "softmax":
            layer = nn.Softmax(dim=1)  # features, or channels per pixel
        elif head == "batchnorm":
            norm = nn.BatchNorm2d if len(shape) == 3 else nn.BatchNorm1d
            layer = norm(shape[0], eps=float(options.get("eps", 1e-5)),
                         momentum=float(options.get("momentum", 0.1)))
        elif head == "layernorm":
            layer = nn.LayerNorm(shape, eps=float(options.get("eps", 1e-5)))
        elif head == "dropout":
            layer = nn.Dropout(float(flags[0]))
        elif head in ("add", "concat"):
            layer = nn.Identity()
            join = (head, names[flags[0]])
            if head == "concat":
                shape = (shape[0] + shapes[join[1]][0],) + shape[1:]
        else:
            raise ValueError("unsupported layer " + head)
        if head != "input":
            inline = head in ("dense", "conv") and ACTIVATIONS[act] is not None
            layers.append(layer)
            acts.append(ACTIVATIONS[act]() if inline else nn.Identity())
            joins.append(join)
            sources.append(source)
        if "name" in options:
            names[options["name"]] = len(shapes)
        shapes.append(shape)
    model = Graph(layers, acts, joins, sources)
    model.out_shape = shapes[-1]
    return model, shapes[0]


class Lion(torch.optim.Optimizer):
    """The reference for snn's Lion (Chen et al. 2023; PyTorch has none): the
    update of the lion-pytorch package, in torch ops of the parameters'
    dtype (float64 in the cases that use it):
        c = beta1 m + (1 - beta1) g
        p = p (1 - lr weight_decay) - lr sign(c)
        m = beta2 m + (1 - beta2) g"""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, (beta1, beta2), decay = group["lr"], group["betas"], group["weight_decay"]
            for p in group["params"]:
                state = self.state[p]
                if "exp_avg" not in state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                p.mul_(1.0 - lr * decay)
                p.add_((m * beta1 + p.grad * (1.0 - beta1)).sign(), alpha=-lr)
                m.mul_(beta2).add_(p.grad, alpha=1.0 - beta2)


def make_optimiser(name, hp, params):
    betas = (hp.get("beta1", 0.9), hp.get("beta2", 0.999))
    eps = hp.get("epsilon", 1e-8)
    if name == "sgd":
        return torch.optim.SGD(params, lr=hp["lr"], momentum=hp.get("momentum", 0.0),
                               dampening=hp.get("dampening", 0.0), nesterov=bool(hp.get("nesterov", 0)),
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
    if name == "lion":
        return Lion(params, lr=hp.get("lr", 1e-4), betas=(hp.get("beta1", 0.9), hp.get("beta2", 0.99)),
                    weight_decay=hp.get("weight_decay", 0.0))
    raise ValueError(name)


def flat(tensors):
    return torch.cat([t.detach().reshape(-1) for t in tensors])


def loss_parameter(loss):
    """The parameter of a loss line ("huber delta=0.5"), rounded to float32
    as snn rounds it, or None."""
    words = loss.split()
    if len(words) < 2:
        return None
    return torch.tensor(float(words[1].split("=")[1]), dtype=torch.float32).item()


def uses_targets(loss):
    return loss.split()[0] != "xent"


def compute_loss(loss, y, target):
    kind, param = loss.split()[0], loss_parameter(loss)
    if kind == "mse":
        return nn.functional.mse_loss(y, target)
    if kind == "huber":
        return nn.functional.huber_loss(y, target, delta=param)
    if kind == "smooth_l1":
        return nn.functional.smooth_l1_loss(y, target, beta=param)
    if kind == "bce":
        return nn.functional.binary_cross_entropy_with_logits(y, target)
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


def batchnorms(model):
    return [m for m in model.modules() if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d))]


def flat_state(model):
    """snn's state vector: per batchnorm layer in spec order, running_mean,
    running_var and num_batches_tracked (a count held as a float)."""
    parts = []
    for bn in batchnorms(model):
        count = bn.num_batches_tracked.reshape(1).to(bn.running_mean.dtype)
        parts += [bn.running_mean, bn.running_var, count]
    return flat(parts) if parts else torch.zeros(0)


def randomise_norms(model):
    """Moves the weights and biases of every batchnorm and layernorm away
    from their initial 1 and 0, and the running statistics of every
    batchnorm away from 0 and 1, as after 5 batches: a case then checks that
    each is read and updated, not merely started from its default."""
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm)):
            m.weight.copy_(1.0 + 0.25 * torch.randn_like(m.weight))
            m.bias.copy_(0.25 * torch.randn_like(m.bias))
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            m.running_mean.copy_(0.5 * torch.randn_like(m.running_mean))
            m.running_var.copy_(0.25 + 1.75 * torch.rand_like(m.running_var))
            m.num_batches_tracked.fill_(5)


def reference(spec, loss, optimiser, hp, batch, seed, prepare, mode, steps):
    """Draws a graph case (parameters, state and inputs in float32, as snn
    reads them) and computes it in float64, its passes counted as the C++
    test runs them (see the top of this file). prepare as in generate().
    Returns the arrays of the file by name."""
    torch.manual_seed(seed)
    model, shape = build(spec)
    x = torch.randn((batch,) + shape)
    labels = None
    with torch.no_grad():
        randomise_norms(model)
        if prepare is not None:
            x, labels = prepare(model, x)
    per_sample = math.prod(model.out_shape)
    if uses_targets(loss) and labels is not None:
        target = torch.tensor(labels, dtype=torch.float32)
    elif loss == "bce":
        target = torch.rand(batch, per_sample)
    elif uses_targets(loss):
        target = torch.randn(batch, per_sample)
    elif labels is not None:
        target = torch.tensor(labels)
    else:
        target = torch.randint(0, per_sample, (batch,))
    arrays = {"params": flat(model.parameters()), "state": flat_state(model), "inputs": x}
    arrays["targets" if uses_targets(loss) else "labels"] = target

    model = model.double()
    model.train(mode == "train")
    params = list(model.parameters())
    x = x.double()
    if uses_targets(loss):
        target = target.double()
    xg = x.clone().requires_grad_(True)
    y = model(xg)
    value = compute_loss(loss, y.reshape(batch, -1), target)
    value.backward()
    arrays.update(outputs=y.detach(), loss_value=value.detach(),
                  gradients=flat([p.grad for p in params]), input_gradients=xg.grad.detach())
    opt = make_optimiser(optimiser, hp, params)
    max_norm = hp.get("max_grad_norm", 0.0)

    def step():
        # clip_grad_norm_ before the step, as snn's SNN_HP_MAX_GRAD_NORM
        if max_norm > 0:
            arrays["grad_norm"] = torch.nn.utils.clip_grad_norm_(params, max_norm).reshape(1)
        opt.step()

    step()
    for _ in range(steps - 1):
        opt.zero_grad()
        compute_loss(loss, model(x).reshape(batch, -1), target).backward()
        step()
    arrays.update(params_after_steps=flat(params), state_after_steps=flat_state(model))
    return arrays


def generate_graph(name, spec, loss, optimiser, hp, batch, seed, prepare=None, mode="train",
                   steps=3, exact=(), cancels=None):
    """Writes a graph case computed by reference(); the arrays named in
    `exact` (outputs, input_gradients) are held to the absolute tolerance
    EXACT; those in `cancels` (name: fraction) hold sums that cancel, whose
    elements are also accepted within that fraction of the array's largest
    value (float32 keeps a sum's error relative to its terms)."""
    arrays = reference(spec, loss, optimiser, hp, batch, seed, prepare, mode, steps)
    with open(os.path.join(OUT_DIR, name + ".golden"), "w") as f:
        f.write("spec %s\n" % spec)
        f.write("loss %s\n" % loss)
        f.write("optimiser %s %s\n" % (optimiser, " ".join("%s=%r" % kv for kv in hp.items())))
        f.write("batch %d\n" % batch)
        f.write("mode %s\n" % mode)
        f.write("steps %d\n" % steps)
        for key in exact:
            f.write("tolerance_%s %r\n" % (key, EXACT))
        for key, fraction in (cancels or {}).items():
            f.write("cancellation_%s %r\n" % (key, fraction))
        for key in ("params", "state", "inputs", "targets", "labels", "outputs", "loss_value",
                    "gradients", "input_gradients", "params_after_steps", "state_after_steps", "grad_norm"):
            if key in arrays and (arrays[key].numel() > 0 or not key.startswith("state")):
                write_array(f, key, arrays[key], integer=key == "labels")


def scaled_inputs(scale):
    """Multiplies the inputs by scale (float32, as snn reads them)."""
    def prepare(model, x):
        return (x * scale).float(), None
    return prepare


def identity_first_layer(rows):
    """Makes the first layer (dense N or conv 1 C, N or C as many as its
    inputs) the identity with a zero bias and the inputs `rows`: the
    activation after it sees exactly these values."""
    def prepare(model, x):
        first = model[0]
        eye = torch.eye(first.weight.shape[0], first.weight.shape[1])
        first.weight.copy_(eye.reshape(first.weight.shape))
        first.bias.zero_()
        return torch.tensor(rows, dtype=torch.float32).reshape(x.shape), None
    return prepare


def dead_channel(channel):
    """Makes the first layer's output channel `channel` the constant 0.5 (its
    weights 0): a batchnorm after it sees a variance of exactly 0, so it
    normalises by sqrt(eps) alone."""
    def prepare(model, x):
        model[0].weight[channel].zero_()
        model[0].bias[channel] = 0.5
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

# Cases of the graph engine's ops, computed in float64 from float32
# parameters, state and inputs (generate_graph); three optimiser steps unless
# a case says, in the mode it names (train: batchnorm uses and updates batch
# statistics; eval: its running statistics, and dropout is the identity).
# The activations see exactly the values listed: large |x| (where exp
# overflows or a tail underflows), tiny and zero ones, saturated ones.
EXTREMES = [[-30.0, -10.0, -2.5, -1e-30, 0.0, 1e-30, 0.75, 30.0],
            [-88.0, -17.0, -9.5, -1e-6, 1e-6, 1.5, 9.5, 17.0],
            [-5.0, -1.0, -0.5, -0.125, 0.125, 0.5, 1.0, 5.0]]
# For tanh and sigmoid, no |x| above 30 beside a saturated unit: their
# derivatives come from the float32 output, whose rounding near 1 (6e-8)
# the weight gradient multiplies by every input of the sample.
SATURATING = [EXTREMES[0], [-20.0, -17.0, -9.5, -1e-6, 1e-6, 1.5, 9.5, 17.0], EXTREMES[2]]
SOFTMAX_ROWS = [[30.0, -30.0, 0.0, 1e-30, 29.5, -1.0],
                [-30.0, -30.0, -30.0, -30.0, -30.0, -30.0],
                [88.0, -88.0, 87.5, 0.0, -87.0, 10.0]]
# Two samples of 2x2 pixels, 3 channels each (NCHW): per pixel a channel
# 30 above the others, ties, +-88, and ordinary values.
SOFTMAX_PIXELS = [[30.0, 0.0, -88.0, 0.5, 0.0, 0.0, 88.0, -0.25, -30.0, 0.0, 87.0, 1.0],
                  [1e-30, 2.0, -1.0, 3.0, 1e-30, 2.0, -1.0, -3.0, 0.0, 2.0, 5.0, 0.0]]
SGD_MOMENTUM = ("sgd", {"lr": 0.1, "momentum": 0.9})
# The activation cases hold their outputs, and where the derivative comes
# from z (relu, leaky_relu, gelu, silu) their input gradients (dz itself,
# through the identity), to 1e-20 absolute (and 1e-5 relative): tiny values
# must be right too. Derivatives from the float32 output (tanh, sigmoid,
# softmax) keep the default 1e-7: an output rounded to 1 leaves 1 - y, and a
# softmax's y (dy - sum dy y) of a dominant class, with an error of
# 6e-8 |dy|. The weight gradients, sums over the batch of products up to
# 88 |dz| that may cancel, keep the default too.
EXACT = 1e-20
FORWARD = ("outputs",)
ELEMENTWISE = ("outputs", "input_gradients")

GRAPH_CASES = [
    # Stand-alone activation layers at the extremes.
    ("layer_relu_extremes", "input 8; dense 8; relu", "mse", *SGD_MOMENTUM, 3,
     {"prepare": identity_first_layer(EXTREMES), "exact": ELEMENTWISE}),
    ("layer_leaky_relu_extremes", "input 8; dense 8; leaky_relu", "mse", *SGD_MOMENTUM, 3,
     {"prepare": identity_first_layer(EXTREMES), "exact": ELEMENTWISE}),
    ("layer_tanh_extremes", "input 8; dense 8; tanh", "mse", *SGD_MOMENTUM, 3,
     {"prepare": identity_first_layer(SATURATING), "exact": FORWARD}),
    ("layer_sigmoid_extremes", "input 8; dense 8; sigmoid", "mse", *SGD_MOMENTUM, 3,
     {"prepare": identity_first_layer(SATURATING), "exact": FORWARD}),
    ("layer_gelu_extremes", "input 8; dense 8; gelu", "mse", *SGD_MOMENTUM, 3,
     {"prepare": identity_first_layer(EXTREMES), "exact": ELEMENTWISE}),
    ("layer_silu_extremes", "input 8; dense 8; silu", "mse", *SGD_MOMENTUM, 3,
     {"prepare": identity_first_layer(EXTREMES), "exact": ELEMENTWISE}),
    ("layer_softmax_vector_extremes", "input 6; dense 6; softmax", "mse", *SGD_MOMENTUM, 3,
     {"prepare": identity_first_layer(SOFTMAX_ROWS), "exact": FORWARD}),
    ("layer_softmax_image_extremes", "input 2x2x3; conv 1 3; softmax", "mse", *SGD_MOMENTUM, 2,
     {"prepare": identity_first_layer(SOFTMAX_PIXELS), "exact": FORWARD}),
    ("layer_activations_chain", "input 6; dense 8; gelu; dense 8; silu; dense 6; leaky_relu; "
     "dense 4; softmax", "mse", *ADAM, 4),
    # gelu and silu inline, after dense and conv.
    ("dense_gelu_inline_extremes", "input 8; dense 8 gelu", "mse", *SGD_MOMENTUM, 3,
     {"prepare": identity_first_layer(EXTREMES), "exact": ELEMENTWISE}),
    ("dense_silu_inline_extremes", "input 8; dense 8 silu", "mse", *SGD_MOMENTUM, 3,
     {"prepare": identity_first_layer(EXTREMES), "exact": ELEMENTWISE}),
    ("dense_gelu_silu_inline", "input 6; dense 8 gelu; dense 5 silu; dense 3", "xent", *ADAM, 4),
    ("conv_silu_gelu_inline", "input 6x6x2; conv 3 4 silu pad=1; conv 3 3 gelu stride=2; "
     "flatten; dense 3", "xent", *ADAM, 3),
    # Batchnorm: training mode over three steps (the running statistics
    # checked after them), eps= and momentum= (0 keeps the running
    # statistics, 1 replaces them by the last batch's), a batch of 2 (the
    # unbiased variance twice the biased one), a channel of variance 0, and
    # inference mode from running statistics set as state.
    ("batchnorm1d_train_sgd", "input 5; dense 6; batchnorm; relu; dense 3", "xent",
     *SGD_MOMENTUM, 8),
    ("batchnorm2d_train_adam", "input 5x5x2; conv 3 3 pad=1 nobias; batchnorm; relu; flatten; "
     "dense 3",
     "xent", *ADAM, 4),
    ("batchnorm1d_eps_momentum", "input 4; dense 5 nobias; batchnorm eps=0.01 momentum=0.3; "
     "tanh; dense 2", "mse", *ADAM, 6),
    ("batchnorm1d_batch_of_2", "input 3; dense 4 nobias; batchnorm eps=0.5; dense 2", "mse",
     *SGD_MOMENTUM, 2),
    ("batchnorm2d_momentum_0_dead_channel", "input 4x4x3; conv 1 3; "
     "batchnorm momentum=0 eps=0.01; sigmoid", "mse", *SGD_MOMENTUM, 2, {"prepare": dead_channel(0)}),
    ("batchnorm2d_momentum_1_eps_1", "input 4x4x2; conv 3 3 pad=1; batchnorm momentum=1 eps=1; "
     "relu; flatten; dense 3", "xent", *SGD_MOMENTUM, 3),
    ("batchnorm2d_momentum_0_999", "input 3x3x2; conv 1 2; batchnorm momentum=0.999; tanh",
     "mse", *SGD_MOMENTUM, 3),
    ("batchnorm1d_eval_batch_1", "input 5; dense 6; batchnorm; relu; dense 3", "xent", *ADAM, 1,
     {"mode": "eval"}),
    ("batchnorm2d_eval_dropout", "input 5x5x2; conv 3 3 pad=1; batchnorm eps=0.001; relu; "
     "dropout 0.5; flatten; dense 3", "xent", *SGD_MOMENTUM, 3, {"mode": "eval"}),
    # Layernorm over a vector and over a whole image.
    ("layernorm_vector", "input 6; dense 8; layernorm; tanh; dense 3", "xent", *ADAM, 4),
    ("layernorm_image_eps", "input 4x4x2; conv 3 3 pad=1; layernorm eps=0.001; relu; flatten; "
     "dense 3", "xent", *SGD_MOMENTUM, 3),
    ("layernorm_eval", "input 6; dense 5; layernorm eps=0.1; silu; dense 2", "mse", *ADAM, 3,
     {"mode": "eval"}),
    # A residual block (the skip from a named relu, whose output also feeds
    # the next conv) between a stem and a classifier head.
    ("resnet_block_sgd", "input 6x6x3; conv 3 4 pad=1 nobias; batchnorm; relu name=stem; "
     "conv 3 4 pad=1 nobias; batchnorm; relu; conv 3 4 pad=1 nobias; batchnorm; add stem; relu; "
     "globalavgpool; flatten; dense 5", "xent", *SGD_MOMENTUM, 4),
    ("resnet_block_adam_eval", "input 6x6x3; conv 3 4 pad=1 nobias; batchnorm; relu name=stem; "
     "conv 3 4 pad=1 nobias; batchnorm; relu; conv 3 4 pad=1 nobias; batchnorm; add stem; relu; "
     "globalavgpool; flatten; dense 5", "xent", *ADAM, 2, {"mode": "eval"}),
    # Concat and add: two branches, the input as a branch, and a layer
    # joined with itself (its gradient arrives twice).
    ("concat_vectors", "input 6; dense 5 relu name=a; dense 4 tanh; concat a; dense 3", "xent",
     *ADAM, 4),
    ("concat_images", "input 5x5x2; conv 3 3 pad=1 relu name=a; conv 3 2 pad=1 silu; concat a; "
     "conv 1 4; globalavgpool; flatten; dense 3", "xent", *SGD_MOMENTUM, 3),
    ("add_input_skip", "input 6 name=x; dense 6 tanh; add x; dense 3", "mse", *SGD_MOMENTUM, 4),
    ("add_concat_same_layer", "input 4; dense 4 tanh name=a; add a; concat a; dense 2", "mse",
     *ADAM, 3),
    # Dropout 0 in training mode is the identity.
    ("dropout_0_train", "input 6; dense 8 relu; dropout 0; dense 3", "xent", *ADAM, 4),
    # Branches read with from=: a ResNet downsampling block whose shortcut is
    # a 1x1 convolution of stride 2 from the stem; two branches from the
    # input joined by concat; a value read through flatten's alias and by a
    # convolution from= it.
    ("resnet_downsample_projection", "input 6x6x3; conv 3 4 pad=1 relu name=a; "
     "conv 3 8 stride=2 pad=1 nobias; batchnorm; relu; conv 3 8 pad=1 name=main; "
     "conv 1 8 stride=2 from=a; add main; relu; globalavgpool; flatten; dense 5", "xent",
     *SGD_MOMENTUM, 4),
    ("branches_from_input_concat", "input 6 name=x; dense 5 tanh name=a; dense 4 relu from=x; "
     "concat a; dense 3", "xent", *ADAM, 4),
    ("flatten_from_shared", "input 4x4x2; conv 3 3 pad=1 tanh name=c; flatten name=f; "
     "conv 1 2 sigmoid from=c; flatten; concat f; dense 3", "mse", *ADAM, 3),
]


# Optimiser cases, computed in float64 as the graph cases are (their seeds
# from 5000, so cases added to the lists above do not move them).
OPTIMISER_CASES = [
    # Lion: the defaults, decoupled weight decay, betas near 1 (their
    # complements computed in double), a large learning rate.
    ("lion_defaults", "input 6; dense 8 tanh; dense 3", "mse", "lion", {}, 4, {"steps": 5}),
    ("lion_weight_decay", "input 6; dense 8 relu; dense 3", "xent", "lion",
     {"lr": 0.01, "weight_decay": 0.5}, 5, {"steps": 5}),
    ("lion_betas_near_1", "input 5; dense 6 sigmoid; dense 2", "mse", "lion",
     {"lr": 0.003, "beta1": 0.99999, "beta2": 0.999999}, 4, {"steps": 5}),
    ("lion_large_lr", "input 4x4x2; conv 3 3 pad=1 tanh; flatten; dense 3", "xent", "lion",
     {"lr": 1.0}, 3, {"steps": 4}),
    # SGD's dampening (from the second step b = momentum b + (1 - dampening) g):
    # 1 (the gradient never enters after the first step), 0.5 with weight decay.
    ("sgd_dampening_1", "input 6; dense 8 tanh; dense 3", "mse", "sgd",
     {"lr": 0.1, "momentum": 0.9, "dampening": 1.0}, 4, {"steps": 5}),
    ("sgd_dampening_0_5", "input 4x4x2; conv 3 3 pad=1 relu; flatten; dense 3", "xent", "sgd",
     {"lr": 0.05, "momentum": 0.8, "dampening": 0.5, "weight_decay": 0.01}, 3, {"steps": 5}),
    # Clipping by the global gradient norm (clip_grad_norm_ before each
    # step; grad_norm is its value at the last step): inputs of 1e17 make
    # gradients near 1e34, whose squares overflow float32 (summed in double),
    # far above the limit; ordinary inputs below it, where nothing changes.
    ("clip_sgd_huge_gradients", "input 6; dense 5; dense 3", "mse", "sgd",
     {"lr": 0.1, "momentum": 0.9, "max_grad_norm": 1.0}, 4, {"steps": 3, "prepare": scaled_inputs(1e17)}),
    ("clip_adam_huge_gradients", "input 4; dense 3", "mse", "adam",
     {"lr": 0.01, "max_grad_norm": 0.5}, 4, {"steps": 3, "prepare": scaled_inputs(1e17)}),
    # (Its inputs of up to 60 make weight gradients near 90 whose sums of 4
    # terms cancel down to 0.17: such an element holds 1e-6 of the largest.)
    ("clip_lion_above", "input 6; dense 8; dense 3", "mse", "lion",
     {"lr": 0.01, "max_grad_norm": 0.05}, 4,
     {"steps": 4, "prepare": scaled_inputs(30.0), "cancels": {"gradients": 1e-6}}),
    ("clip_sgd_below", "input 6; dense 8 tanh; dense 3", "xent", "sgd",
     {"lr": 0.1, "max_grad_norm": 1e6}, 4, {"steps": 4}),
    ("clip_adamw_near_the_limit", "input 5; dense 6 relu; dense 2", "mse", "adamw",
     {"lr": 0.05, "weight_decay": 0.1, "max_grad_norm": 2.0}, 4, {"steps": 5, "prepare": scaled_inputs(4.0)}),
]


# Loss cases, computed in float64 as the graph cases are (seeds from 6000).
# fixed_logits makes the outputs exactly the given values (each row the same)
# and the targets those given, so the residuals sit where a case needs them.
HUBER_ROW = [-3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 2.5, 1e-3]
HUBER_TARGETS = [[0.0] * 8, [1.0, -1.0, 0.5, 0.5, -0.25, 0.0, 2.5, 0.0]]
LOSS_CASES = [
    # Residuals on both sides of delta = 1 and exactly at it (+-1), zero.
    ("huber_extremes", "input 3; dense 8", "huber delta=1", "sgd", {"lr": 0.1}, 2,
     {"prepare": fixed_logits(HUBER_ROW, HUBER_TARGETS), "steps": 3, "exact": ("outputs",)}),
    ("huber_tiny_delta", "input 3; dense 8", "huber delta=1e-06", "sgd", {"lr": 0.1}, 2,
     {"prepare": fixed_logits([-2e-6, -1e-6, 5e-7, 0.0, 1e-7, 1e-6, 3.0, -1e4], HUBER_TARGETS),
      "steps": 3, "exact": ("outputs",)}),
    ("huber_huge_delta", "input 3; dense 8", "huber delta=1000000", "sgd", {"lr": 0.1}, 2,
     {"prepare": fixed_logits(HUBER_ROW, HUBER_TARGETS), "steps": 3, "exact": ("outputs",)}),
    # A dense and a convolutional model with a few optimiser steps.
    ("huber_dense_adam", "input 6; dense 8 tanh; dense 3", "huber delta=0.5", "adam", {"lr": 0.01}, 4,
     {"steps": 4}),
    ("huber_conv_sgd", "input 5x5x2; conv 3x3 4 relu; maxpool 2; flatten; dense 3", "huber delta=0.75",
     "sgd", {"lr": 0.05, "momentum": 0.9}, 3, {"steps": 4}),
    # Smooth L1: residuals on both sides of beta and at it; beta = 0 (L1,
    # with a zero residual: gradient 0); a dense model.
    ("smooth_l1_extremes", "input 3; dense 8", "smooth_l1 beta=1", "sgd", {"lr": 0.1}, 2,
     {"prepare": fixed_logits(HUBER_ROW, HUBER_TARGETS), "steps": 3, "exact": ("outputs",)}),
    ("smooth_l1_beta_0", "input 3; dense 8", "smooth_l1 beta=0", "sgd", {"lr": 0.1}, 2,
     {"prepare": fixed_logits(HUBER_ROW, HUBER_TARGETS), "steps": 3, "exact": ("outputs",)}),
    ("smooth_l1_tiny_beta", "input 3; dense 8", "smooth_l1 beta=1e-06", "sgd", {"lr": 0.1}, 2,
     {"prepare": fixed_logits([-2e-6, -1e-6, 5e-7, 0.0, 1e-7, 1e-6, 3.0, -1e4], HUBER_TARGETS),
      "steps": 3, "exact": ("outputs",)}),
    ("smooth_l1_dense_adam", "input 6; dense 8 tanh; dense 3", "smooth_l1 beta=0.5", "adam", {"lr": 0.01}, 4,
     {"steps": 4}),
    # Binary cross-entropy of logits: +-1e4, +-30, 1e-7, 0, ordinary ones
    # against targets 0, 1 and 0.5; confident right logits (losses of 1e-13
    # to 1e-9, held to 1e-20 absolute; not their gradients: PyTorch's
    # sigmoid(30) - 1 cancels even in float64, 1e-3 off, so the unit tests
    # check those against e^-x / (1 + e^-x)); dense and conv models.
    ("bce_extremes", "input 3; dense 8", "bce", "sgd", {"lr": 0.1}, 2,
     {"prepare": fixed_logits([1e4, -1e4, 30.0, -30.0, 1e-7, 0.0, 2.5, -3.0],
                              [[0.0, 1.0, 1.0, 0.0, 0.5, 0.5, 1.0, 0.0],
                               [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.5, 0.5]]),
      "steps": 3, "exact": ("outputs",)}),
    ("bce_confident", "input 3; dense 6", "bce", "sgd", {"lr": 0.1}, 2,
     {"prepare": fixed_logits([30.0, -30.0, 20.0, -20.0, 25.0, -17.0],
                              [[1.0, 0.0, 1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]]),
      "steps": 3, "exact": ("outputs", "loss_value")}),
    ("bce_dense_adam", "input 6; dense 8 tanh; dense 3", "bce", "adam", {"lr": 0.01}, 4, {"steps": 4}),
    ("bce_conv_sgd", "input 5x5x2; conv 3x3 4 relu; maxpool 2; flatten; dense 3", "bce", "sgd",
     {"lr": 0.05, "momentum": 0.9}, 3, {"steps": 4}),
]


def main(names):
    os.makedirs(OUT_DIR, exist_ok=True)
    unknown = set(names) - {case[0] for case in LOSS_CASES + CASES + GRAPH_CASES + OPTIMISER_CASES}
    if unknown:
        raise SystemExit("no such case: " + ", ".join(sorted(unknown)))
    written = 0
    for cases, first_seed, write in ((CASES, 1000, generate), (GRAPH_CASES, 2000, generate_graph), (LOSS_CASES, 6000, generate_graph),
                                     (OPTIMISER_CASES, 5000, generate_graph)):
        for seed, (name, spec, loss, optimiser, hp, batch, *options) in enumerate(cases):
            assert re.fullmatch(r"[a-z0-9_]+", name)
            if names and name not in names:
                continue
            write(name, spec, loss, optimiser, hp, batch, first_seed + seed,
                  **(options[0] if options else {}))
            written += 1
    print("wrote %d cases to %s" % (written, OUT_DIR))

if __name__ == "__main__":
    main(sys.argv[1:])
