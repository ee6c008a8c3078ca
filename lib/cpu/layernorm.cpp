// Layer normalisation on the CPU (ops/layernorm.cpp): each row's F values (a
// sample, or a step of a sequence) are normalised by their own mean and
// biased variance. aux holds, per row, [mean, 1/sqrt(var + eps)]. The
// statistics and the backward sums are accumulated in double, in an order
// that depends on F alone (cpu/reduce.h's interleaved partial sums within a
// row, rows in order for the parameter gradients): the result does not
// depend on the thread count (rows, and for the parameter gradients
// features, are split over the pool). The input gradient recomputes each
// row's moments in double, as its well-conditioned form needs (core/math.h's
// layernorm_dx).
#include <math.h>

#include "core/math.h"
#include "cpu/multiversion.h"
#include "cpu/reduce.h"
#include "cpu/thread_pool.h"
#include "ops/dims.h"
#include "ops/op.h"

namespace snn {
namespace {

// Features summed together by the parameter gradients' row-major pass.
constexpr int64_t kFeatureBlock = 64;
// Interleaved partial sums within a row.
constexpr int kLanes = 8;

// Rows of F features below which a pass stays on one thread.
int64_t row_grain(int64_t f_count) { return (kElementGrain / 4 + f_count - 1) / f_count; }

// The row's mean and biased variance, in double and two passes.
__attribute__((always_inline)) inline void row_moments(const float *x, int64_t f_count, double &mu, double &var) {
    mu = lane_sum<double, kLanes>(f_count, [x](int64_t f) { return double(x[f]); }) / double(f_count);
    const double m = mu;
    var = lane_sum<double, kLanes>(f_count, [x, m](int64_t f) { return (x[f] - m) * (x[f] - m); }) / double(f_count);
}

// Rows [first, last) of the forward pass.
SNN_MULTIVERSION_512
void forward_rows(int64_t first, int64_t last, int64_t f_count, double eps, const float *x_all, const float *weight,
                  const float *bias, float *stats, float *y_all) {
    for (int64_t s = first; s < last; ++s) {
        const float *x = x_all + s * f_count;
        float *y = y_all + s * f_count;
        double mu = 0.0, var = 0.0;
        row_moments(x, f_count, mu, var);
        const float mean = float(mu), invstd = norm_invstd(var, eps);
        stats[2 * s] = mean;
        stats[2 * s + 1] = invstd;
        for (int64_t f = 0; f < f_count; ++f) y[f] = norm_y(norm_xhat(x[f], mean, invstd), weight[f], bias[f]);
    }
}

// dweight and dbias of features [first, last): each feature's sums run over
// the rows in order; a block of features is summed together, row by row, so
// the loop reads rows contiguously.
SNN_MULTIVERSION_512
void param_grads(int64_t first, int64_t last, int64_t rows, int64_t f_count, const float *x_all, const float *dy_all,
                 const float *stats, float *dweight, float *dbias) {
    for (int64_t f0 = first; f0 < last; f0 += kFeatureBlock) {
        const int64_t width = last - f0 < kFeatureBlock ? last - f0 : kFeatureBlock;
        double sum_dy[kFeatureBlock] = {}, sum_dy_xhat[kFeatureBlock] = {};
        for (int64_t s = 0; s < rows; ++s) {
            const float *dy = dy_all + s * f_count + f0, *x = x_all + s * f_count + f0;
            const float mean = stats[2 * s], invstd = stats[2 * s + 1];
            for (int64_t f = 0; f < width; ++f) {
                sum_dy[f] += dy[f];
                sum_dy_xhat[f] += double(dy[f]) * norm_xhat(x[f], mean, invstd);
            }
        }
        for (int64_t f = 0; f < width; ++f) {
            dweight[f0 + f] = float(sum_dy_xhat[f]);
            dbias[f0 + f] = float(sum_dy[f]);
        }
    }
}

// dx of rows [first, last).
SNN_MULTIVERSION_512
void input_grad_rows(int64_t first, int64_t last, int64_t f_count, double eps, const float *x_all, const float *dy_all,
                     const float *weight, float *dx_all) {
    for (int64_t s = first; s < last; ++s) {
        const float *x = x_all + s * f_count, *dy = dy_all + s * f_count;
        float *dx = dx_all + s * f_count;
        double mu = 0.0, var = 0.0;
        row_moments(x, f_count, mu, var);
        double sum_g = 0.0, sum_g_c = 0.0;
        lane_sum2<double, kLanes>(
            f_count, [dy, weight](int64_t f) { return double(dy[f] * weight[f]); },
            [dy, weight, x, mu](int64_t f) { return double(dy[f] * weight[f]) * (x[f] - mu); }, &sum_g, &sum_g_c);
        const LayerNormGradRow r = layernorm_grad_row(sum_g, sum_g_c, var, eps, double(f_count));
        for (int64_t f = 0; f < f_count; ++f) dx[f] = layernorm_dx(r, dy[f] * weight[f], x[f] - mu);
    }
}

// mean, var over the sample ; aux = [mean, invstd] ; y = (x - mean) invstd weight + bias
void forward(const OpArgs &a) {
    const Layer &l = *a.l;
    const int64_t f_count = l.in.row_size(), rows = rows_of(l, a.n);
    const float *weight = a.params + l.weight_offset, *bias = a.params + l.bias_offset;
    float *stats = a.aux + l.aux_fixed;
    parallel_ranges(rows, row_grain(f_count), 1, [&](int64_t first, int64_t last) {
        forward_rows(first, last, f_count, l.eps, a.x[0], weight, bias, stats, a.y);
    });
}

// dweight[f] = sum over samples of dy xhat ; dbias[f] = sum of dy
// dx = invstd ((g - mean(g)) - c mean(g c) / (var + eps)), g = dy weight,
// c = x - mean, per sample with its moments recomputed in double
// (core/math.h's layernorm_dx)
void backward(const OpArgs &a) {
    const Layer &l = *a.l;
    const int64_t f_count = l.in.row_size(), rows = rows_of(l, a.n);
    const float *weight = a.params + l.weight_offset;
    float *dweight = a.grads + l.weight_offset, *dbias = a.grads + l.bias_offset;
    const float *stats = a.aux + l.aux_fixed;
    parallel_ranges(f_count, rows >= row_grain(f_count) ? 8 : f_count, 8, [&](int64_t first, int64_t last) {
        param_grads(first, last, rows, f_count, a.x[0], a.dy, stats, dweight, dbias);
    });
    if (!a.dx[0]) return;
    parallel_ranges(rows, row_grain(f_count), 1, [&](int64_t first, int64_t last) {
        input_grad_rows(first, last, f_count, l.eps, a.x[0], a.dy, weight, a.dx[0]);
    });
}

}  // namespace

extern const OpKernels cpu_op_layernorm{nullptr, nullptr, forward, backward};

}  // namespace snn
