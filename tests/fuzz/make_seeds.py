#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (standard library only):
corpus/spec/ holds model specs, corpus/model/ small valid model files and a
checkpoint in the safetensors layout that snn writes.
Run from anywhere:  python3 tests/fuzz/make_seeds.py
"""
import json
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

SPECS = [
    "input 4; dense 3",
    "input 4; dense 8 relu; dense 2",
    "input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; flatten; dense 10",
    "input 8x8x3; conv 3x3 4 relu stride=2 pad=1; avgpool 2; flatten; dense 5 sigmoid",
    "input 6x5x2; conv 3x2 3 tanh pad=1x0 nobias init=he_normal; maxpool 2x1 stride=1; flatten",
    "input 10\ndense 10 leaky_relu init=zeros\ndense 1 identity nobias",
    "input 3; dense 4 init=glorot_normal; dense 4 init=lecun_normal; dense 4 init=he_uniform",
    "input 16x16x1; conv 3 2; maxpool 2 stride=1; conv 2x2 2 stride=2x1; flatten; dense 3",
    "input 1; dense 1",
    "input 2x2x1; flatten; dense 2 tanh",
    "  input   5 ;  dense 2 relu ;",
    "input 7x7x2; avgpool 3 stride=2; flatten; dense 4",
]

# (spec, [(tensor name, shape)]) in the order the tensors are stored.
MODELS = [
    ("input 4; dense 3", [("layers.1.weight", [3, 4]), ("layers.1.bias", [3])]),
    ("input 4; dense 8 relu; dense 2",
     [("layers.1.weight", [8, 4]), ("layers.1.bias", [8]), ("layers.2.weight", [2, 8]), ("layers.2.bias", [2])]),
    ("input 3; dense 2 nobias", [("layers.1.weight", [2, 3])]),
    ("input 1; dense 1 tanh", [("layers.1.weight", [1, 1]), ("layers.1.bias", [1])]),
    ("input 4x4x1; conv 3x3 2 relu; flatten; dense 2",
     [("layers.1.weight", [2, 1, 3, 3]), ("layers.1.bias", [2]), ("layers.3.weight", [2, 8]), ("layers.3.bias", [2])]),
    ("input 6x6x2; conv 3x3 3 pad=1 nobias; maxpool 2; flatten; dense 2 sigmoid",
     [("layers.1.weight", [3, 2, 3, 3]), ("layers.4.weight", [2, 27]), ("layers.4.bias", [2])]),
    ("input 5x5x1; conv 2x3 2 stride=2; avgpool 2x1; flatten",
     [("layers.1.weight", [2, 1, 2, 3]), ("layers.1.bias", [2])]),
    ("input 2; dense 2 leaky_relu; dense 2; dense 1",
     [("layers.1.weight", [2, 2]), ("layers.1.bias", [2]), ("layers.2.weight", [2, 2]), ("layers.2.bias", [2]),
      ("layers.3.weight", [1, 2]), ("layers.3.bias", [1])]),
    ("input 3x3x1; flatten; dense 2", [("layers.2.weight", [2, 9]), ("layers.2.bias", [2])]),
    ("input 2x2x1; maxpool 2; flatten", []),
]


def safetensors(metadata, tensors, rng):
    header = {"__metadata__": metadata}
    data = b""
    for name, shape in tensors:
        count = 1
        for d in shape:
            count *= d
        raw = struct.pack("<%df" % count, *[rng.uniform(-1, 1) for _ in range(count)])
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    rng = random.Random(7)
    for i, spec in enumerate(SPECS):
        with open(os.path.join(HERE, "corpus", "spec", "spec%02d.txt" % i), "w") as f:
            f.write(spec)
    for i, (spec, tensors) in enumerate(MODELS):
        meta = {"format": "snn", "format_version": "1", "spec": spec}
        with open(os.path.join(HERE, "corpus", "model", "model%02d.safetensors" % i), "wb") as f:
            f.write(safetensors(meta, tensors, rng))
    spec, tensors = MODELS[1]
    meta = {"format": "snn", "format_version": "1", "spec": spec, "optimiser": "adam", "optimiser.steps": "3",
            "optimiser.learning_rate": "0.001", "optimiser.beta1": "0.9", "optimiser.beta2": "0.999",
            "optimiser.epsilon": "1e-08", "optimiser.weight_decay": "0"}
    count = 8 * 4 + 8 + 2 * 8 + 2
    with open(os.path.join(HERE, "corpus", "model", "checkpoint.safetensors"), "wb") as f:
        f.write(safetensors(meta, tensors + [("optimiser.m", [count]), ("optimiser.v", [count])], rng))


if __name__ == "__main__":
    main()
