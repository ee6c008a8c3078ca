"""Checks every .onnx file of the cases tests/onnx/test_export.cpp wrote with
onnx's checker (full_check: the graph, each node against its schema at the
file's opset, and shape inference in strict mode), and that the file is what
snn's export promises: opset 17, IR 8, a graph input "input" whose first
dimension is the symbol "batch", an output "output", and every initializer
float32 or int64/int32 in raw_data.

    python3 check_models.py CASES_DIR

Prints one line per file; exits 1 when any is refused."""
import os
import sys

import onnx
from onnx import TensorProto


def problems_of(path):
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
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_models.py CASES_DIR")
    failed = checked = 0
    for root, _, names in sorted(os.walk(sys.argv[1])):
        for name in sorted(names):
            if not name.endswith(".onnx"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, sys.argv[1])
            checked += 1
            try:
                problems = problems_of(path)
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
