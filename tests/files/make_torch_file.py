#!/usr/bin/env python3
"""Writes PyTorch models as snn model files, independently of the library.

The safetensors container is written by hand with the standard library only
(struct, json), following the published format: an 8-byte little-endian
header length, a JSON header padded with spaces, then the raw little-endian
float32 tensors (int64 for batchnorm's num_batches_tracked). Each model also gets an input batch and PyTorch's outputs
for it, as raw little-endian float32 files, which test_files.cpp compares
with snn's outputs.

Run from the repository root:  python3 tests/files/make_torch_file.py
(it needs PyTorch; the generated files in tests/files/data/ are committed).
"""
import json
import os
import struct

import torch
from torch import nn

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def write_safetensors(path, spec, tensors):
    """tensors: list of (name, torch.Tensor), stored in this order; int64
    tensors as I64, the others as F32."""
    header = {"__metadata__": {"format": "snn", "format_version": "1", "spec": spec}}
    data = b""
    for name, t in tensors:
        if t.dtype == torch.int64:
            t = t.detach().contiguous()
            raw = struct.pack("<%dq" % t.numel(), *t.flatten().tolist())
            dtype = "I64"
        else:
            t = t.detach().contiguous().to(torch.float32)
            raw = struct.pack("<%df" % t.numel(), *t.flatten().tolist())
            dtype = "F32"
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def write_floats(path, t):
    flat = t.detach().contiguous().flatten().tolist()
    with open(path, "wb") as f:
        f.write(struct.pack("<%df" % len(flat), *flat))


def export(name, model, spec, layer_of_module, x):
    """layer_of_module maps a state-dict module index to the spec's layer index."""
    tensors = []
    for key, value in model.state_dict().items():
        module, kind = key.split(".")
        tensors.append(("layers.%d.%s" % (layer_of_module[int(module)], kind), value))
    write_safetensors(os.path.join(HERE, name + ".safetensors"), spec, tensors)
    with torch.no_grad():
        y = model(x)
    write_floats(os.path.join(HERE, name + "_inputs.f32"), x)
    write_floats(os.path.join(HERE, name + "_outputs.f32"), y)


class ResidualNet(nn.Module):
    """A residual block with batchnorm, its submodules registered as layers.<i>
    with i the index of the layer in the snn spec, so its state_dict has
    exactly the names of snn's model file."""

    SPEC = ("input 6x6x2; conv 3 4 pad=1 name=a; batchnorm; relu; conv 3 4 pad=1 nobias; batchnorm; "
            "add a; relu; globalavgpool; flatten; dropout 0.25; layernorm; dense 3")

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleDict({
            "1": nn.Conv2d(2, 4, 3, padding=1),
            "2": nn.BatchNorm2d(4),
            "4": nn.Conv2d(4, 4, 3, padding=1, bias=False),
            "5": nn.BatchNorm2d(4),
            "11": nn.LayerNorm(4),
            "12": nn.Linear(4, 3),
        })

    def forward(self, x):
        L = self.layers
        a = L["1"](x)
        h = torch.relu(L["2"](a))
        h = torch.relu(L["5"](L["4"](h)) + a)
        h = torch.flatten(torch.mean(h, dim=(2, 3), keepdim=True), 1)
        h = nn.functional.dropout(h, 0.25, self.training)
        return L["12"](L["11"](h))


def export_residual():
    """Trains the running statistics a few steps, so they are not their
    initial values, then exports the eval-mode outputs."""
    model = ResidualNet()
    with torch.no_grad():
        for layer in ("2", "5", "11"):
            model.layers[layer].weight.uniform_(0.5, 1.5)
            model.layers[layer].bias.uniform_(-0.5, 0.5)
        model.train()
        for _ in range(3):
            model(torch.randn(8, 2, 6, 6) * 2 + 0.5)
    model.eval()
    tensors = list(model.state_dict().items())
    write_safetensors(os.path.join(HERE, "torch_residual.safetensors"), ResidualNet.SPEC, tensors)
    # The file loads back into the module by its names, strictly.
    model.load_state_dict(dict(tensors), strict=True)
    x = torch.randn(5, 2, 6, 6)
    with torch.no_grad():
        y = model(x)
    write_floats(os.path.join(HERE, "torch_residual_inputs.f32"), x)
    write_floats(os.path.join(HERE, "torch_residual_outputs.f32"), y)


class SeqNet(nn.Module):
    """A sequence model, its submodules registered as layers.<i> as snn's
    file names them: posembed is nn.Embedding(T, F) added at arange(T),
    conv1d nn.Conv1d over channels-last steps."""

    SPEC = "input seq 7x3; posembed; conv1d 3 4 tanh stride=2 pad=2 dilation=2; seqpool max; dense 2"

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleDict({
            "1": nn.Embedding(7, 3),
            "2": nn.Conv1d(3, 4, 3, stride=2, padding=2, dilation=2),
            "4": nn.Linear(4, 2),
        })

    def forward(self, x):
        L = self.layers
        h = x + L["1"](torch.arange(x.shape[1]))
        h = torch.tanh(L["2"](h.transpose(1, 2))).transpose(1, 2)
        return L["4"](h.max(dim=1).values)


