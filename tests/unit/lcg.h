// The random operands of the product and rewrite tests: a linear
// congruential generator whose state starts at the seed, floats in [-1, 1),
// the same on every platform.
#pragma once

#include <stdint.h>

namespace snn_test {

struct Lcg {
    uint64_t s;
    float next() {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return float(double(s >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
    }
};

}  // namespace snn_test
