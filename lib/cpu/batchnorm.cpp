// Batch normalisation on the CPU (ops/batchnorm.cpp). Channel c of sample s
// is the P values from (s*C + c)*P on (an image: P = H*W; a vector: C =
// features, P = 1); a channel's statistics run over its m = n*P values. The
// statistics and the backward sums are accumulated in double. Images: the
// channels are split over the thread pool, each channel's sums vectorised in
// a fixed order (cpu/reduce.h); vectors: one thread, value by value. Either
// way a channel is summed by one worker in one order, so the result does not
// depend on the thread count.
#include <math.h>

#include "cpu/multiversion.h"
#include "cpu/reduce.h"
#include "cpu/thread_pool.h"
#include "core/math.h"
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

// Values per worker below which splitting the channels costs more than it saves.
constexpr int64_t kMinBatchnormWork = 1 << 14;

int32_t channel_workers(const Channels &ch) {
    if (ch.p == 1) return 1;
    const int64_t by_work = ch.n * ch.c * ch.p / kMinBatchnormWork;
    int64_t w = cpu_threads();
    if (by_work < w) w = by_work;
    if (ch.c < w) w = ch.c;
    return int32_t(w < 1 ? 1 : w);
}

struct Job {
    const OpArgs *a;
    Channels ch;
};

// Training: mean and biased var of the batch, running = (1 - M) running +
// M batch (var unbiased: var m/(m-1)). Inference: the running statistics.
// Both: aux = [mean][1/sqrt(var + eps)] ; y = (x - mean) invstd weight + bias
SNN_MULTIVERSION
void forward_channels(const OpArgs &a, const Channels &ch, int64_t c0, int64_t c1) {
    const Layer &l = *a.l;
    const float *weight = a.params + l.weight_offset, *bias = a.params + l.bias_offset;
    float *running_mean = a.state + l.state_offset, *running_var = running_mean + ch.c;
    float *mean = a.aux, *invstd = a.aux + ch.c;
    const double m = double(ch.n * ch.p);
    for (int64_t c = c0; c < c1; ++c) {
        if (a.training) {
            double sum = 0.0;
            for (int64_t s = 0; s < ch.n; ++s) {
                const float *x = a.x[0] + ch.at(s, c);
                sum += ch.p == 1 ? double(x[0]) : lane_sum<double, 16>(ch.p, [x](int64_t p) { return double(x[p]); });
            }
            const double mu = sum / m;
            double squares = 0.0;
            for (int64_t s = 0; s < ch.n; ++s) {
                const float *x = a.x[0] + ch.at(s, c);
                const auto square = [x, mu](int64_t p) {
                    const double d = double(x[p]) - mu;
                    return d * d;
                };
                squares += ch.p == 1 ? square(0) : lane_sum<double, 16>(ch.p, square);
            }
            const double var = squares / m;
            mean[c] = float(mu);
            invstd[c] = norm_invstd(var, l.eps);
            running_mean[c] = float((1.0 - l.momentum) * running_mean[c] + l.momentum * mu);
            running_var[c] = float((1.0 - l.momentum) * running_var[c] + l.momentum * (var * m / (m - 1.0)));
        } else {
            mean[c] = running_mean[c];
            invstd[c] = norm_invstd(double(running_var[c]), l.eps);
        }
        for (int64_t s = 0; s < ch.n; ++s) {
            const float *x = a.x[0] + ch.at(s, c);
            float *y = a.y + ch.at(s, c);
            const float mc = mean[c], ic = invstd[c], wc = weight[c], bc = bias[c];
            for (int64_t p = 0; p < ch.p; ++p) y[p] = norm_y(norm_xhat(x[p], mc, ic), wc, bc);
        }
    }
}

// Runs Pass over the worker's share of the channels.
template <void (*Pass)(const OpArgs &, const Channels &, int64_t, int64_t)>
void channel_worker(void *ctx, int32_t worker, int32_t workers) {
    const Job &j = *static_cast<const Job *>(ctx);
    int64_t c0, c1;
    split_range(j.ch.c, workers, worker, &c0, &c1);
    Pass(*j.a, j.ch, c0, c1);
}

void forward(const OpArgs &a) {
    Job job{&a, channels_of(a)};
    parallel_run(channel_workers(job.ch), channel_worker<forward_channels>, &job);
    if (a.training) a.state[a.l->state_offset + 2 * job.ch.c] += 1.0f;  // num_batches_tracked
}

// dweight = sum(dy xhat) ; dbias = sum(dy), xhat = (x - mean) invstd
// Training:  dx = invstd weight / m (m dy - sum(dy) - xhat sum(dy xhat))
// Inference: dx = dy weight invstd (the statistics are constants)
SNN_MULTIVERSION
void backward_channels(const OpArgs &a, const Channels &ch, int64_t c0, int64_t c1) {
    const Layer &l = *a.l;
    const float *weight = a.params + l.weight_offset;
    float *dweight = a.grads + l.weight_offset, *dbias = a.grads + l.bias_offset;
    const float *mean = a.aux, *invstd = a.aux + ch.c;
    const double m = double(ch.n * ch.p);
    for (int64_t c = c0; c < c1; ++c) {
        double sum_dy = 0.0, sum_dy_xhat = 0.0;
        const float mc = mean[c], ic = invstd[c];
        for (int64_t s = 0; s < ch.n; ++s) {
            const float *x = a.x[0] + ch.at(s, c), *dy = a.dy + ch.at(s, c);
            const auto term1 = [dy](int64_t p) { return double(dy[p]); };
            const auto term2 = [dy, x, mc, ic](int64_t p) {
                return double(dy[p]) * double(norm_xhat(x[p], mc, ic));
            };
            if (ch.p == 1) {
                sum_dy += term1(0);
                sum_dy_xhat += term2(0);
            } else {
                lane_sum2<double, 8>(ch.p, term1, term2, &sum_dy, &sum_dy_xhat);
            }
        }
        dweight[c] = float(sum_dy_xhat);
        dbias[c] = float(sum_dy);
        if (!a.dx[0]) continue;
        const float scale = invstd[c] * weight[c];
        const NormGradRow r =
            a.training ? norm_grad_row(sum_dy, sum_dy_xhat, m) : NormGradRow{0.0f, 0.0f};
        for (int64_t s = 0; s < ch.n; ++s) {
            const float *x = a.x[0] + ch.at(s, c), *dy = a.dy + ch.at(s, c);
            float *dx = a.dx[0] + ch.at(s, c);
            for (int64_t p = 0; p < ch.p; ++p) {
                const float xhat = norm_xhat(x[p], mc, ic);
                dx[p] = a.training ? norm_dx(r, scale, dy[p], xhat) : dy[p] * scale;
            }
        }
    }
}

void backward(const OpArgs &a) {
    Job job{&a, channels_of(a)};
    parallel_run(channel_workers(job.ch), channel_worker<backward_channels>, &job);
}

}  // namespace

extern const OpKernels cpu_op_batchnorm{nullptr, nullptr, forward, backward};

}  // namespace snn
