// Activation loops (see cpu/activation.h). The per-element math is
// engine/math.h's, the same the GPU runs; each loop is instantiated for one
// activation, so the switch inside activate() folds away and the loop
// vectorises.
#include "cpu/activation.h"

#include "cpu/multiversion.h"

namespace snn {
namespace {

template <Act A>
inline void span(const float *__restrict src, float bias, float *__restrict dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = activate(A, src[i] + bias);
}

// One pointer, so the vectoriser needs no aliasing check.
template <Act A>
inline void inplace(float *y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = activate(A, y[i]);
}

template <Act A>
inline void derivative(const float *g, const float *__restrict y, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = g[i] * activation_derivative(A, y[i]);
}

}  // namespace

SNN_MULTIVERSION
void activate_span(Act a, const float *src, float bias, float *dst, int64_t n) {
    switch (a) {
        case Act::identity: span<Act::identity>(src, bias, dst, n); break;
        case Act::relu: span<Act::relu>(src, bias, dst, n); break;
        case Act::leaky_relu: span<Act::leaky_relu>(src, bias, dst, n); break;
        case Act::tanh: span<Act::tanh>(src, bias, dst, n); break;
        case Act::sigmoid: span<Act::sigmoid>(src, bias, dst, n); break;
    }
}

SNN_MULTIVERSION
void activate_inplace(Act a, float *y, int64_t n) {
    switch (a) {
        case Act::identity: break;
        case Act::relu: inplace<Act::relu>(y, n); break;
        case Act::leaky_relu: inplace<Act::leaky_relu>(y, n); break;
        case Act::tanh: inplace<Act::tanh>(y, n); break;
        case Act::sigmoid: inplace<Act::sigmoid>(y, n); break;
    }
}

// y[i] += b[i] over one row
SNN_MULTIVERSION
void add_bias_row(float *__restrict y, const float *__restrict b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += b[i];
}

SNN_MULTIVERSION
void derivative_span(Act a, const float *g, const float *y, float *dst, int64_t n) {
    switch (a) {
        case Act::identity:
            if (dst != g)
                for (int64_t i = 0; i < n; ++i) dst[i] = g[i];
            break;
        case Act::relu: derivative<Act::relu>(g, y, dst, n); break;
        case Act::leaky_relu: derivative<Act::leaky_relu>(g, y, dst, n); break;
        case Act::tanh: derivative<Act::tanh>(g, y, dst, n); break;
        case Act::sigmoid: derivative<Act::sigmoid>(g, y, dst, n); break;
    }
}

}  // namespace snn
