// Fuzz target: ONNX files. The wire layer (onnx::read_model, linked from the
// static library) on arbitrary bytes, then the import as a whole through the
// C API (snn_model_import_onnx_from_buffer). Properties checked besides
// "never crashes": read_model throws nothing but snn's errors, and never
// SNN_ERR_INTERNAL; what it reads, written and read again, writes the same
// bytes; the values of every initializer convert or are refused; the import
// returns no SNN_ERR_INTERNAL, and a model it returns saves.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "onnx/proto.h"
#include "snn.h"

#include "fuzz_options.h"
#include "fuzz_target.h"

namespace {

using snn::onnx::Model;

Model read(const std::string &bytes) {
    return snn::onnx::read_model(reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size());
}

// Every tensor's values as floats and int64s: refused with snn's errors or
// as many as its dims declare.
void convert(const snn::onnx::Tensor &t) {
    for (int as_floats = 0; as_floats < 2; ++as_floats) {
        try {
            const size_t n = as_floats ? t.to_floats().size() : t.to_int64s().size();
            if (int64_t(n) != t.element_count()) {
                fprintf(stderr, "tensor '%s' converted to %zu values, dims declare %lld\n", t.name.c_str(), n,
                        (long long)t.element_count());
                abort();
            }
        } catch (const snn::Error &e) {
            fuzz_check(e.status());
        }
    }
}

// What read_model made of the input, written, read and written again.
void round_trip(const Model &m) {
    std::string once;
    try {
        once = snn::onnx::write_model(m);
    } catch (const snn::Error &e) {
        fuzz_check(e.status());  // a graph attribute, an attribute of no type snn writes
        return;
    }
    std::string twice;
    try {
        twice = snn::onnx::write_model(read(once));
    } catch (const snn::Error &e) {
        fprintf(stderr, "write_model's own bytes: %s\n", e.what());
        abort();
    }
    if (twice != once) {
        fprintf(stderr, "written, read and written again: %zu bytes, then %zu\n", once.size(), twice.size());
        abort();
    }
}

void import(const uint8_t *data, size_t size, const snn_onnx_import_options *options) {
    snn_model *m = nullptr;
    if (fuzz_check(snn_model_import_onnx_from_buffer(data, size, options, &m)) != SNN_OK) return;
    size_t bytes = 0;
    if (snn_model_save_to_buffer(m, nullptr, 0, &bytes) != SNN_OK) abort();
    snn_model_destroy(m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const uint8_t empty = 0;
    if (size == 0) data = &empty;
    Model m;
    fuzz_last_status = SNN_OK;
    try {
        m = snn::onnx::read_model(data, size);
    } catch (const snn::Error &e) {
        fuzz_last_status = fuzz_check(e.status());
    }
    if (fuzz_last_status == SNN_OK) {
        for (const auto &t : m.graph.initializer) convert(t);
        for (const auto &n : m.graph.node)
            for (const auto &a : n.attribute)
                for (const auto &t : a.t) convert(t);
        round_trip(m);
    }
    import(data, size, nullptr);
    snn_onnx_import_options options = {};
    options.size = sizeof options;
    options.sequence_length = 4;
    options.batch = 2;
    import(data, size, &options);
    return 0;
}
