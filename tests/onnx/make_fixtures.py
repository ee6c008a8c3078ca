#!/usr/bin/env python3
"""Writes the ONNX import fixtures of tests/onnx/fixtures/ from PyTorch.

Each fixture is a small PyTorch model exported with torch.onnx.export
(the TorchScript exporter, dynamo=False) and what PyTorch computes with it:

    <name>.onnx   the exported model
    <name>.json   the spec snn's import must give, the input, PyTorch's
                  outputs (float32, and float64 from the float32 parameters
                  and inputs), and a few training steps: the loss, the
                  learning rate, the targets or labels, the loss before each
                  step and the outputs after the steps (in eval mode), both
                  computed in float64 from the float32 start.

The training matches snn's: plain SGD (p -= lr * grad), the loss
SNN_LOSS_MSE (mean over every output value) or SNN_LOSS_LOGIT_CROSSENTROPY
(mean over the batch of -log softmax(y)[label]), each step a forward and a
backward pass on the same batch in training mode (batchnorm with the batch's
statistics, updating its running statistics), then the step. A model whose
batchnorm the exporter folded into the convolutions is trained as snn holds
it: the folded convolutions, without batchnorm.

tests/onnx/test_import.cpp replays every fixture through snn's C API;
PyTorch is needed only to write them again:

    python3 tests/onnx/make_fixtures.py [name ...]

(torch 2.6 and onnx 1.17 wrote the committed files.)
"""
import copy
import io
import json
import math
import os
import sys

import torch
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
STEPS = 3


def export(model, example, path, opset, folding=True, dynamic=None, input_names=("input",)):
    dynamic = dynamic if dynamic is not None else {"input": {0: "batch"}, "output": {0: "batch"}}
    buf = io.BytesIO()
    torch.onnx.export(model, (example,), buf, opset_version=opset, dynamo=False,
                      do_constant_folding=folding, input_names=list(input_names),
                      output_names=["output"], dynamic_axes=dynamic)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def values(t, digits):
    return [float("%.*g" % (digits, v)) for v in t.detach().reshape(-1).tolist()]


def loss_of(kind, y, target):
    if kind == "mse":
        return ((y - target) ** 2).mean()
    return nn.functional.cross_entropy(y, target)


