// Fuzz target: the model file loader, snn_model_load_from_buffer, on
// arbitrary bytes. Property checked besides "never crashes": a buffer that
// loads saves and loads again to bit-identical parameters.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "snn.h"

#include "fuzz_options.h"

namespace {

std::vector<float> params_of(const snn_model *m) {
    size_t n = 0;
    snn_parameter_count(m, &n);
    std::vector<float> p(n);
    if (n != 0 && snn_get_parameters(m, p.data(), n) != SNN_OK) abort();
    return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    snn_model *m = nullptr;
    if (snn_model_load_from_buffer(data, size, &m) != SNN_OK) return 0;
    size_t bytes = 0;
    if (snn_model_save_to_buffer(m, nullptr, 0, &bytes) != SNN_OK) abort();
    std::vector<unsigned char> saved(bytes);
    if (snn_model_save_to_buffer(m, saved.data(), saved.size(), &bytes) != SNN_OK) abort();
    snn_model *again = nullptr;
    if (snn_model_load_from_buffer(saved.data(), saved.size(), &again) != SNN_OK) abort();
    const std::vector<float> a = params_of(m), b = params_of(again);
    if (a.size() != b.size() || (!a.empty() && memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0))
        abort();
    snn_model_destroy(again);
    snn_model_destroy(m);
    return 0;
}
