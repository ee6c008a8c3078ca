// Activation loops for the CPU backend, with the choice of activation taken
// outside the loop so each loop vectorises. Compiled for AVX2 and for the
// x86-64 baseline (cpu/activation.cpp); the loader picks one.
#pragma once

#include <stdint.h>

#include "core/math.h"

namespace snn {

// dst[i] = act(src[i] + bias), dst and src distinct
void activate_span(Act a, const float *src, float bias, float *dst, int64_t n);
// dst[i] = act(src[i]), dst and src distinct
void activate_copy(Act a, const float *src, float *dst, int64_t n);
// y[i] = act(y[i])
void activate_inplace(Act a, float *y, int64_t n);
// y[i] += b[i] over one row
void add_bias_row(float *y, const float *b, int64_t n);
// dst[i] = g[i] * act'(v[i]), v the output y, or the input z for the
// activations of act_uses_input (dst may equal g)
void derivative_span(Act a, const float *g, const float *v, float *dst, int64_t n);

// Sums in 32 interleaved partial sums, added pairwise at the end: the loop
// vectorises (one serial chain of n additions would be latency-bound), and
// the order depends on n alone, so results are deterministic.
float sum_span(const float *x, int64_t n);

}  // namespace snn
