// Deterministic parameter initialisation. Only integer operations and IEEE
// double +, -, *, /, sqrt (all exactly rounded; the engine is compiled
// without FMA contraction), so the same seed gives bit-identical parameters
// with every compiler and on every platform.
#include <cmath>

#include "model/rng.h"
#include "model/spec.h"
#include "ops/op.h"

namespace snn {
namespace {

// Natural logarithm of x > 0 from exactly rounded operations:
// x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m-1)/(m+1)).
double portable_log(double x) {
    int e = 0;
    double m = std::frexp(x, &e);  // exact
    if (m < 0.70710678118654752440) {
        m *= 2.0;
        e -= 1;
    }
    double t = (m - 1.0) / (m + 1.0);
    double t2 = t * t;
    double term = t, sum = 0.0;
    for (int k = 1; k <= 41; k += 2) {
        sum += term / k;
        term *= t2;
    }
    return 2.0 * sum + e * 0.69314718055994530942;
}

// Standard normal by Marsaglia's polar method.
double normal(Rng &rng) {
    for (;;) {
        double u = 2.0 * rng.uniform() - 1.0;
        double v = 2.0 * rng.uniform() - 1.0;
        double s = u * u + v * v;
        if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * portable_log(s) / s);
    }
}

}  // namespace

void init_parameters(const Network &net, uint64_t seed, float *params) {
    for (size_t i = 1; i < net.layers.size(); ++i) {
        const Layer &l = net.layers[i];
        if (l.kind != OpKind::dense && l.kind != OpKind::conv) {
            if (op_desc(l.kind).init) op_desc(l.kind).init(l, layer_seed(seed, i), params + l.weight_offset, nullptr);
            continue;
        }
        double receptive = double(l.kh * l.kw);
        double fan_in = double(l.in.c) * (l.kind == OpKind::conv ? receptive : double(l.in.h * l.in.w));
        double fan_out = double(l.units) * (l.kind == OpKind::conv ? receptive : 1.0);
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
