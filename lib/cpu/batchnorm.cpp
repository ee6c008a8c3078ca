// Batch normalisation on the CPU (ops/batchnorm.cpp). Channel c of sample s
// is the P values from (s*C + c)*P on (an image: P = H*W; a vector: C =
// features, P = 1); a channel's statistics run over its m = n*P values. The
// statistics and the backward sums are accumulated in double, sample by
// sample and pixel by pixel: the result does not depend on the thread count.
#include <math.h>

#include "ops/op.h"

namespace snn {
namespace {

struct Channels {
    int64_t n, c, p;
    int64_t at(int64_t s, int64_t ch) const { return (s * c + ch) * p; }  // first value of a channel
};

Channels channels_of(const OpArgs &a) {
    const Shape &s = a.l->in;
    return {a.n, s.is_image ? s.c : s.size(), s.is_image ? s.h * s.w : 1};
}

// Training: mean and biased var of the batch, running = (1 - M) running +
// M batch (var unbiased: var m/(m-1)). Inference: the running statistics.
// Both: aux = [mean][1/sqrt(var + eps)] ; y = (x - mean) invstd weight + bias
void forward(const OpArgs &a) {
    const Layer &l = *a.l;
    const Channels ch = channels_of(a);
    const float *weight = a.params + l.weight_offset, *bias = a.params + l.bias_offset;
    float *running_mean = a.state + l.state_offset, *running_var = running_mean + ch.c;
    float *mean = a.aux, *invstd = a.aux + ch.c;
    const double m = double(ch.n * ch.p);
    for (int64_t c = 0; c < ch.c; ++c) {
        if (a.training) {
            double sum = 0.0;
            for (int64_t s = 0; s < ch.n; ++s) {
                const float *x = a.x[0] + ch.at(s, c);
                for (int64_t p = 0; p < ch.p; ++p) sum += x[p];
            }
            const double mu = sum / m;
            double squares = 0.0;
            for (int64_t s = 0; s < ch.n; ++s) {
                const float *x = a.x[0] + ch.at(s, c);
                for (int64_t p = 0; p < ch.p; ++p) squares += (x[p] - mu) * (x[p] - mu);
            }
            const double var = squares / m;
            mean[c] = float(mu);
            invstd[c] = float(1.0 / sqrt(var + l.eps));
            running_mean[c] = float((1.0 - l.momentum) * running_mean[c] + l.momentum * mu);
            running_var[c] = float((1.0 - l.momentum) * running_var[c] + l.momentum * (var * m / (m - 1.0)));
        } else {
            mean[c] = running_mean[c];
            invstd[c] = float(1.0 / sqrt(double(running_var[c]) + l.eps));
        }
        for (int64_t s = 0; s < ch.n; ++s) {
            const float *x = a.x[0] + ch.at(s, c);
            float *y = a.y + ch.at(s, c);
            for (int64_t p = 0; p < ch.p; ++p) y[p] = (x[p] - mean[c]) * invstd[c] * weight[c] + bias[c];
        }
    }
    if (a.training) running_mean[2 * ch.c] += 1.0f;  // num_batches_tracked
}

// dweight = sum(dy xhat) ; dbias = sum(dy), xhat = (x - mean) invstd
// Training:  dx = invstd weight / m (m dy - sum(dy) - xhat sum(dy xhat))
// Inference: dx = dy weight invstd (the statistics are constants)
void backward(const OpArgs &a) {
    const Layer &l = *a.l;
    const Channels ch = channels_of(a);
    const float *weight = a.params + l.weight_offset;
    float *dweight = a.grads + l.weight_offset, *dbias = a.grads + l.bias_offset;
    const float *mean = a.aux, *invstd = a.aux + ch.c;
    const double m = double(ch.n * ch.p);
    for (int64_t c = 0; c < ch.c; ++c) {
        double sum_dy = 0.0, sum_dy_xhat = 0.0;
        for (int64_t s = 0; s < ch.n; ++s) {
            const float *x = a.x[0] + ch.at(s, c), *dy = a.dy + ch.at(s, c);
            for (int64_t p = 0; p < ch.p; ++p) {
                sum_dy += dy[p];
                sum_dy_xhat += double(dy[p]) * ((x[p] - mean[c]) * invstd[c]);
            }
        }
        dweight[c] = float(sum_dy_xhat);
        dbias[c] = float(sum_dy);
        if (!a.dx[0]) continue;
        const float scale = invstd[c] * weight[c];
        const float mean_dy = a.training ? float(sum_dy / m) : 0.0f;
        const float mean_dy_xhat = a.training ? float(sum_dy_xhat / m) : 0.0f;
        for (int64_t s = 0; s < ch.n; ++s) {
            const float *x = a.x[0] + ch.at(s, c), *dy = a.dy + ch.at(s, c);
            float *dx = a.dx[0] + ch.at(s, c);
            for (int64_t p = 0; p < ch.p; ++p) {
                const float xhat = (x[p] - mean[c]) * invstd[c];
                dx[p] = a.training ? scale * (dy[p] - mean_dy - xhat * mean_dy_xhat) : dy[p] * scale;
            }
        }
    }
}

}  // namespace

extern const OpKernels cpu_op_batchnorm{nullptr, nullptr, forward, backward};

}  // namespace snn
