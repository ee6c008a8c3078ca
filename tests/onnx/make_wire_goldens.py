#!/usr/bin/env python3
"""Writes the ONNX files that tests/onnx/test_proto.cpp reads back (wire/)
and copies them into the fuzzers' seed corpus (tests/fuzz/corpus/onnx/).
Needs the onnx Python package (python3-onnx); the files are committed, so
only a change of them needs it.

Besides what onnx.helper writes (onnx's Python classes are proto2: dims and
an attribute's ints and floats go out unpacked, the *_data fields packed),
packed.onnx is encoded here field by field, the other way round (packed dims,
ints and floats, unpacked *_data), and onnx.load_from_string must read it to
the same values before it is written.

test_proto.cpp holds the values below as its expectations: change both.
Run from anywhere:  python3 tests/onnx/make_wire_goldens.py
"""
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
WIRE = os.path.join(HERE, "wire")
CORPUS = os.path.join(HERE, "..", "fuzz", "corpus", "onnx")


def tiny():
    """The model whose bytes test_proto.cpp spells out by hand."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [2], struct.pack("<2f", 1.0, -2.0), raw=True)
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[w])
    model = helper.make_model(graph, producer_name="snn", opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def values():
    """Initializers of every type snn reads, in raw_data and in the typed fields."""
    t = helper.make_tensor
    inits = [
        t("scalar_f", TensorProto.FLOAT, [], [3.5]),
        t("scalar_i64", TensorProto.INT64, [], [-7]),
        t("scalar_raw", TensorProto.FLOAT, [], struct.pack("<f", -0.75), raw=True),
        t("f_raw", TensorProto.FLOAT, [2, 3], struct.pack("<6f", 0, 1, 2, 3, 4, -5), raw=True),
        t("f_data", TensorProto.FLOAT, [3], [0.5, -1.25, 1e30]),
        t("i32", TensorProto.INT32, [4], [0, -1, 2147483647, -2147483648]),
        t("i64", TensorProto.INT64, [3], [-1, 2 ** 40, -2 ** 63]),
        t("i64_raw", TensorProto.INT64, [2], struct.pack("<2q", 2 ** 62, -5), raw=True),
        t("i8", TensorProto.INT8, [3], [-128, 0, 127]),
        t("u8_raw", TensorProto.UINT8, [3], bytes([0, 128, 255]), raw=True),
        t("bool", TensorProto.BOOL, [2], [True, False]),
        # 1, -2.5, the largest half, the smallest subnormal half (2^-24).
        t("f16", TensorProto.FLOAT16, [4], np.array([1.0, -2.5, 65504.0, 2.0 ** -24], dtype=np.float16)),
        t("f16_raw", TensorProto.FLOAT16, [2], np.array([0.5, -65504.0], dtype=np.float16).tobytes(), raw=True),
        t("bf16", TensorProto.BFLOAT16, [2], [1.5, -3.0]),
        t("f64", TensorProto.DOUBLE, [2], [0.1, -1e300]),
        t("empty", TensorProto.FLOAT, [2, 0], []),
    ]
    graph = helper.make_graph([], "values",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, None])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, [])],
                              initializer=inits,
                              value_info=[helper.make_tensor_value_info("v", TensorProto.DOUBLE, [7])])
    model = helper.make_model(graph, producer_name="snn wire goldens", producer_version="1.0",
                              doc_string="every initializer type", opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    return model


def attributes():
    """One attribute of every type, a subgraph (If) and a second domain."""
    sub = helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], "sub",
                            [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
                            [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    t1 = helper.make_tensor("t1", TensorProto.FLOAT, [2], [1.0, 2.0])
    t2 = helper.make_tensor("t2", TensorProto.INT64, [1], [9])
    custom = helper.make_node(
        "Custom", ["x", ""], ["y"], name="all", domain="snn.test",
        f=0.25, i=-3, s=b"hello", t=t1, g=sub, floats=[1.0, -0.5], ints=[-1, 0, 2 ** 40],
        strings=[b"a", b"", b"c"], tensors=[t1, t2], graphs=[sub, sub])
    branch = helper.make_node("If", ["cond"], ["z"], name="if", then_branch=sub, else_branch=sub)
    graph = helper.make_graph([custom, branch], "attributes",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]),
                               helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("snn.test", 1)])
    model.ir_version = 8
    return model


def bare(name, dims):
    t = TensorProto()
    t.name, t.data_type = name, TensorProto.FLOAT
    t.dims.extend(dims)
    return t


def external():
    """External data (data_location and external_data entries) and a sparse initializer."""
    a = bare("a", [4])
    a.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", "16")):
        entry = a.external_data.add()
        entry.key, entry.value = key, value
    b = bare("b", [2])
    entry = b.external_data.add()
    entry.key, entry.value = "location", "other.bin"
    c = bare("c", [1])
    c.data_location = TensorProto.EXTERNAL
    d = helper.make_tensor("d", TensorProto.FLOAT, [1], [2.0])
    sparse = helper.make_sparse_tensor(helper.make_tensor("s", TensorProto.FLOAT, [1], [5.0]),
                                       helper.make_tensor("s_i", TensorProto.INT64, [1], [3]), [10])
    graph = helper.make_graph([], "external", [], [], initializer=[a, b, c, d], sparse_initializer=[sparse])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


# A protobuf encoder for packed.onnx.
def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def key(field, wire):
    return varint(field << 3 | wire)


def length(field, payload):
    return key(field, 2) + varint(len(payload)) + payload


def packed(field, items):
    return length(field, b"".join(varint(v) for v in items))


def packed_floats(field, items):
    return length(field, struct.pack("<%df" % len(items), *items))


def packed_model():
    """The other packing: packed dims, ints and floats; unpacked int64_data,
    int32_data, float_data and double_data; an unknown field of each wire
    type (0, 1, 2, 5) in the tensor, the node and the model."""
    unknown = key(100, 0) + varint(5) + key(101, 1) + b"\1" * 8 + length(102, b"skip") + key(103, 5) + b"\2" * 4
    t_i64 = (packed(1, [3]) + key(2, 0) + varint(7) + b"".join(key(7, 0) + varint(v) for v in (-2, 0, 2 ** 50))
             + length(8, b"i64") + unknown)
    t_i32 = packed(1, [2]) + key(2, 0) + varint(6) + b"".join(key(5, 0) + varint(v) for v in (-9, 300)) + length(8, b"i32")
    t_f = (packed(1, [1, 2]) + key(2, 0) + varint(1) + b"".join(key(4, 5) + struct.pack("<f", v) for v in (1.5, -2.0))
           + length(8, b"f"))
    t_d = packed(1, [1]) + key(2, 0) + varint(11) + key(10, 1) + struct.pack("<d", 0.125) + length(8, b"d")
    attr_ints = length(1, b"perm") + packed(8, [0, 2, -1]) + key(20, 0) + varint(7)
    attr_floats = length(1, b"scales") + packed_floats(7, [0.5, 4.0]) + key(20, 0) + varint(6)
    node = (length(1, b"x") + length(2, b"y") + length(4, b"Transpose") + length(5, attr_ints)
            + length(5, attr_floats) + unknown)
    graph = (length(1, node) + length(2, b"packed") + length(5, t_i64) + length(5, t_i32) + length(5, t_f)
             + length(5, t_d))
    opset = key(2, 0) + varint(17)
    return key(1, 0) + varint(8) + length(7, graph) + length(8, opset) + unknown


def check_packed(data):
    m = onnx.load_from_string(data)
    inits = {t.name: t for t in m.graph.initializer}
    assert list(inits["i64"].int64_data) == [-2, 0, 2 ** 50] and list(inits["i64"].dims) == [3]
    assert list(inits["i32"].int32_data) == [-9, 300]
    assert list(inits["f"].float_data) == [1.5, -2.0] and list(inits["f"].dims) == [1, 2]
    assert list(inits["d"].double_data) == [0.125]
    attrs = {a.name: a for a in m.graph.node[0].attribute}
    assert list(attrs["perm"].ints) == [0, 2, -1] and list(attrs["scales"].floats) == [0.5, 4.0]
    assert m.ir_version == 8 and m.opset_import[0].version == 17


def main():
    files = {
        "tiny.onnx": tiny().SerializeToString(),
        "values.onnx": values().SerializeToString(),
        "attributes.onnx": attributes().SerializeToString(),
        "external.onnx": external().SerializeToString(),
        "packed.onnx": packed_model(),
    }
    check_packed(files["packed.onnx"])
    for folder in (WIRE, CORPUS):
        os.makedirs(folder, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
