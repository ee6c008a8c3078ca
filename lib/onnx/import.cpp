// Placeholder until import lands on this branch.
#include "common/error.h"
#include "onnx/onnx.h"
namespace snn { namespace onnx {
Imported import_model(const unsigned char *, size_t, const ImportOptions &) {
    fail(SNN_ERR_UNSUPPORTED, "ONNX import is not written yet");
}
}}
