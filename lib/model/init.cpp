// Deterministic parameter initialisation. Only integer operations and IEEE
// double +, -, *, /, sqrt (all exactly rounded; the engine is compiled
// without FMA contraction), so the same seed gives bit-identical parameters
// with every compiler and on every platform.
#include <cmath>

#include "model/spec.h"
#include "ops/op.h"

namespace snn {
namespace {

uint64_t splitmix64(uint64_t &state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// xoshiro256** by Blackman and Vigna.
class Rng {
public:
    explicit Rng(uint64_t seed) {
        for (auto &w : s_) w = splitmix64(seed);
    }
    uint64_t next() {
        uint64_t result = rotl(s_[1] * 5, 7) * 9;
        uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }
    // Uniform in [0, 1) with 53 random bits.
    double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

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
            if (op_desc(l.kind).init) op_desc(l.kind).init(l, params + l.weight_offset, nullptr);
            continue;
        }
        double receptive = double(l.kh * l.kw);
        double fan_in = double(l.in.c) * (l.kind == OpKind::conv ? receptive : double(l.in.h * l.in.w));
        double fan_out = double(l.units) * (l.kind == OpKind::conv ? receptive : 1.0);
        // Each layer has its own stream, so a layer's values do not depend on
        // the layers before it.
        Rng rng(seed ^ (0xD1B54A32D192ED03ull * (uint64_t(i) + 1)));
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
        op_desc(l.kind).init(l, nullptr, state + l.state_offset);
    }
}

}  // namespace snn
