// Activation loops for the CPU backend, with the choice of activation taken
// outside the loop so each loop vectorises.
#pragma once

#include <stdint.h>

#include "engine/math.h"

namespace snn {

// dst[i] = act(src[i] + bias)   (dst may equal src)
inline void activate_span(Act a, const float *src, float bias, float *dst, int64_t n) {
    switch (a) {
        case Act::identity:
            for (int64_t i = 0; i < n; ++i) dst[i] = src[i] + bias;
            break;
        case Act::relu:
            for (int64_t i = 0; i < n; ++i) {
                float z = src[i] + bias;
                dst[i] = z > 0.0f ? z : 0.0f;
            }
            break;
        case Act::leaky_relu:
            for (int64_t i = 0; i < n; ++i) dst[i] = activate(Act::leaky_relu, src[i] + bias);
            break;
        case Act::tanh:
            for (int64_t i = 0; i < n; ++i) dst[i] = tanh_approx(src[i] + bias);
            break;
        case Act::sigmoid:
            for (int64_t i = 0; i < n; ++i) dst[i] = sigmoid_approx(src[i] + bias);
            break;
    }
}

// y[i] = act(y[i] + b[i]) over one row (dense layers: a bias per column)
inline void activate_row(Act a, float *__restrict y, const float *__restrict b, int64_t n) {
    if (b)
        for (int64_t i = 0; i < n; ++i) y[i] += b[i];
    if (a != Act::identity) activate_span(a, y, 0.0f, y, n);
}

// dst[i] = g[i] * act'(y[i])   (dst may equal g)
inline void derivative_span(Act a, const float *g, const float *__restrict y, float *dst, int64_t n) {
    switch (a) {
        case Act::identity:
            if (dst != g)
                for (int64_t i = 0; i < n; ++i) dst[i] = g[i];
            break;
        case Act::relu:
            for (int64_t i = 0; i < n; ++i) dst[i] = y[i] > 0.0f ? g[i] : 0.0f;
            break;
        case Act::leaky_relu:
            for (int64_t i = 0; i < n; ++i) dst[i] = g[i] * (y[i] > 0.0f ? 1.0f : kLeakySlope);
            break;
        case Act::tanh:
            for (int64_t i = 0; i < n; ++i) dst[i] = g[i] * (1.0f - y[i] * y[i]);
            break;
        case Act::sigmoid:
            for (int64_t i = 0; i < n; ++i) dst[i] = g[i] * (y[i] * (1.0f - y[i]));
            break;
    }
}

}  // namespace snn
