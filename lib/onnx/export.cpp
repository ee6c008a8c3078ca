// Placeholder until export lands on this branch.
#include "common/error.h"
#include "onnx/onnx.h"
namespace snn { namespace onnx {
std::string export_model(const Network &, const float *, const float *, const ExportOptions &) {
    fail(SNN_ERR_UNSUPPORTED, "ONNX export is not written yet");
}
}}