def train(model, x, kind, target, lr):
    """STEPS steps of SGD in training mode on (x, target); the losses before
    each step, then the outputs in eval mode."""
    losses = []
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    model.train()
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_of(kind, model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        return losses, model(x)


def fixture(name, model, x, spec, kind, lr, opset=17, folding=True, trained_as=None, dynamic=None, notes="",
            sequence_length=0, seq_dynamic=False):
    """Exports `model` (eval mode) and records its outputs and its training.
    trained_as: the module snn's import holds when it differs from `model`
    (batchnorm folded); its outputs must equal the model's."""
    torch.manual_seed(1000 + sum(map(ord, name)))
    model.eval()
    path = os.path.join(OUT_DIR, name + ".onnx")
    export(model, x, path, opset, folding, dynamic)
    with torch.no_grad():
        y32 = model(x)
    tokens = x.dtype == torch.int64
    x64 = x if tokens else x.double()
    ref = copy.deepcopy(trained_as if trained_as is not None else model).double()
    ref.eval()
    with torch.no_grad():
        y64 = ref(x64)
    assert (y64.float() - y32).abs().max().item() < 1e-4, name
    g = torch.Generator().manual_seed(7)
    if kind == "mse":
        target = torch.randn(y32.shape, generator=g, dtype=torch.float64)
        target_list = values(target.float(), 9)
        target = torch.tensor(target_list, dtype=torch.float64).reshape(y32.shape)
    else:
        target = torch.randint(0, y32.shape[-1], (y32.shape[0],), generator=g)
        target_list = target.tolist()
    losses, after = train(ref, x64, kind, target, lr)
    out = {
        "name": name,
        "spec": spec,
        "opset": opset,
        "batch": x.shape[0],
        "input_shape": list(x.shape),
        "output_shape": list(y32.shape),
        "sequence_length": sequence_length,
        "input": x.reshape(-1).tolist() if tokens else values(x, 9),
        "tokens": tokens,
        "output32": values(y32, 9),
        "output64": values(y64, 17),
        "loss": kind,
        "lr": lr,
        "steps": STEPS,
        "targets" if kind == "mse" else "labels": target_list,
        "losses64": [float("%.17g" % v) for v in losses],
        "output_after64": values(after, 17),
        "notes": notes,
    }
    with open(os.path.join(OUT_DIR, name + ".json"), "w") as f:
        json.dump(out, f, indent=0)
        f.write("\n")


# --- the models -------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 16)
        self.b = nn.Linear(16, 8)
        self.c = nn.Linear(8, 3)

    def forward(self, x):
        return self.c(torch.sigmoid(self.b(torch.relu(self.a(x)))))


class CNN(nn.Module):
    """The default CNN's layout: conv-relu-maxpool twice, x.view(x.size(0), -1), linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 6, 3)
        self.fc = nn.Linear(6 * 2 * 2, 5)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        x = nn.functional.max_pool2d(torch.tanh(self.c2(x)), 2)
        x = x.view(x.size(0), -1)
        return self.fc(x)


class ResBlock(nn.Module):
    """conv-bn-relu-conv-bn + x, relu, global average pool, linear."""

    def __init__(self, c=4):
        super().__init__()
        self.stem = nn.Conv2d(2, c, 3, padding=1)
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(c)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(c)
        self.fc = nn.Linear(c, 3)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        y = torch.relu(y + x)
        y = nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
        return self.fc(y)


def trainable(m):
    """fuse_conv_bn_eval gives a convolution without bias a bias that does
    not require grad; snn trains every parameter."""
    for p in m.parameters():
        p.requires_grad_(True)


class FoldedResBlock(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.stem = copy.deepcopy(m.stem)
        self.c1 = fuse_conv_bn_eval(m.c1, m.b1)
        self.c2 = fuse_conv_bn_eval(m.c2, m.b2)
        self.fc = copy.deepcopy(m.fc)
        trainable(self)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        y = torch.relu(self.c1(x))
        y = self.c2(y)
        y = torch.relu(y + x)
        y = nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
        return self.fc(y)


class ProjectionBlock(nn.Module):
    """A ResNet block with a projection shortcut: stride 2, more channels."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, stride=2, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(6)
        self.c2 = nn.Conv2d(6, 6, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(6)
        self.sc = nn.Conv2d(3, 6, 1, stride=2, bias=False)
        self.bs = nn.BatchNorm2d(6)
        self.fc = nn.Linear(6, 2)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        y = torch.relu(y + self.bs(self.sc(x)))
        return self.fc(y.mean(dim=(2, 3)))


class FoldedProjection(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.c1 = fuse_conv_bn_eval(m.c1, m.b1)
        self.c2 = fuse_conv_bn_eval(m.c2, m.b2)
        self.sc = fuse_conv_bn_eval(m.sc, m.bs)
        self.fc = copy.deepcopy(m.fc)
        trainable(self)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = self.c2(y)
        y = torch.relu(y + self.sc(x))
        return self.fc(y.mean(dim=(2, 3)))


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.lstm = nn.LSTM(8, 12, batch_first=True)
        self.fc = nn.Linear(12, 4)

    def forward(self, tokens):
        _, (h, _) = self.lstm(self.emb(tokens))
        return self.fc(h[-1])


class GRUModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(5, 7, batch_first=True)
        self.fc = nn.Linear(7, 3)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.fc(out[:, -1])


class Encoder(nn.Module):
    def __init__(self, activation="relu", causal=False):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=24, dropout=0.0, batch_first=True,
                                                activation=activation)
        self.causal = causal

    def forward(self, x):
        if self.causal:
            t = x.shape[1]
            mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
            return self.layer(x, src_mask=mask)
        return self.layer(x)


class GeluSiluLN(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 12)
        self.b = nn.Linear(12, 10)
        self.ln = nn.LayerNorm(10)
        self.c = nn.Linear(10, 4)

    def forward(self, x):
        x = nn.functional.gelu(self.a(x))
        x = nn.functional.silu(self.b(x))
        return self.c(self.ln(x))


def randomise_bn(m):
    """Running statistics and affine parameters away from their defaults."""
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            c = mod.num_features
            mod.running_mean.copy_(torch.randn(c) * 0.3)
            mod.running_var.copy_(torch.rand(c) + 0.5)
            mod.weight.data.copy_(torch.rand(c) + 0.5)
            mod.bias.data.copy_(torch.randn(c) * 0.2)


def main(names):
    os.makedirs(OUT_DIR, exist_ok=True)
    todo = []

    def case(name, build):
        if not names or name in names:
            todo.append((name, build))

    def mlp():
        torch.manual_seed(1)
        fixture("mlp", MLP(), torch.randn(4, 6), "input 6; dense 16 relu; dense 8 sigmoid; dense 3", "mse", 0.1,
                opset=13)

    def cnn():
        torch.manual_seed(2)
        fixture("cnn", CNN(), torch.randn(3, 1, 12, 12),
                "input 12x12x1; conv 3 4 pad=1 relu; maxpool 2; conv 3 6 tanh; maxpool 2; flatten; dense 5",
                "xent", 0.1, opset=17)

    def res_folded():
        torch.manual_seed(3)
        m = ResBlock()
        with torch.no_grad():
            randomise_bn(m)
        m.eval()
        fixture("resblock_folded", m, torch.randn(3, 2, 6, 6),
                "input 6x6x2; conv 3 4 pad=1 relu name=l1; conv 3 4 pad=1 relu; conv 3 4 pad=1; add l1; relu; "
                "globalavgpool; flatten; dense 3",
                "mse", 0.05, opset=17, trained_as=FoldedResBlock(m).eval())

    def res_kept():
        torch.manual_seed(4)
        m = ResBlock()
        with torch.no_grad():
            randomise_bn(m)
        fixture("resblock_bn", m, torch.randn(4, 2, 6, 6),
                "input 6x6x2; conv 3 4 pad=1 relu name=l1; conv 3 4 pad=1 nobias; batchnorm; relu; "
                "conv 3 4 pad=1 nobias; batchnorm; add l1; relu; globalavgpool; flatten; dense 3",
                "mse", 0.05, opset=17, folding=False)

    def projection():
        torch.manual_seed(5)
        m = ProjectionBlock()
        with torch.no_grad():
            randomise_bn(m)
        m.eval()
        fixture("projection", m, torch.randn(3, 3, 6, 6),
                "input 6x6x3 name=l0; conv 3 6 stride=2 pad=1 relu; conv 3 6 pad=1 name=l2; "
                "conv 1 6 stride=2 from=l0; add l2; relu; globalavgpool; flatten; dense 2",
                "xent", 0.05, opset=17, trained_as=FoldedProjection(m).eval())

    def lstm():
        torch.manual_seed(6)
        fixture("lstm_tokens", LSTMClassifier(), torch.randint(0, 20, (3, 7)),
                "input tokens 7 vocab=20; embedding 8; lstm 12 last; dense 4", "xent", 0.1, opset=17)

    def gru():
        torch.manual_seed(7)
        fixture("gru_seq", GRUModel(), torch.randn(3, 6, 5),
                "input seq 6x5; gru 7; seqpool last; dense 3", "mse", 0.1, opset=17,
                dynamic={"input": {0: "batch", 1: "steps"}, "output": {0: "batch"}}, sequence_length=6,
                notes="the number of steps is symbolic: import needs sequence_length=6")

    def encoder():
        torch.manual_seed(8)
        fixture("transformer", Encoder(), torch.randn(2, 5, 16),
                "input seq 5x16 name=l0; attention heads=2; add l0; layernorm name=l3; dense 24 relu; dense 16; "
                "add l3; layernorm",
                "mse", 0.05, opset=17)

    def encoder_gelu_causal():
        torch.manual_seed(9)
        fixture("transformer_gelu_causal", Encoder("gelu", causal=True), torch.randn(2, 4, 16),
                "input seq 4x16 name=l0; attention heads=2 causal; add l0; layernorm name=l3; dense 24 gelu; "
                "dense 16; add l3; layernorm",
                "mse", 0.05, opset=17)

    def gelu_ln(opset):
        def build():
            torch.manual_seed(10)
            fixture("gelu_silu_ln_opset%d" % opset, GeluSiluLN(), torch.randn(4, 6),
                    "input 6; dense 12 gelu; dense 10 silu; layernorm; dense 4", "xent", 0.1, opset=opset)
        return build

    case("mlp", mlp)
    case("cnn", cnn)
    case("resblock_folded", res_folded)
    case("resblock_bn", res_kept)
    case("projection", projection)
    case("lstm_tokens", lstm)
    case("gru_seq", gru)
    case("transformer", encoder)
    case("transformer_gelu_causal", encoder_gelu_causal)
    case("gelu_silu_ln_opset17", gelu_ln(17))
    case("gelu_silu_ln_opset13", gelu_ln(13))
    def refuse_if():
        # A graph with a subgraph (If), which import refuses; written with
        # onnx.helper as snn's own writer keeps no subgraphs.
        from onnx import TensorProto, helper
        branch = lambda name, op: helper.make_graph(
            [helper.make_node(op, ["h"], [name + "_y"])], name, [],
            [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, ["batch", 2])])
        w = helper.make_tensor("W", TensorProto.FLOAT, [2, 3], [1, 2, 3, 4, 5, 6])
        cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
        nodes = [helper.make_node("Gemm", ["input", "W"], ["h"], name="fc", transB=1),
                 helper.make_node("If", ["cond"], ["output"], name="branch",
                                  then_branch=branch("then", "Relu"), else_branch=branch("else", "Tanh"))]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 2])],
                              initializer=[w, cond])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        with open(os.path.join(OUT_DIR, "refuse_if.onnx"), "wb") as f:
            f.write(m.SerializeToString())

    case("refuse_if", refuse_if)
    for name, build in todo:
        build()
        print("wrote", name)


if __name__ == "__main__":
    main(sys.argv[1:])
