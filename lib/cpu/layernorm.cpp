// Layer normalisation on the CPU (ops/layernorm.cpp): each sample's F values
// are normalised by their own mean and biased variance. aux holds, per
// sample, [mean, 1/sqrt(var + eps)]. The statistics and the backward sums are
// accumulated in double, in a fixed order: the result does not depend on the
// thread count.
#include <math.h>

#include "ops/op.h"

namespace snn {
namespace {

// mean, var over the sample ; aux = [mean, invstd] ; y = (x - mean) invstd weight + bias
void forward(const OpArgs &a) {
    const Layer &l = *a.l;
    const int64_t f_count = l.in.size();
    const float *weight = a.params + l.weight_offset, *bias = a.params + l.bias_offset;
    float *stats = a.aux + l.aux_fixed;
    for (int64_t s = 0; s < a.n; ++s) {
        const float *x = a.x[0] + s * f_count;
        float *y = a.y + s * f_count;
        double sum = 0.0;
        for (int64_t f = 0; f < f_count; ++f) sum += x[f];
        const double mu = sum / double(f_count);
        double squares = 0.0;
        for (int64_t f = 0; f < f_count; ++f) squares += (x[f] - mu) * (x[f] - mu);
        const float mean = float(mu), invstd = float(1.0 / sqrt(squares / double(f_count) + l.eps));
        stats[2 * s] = mean;
        stats[2 * s + 1] = invstd;
        for (int64_t f = 0; f < f_count; ++f) y[f] = (x[f] - mean) * invstd * weight[f] + bias[f];
    }
}

// dweight[f] = sum over samples of dy xhat ; dbias[f] = sum of dy
// dx = invstd / F (F g - sum(g) - xhat sum(g xhat)), g = dy weight, per sample
void backward(const OpArgs &a) {
    const Layer &l = *a.l;
    const int64_t f_count = l.in.size();
    const float *weight = a.params + l.weight_offset;
    float *dweight = a.grads + l.weight_offset, *dbias = a.grads + l.bias_offset;
    const float *stats = a.aux + l.aux_fixed;
    for (int64_t f = 0; f < f_count; ++f) {
        double sum_dy = 0.0, sum_dy_xhat = 0.0;
        for (int64_t s = 0; s < a.n; ++s) {
            const float dy = a.dy[s * f_count + f];
            sum_dy += dy;
            sum_dy_xhat += double(dy) * ((a.x[0][s * f_count + f] - stats[2 * s]) * stats[2 * s + 1]);
        }
        dweight[f] = float(sum_dy_xhat);
        dbias[f] = float(sum_dy);
    }
    if (!a.dx[0]) return;
    for (int64_t s = 0; s < a.n; ++s) {
        const float *x = a.x[0] + s * f_count, *dy = a.dy + s * f_count;
        float *dx = a.dx[0] + s * f_count;
        const float mean = stats[2 * s], invstd = stats[2 * s + 1];
        double sum_g = 0.0, sum_g_xhat = 0.0;
        for (int64_t f = 0; f < f_count; ++f) {
            const float g = dy[f] * weight[f];
            sum_g += g;
            sum_g_xhat += double(g) * ((x[f] - mean) * invstd);
        }
        const float mean_g = float(sum_g / double(f_count)), mean_g_xhat = float(sum_g_xhat / double(f_count));
        for (int64_t f = 0; f < f_count; ++f) {
            const float xhat = (x[f] - mean) * invstd;
            dx[f] = invstd * (dy[f] * weight[f] - mean_g - xhat * mean_g_xhat);
        }
    }
}

}  // namespace

extern const OpKernels cpu_op_layernorm{nullptr, nullptr, forward, backward};

}  // namespace snn
