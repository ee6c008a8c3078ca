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

template <Act A>
inline void apply(const float *__restrict src, float *__restrict dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = activate(A, src[i]);
}

// One pointer, so the vectoriser needs no aliasing check.
template <Act A>
inline void inplace(float *y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = activate(A, y[i]);
}

template <Act A>
inline void derivative(const float *g, const float *__restrict v, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = g[i] * activation_derivative(A, v[i]);
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
        case Act::gelu: span<Act::gelu>(src, bias, dst, n); break;
        case Act::silu: span<Act::silu>(src, bias, dst, n); break;
    }
}

SNN_MULTIVERSION
void activate_copy(Act a, const float *src, float *dst, int64_t n) {
    switch (a) {
        case Act::identity: apply<Act::identity>(src, dst, n); break;
        case Act::relu: apply<Act::relu>(src, dst, n); break;
        case Act::leaky_relu: apply<Act::leaky_relu>(src, dst, n); break;
        case Act::tanh: apply<Act::tanh>(src, dst, n); break;
        case Act::sigmoid: apply<Act::sigmoid>(src, dst, n); break;
        case Act::gelu: apply<Act::gelu>(src, dst, n); break;
        case Act::silu: apply<Act::silu>(src, dst, n); break;
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
        case Act::gelu: inplace<Act::gelu>(y, n); break;
        case Act::silu: inplace<Act::silu>(y, n); break;
    }
}

// y[i] += b[i] over one row
SNN_MULTIVERSION
void add_bias_row(float *__restrict y, const float *__restrict b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += b[i];
}

SNN_MULTIVERSION
void derivative_span(Act a, const float *g, const float *v, float *dst, int64_t n) {
    switch (a) {
        case Act::identity:
            if (dst != g)
                for (int64_t i = 0; i < n; ++i) dst[i] = g[i];
            break;
        case Act::relu: derivative<Act::relu>(g, v, dst, n); break;
        case Act::leaky_relu: derivative<Act::leaky_relu>(g, v, dst, n); break;
        case Act::tanh: derivative<Act::tanh>(g, v, dst, n); break;
        case Act::sigmoid: derivative<Act::sigmoid>(g, v, dst, n); break;
        case Act::gelu: derivative<Act::gelu>(g, v, dst, n); break;
        case Act::silu: derivative<Act::silu>(g, v, dst, n); break;
    }
}

}  // namespace snn
