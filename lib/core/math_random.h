// Dropout's counter-based random numbers (core/math.h).
#pragma once

#include <math.h>
#include <stdint.h>

#include "core/math_numeric.h"

namespace snn {

// Dropout's random numbers: a counter-based generator, so element i of a
// pass gets the same number on every backend and with any number of
// threads. key mixes the cache's seed, its pass count and the layer.
SNN_HD uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
SNN_HD uint64_t dropout_key(uint64_t seed, uint64_t pass, uint64_t layer) {
    return mix64(mix64(seed + 0x9E3779B97F4A7C15ull * (pass + 1)) ^ (0xD1B54A32D192ED03ull * (layer + 1)));
}
// 1/(1-p) where element i is kept, 0 where dropped (kept with probability
// 1 - p: a uniform 24-bit number u / 2^24 >= p).
SNN_HD float dropout_scale(uint64_t key, uint64_t i, float p, float keep_scale) {
    const uint32_t u = uint32_t(mix64(key ^ (0x9E3779B97F4A7C15ull * (i + 1))) >> 40);
    return float(u) * (1.0f / 16777216.0f) >= p ? keep_scale : 0.0f;
}

}  // namespace snn
