// Transfers between a caller's buffers and models or caches (see transfers.h).
#include "engine/transfers.h"

#include <cmath>

#include "common/error.h"

namespace snn {

std::string state_problem(const Network &net, const float *state, const char *what) {
    constexpr float kMaxCount = 16777216.0f;  // 2^24: floats count exactly up to here
    for (size_t i = 1; i < net.layers.size(); ++i)
        for (const TensorSlot &t : net.layers[i].tensors) {
            if (!t.state || !t.int64) continue;
            for (size_t k = t.offset; k < t.offset + t.count; ++k) {
                const float v = state[k];
                if (v >= 0.0f && v <= kMaxCount && v == std::floor(v) && !std::signbit(v)) continue;
                return format("%s[%zu] (layer %zu's %s) is %.9g; a count must be a whole number in "
                              "[0, 16777216] (2^24), and +0 rather than -0",
                              what, k, i, t.suffix.c_str(), double(v));
            }
        }
    return {};
}

}  // namespace snn
