// Fuzz target: the model spec parser, through snn_model_create, on arbitrary
// bytes. Properties checked besides "never crashes": no SNN_ERR_INTERNAL, and
// a spec that parses prints a canonical spec that parses back to the same
// canonical spec.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <string>

#include "snn.h"

// Every model the parser accepts is created, which draws its initial
// parameters: under the sanitizers about 120 ns a value, 4 draws per input
// (the spec, its canonical spec, each again when libFuzzer looks for a
// leak). An embedding of 6 x 9292682 parameters (223 MB) took 27 s and ended
// a run at libFuzzer's 10 s limit. A parser has no need of large models:
// above 32 MiB (8 million parameters, under 4 s) creating fails. (libFuzzer
// itself needs more than 16 MiB at once.)
#define FUZZ_MAX_ALLOCATION_MB "32"
#include "fuzz_options.h"
#include "fuzz_target.h"

namespace {

std::string describe(const snn_model *m) {
    size_t len = 0;
    snn_model_describe(m, nullptr, 0, &len);
    std::string s(len + 1, '\0');
    if (snn_model_describe(m, &s[0], s.size(), &len) != SNN_OK) abort();
    s.resize(len);
    return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string spec(reinterpret_cast<const char *>(data), size);  // NUL-terminated copy
    snn_model *m = nullptr;
    fuzz_last_status = fuzz_check(snn_model_create(spec.c_str(), &m));
    if (fuzz_last_status != SNN_OK) return 0;
    const std::string canonical = describe(m);
    snn_model *again = nullptr;
    if (snn_model_create(canonical.c_str(), &again) != SNN_OK) abort();
    if (describe(again) != canonical) abort();
    snn_model_destroy(again);
    snn_model_destroy(m);
    return 0;
}
