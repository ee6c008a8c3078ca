#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (standard library only):
corpus/spec/ holds model specs, corpus/model/ small valid model files and
checkpoints in the safetensors layout that snn writes, corpus/run/ and
corpus/sequence/ bytes the targets build models from. Crafted inputs that
snn must refuse (sizes that overflow, bad header lengths, a save cut short,
checkpoint settings out of range, keys twice, optimiser state in a model
file; ONNX bytes the wire layer must refuse) go, named bad-*, to both corpus/
and regressions/, whose replay in the normal test suites checks that each is
refused. corpus/onnx/'s valid files come from tests/onnx/make_wire_goldens.py
(it needs the onnx package).
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
    "input 8x8x3; conv 3 4 pad=1 nobias name=a; batchnorm; relu; conv 3 4 pad=1 nobias; batchnorm eps=0.001 "
    "momentum=0.2; add a; relu; globalavgpool; flatten; dropout 0.25; dense 3",
    "input 6; dense 8 gelu name=h; layernorm eps=1e-6; dense 8 silu; concat h; softmax; dense 2",
    "input 4x4x2; conv 1 3 name=b; gelu; concat b; silu; maxpool 2; flatten; batchnorm; tanh; dense 2",
    "input 5 name=x; sigmoid; add x; leaky_relu name=y; concat x; relu; dense 1",
    "input 6x6x1; conv 3 2 pad=1 name=c; layernorm; add c; softmax; flatten; dropout 0",
    "input seq 7x3 name=x; dense 3 gelu; layernorm eps=0.01; add x; softmax; dense 2",
    "input seq 1x1; flatten; dense 1",
    "input tokens 7 vocab=11; embedding 6 pad=0; posembed; conv1d 3 5 relu pad=1; seqpool max",
    "input seq 9x4; conv1d 2 3 stride=2 dilation=3 nobias init=he_normal; seqpool mean; flatten",
    "input seq 5x3; posembed name=p; conv1d 1 3 tanh; add p; seqpool last",
    "input seq 6x8; attention heads=2 causal name=a; attention heads=8",
    "input seq 6x3; lstm 4; lstm 2 last",
    "input seq 5x2; gru 3 bidirectional last nobias; dense 2",
    "input seq 4x3; lstm 5 bidirectional nobias name=r; gru 2 bidirectional",
    # Branches read with from=ID.
    "input 8x8x3; conv 3x3 8 relu pad=1 name=a; conv 3x3 16 relu stride=2 pad=1; conv 3x3 16 pad=1 name=main; "
    "conv 1x1 16 stride=2 from=a; add main; relu",
    "input 6 name=x; dense 5 tanh name=a; dense 4 relu from=x; concat a; dense 3",
    "input 4x4x2; conv 3 3 pad=1 tanh name=c; flatten name=f; conv 1 2 from=c; flatten; concat f; dense 3",
    "input tokens 5 vocab=9 name=t; embedding 4 name=e; embedding 4 from=t; add e; seqpool mean",
    "input 4 name=x; dense 4 name=a from=x; dense 4 from=x name=b; add a from=b name=s; concat x from=a; dense 4; "
    "add s",
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
    ("input tokens 5 vocab=7; embedding 3 pad=0; posembed; conv1d 3 2 pad=1; seqpool max",
     [("layers.1.weight", [7, 3]), ("layers.2.weight", [5, 3]), ("layers.3.weight", [2, 3, 3]),
      ("layers.3.bias", [2])]),
]

