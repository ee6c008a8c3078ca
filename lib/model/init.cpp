// Deterministic parameter initialisation. Only integer operations and IEEE
// double +, -, *, /, sqrt (all exactly rounded; the engine is compiled
// without FMA contraction), so the same seed gives bit-identical parameters
// with every compiler and on every platform.
#include <cmath>

#include "core/rng.h"
#include "ops/spec.h"
#include "ops/op.h"

namespace snn {

void init_parameters(const Network &net, uint64_t seed, float *params) {
    for (size_t i = 1; i < net.layers.size(); ++i) {
        const Layer &l = net.layers[i];
        // conv1d keeps its kernel size in kh (kw = 1), as conv's fans; dense
        // reads each step of a sequence, so its fan in is a step's features.
        const bool windowed = l.kind == OpKind::conv || l.kind == OpKind::conv1d;
        if (l.kind != OpKind::dense && !windowed) {
            if (op_desc(l.kind).init) op_desc(l.kind).init(l, layer_seed(seed, i), params + l.weight_offset, nullptr);
            continue;
        }
        double receptive = double(l.kh * l.kw);
        double fan_in = windowed ? double(l.in.c) * receptive : double(l.in.row_size());
        double fan_out = double(l.units) * (windowed ? receptive : 1.0);
        Rng rng(layer_seed(seed, i));
        float *w = params + l.weight_offset;
        double limit = 0.0, stddev = 0.0;
        bool uniform = true;
        switch (l.init) {
            case Init::glorot_uniform: limit = std::sqrt(6.0 / (fan_in + fan_out)); break;
            case Init::he_uniform: limit = std::sqrt(6.0 / fan_in); break;
            case Init::glorot_normal: uniform = false; stddev = std::sqrt(2.0 / (fan_in + fan_out)); break;
            case Init::he_normal: uniform = false; stddev = std::sqrt(2.0 / fan_in); break;
            case Init::lecun_normal: uniform = false; stddev = std::sqrt(1.0 / fan_in); break;
            case Init::zeros: break;
        }
        for (size_t k = 0; k < l.weight_count; ++k) {
            double value = 0.0;
            if (l.init != Init::zeros)
                value = uniform ? limit * (2.0 * rng.uniform() - 1.0) : stddev * normal(rng);
            w[k] = float(value);
        }
        for (size_t k = 0; k < l.bias_count; ++k) params[l.bias_offset + k] = 0.0f;
    }
}

void init_state(const Network &net, float *state) {
    for (const Layer &l : net.layers) {
        if (l.state_count == 0) continue;
        op_desc(l.kind).init(l, 0, nullptr, state + l.state_offset);
    }
}

}  // namespace snn
