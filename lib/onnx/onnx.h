// ONNX export and import for snn's networks (the file format every peer
// speaks: ONNX Runtime, TensorRT, PyTorch's exporter). Built on proto.h,
// below the engine: export takes a network and host copies of its
// parameters and state; import gives back a spec and the values, which the
// API turns into a model.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "ops/spec.h"

namespace snn {
namespace onnx {

// The opset and IR version export writes: opset 17, IR 8 (ONNX Runtime,
// TensorRT 8.6+ and onnx 1.12+ all take them).
constexpr int64_t kExportOpset = 17;
constexpr int64_t kExportIrVersion = 8;

struct ExportOptions {
    // For a model with a sequence input: add a second graph input "lengths"
    // (int32 [batch]) feeding the recurrent layers' sequence_lens and
    // attention's key mask, as snn_set_lengths does.
    bool lengths = false;
};

// The ONNX file of `net` with parameters `params` [param_count] and state
// `state` [state_count] (host memory): graph input "input" with a symbolic
// batch dimension "batch", output "output". Throws SNN_ERR_UNSUPPORTED for
// a network ONNX cannot express (the message says which layer and why).
std::string export_model(const Network &net, const float *params, const float *state,
                         const ExportOptions &options);

struct ImportOptions {
    // The number of steps of a sequence input whose length the file leaves
    // symbolic; 0 when not given (then such a file is refused).
    int64_t sequence_length = 0;
    // The batch a file with a symbolic batch is read at; 0: any (the
    // batch is not part of snn's spec). Used only to resolve shape
    // subgraphs that read the batch.
    int64_t batch = 0;
};

struct Imported {
    std::string spec;             // snn's canonical spec of the model
    std::vector<float> params;    // [param_count of parse_spec(spec)]
    std::vector<float> state;     // [state_count]
};

// Maps an ONNX model onto snn's ops. Throws SNN_ERR_FILE_FORMAT for a
// broken file (from read_model, or a graph that references names nothing
// defines) and SNN_ERR_UNSUPPORTED for a valid file snn cannot represent;
// that message lists every node that cannot be mapped, one per line as
// "<op_type> '<node name>': <why>", not only the first.
Imported import_model(const unsigned char *bytes, size_t size, const ImportOptions &options);

}  // namespace onnx
}  // namespace snn
