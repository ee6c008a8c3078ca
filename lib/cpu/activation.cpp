// Activation loops (see cpu/activation.h). The per-element math is
// core/math.h's, the same the GPU runs; each loop is instantiated for one
// activation, so the switch inside activate() folds away and the loop
// vectorises.
#include "cpu/activation.h"

#include "cpu/multiversion.h"
#include "cpu/reduce.h"

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

// Each function switches once over every activation of SNN_ACT_LIST, each
// case a loop instantiated for that activation; with an AVX-512 version too,
// as gelu, silu, tanh and sigmoid are tens of instructions an element.
SNN_MULTIVERSION_512
void activate_span(Act a, const float *src, float bias, float *dst, int64_t n) {
    switch (a) {
#define SNN_ACT_CASE(name) case Act::name: span<Act::name>(src, bias, dst, n); break;
        SNN_ACT_LIST(SNN_ACT_CASE)
#undef SNN_ACT_CASE
    }
}

SNN_MULTIVERSION_512
void activate_copy(Act a, const float *src, float *dst, int64_t n) {
    switch (a) {
#define SNN_ACT_CASE(name) case Act::name: apply<Act::name>(src, dst, n); break;
        SNN_ACT_LIST(SNN_ACT_CASE)
#undef SNN_ACT_CASE
    }
}

SNN_MULTIVERSION_512
void activate_inplace(Act a, float *y, int64_t n) {
    if (a == Act::identity) return;
    switch (a) {
#define SNN_ACT_CASE(name) case Act::name: inplace<Act::name>(y, n); break;
        SNN_ACT_LIST(SNN_ACT_CASE)
#undef SNN_ACT_CASE
    }
}

// y[i] += b[i] over one row
SNN_MULTIVERSION
void add_bias_row(float *__restrict y, const float *__restrict b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += b[i];
}

SNN_MULTIVERSION_512
void derivative_span(Act a, const float *g, const float *v, float *dst, int64_t n) {
    if (a == Act::identity) {
        if (dst != g)
            for (int64_t i = 0; i < n; ++i) dst[i] = g[i];
        return;
    }
    switch (a) {
#define SNN_ACT_CASE(name) case Act::name: derivative<Act::name>(g, v, dst, n); break;
        SNN_ACT_LIST(SNN_ACT_CASE)
#undef SNN_ACT_CASE
    }
}

SNN_MULTIVERSION
float sum_span(const float *x, int64_t n) {
    return lane_sum<float, 32>(n, [x](int64_t i) { return x[i]; });
}

}  // namespace snn
