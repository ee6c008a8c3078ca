// What the targets that build models from the bytes (fuzz_run, fuzz_sequence)
// share: the reader of the choices, the activations they pick from, the
// calls that must succeed, and a model saved and loaded back.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "snn.h"

// The fuzz input, read a choice at a time; past its end every choice is 0.
struct Bytes {
    const uint8_t *p;
    size_t n;
    unsigned pick(unsigned range) {
        if (n == 0) return 0;
        --n;
        return unsigned(*p++) % range;
    }
    int64_t in(int64_t lo, int64_t hi) { return lo + int64_t(pick(unsigned(hi - lo + 1))); }
};

inline const char *const kActs[] = {"identity", "relu", "leaky_relu", "tanh", "sigmoid", "gelu", "silu"};

// A call that must succeed on a model that parsed: a failure is a finding.
inline void must(snn_status status, const char *call) {
    if (status != SNN_OK) {
        fprintf(stderr, "%s failed: %s\n", call, snn_last_error());
        abort();
    }
}

// The first count outputs of the last forward pass.
inline std::vector<float> outputs(snn_forward_cache *f, size_t count) {
    std::vector<float> y(count);
    must(snn_get_outputs(f, y.data(), count), "snn_get_outputs");
    return y;
}

// m saved to a buffer and loaded from it: a new model.
inline snn_model *save_and_load(snn_model *m) {
    size_t bytes = 0;
    must(snn_model_save_to_buffer(m, nullptr, 0, &bytes), "snn_model_save_to_buffer");
    std::vector<unsigned char> file(bytes);
    must(snn_model_save_to_buffer(m, file.data(), file.size(), &bytes), "snn_model_save_to_buffer");
    snn_model *loaded = nullptr;
    must(snn_model_load_from_buffer(file.data(), file.size(), &loaded), "snn_model_load_from_buffer");
    return loaded;
}