class TokenNet(nn.Module):
    """Token ids through nn.Embedding with a padding row, a convolution and
    mean pooling (the ids are the input file's floats)."""

    SPEC = "input tokens 6 vocab=9; embedding 5 pad=1; conv1d 2 3 relu; seqpool mean; dense 2"

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleDict({
            "1": nn.Embedding(9, 5, padding_idx=1),
            "2": nn.Conv1d(5, 3, 2),
            "4": nn.Linear(3, 2),
        })

    def forward(self, ids):
        L = self.layers
        h = L["1"](ids.long())
        h = torch.relu(L["2"](h.transpose(1, 2))).transpose(1, 2)
        return L["4"](h.mean(dim=1))


class RecurrentNet(nn.Module):
    """A bidirectional LSTM, a GRU's final state and a dense layer, registered
    as layers.<i>, so the LSTM's and GRU's state_dict names (weight_ih_l0,
    ..., bias_hh_l0_reverse) are the file's."""

    SPEC = "input seq 5x3; lstm 4 bidirectional; gru 3 last; dense 2"

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleDict({
            "1": nn.LSTM(3, 4, batch_first=True, bidirectional=True),
            "2": nn.GRU(8, 3, batch_first=True),
            "3": nn.Linear(3, 2),
        })

    def forward(self, x):
        h, _ = self.layers["1"](x)
        _, h_n = self.layers["2"](h)
        return self.layers["3"](h_n[0])


def export_module(name, model, x):
    """Writes the module's state_dict under its own names, which load back
    into it strictly, and its outputs for x."""
    tensors = list(model.state_dict().items())
    write_safetensors(os.path.join(HERE, name + ".safetensors"), model.SPEC, tensors)
    model.load_state_dict(dict(tensors), strict=True)
    with torch.no_grad():
        y = model(x)
    write_floats(os.path.join(HERE, name + "_inputs.f32"), x)
    write_floats(os.path.join(HERE, name + "_outputs.f32"), y)


class AttentionNet(nn.Module):
    """Causal multi-head self-attention over a sequence [T][E], as snn's
    attention op: the module registered as layers.1, so its state_dict names
    (in_proj_weight, out_proj.weight, ...) are snn's."""

    SPEC = "input seq 5x8; attention heads=2 causal"

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleDict({"1": nn.MultiheadAttention(8, 2, batch_first=True)})

    def forward(self, x):
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), 1)
        y, _ = self.layers["1"](x, x, x, attn_mask=mask, need_weights=False)
        return y


def export_attention():
    """Random biases too (PyTorch starts them at zero), then the outputs of a
    batch of full-length sequences."""
    model = AttentionNet()
    with torch.no_grad():
        model.layers["1"].in_proj_bias.uniform_(-0.5, 0.5)
        model.layers["1"].out_proj.bias.uniform_(-0.5, 0.5)
    model.eval()
    tensors = list(model.state_dict().items())
    write_safetensors(os.path.join(HERE, "torch_attention.safetensors"), AttentionNet.SPEC, tensors)
    model.load_state_dict(dict(tensors), strict=True)
    x = torch.randn(3, 5, 8)
    with torch.no_grad():
        y = model(x)
    write_floats(os.path.join(HERE, "torch_attention_inputs.f32"), x)
    write_floats(os.path.join(HERE, "torch_attention_outputs.f32"), y)


def main():
    os.makedirs(HERE, exist_ok=True)
    torch.manual_seed(1234)

    mlp = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    export("torch_mlp", mlp, "input 4; dense 8 tanh; dense 8 relu; dense 3",
           {0: 1, 2: 2, 4: 3}, torch.randn(5, 4))

    cnn = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(4, 3, 2), nn.Sigmoid(), nn.Flatten(), nn.Linear(3 * 2 * 2, 5))
    export("torch_cnn", cnn,
           "input 6x6x2; conv 3x3 4 relu pad=1; maxpool 2; conv 2x2 3 sigmoid; flatten; dense 5",
           {0: 1, 3: 3, 6: 5}, torch.randn(3, 2, 6, 6))

    export_residual()
    export_module("torch_seq", SeqNet(), torch.randn(4, 7, 3))
    export_module("torch_tokens", TokenNet(), torch.randint(0, 9, (3, 6)).float())
    export_attention()
    export_module("torch_recurrent", RecurrentNet(), torch.randn(4, 5, 3))


if __name__ == "__main__":
    main()