# Model files of specs with from=ID, written with a random stream of their own
# (so the files above keep their values).
FROM_MODELS = [
    ("input 4 name=x; dense 3 name=a; dense 3 from=x; add a",
     [("layers.1.weight", [3, 4]), ("layers.1.bias", [3]), ("layers.2.weight", [3, 4]), ("layers.2.bias", [3])]),
    ("input 4x4x1; conv 3 2 pad=1 name=a; conv 1 2 stride=2 name=m; conv 1 2 stride=2 from=a; add m; flatten; "
     "dense 2",
     [("layers.1.weight", [2, 1, 3, 3]), ("layers.1.bias", [2]), ("layers.2.weight", [2, 2, 1, 1]),
      ("layers.2.bias", [2]), ("layers.3.weight", [2, 2, 1, 1]), ("layers.3.bias", [2]),
      ("layers.6.weight", [2, 8]), ("layers.6.bias", [2])]),
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


# Specs whose sizes overflow or pass a limit: the input's elements (which
# wrapped to 0), a layer's weights, a convolution's lowered input.
BAD_SPECS = {
    "bad-input-elements-wrap.txt": "input 16777216x16777216x65536; maxpool 16777216; flatten; dense 1",
    "bad-input-above-2-31.txt": "input 46341x46341x1; maxpool 46341",
    "bad-conv-output-too-large.txt": "input 2x2x1; conv 1 16777216 pad=16777216",
    "bad-dense-weights-too-large.txt": "input 16777216; dense 16777216",
    "bad-conv-lowered-too-large.txt": "input 1x1x1; conv 1024x2048 1 pad=1023x1535",
    "bad-add-shapes-differ.txt": "input 4x4x2; conv 3 2 name=a; conv 1 3; add a",
    "bad-add-unknown-name.txt": "input 4; dense 4; add nowhere",
    "bad-name-twice.txt": "input 4 name=a; dense 4 name=a; add a",
    "bad-add-later-name.txt": "input 4; add b; dense 4 name=b",
    "bad-concat-image-and-vector.txt": "input 4x4x1 name=a; flatten; concat a",
    "bad-dropout-one.txt": "input 4; dropout 1",
    "bad-batchnorm-eps-zero.txt": "input 4; batchnorm eps=0",
    "bad-globalavgpool-vector.txt": "input 4; globalavgpool",
    "bad-concat-channels-overflow.txt": "input 1024x1024x1536 name=a; concat a",
    "bad-embedding-pad-outside-vocab.txt": "input tokens 4 vocab=5; embedding 3 pad=5",
    "bad-embedding-of-a-sequence.txt": "input seq 4x2; embedding 3",
    "bad-seqpool-mode.txt": "input seq 4x2; seqpool first",
    "bad-conv1d-span-too-long.txt": "input seq 4x2; conv1d 3 2 dilation=2",
    "bad-conv1d-lowered-too-large.txt": "input seq 16777216x1; conv1d 65536 1 pad=8388608",
    "bad-posembed-of-a-vector.txt": "input 6; posembed",
    "bad-attention-heads-not-dividing.txt": "input seq 5x6; attention heads=4",
    "bad-attention-vector-input.txt": "input 6; attention heads=2",
    "bad-attention-scores-too-large.txt": "input seq 46341x2; attention heads=1",
    "bad-lstm-vector-input.txt": "input 4; lstm 4",
    "bad-gru-hidden-zero.txt": "input seq 4x3; gru 0",
    "bad-lstm-last-twice.txt": "input seq 4x3; lstm 4 last bidirectional last",
    "bad-gru-weights-too-large.txt": "input seq 2x16777216; gru 16777216 bidirectional",
    "bad-from-unknown-name.txt": "input 4; dense 4; dense 2 from=nowhere",
    "bad-from-on-the-input.txt": "input 4 from=x",
    "bad-from-twice.txt": "input 4 name=x; dense 4 from=x from=x",
    "bad-from-later-name.txt": "input 4; dense 4 from=b name=b",
    "bad-from-unread-layer.txt": "input 4 name=x; dense 3 tanh; dense 2 from=x",
    "bad-from-shapes-differ.txt": "input 4x4x2 name=x; conv 3 2 name=a; conv 1 2 from=x name=b; add b from=a",
}

# An Adam checkpoint of "input 3; dense 2" (8 parameters).
ADAM_META = [("format", "snn"), ("format_version", "1"), ("spec", "input 3; dense 2"), ("optimiser", "adam"),
             ("optimiser.steps", "2"), ("optimiser.learning_rate", "0.001"), ("optimiser.beta1", "0.9"),
             ("optimiser.beta2", "0.999"), ("optimiser.epsilon", "1e-08"), ("optimiser.weight_decay", "0")]
SMALL_TENSORS = [("layers.1.weight", [2, 3]), ("layers.1.bias", [2])]
MOMENTS = [("optimiser.m", [8]), ("optimiser.v", [8])]


def with_meta(meta, key, value):
    out = [(k, value if k == key else v) for k, v in meta]
    return out if any(k == key for k, _ in meta) else out + [(key, value)]


def raw_file(json_text, data):
    """A file from JSON text written by hand (keys may repeat), padded."""
    text = json_text.encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def tensor_json(tensors):
    """Entries of F32 tensors stored back to back, and the data size."""
    entries, offset = [], 0
    for name, shape in tensors:
        count = 1
        for d in shape:
            count *= d
        entries.append('"%s":{"dtype":"F32","shape":%s,"data_offsets":[%d,%d]}'
                       % (name, json.dumps(shape, separators=(",", ":")), offset, offset + 4 * count))
        offset += 4 * count
    return entries, offset


def file_with(meta, tensors, extra_entries=()):
    """A file whose __metadata__ is the list of pairs `meta` (in order, keys
    may repeat) and whose tensors are zero."""
    entries, size = tensor_json(tensors)
    meta_json = ",".join('"%s":"%s"' % kv for kv in meta)
    return raw_file("{" + ",".join(['"__metadata__":{%s}' % meta_json] + entries + list(extra_entries)) + "}",
                    b"\0" * size)


def bad_models():
    """Crafted model files snn must refuse, by name."""
    small_meta = ADAM_META[:3]
    valid = file_with(small_meta, SMALL_TENSORS)
    files = {
        # The spec's sizes overflow (the file loaded, with 0 inputs).
        "bad-spec-sizes-overflow.safetensors": file_with(
            [("format", "snn"), ("format_version", "1"),
             ("spec", "input 16777216x16777216x65536; maxpool 16777216; flatten; dense 1")],
            [("layers.3.weight", [1, 65536]), ("layers.3.bias", [1])]),
        "bad-spec-sizes-overflow-no-parameters.safetensors": file_with(
            [("format", "snn"), ("format_version", "1"), ("spec", "input 16777216x16777216x65536; maxpool 16777216")],
            []),
        # Header lengths checked before the header is read.
        "bad-header-length-above-limit.safetensors": struct.pack("<Q", 1 << 40) + b"{}      ",
        "bad-header-length-past-end.safetensors": struct.pack("<Q", 99999992) + b"{}      ",
        "bad-header-length-zero.safetensors": struct.pack("<Q", 0) + b"\0" * 32,
        "bad-trailing-bytes.safetensors": valid + b"\0" * 64,
        # What a killed save leaves: a file cut off in its data.
        "bad-save-cut-short.safetensors": valid[:len(valid) - 12],
        # Keys twice, at each level of the header.
        "bad-metadata-key-twice.safetensors": file_with(small_meta + [("spec", "input 3; dense 2")], SMALL_TENSORS),
        "bad-tensor-twice.safetensors": file_with(
            small_meta, SMALL_TENSORS, ['"layers.1.bias":{"dtype":"F32","shape":[2],"data_offsets":[24,32]}']),
        "bad-tensor-field-twice.safetensors": raw_file(
            '{"__metadata__":{"format":"snn","format_version":"1","spec":"input 3; dense 2"},'
            '"layers.1.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},'
            '"layers.1.bias":{"dtype":"F64","dtype":"F32","shape":[2],"data_offsets":[24,32]}}', b"\0" * 32),
        # Optimiser state or settings in a model file.
        "bad-model-with-optimiser-m.safetensors": file_with(small_meta, SMALL_TENSORS + MOMENTS[:1]),
        "bad-model-with-optimiser-v.safetensors": file_with(small_meta, SMALL_TENSORS + MOMENTS[1:]),
        "bad-model-with-optimiser-setting.safetensors": file_with(
            small_meta + [("optimiser.learning_rate", "0.1")], SMALL_TENSORS),
    }
    # Checkpoint settings snn_optimiser_set refuses, and step counts whose
    # t + 1 would overflow.
    for name, key, value in [
            ("steps-int64-max", "optimiser.steps", "9223372036854775807"),
            ("steps-2-53-plus-1", "optimiser.steps", "9007199254740993"),
            ("learning-rate-1e300", "optimiser.learning_rate", "1e300"),
            ("learning-rate-3.5e38", "optimiser.learning_rate", "3.5e38"),
            ("weight-decay-1e300", "optimiser.weight_decay", "1e300"),
            ("epsilon-1e-320", "optimiser.epsilon", "1e-320"),
            ("beta1-1", "optimiser.beta1", "1"),
            ("momentum-in-adam", "optimiser.momentum", "0.9")]:
        files["bad-checkpoint-%s.safetensors" % name] = file_with(with_meta(ADAM_META, key, value),
                                                                  SMALL_TENSORS + MOMENTS)
    files["bad-checkpoint-learning-rate-times-weight-decay.safetensors"] = file_with(
        with_meta(with_meta(ADAM_META, "optimiser.learning_rate", "1e20"), "optimiser.weight_decay", "1e20"),
        SMALL_TENSORS + MOMENTS)
    files["bad-checkpoint-setting-twice.safetensors"] = file_with(
        ADAM_META + [("optimiser.learning_rate", "1e300")], SMALL_TENSORS + MOMENTS)
    return files


def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def onnx_field(number, payload):
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def bad_onnx():
    """Protobuf bytes of ModelProto that read_model must refuse."""
    graph = lambda payload: onnx_field(7, payload)
    tensor = lambda payload: graph(onnx_field(5, payload))
    return {
        "bad-node-length-past-the-end.onnx": graph(b"\x0a\x7f\x00\x00"),
        "bad-truncated-varint.onnx": b"\x08\x80",
        "bad-varint-of-11-bytes.onnx": b"\x08" + b"\x80" * 10 + b"\x00",
        "bad-group-start.onnx": b"\x08\x08\x3b",
        "bad-group-end.onnx": graph(b"\x0c"),
        "bad-wire-type-6.onnx": b"\x0e\x00",
        "bad-wire-type-7.onnx": b"\xff\x01",
        "bad-field-number-0.onnx": b"\x00\x00",
        "bad-truncated-fixed32.onnx": tensor(b"\x25\x00"),
        "bad-truncated-fixed64.onnx": tensor(b"\x51\x00\x00\x00"),
        "bad-packed-floats-not-whole.onnx": tensor(b"\x22\x03\x00\x00\x00"),
        "bad-packed-dims-cut.onnx": tensor(b"\x0a\x01\x80"),
        "bad-packed-floats-claiming-a-billion.onnx": tensor(b"\x22" + varint(4 * 10 ** 9)),
        "bad-length-wrapping-2-64.onnx": b"\x3a" + b"\xff" * 9 + b"\x01",
        "bad-string-as-varint.onnx": b"\x10\x05",
        "bad-negative-dim-value.onnx": graph(onnx_field(11, onnx_field(2, onnx_field(1, onnx_field(
            2, onnx_field(1, b"\x08" + varint(-3))))))),
    }


RUN_BRANCH_DRAWS = {19, 29, 68, 102, 114, 273, 301, 335, 342, 360, 363, 365, 394}


def main():
    rng = random.Random(7)
    # fuzz_sequence builds its model from the bytes: seeds of random bytes.
    seeds = random.Random(11)
    os.makedirs(os.path.join(HERE, "corpus", "sequence"), exist_ok=True)
    for i in range(48):
        with open(os.path.join(HERE, "corpus", "sequence", "seed%02d.bin" % i), "wb") as f:
            f.write(bytes(seeds.randrange(256) for _ in range(160)))
    # fuzz_run: the draws of 200 random bytes (of 400 from seed 5) from which
    # it builds a model with a branch read with from= and joined by add or
    # concat.
    draws = random.Random(5)
    os.makedirs(os.path.join(HERE, "corpus", "run"), exist_ok=True)
    for i in range(400):
        data = bytes(draws.randrange(256) for _ in range(200))
        if i in RUN_BRANCH_DRAWS:
            with open(os.path.join(HERE, "corpus", "run", "branch%03d.bin" % i), "wb") as f:
                f.write(data)
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
    # The largest step count a checkpoint may hold.
    with open(os.path.join(HERE, "corpus", "model", "checkpoint-steps-2-53.safetensors"), "wb") as f:
        f.write(file_with(with_meta(ADAM_META, "optimiser.steps", "9007199254740992"), SMALL_TENSORS + MOMENTS))
    from_rng = random.Random(13)
    for i, (spec, tensors) in enumerate(FROM_MODELS):
        meta = {"format": "snn", "format_version": "1", "spec": spec}
        with open(os.path.join(HERE, "corpus", "model", "from%02d.safetensors" % i), "wb") as f:
            f.write(safetensors(meta, tensors, from_rng))
    for folder in ("corpus", "regressions"):
        for name, spec in BAD_SPECS.items():
            with open(os.path.join(HERE, folder, "spec", name), "w") as f:
                f.write(spec)
        for name, data in bad_models().items():
            with open(os.path.join(HERE, folder, "model", name), "wb") as f:
                f.write(data)
        os.makedirs(os.path.join(HERE, folder, "onnx"), exist_ok=True)
        for name, data in bad_onnx().items():
            with open(os.path.join(HERE, folder, "onnx", name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
