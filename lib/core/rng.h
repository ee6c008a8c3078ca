// The random numbers of parameter initialisation (model/init.cpp and the
// descriptors' init hooks): integer operations and exactly rounded double
// arithmetic only, so a seed gives bit-identical parameters everywhere.
#pragma once

#include <stdint.h>

#include <cmath>

namespace snn {

inline uint64_t splitmix64(uint64_t &state) {
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

// The seed of node `index`'s own stream, so a node's values do not depend on
// the nodes before it.
inline uint64_t layer_seed(uint64_t seed, uint64_t index) { return seed ^ (0xD1B54A32D192ED03ull * (index + 1)); }

// Natural logarithm of x > 0 from exactly rounded operations:
// x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m-1)/(m+1)).
inline double portable_log(double x) {
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
inline double normal(Rng &rng) {
    for (;;) {
        double u = 2.0 * rng.uniform() - 1.0;
        double v = 2.0 * rng.uniform() - 1.0;
        double s = u * u + v * v;
        if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * portable_log(s) / s);
    }
}

}  // namespace snn
