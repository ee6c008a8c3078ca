#!/usr/bin/env python3
"""Exports snn_bench's inference cases to ONNX, for bench/ort_bench.cpp.

    bench/export_onnx.py OUT_DIR [CASE ...]

Writes OUT_DIR/CASE.onnx for each case (default: every inference case that
bench/precision_compare.sh times against ONNX Runtime): the PyTorch twin of
the case's network (bench/torch2_cpu.py's make_net, from torch.manual_seed(0)
as there) in evaluation mode, with the case's batch fixed in the graph,
input "x" and output "y". Needs PyTorch 2.x with torch.onnx (the TorchScript
exporter, opset 17).
"""

import os
import sys

import torch

from torch2_cpu import CASES, INPUT_SHAPE, make_net

ORT_CASES = ["default_cnn_inference_1", "default_cnn_inference_64", "cnn_inference_1",
             "cnn_inference_1000", "seed_forward_1", "mlp_inference_1"]


def export(name, path):
    net_name, batch, loss = CASES[name]
    if loss is not None:
        sys.exit("%s is a training case: only forward passes are exported" % name)
    torch.manual_seed(0)
    net = make_net(net_name).eval()
    x = torch.zeros((batch,) + INPUT_SHAPE[net_name])
    torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["y"], opset_version=17,
                      dynamo=False)


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__.split("\n\n")[1])
    out = sys.argv[1]
    names = sys.argv[2:] or ORT_CASES
    unknown = [n for n in names if n not in CASES]
    if unknown:
        sys.exit("unknown cases: %s (cases: %s)" % (" ".join(unknown), " ".join(CASES)))
    os.makedirs(out, exist_ok=True)
    for name in names:
        export(name, os.path.join(out, name + ".onnx"))
        print(os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    main()
