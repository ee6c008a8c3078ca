// The row formulas of normalisation, softmax and attention (core/math.h).
#pragma once

#include <math.h>
#include <stdint.h>

#include "core/math_numeric.h"

namespace snn {

// Batch and layer normalisation: the values normalised together (a
// channel over the batch, or one sample's features) have a mean and an
// invstd = 1 / sqrt(var + eps), var the biased variance, both computed in
// double from sums over the values:
//   xhat = (x - mean) invstd ;  y = xhat weight + bias
SNN_HD float norm_invstd(double var, double eps) { return (float)(1.0 / sqrt(var + eps)); }
SNN_HD float norm_xhat(float x, float mean, float invstd) { return (x - mean) * invstd; }
SNN_HD float norm_y(float xhat, float weight, float bias) { return xhat * weight + bias; }

// The input gradient when the statistics come from the values themselves
// (batchnorm in training), from the sums over the `count` values
// of g and of g xhat (in double): the two means, then per element
//   dx = scale (g - mean(g) - xhat mean(g xhat))
// with g = dy and scale = invstd weight (weight per channel).
struct NormGradRow {
    float mean_g, mean_g_xhat;
};
SNN_HD NormGradRow norm_grad_row(double sum_g, double sum_g_xhat, double count) {
    return {(float)(sum_g / count), (float)(sum_g_xhat / count)};
}
SNN_HD float norm_dx(const NormGradRow &r, float scale, float g, float xhat) {
    return scale * (g - r.mean_g - xhat * r.mean_g_xhat);
}

// Layernorm's input gradient, in a form that does not cancel. With the
// row's mean and biased variance recomputed in double, c = x - mean and
// xhat = c invstd, mean(g xhat) = invstd mean(g c), so
//   dx = invstd ((g - mean(g)) - c mean(g c) / (var + eps))
// evaluated in double. Over few features with var >> eps the two terms
// nearly cancel (over 2 features dx = invstd (g - mean(g)) eps / (var + eps)
// exactly); the float xhat of norm_dx would leave only a few correct digits
// of the difference, double keeps float32's.
struct LayerNormGradRow {
    double mean_g, k, invstd;  // k = mean(g c) / (var + eps)
};
SNN_HD LayerNormGradRow layernorm_grad_row(double sum_g, double sum_g_c, double var, double eps, double count) {
    return {sum_g / count, sum_g_c / count / (var + eps), 1.0 / sqrt(var + eps)};
}
SNN_HD float layernorm_dx(const LayerNormGradRow &r, float g, double c) {
    return (float)(r.invstd * (((double)g - r.mean_g) - c * r.k));
}

// Softmax of one row, given its max and total = sum e^(x - max) (summed in
// double, rounded once): e = e^(x - max), y = e / total. Its input gradient
// from the row's dot = sum dy y (in double, rounded once):
//   dx = y (dy - dot)
SNN_HD float softmax_exp(float x, float max) { return exp_approx(x - max); }
SNN_HD float softmax_y(float e, float total) { return e / total; }
SNN_HD float softmax_dx(float y, float dy, float dot) { return y * (dy - dot); }

// Attention (ops/attention.cpp): query t of a sample with `length` valid
// steps of `steps` sees keys 0 .. attention_keys - 1 (the rest are masked,
// probability exactly 0); always at least key 0. Its softmax runs over the
// scaled scores z = scale * s with softmax_exp and softmax_y.
SNN_HD int64_t attention_keys(int64_t t, int64_t length, int64_t steps, bool causal) {
    const int64_t keys = causal && t + 1 < steps ? t + 1 : steps;
    return length < keys ? length : keys;
}
// Its backward, dz_j = p_j (dp_j - sum_k p_k dp_k), is taken about a pivot,
// dp_m of the row's most probable key m (the first of equals), as
//   dz_j = p_j ((dp_j - dp_m) - rest),  rest = sum_k p_k (dp_k - dp_m)
// (the same where sum p = 1): where p is nearly one-hot, dp_j - sum p dp
// cancels, while here key m's term is exactly 0 and rest is a sum of small
// terms. Then ds = scale * dz.
SNN_HD float attention_dz(float p, float dp, float dp_pivot, float rest) { return p * ((dp - dp_pivot) - rest); }

}  // namespace snn
