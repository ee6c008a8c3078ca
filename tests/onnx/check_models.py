"""Checks every .onnx file of the cases tests/onnx/test_export.cpp wrote with
onnx's checker (full_check: the graph, each node against its schema at the
file's opset, and shape inference in strict mode), and that the file is what
snn's export promises: opset 17, IR 8, a graph input "input" whose first
dimension is the symbol "batch", an output "output", every initializer
float32 or int64/int32 in raw_data, and the parameters and state as snn
holds them, bit for bit: each layer's initializers "layers.<i>.*", in the
order they come, are its parameters (then its state: batchnorm's running
statistics), lstm's and gru's W, R and B taken back to PyTorch's gate order.

    python3 check_models.py CASES_DIR

Prints one line per file; exits 1 when any is refused."""
import json
import os
import sys

import onnx
from onnx import TensorProto

STATE = ("running_mean", "running_var")


def pytorch_order(w, r, b):
    """PyTorch's weight_ih, weight_hh, bias_ih, bias_hh of each direction, as
    bytes, from ONNX's W [dirs][G H][F], R [dirs][G H][H], B [dirs][2 G H]."""
    dirs, gh, f = w.dims
    h = r.dims[2]
    g = gh // h
    # ONNX row block k holds PyTorch's block order[k]: lstm i o f c <- i f g o,
    # gru z r h <- r z n.
    order = [0, 3, 1, 2] if g == 4 else [1, 0, 2]
    back = [order.index(k) for k in range(g)]

    def blocks(raw, rows_per_dir, cols, d):
        size = 4 * h * cols
        base = d * rows_per_dir * cols * 4
        return b"".join(raw[base + k * size: base + (k + 1) * size] for k in back)

    out = b""
    for d in range(dirs):
        out += blocks(w.raw_data, gh, f, d) + blocks(r.raw_data, gh, h, d)
        if b is not None:
            out += blocks(b.raw_data, 2 * gh, 1, d)
            out += blocks(b.raw_data[4 * gh:], 2 * gh, 1, d)
    return out


def value_problems(model, case_dir, layers):
    """The initializers against params.bin and state.bin."""
    params = open(os.path.join(case_dir, "params.bin"), "rb").read()
    state = open(os.path.join(case_dir, "state.bin"), "rb").read()
    by_layer = {}
    for t in model.graph.initializer:
        parts = t.name.split(".", 2)
        if parts[0] == "layers":
            by_layer.setdefault(int(parts[1]), []).append((parts[2], t))
    out = []
    for i, (p_off, p_count, s_off, s_count) in enumerate(layers):
        tensors = by_layer.pop(i, [])
        names = dict(tensors)
        if "W" in names:
            got_p, got_s = pytorch_order(names["W"], names["R"], names.get("B")), b""
        else:
            got_p = b"".join(t.raw_data for n, t in tensors if n not in STATE)
            got_s = b"".join(t.raw_data for n, t in tensors if n in STATE)
        if got_p != params[4 * p_off: 4 * (p_off + p_count)]:
            out.append("layer %d: the initializers %s are not its %d parameters" % (i, [n for n, _ in tensors], p_count))
        # batchnorm's num_batches_tracked, the last of its state, is not written.
        want_s = state[4 * s_off: 4 * (s_off + s_count)]
        if got_s != want_s[: len(got_s)] or len(want_s) - len(got_s) not in (0, 4 if s_count else 0):
            out.append("layer %d: the initializers are not its state" % i)
    if by_layer:
        out.append("initializers of layers that do not exist: %s" % sorted(by_layer))
    return out


def problems_of(path, layers):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    out = []
    opsets = {o.domain: o.version for o in model.opset_import}
    if opsets.get("", opsets.get("ai.onnx")) != 17:
        out.append("opset %s, not 17" % opsets)
    if model.ir_version != 8:
        out.append("IR version %d, not 8" % model.ir_version)
    inputs = [i.name for i in model.graph.input]
    if inputs[:1] != ["input"] or not set(inputs) <= {"input", "lengths"}:
        out.append("graph inputs %s" % inputs)
    else:
        dims = model.graph.input[0].type.tensor_type.shape.dim
        if not dims or dims[0].dim_param != "batch":
            out.append("the input's first dimension is not the symbol 'batch'")
    if [o.name for o in model.graph.output] != ["output"]:
        out.append("graph outputs %s" % [o.name for o in model.graph.output])
    for t in model.graph.initializer:
        if t.data_type not in (TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32) or not t.raw_data:
            out.append("initializer %s: type %d%s" % (t.name, t.data_type, "" if t.raw_data else ", no raw_data"))
    if layers is not None:
        out += value_problems(model, os.path.dirname(path), layers)
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_models.py CASES_DIR")
    failed = checked = 0
    index = os.path.join(sys.argv[1], "cases.json")
    layers_of = {}
    if os.path.exists(index):
        layers_of = {c["name"]: c["layers"] for c in json.load(open(index))}
    for root, _, names in sorted(os.walk(sys.argv[1])):
        for name in sorted(names):
            if not name.endswith(".onnx"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, sys.argv[1])
            checked += 1
            try:
                problems = problems_of(path, layers_of.get(os.path.basename(root)))
            except Exception as e:  # the checker's own exceptions
                problems = ["%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else "")]
            if problems:
                failed += 1
                print("FAIL %s: %s" % (rel, "; ".join(problems)))
            else:
                print("ok   %s" % rel)
    print("%d files checked by onnx %s's checker, %d refused" % (checked, onnx.__version__, failed))
    sys.exit(1 if failed or checked == 0 else 0)


if __name__ == "__main__":
    main()
