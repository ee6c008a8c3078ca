#!/usr/bin/env python3
"""onnx's checker, with strict shape inference, on a model write_model wrote
(write_sample.cpp), and the values it holds as onnx reads them.
    check_written.py MODEL.onnx
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main(path):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    g = model.graph
    assert model.ir_version == 8 and model.opset_import[0].version == 17, model.opset_import
    assert [n.op_type for n in g.node] == ["Gemm", "Relu", "Constant", "Reshape", "Transpose", "Softmax"]
    w = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    assert w["W"].shape == (3, 4) and np.array_equal(w["W"].ravel(), 0.25 * (np.arange(12) - 6)), w["W"]
    assert np.array_equal(w["B"], np.array([0.5, -0.5, 0.0], dtype=np.float32)), w["B"]
    assert g.initializer[0].raw_data and not g.initializer[0].float_data
    attrs = {(n.name, a.name): onnx.helper.get_attribute_value(a) for n in g.node for a in n.attribute}
    assert attrs[("gemm", "transB")] == 1 and attrs[("gemm", "alpha")] == 1.0
    assert list(attrs[("transpose", "perm")]) == [0, 2, 1]
    assert list(numpy_helper.to_array(attrs[("shape", "value")])) == [-1, 3, 1]
    assert attrs[("softmax", "axis")] == -1
    dims = g.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and dims[1].dim_value == 4
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    print("onnx %s accepts the model: %d nodes, %d value infos after inference"
          % (onnx.__version__, len(g.node), len(inferred.graph.value_info)))


if __name__ == "__main__":
    main(sys.argv[1])
