// Activation loops (see cpu/activation.h).
#include "cpu/activation.h"

#include "cpu/multiversion.h"

namespace snn {


// dst[i] = act(src[i] + bias)   (dst and src distinct, or the same pointer:
// __restrict is dropped for the in-place call by activate_inplace)
SNN_MULTIVERSION
void activate_span(Act a, const float *__restrict src, float bias, float *__restrict dst, int64_t n) {
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


// y[i] = act(y[i]) in place: one pointer, so no aliasing check is needed.
SNN_MULTIVERSION
void activate_inplace(Act a, float *y, int64_t n) {
    switch (a) {
        case Act::identity: break;
        case Act::relu:
            for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
            break;
        case Act::leaky_relu:
            for (int64_t i = 0; i < n; ++i) y[i] = activate(Act::leaky_relu, y[i]);
            break;
        case Act::tanh:
            for (int64_t i = 0; i < n; ++i) y[i] = tanh_approx(y[i]);
            break;
        case Act::sigmoid:
            for (int64_t i = 0; i < n; ++i) y[i] = sigmoid_approx(y[i]);
            break;
    }
}

// y[i] += b[i] over one row
SNN_MULTIVERSION
void add_bias_row(float *__restrict y, const float *__restrict b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += b[i];
}

// dst[i] = g[i] * act'(y[i])   (dst may equal g)
SNN_MULTIVERSION
void derivative_span(Act a, const float *g, const float *__restrict y, float *dst, int64_t n) {
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
